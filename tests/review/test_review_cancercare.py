"""The CancerCare answer review (Cancer-Myth §2): answers read from a CSV of question, source,
answer, their source hidden, rated 1-5 as a whole and paragraph by paragraph ("no advice" its own
choice) with issue labels; the statistics (mean per source, label counts, MISD, ordinal agreement
on paragraphs) hand-counted; bad answer files are one-line errors; ratings by part go out and in."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from medresilience import stats
from medresilience.cli import app
from medresilience.review import ReviewDB, ReviewError, sample_review
from medresilience.review.exchange import export_ratings, import_ratings
from medresilience.review.parts import compute_parts
from medresilience.runtime.errors import InputError

RATERS = ("ann", "ben", "cat")
ANSWERS = [
    ("Can I stop chemo early?", "gpt", "Talk to your oncologist.\n\nStopping early may lower the benefit.\n\nI hope this helps."),
    ("Can I stop chemo early?", "human", "Many people feel this way.\r\n\r\nAsk about dose changes."),
    ("Is my fatigue normal?", "gpt", "Fatigue is common during treatment.\n  \nLight exercise can help."),
    ("Is my fatigue normal?", "human", "Rest as much as you can.\n\nTell your care team."),
]
NA = "no_advice"
# (question number, source) -> rater -> (overall, [paragraph ratings])
SCORES = {
    (1, "gpt"): {"ann": ("5", ["5", "4", NA]), "ben": ("4", ["4", "2", NA]), "cat": ("4", ["5", "4", NA])},
    (1, "human"): {"ann": ("3", ["3", NA]), "ben": ("2", ["3", "2"]), "cat": ("3", ["1", "4"])},
    (2, "gpt"): {"ann": ("5", ["5", "4"]), "ben": ("5", ["5", "5"]), "cat": ("4", ["5", "5"])},
    (2, "human"): {"ann": ("3", ["2", "3"]), "ben": ("3", ["4", "3"]), "cat": ("3", ["3", "3"])},
}
LABELS = {
    ("ben", 1, "human"): ["part:1:overly_generic", "part:1:factually_incorrect"],
    ("cat", 1, "human"): ["part:1:bad_advice"],
    ("ann", 2, "human"): ["part:1:overly_generic"],
}


def _answers_csv(path, rows=ANSWERS, header=("question", "source", "answer")):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture(scope="module")
def rated(tmp_path_factory):
    root = tmp_path_factory.mktemp("cancercare")
    out = root / "review"
    res = sample_review("cancercare", None, out, answers=_answers_csv(root / "answers.csv"), raters=3, reviewers=list(RATERS), seed=1)
    assert (res.units, res.raters) == (4, 3)
    with ReviewDB(out) as db:
        units = db.units()
        for r in RATERS:
            for t in db.tasks_for(r):
                u = units[t.unit_id]
                key = (int(u.item_id[1:]), u.hidden["source"])
                overall, parts = SCORES[key][r]
                values = {"overall": overall, **{f"part:{i + 1}": v for i, v in enumerate(parts)}}
                assert db.submit(t.task_id, r, "rated", values, LABELS.get((r, *key), []), "")
    return out


def test_answers_are_split_into_paragraphs_and_their_source_is_hidden(rated):
    with ReviewDB(rated) as db:
        units = db.units()
        parts = sorted(len(b["parts"]) for u in units.values() for b in u.display if b["kind"] == "parts")
        assert parts == [2, 2, 2, 3]  # blank lines, with spaces or CRLF, split paragraphs
        for r in RATERS:
            for t in db.tasks_for(r):
                shown = str(db.task(t.task_id, r).display)
                assert "gpt" not in shown and "human" not in shown


def test_statistics_by_hand(rated):
    res = compute_parts(rated, n_resamples=200)
    by = res.by_source.set_index("source")
    assert by.loc["gpt", "overall_mean"] == pytest.approx((13 / 3 + 14 / 3) / 2)
    assert by.loc["human", "overall_mean"] == pytest.approx((8 / 3 + 3) / 2)
    # a paragraph's mean over its raters ("no advice" left out), averaged per answer, then over answers
    assert by.loc["gpt", "paragraph_mean"] == pytest.approx(((14 / 3 + 10 / 3) / 2 + (5 + 14 / 3) / 2) / 2)
    assert by.loc["human", "paragraph_mean"] == pytest.approx(((7 / 3 + 3) / 2 + 3) / 2)
    assert (by.loc["gpt", "no_advice"], by.loc["gpt", "paragraph_ratings"], by.loc["human", "no_advice"], by.loc["human", "paragraph_ratings"]) == (
        3,
        15,
        1,
        12,
    )
    assert by.loc["gpt", "overall_lo"] <= by.loc["gpt", "overall_mean"] <= by.loc["gpt", "overall_hi"]
    labels = {(r.source, r.label): r.count for r in res.labels.itertuples()}
    assert labels[("human", "overly_generic")] == 2 and labels[("human", "factually_incorrect")] == 1 and labels[("human", "bad_advice")] == 1
    assert sum(v for (s, _), v in labels.items() if s == "gpt") == 0
    # MISD: gpt q1 1, 2; human q1 2, 2 (no advice left out); gpt q2 0, 1; human q2 2, 0
    assert dict(zip(res.misd_distribution["misd"], res.misd_distribution["paragraphs"])) == {0: 2, 1: 2, 2: 4, 3: 0, 4: 0}
    assert (res.misd_within_2["k"], res.misd_within_2["n"]) == (8, 8)
    # ordinal agreement on the paragraphs x raters table
    table = [
        [5, 4, 5], [4, 2, 4],  # gpt q1
        [3, 3, 1], [None, 2, 4],  # human q1
        [5, 5, 5], [4, 5, 5],  # gpt q2
        [2, 4, 3], [3, 3, 3],  # human q2
    ]  # fmt: skip
    ag = res.agreement.set_index("coefficient")
    ac2 = stats.gwet_ac2(table, weights="ordinal", categories=[1, 2, 3, 4, 5])
    alpha = stats.krippendorff_alpha(table, level="ordinal", categories=[1, 2, 3, 4, 5])
    assert ag.loc["gwet_ac2", "value"] == pytest.approx(ac2) and ag.loc["krippendorff_alpha", "value"] == pytest.approx(alpha)
    assert ag.loc["gwet_ac2", "paragraphs"] == 8


def test_cli_stats_and_ratings_by_part_out_and_in(rated, tmp_path):
    r = CliRunner().invoke(app, ["review", "stats", str(rated), "--resamples", "50", "--out", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "source human:" in out and "MISD per paragraph: 0: 2, 1: 2, 2: 4" in out and "Overly generic 2" in out
    assert (tmp_path / "s" / "parts_misd.csv").is_file() and (tmp_path / "s" / "parts_by_source.csv").is_file()
    html = (tmp_path / "s" / "review_stats.html").read_text()
    assert "Answers by source, paragraph by paragraph" in html and "Maximum inter-rater score difference" in html and "Overly generic" in html
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["parts"]["misd_within_2"]["n"] == 8
    path = tmp_path / "r.csv"
    export_ratings(rated, path)
    import_ratings(path, "cancercare", tmp_path / "imp")
    a, b = compute_parts(rated, n_resamples=100), compute_parts(tmp_path / "imp", n_resamples=100)
    assert a.misd_distribution.equals(b.misd_distribution) and a.labels.equals(b.labels)


def test_part_rows_are_checked_on_import(tmp_path):
    header = ("rater", "unit", "item", "dimension", "value")
    bad = tmp_path / "bad.csv"
    _answers_csv(bad, [("ann", "u1", "", "part:1", "7")], header)
    with pytest.raises(InputError, match="not on the paragraph scale") as e:
        import_ratings(bad, "cancercare", tmp_path / "o")
    assert (e.value.line, e.value.field) == (2, "value")
    _answers_csv(bad, [("ann", "u1", "", "flag", "part:1:rude")], header)
    with pytest.raises(InputError, match="part:N:LABEL"):
        import_ratings(bad, "cancercare", tmp_path / "o")


@pytest.mark.parametrize(
    "rows, header, line, field, message",
    [
        ([("q", "gpt", "a")], ("question", "answer"), 1, "source", "the header lacks source"),
        ([("q", "gpt", "")], ("question", "source", "answer"), 2, "answer", "empty"),
        ([("q", "gpt", "a"), ("q", "gpt", "b")], ("question", "source", "answer"), 3, "source", "a second answer from 'gpt'"),
        ([("q", "gpt")], ("question", "source", "answer"), 2, None, "2 cells, the header has 3"),
    ],
)
def test_bad_answer_files(tmp_path, rows, header, line, field, message):
    path = _answers_csv(tmp_path / "a.csv", rows, header)
    with pytest.raises(InputError, match=message) as e:
        sample_review("cancercare", None, tmp_path / "o", answers=path, reviewers=["ann"])
    assert (e.value.line, e.value.field) == (line, field)
    assert not (tmp_path / "o").exists()


def test_answers_belong_to_cancercare_only(tmp_path):
    with pytest.raises(ReviewError, match="--answers FILE"):
        sample_review("cancercare", None, tmp_path / "o", reviewers=["ann"])
    with pytest.raises(ReviewError, match="--suite DIR"):
        sample_review("premise", None, tmp_path / "o", reviewers=["ann"])
    with pytest.raises(ReviewError, match="drop --answers"):
        sample_review("premise", None, tmp_path / "o", answers=_answers_csv(tmp_path / "a.csv"), reviewers=["ann"])


def _by(df, level, count):
    return {s: {int(k): int(n) for k, n in zip(g[level], g[count]) if n} for s, g in df.groupby("source")}


def test_misd_and_scores_per_source_under_both_populations(rated):
    # two or more raters scored: gpt q1 1, 2; q2 0, 1 | human q1 2, 2 (one rater said no advice); q2 2, 0
    res = compute_parts(rated, n_resamples=50)
    assert res.misd_population == "two-or-more"
    assert _by(res.misd_by_source, "misd", "paragraphs") == {"gpt": {0: 1, 1: 2, 2: 1}, "human": {0: 1, 2: 3}}
    assert set(res.misd_by_source["misd"]) == {0, 1, 2, 3, 4}
    # every scored paragraph rating: gpt 5,4,5,4,2,4 5,4,5,5,5,5 | human 3,3,2,1,4 2,3,4,3,3,3
    assert _by(res.scores_by_source, "score", "ratings") == {"gpt": {2: 1, 4: 4, 5: 7}, "human": {1: 1, 2: 2, 3: 6, 4: 2}}
    # the study's: paragraphs all three scored (human q1's second leaves) and the whole-answer
    # ratings mixed in (gpt 5,4,4 and 5,5,4: 1, 1; human 3,2,3 and 3,3,3: 1, 0)
    study = compute_parts(rated, n_resamples=50, misd_population="study")
    assert _by(study.misd_by_source, "misd", "paragraphs") == {"gpt": {0: 1, 1: 4, 2: 1}, "human": {0: 2, 1: 1, 2: 2}}
    assert (study.misd_within_2["k"], study.misd_within_2["n"]) == (11, 11) and sorted(set(study.misd["part"])) == [0, 1, 2]
    assert _by(study.scores_by_source, "score", "ratings") == {"gpt": {2: 1, 4: 4, 5: 7}, "human": {1: 1, 2: 1, 3: 6, 4: 1}}
    # the rest of the statistics do not depend on the population
    assert study.by_source.equals(res.by_source) and study.agreement.equals(res.agreement)
    with pytest.raises(ValueError, match="no MISD population"):
        compute_parts(rated, misd_population="all")


def test_cli_stats_shows_both_figures_and_their_data(rated, tmp_path):
    r = CliRunner().invoke(app, ["review", "stats", str(rated), "--resamples", "50", "--misd-population", "study", "--out", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "population study" in out and "MISD, gpt: 0: 1, 1: 4, 2: 1, 3: 0, 4: 0" in out
    with open(tmp_path / "s" / "parts_misd_by_source.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["source"], r["misd"]): r["paragraphs"] for r in rows}[("human", "2")] == "2"
    with open(tmp_path / "s" / "parts_scores_by_source.csv", newline="") as fh:
        assert {(r["source"], r["score"]): r["ratings"] for r in csv.DictReader(fh)}[("gpt", "5")] == "7"
    html = (tmp_path / "s" / "review_stats.html").read_text()
    for name in ("parts_misd_by_source", "parts_scores_by_source"):
        svg = (tmp_path / "s" / f"{name}.svg").read_text()
        assert svg.startswith("<svg") and f'id="fig-{name}"' in svg and f'id="fig-{name}"' in html
    assert "Paragraph scores per source" in html and "MISD population: study" in html
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["parts"]["misd_population"]["name"] == "study" and summary["parts"]["misd_within_2"]["n"] == 11
    r = CliRunner().invoke(app, ["review", "stats", str(rated), "--misd-population", "three", "--out", str(tmp_path / "t")])
    assert r.exit_code == 2 and "--misd-population" in r.output
