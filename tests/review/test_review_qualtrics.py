"""Cancer-Myth's CancerCare survey read as released (`review import --rubric cancercare --survey
full_survey.json survey_results.csv`): the Qualtrics export's layout (column ids, two rows
Qualtrics adds, one row per respondent, an unfinished test response left out), its QID numbering
(answer n // 100; slot 98 the whole answer, 5k+4 paragraph k+1's rating, 5k+5 its issues) and
its sources from full_survey.json; hand-counted on a small export written in that layout, and on
the released export itself where it is present."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.review.exchange import import_ratings
from medresilience.review.parts import compute_parts
from medresilience.runtime.errors import InputError

META = ["StartDate", "Finished", "ResponseId"]
# two questions, two sources each: answers 0..3 in this order
SURVEY = {"1": ["GPT-4-Turbo", "Edited human answer"], "2": ["Edited human answer", "GPT-4-Turbo"]}
# answer -> paragraphs shown
PARAS = {0: 2, 1: 1, 2: 2, 3: 1}
# respondent -> answer -> (whole, [(rating, issues) per paragraph])
RATINGS = {
    "R_a": {
        0: ("5", [("5", ""), ("4", "")]),
        1: ("3", [("2", "Overly generic,Factually incorrect")]),
        2: ("2", [("N/A", ""), ("3", "")]),
        3: ("4", [("4", "")]),
    },
    "R_b": {
        0: ("4", [("4", ""), ("", "")]),
        1: ("2", [("3", "Overly generic")]),
        2: ("3", [("2", "Bad or inappropriate advice"), ("3", "")]),
        3: ("5", [("5", "")]),
    },
    "R_c": {0: ("4", [("5", ""), ("2", "")]), 1: ("3", [("1", "")]), 2: ("3", [("3", ""), ("4", "")]), 3: ("4", [("4", "")])},
}


def _columns():
    cols = []
    for a, n in PARAS.items():
        for k in range(n):
            cols += [
                (f"QID{a * 100 + 5 * k + 4}", a, k, "rating"),
                (f"QID{a * 100 + 5 * k + 5}", a, k, "issues"),
                (f"QID{a * 100 + 5 * k + 6}_TEXT", a, k, "comment"),
            ]
        cols += [(f"QID{a * 100 + 98}", a, None, "whole"), (f"QID{a * 100 + 99}", a, None, "yes/no"), (f"QID{a * 100 + 100}_TEXT", a, None, "comment")]
    return cols


def _export(tmp_path, ratings=RATINGS):
    cols = _columns()
    path, survey = tmp_path / "survey_results.csv", tmp_path / "full_survey.json"
    survey.write_text(json.dumps(SURVEY))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*META, *(c[0] for c in cols)])
        w.writerow(["Start Date", "Finished", "Response ID", "Please rate this advice from 1 to 5\n(mark N/A)", *("Please rate this advice" for _ in cols[1:])])
        w.writerow(['{"ImportId":"startDate"}', '{"ImportId":"finished"}', '{"ImportId":"_recordId"}', *(f'{{"ImportId":"{c[0]}"}}' for c in cols)])
        w.writerow(["2024-10-10", "FALSE", "R_test", *("1" if c[3] in ("rating", "whole") else "" for c in cols)])  # unfinished test
        for rater, by in ratings.items():
            cells = []
            for _, a, k, kind in cols:
                whole, paras = by[a]
                cells.append({"whole": whole, "rating": paras[k][0] if k is not None else "", "issues": paras[k][1] if k is not None else ""}.get(kind, "No"))
            w.writerow(["2024-10-11", "TRUE", rater, *cells])
    return path, survey


def test_the_export_reads_as_its_ratings(tmp_path):
    path, survey = _export(tmp_path)
    res = import_ratings(path, "cancercare", tmp_path / "r", survey=survey)
    assert (res.units, res.raters, res.ratings) == (4, 3, 12)
    p = compute_parts(tmp_path / "r", n_resamples=50)
    by = p.by_source.set_index("source")
    # whole answers: gpt q1 5,4,4 and q2 4,5,4; human q1 3,2,3 and q2 2,3,3
    assert by.loc["GPT-4-Turbo", "overall_mean"] == pytest.approx((13 / 3 + 13 / 3) / 2)
    assert by.loc["Edited human answer", "overall_mean"] == pytest.approx((8 / 3 + 8 / 3) / 2)
    # "N/A" is no advice; an empty cell is no rating
    assert (by.loc["Edited human answer", "no_advice"], by.loc["Edited human answer", "paragraph_ratings"]) == (1, 9)
    assert by.loc["GPT-4-Turbo", "paragraph_ratings"] == 8
    labels = {(r.source, r.label): r.count for r in p.labels.itertuples()}
    assert labels[("Edited human answer", "overly_generic")] == 2 and labels[("Edited human answer", "factually_incorrect")] == 1
    assert labels[("Edited human answer", "bad_advice")] == 1 and labels[("GPT-4-Turbo", "overly_generic")] == 0
    # the study's MISD population: gpt q1 p1 (5,4,5: 1), q2 p1 (4,5,4: 1), wholes 1, 1 (q1 p2 lacks R_b)
    study = compute_parts(tmp_path / "r", n_resamples=50, misd_population="study")
    gpt = study.misd_by_source[study.misd_by_source["source"] == "GPT-4-Turbo"]
    assert dict(zip(gpt["misd"], gpt["paragraphs"])) == {0: 0, 1: 4, 2: 0, 3: 0, 4: 0}


def test_bad_exports_name_line_and_column(tmp_path):
    bad = {**RATINGS, "R_b": {**RATINGS["R_b"], 3: ("6", [("5", "")])}}
    path, survey = _export(tmp_path, bad)
    with pytest.raises(InputError, match="not a 1-5 whole-answer rating") as e:
        import_ratings(path, "cancercare", tmp_path / "o", survey=survey)
    assert (e.value.line, e.value.field) == (7, "QID398")  # a question text spans lines 2-3
    bad = {**RATINGS, "R_c": {**RATINGS["R_c"], 1: ("3", [("1", "Rude")])}}
    path, survey = _export(tmp_path, bad)
    with pytest.raises(InputError, match="not one of the survey's issues") as e:
        import_ratings(path, "cancercare", tmp_path / "o", survey=survey)
    assert (e.value.line, e.value.field) == (8, "QID105")
    survey.write_text(json.dumps({"1": SURVEY["1"]}))
    with pytest.raises(InputError, match=r"is not in full_survey\.json"):
        import_ratings(path, "cancercare", tmp_path / "o", survey=survey)
    assert not (tmp_path / "o").exists()
    r = CliRunner().invoke(app, ["review", "import", str(path), "--rubric", "A", "--survey", str(survey), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "reads no survey export" in " ".join(r.output.split())


RELEASED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "cancer_myth" / "cancercare_survey"


@pytest.mark.skipif(not (RELEASED / "survey_results.csv").is_file(), reason=f"the released CancerCare survey is not at {RELEASED}")
def test_the_released_export_gives_the_papers_numbers(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "review",
            "import",
            str(RELEASED / "survey_results.csv"),
            "--rubric",
            "cancercare",
            "--survey",
            str(RELEASED / "full_survey.json"),
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert r.exit_code == 0, r.output
    p = compute_parts(tmp_path / "r", n_resamples=50, misd_population="study")
    means = {s: round(v, 2) for s, v in zip(p.by_source["source"], p.by_source["overall_mean"])}
    assert means == {"GPT-4-Turbo": 4.13, "Gemini-1.5 Pro": 3.91, "LLaMa-3.1-Instruct 405B": 3.57, "Edited human answer": 3.20}
    # the study's code's own counts (analysis.py, model_diff and model_para_score)
    misd = {s: [int(n) for n in g["paragraphs"]] for s, g in p.misd_by_source.groupby("source")}
    assert misd["Gemini-1.5 Pro"] == [18, 84, 58, 10, 3] and misd["Edited human answer"] == [7, 57, 39, 14, 8]
    scores = {s: [int(n) for n in g["ratings"]] for s, g in p.scores_by_source.groupby("source")}
    assert scores["GPT-4-Turbo"] == [3, 23, 65, 254, 273]
    # the 20 issue counts (analysis.py's label_count)
    labels = {(r.source, r.label): int(r.count) for r in p.labels.itertuples()}
    assert [labels[("Edited human answer", k)] for k in ("overly_generic", "bad_advice", "not_guidelines", "not_realistic", "factually_incorrect")] == [
        20,
        19,
        1,
        3,
        6,
    ]
    assert [labels[("Gemini-1.5 Pro", k)] for k in ("overly_generic", "bad_advice", "not_guidelines", "not_realistic", "factually_incorrect")] == [
        16,
        4,
        3,
        2,
        2,
    ]
    assert [labels[("LLaMa-3.1-Instruct 405B", k)] for k in ("overly_generic", "bad_advice", "not_guidelines", "not_realistic", "factually_incorrect")] == [
        33,
        16,
        2,
        5,
        5,
    ]
    assert [labels[("GPT-4-Turbo", k)] for k in ("overly_generic", "bad_advice", "not_guidelines", "not_realistic", "factually_incorrect")] == [8, 9, 0, 2, 3]
