"""The CancerCare answers read as Cancer-Myth released them: a wide CSV, one row per question and one
column per source (`human_answer_with_models.csv`: question_id, question, answer, Edited human
answer, comments, Gemini-1.5 Pro, ...), imported with the survey's ratings (`review import --rubric
cancercare --survey full_survey.json --answers FILE --sources A,B,...`) so each unit shows the
answer its ratings are about, split into the paragraphs the survey numbered.

tests/data/cancercare/answers_wide.csv is written for these tests in the released file's shape (two
questions, three sources, an unrated original `answer` and a `comments` column, quoted cells over
several lines); its answers have the paragraph counts of test_review_qualtrics's constructed export.
The released files are read where they are in the shared data (skipped, with the reason, if not)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA, TESTS
from medresilience.cli import app
from medresilience.review import ReviewDB
from medresilience.review.answers import parse_sources, read_wide
from medresilience.review.exchange import import_ratings
from medresilience.review.parts import compute_parts
from medresilience.runtime.errors import ConfigError, InputError
from test_review_qualtrics import RATINGS, _export

WIDE = TESTS / "data" / "cancercare" / "answers_wide.csv"
SOURCES = ["Edited human answer", "Gemini-1.5 Pro", "GPT-4-Turbo"]
RELEASED = SHARED_DATA / "cancer_myth" / "cancercare_survey"


def _import(tmp_path, answers=WIDE, sources=",".join(SOURCES), out="r"):
    path, survey = _export(tmp_path)
    args = ["review", "import", str(path), "--rubric", "cancercare", "--survey", str(survey), "--answers", str(answers), "--sources", sources]
    return CliRunner().invoke(app, [*args, "--out", str(tmp_path / out)])


def _means(review: Path) -> dict[str, float]:
    p = compute_parts(review, n_resamples=20)
    return {s: round(v, 3) for s, v in zip(p.by_source["source"], p.by_source["overall_mean"])}


def test_the_wide_file_reads_its_named_sources_and_leaves_the_rest_out():
    wide = read_wide(WIDE, SOURCES)
    assert [(r.line, r.position, r.question_id) for r in wide.rows] == [(2, 1, "7"), (9, 2, "12")]  # a quoted cell spans lines
    assert wide.left_out == ["answer", "comments"]
    first = wide.rows[0]
    assert first.question.startswith("My mother, 71,") and '"pull the radiation back in"' in first.question
    assert {s: a.split("]", 1)[0] for s, a in first.answers.items()} == {
        "Edited human answer": "[human q7",
        "Gemini-1.5 Pro": "[gemini q7",
        "GPT-4-Turbo": "[gpt q7",
    }
    assert wide.row_of("12") is wide.rows[1] and wide.row_of("q2") is wide.rows[1] and wide.row_of("q3") is None


def test_imported_ratings_show_their_answers_and_give_the_per_source_means(tmp_path):
    r = _import(tmp_path)
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "12 ratings (0 skipped) of 4 units by 3 raters" in out
    assert "answers: 4 units shown with their answer from answers_wide.csv, 2 answers there rated by no one; columns left out: answer, comments" in out
    # the whole-answer ratings by hand: GPT-4-Turbo (answers 0, 3) 5,4 / 4,5 / 4,4; the human answer (1, 2) 3,2 / 2,3 / 3,3
    gpt = [RATINGS[r][a][0] for r in RATINGS for a in (0, 3)]
    human = [RATINGS[r][a][0] for r in RATINGS for a in (1, 2)]
    assert _means(tmp_path / "r") == {"GPT-4-Turbo": round(sum(map(int, gpt)) / 6, 3), "Edited human answer": round(sum(map(int, human)) / 6, 3)}
    assert _means(tmp_path / "r") == {"GPT-4-Turbo": 4.333, "Edited human answer": 2.667}
    with ReviewDB(tmp_path / "r") as db:
        units = db.units()
        assert db.meta("answer_sources") == SOURCES
    want = {
        "q1-gpt-4-turbo": ("[gpt q7]", 2),
        "q1-edited-human-answer": ("[human q7]", 1),
        "q2-edited-human-answer": ("[human q12]", 2),
        "q2-gpt-4-turbo": ("[gpt q12]", 1),
    }
    for uid, (tag, n) in want.items():
        question, parts = units[uid].display
        assert question["text"].startswith("My mother" if uid.startswith("q1") else "I have stage 2 colon cancer")
        assert parts["kind"] == "parts" and len(parts["parts"]) == n and parts["parts"][0].startswith(tag), (uid, parts)


def test_a_source_or_column_the_files_do_not_share_is_refused_and_nothing_is_written(tmp_path):
    r = _import(tmp_path, sources="Edited human answer,GPT-4")
    assert r.exit_code == 2 and not (tmp_path / "r").exists()
    msg = " ".join(r.output.split())
    assert "answers_wide.csv:1" in msg and "'GPT-4'" in msg and "is not a column of the header" in msg and "'GPT-4-Turbo'" in msg
    r = _import(tmp_path, sources="Edited human answer,Gemini-1.5 Pro")  # the ratings rate GPT-4-Turbo's answers too
    assert r.exit_code == 2 and not (tmp_path / "r").exists()
    assert "rates an answer from 'GPT-4-Turbo', which --sources does not name" in " ".join(r.output.split())
    with pytest.raises(ConfigError, match="named twice: GPT-4-Turbo"):
        parse_sources("GPT-4-Turbo, Gemini-1.5 Pro,GPT-4-Turbo")
    path, survey = _export(tmp_path)
    with pytest.raises(ConfigError, match="go together"):
        import_ratings(path, "cancercare", tmp_path / "o", survey=survey, answers=WIDE)


def test_a_ragged_row_or_an_empty_answer_is_refused_by_line_and_column(tmp_path):
    text = WIDE.read_text()
    ragged = tmp_path / "ragged.csv"
    ragged.write_text(text + '13,"Is it safe?",short answer,\n')
    with pytest.raises(InputError, match=r"ragged\.csv:14: 4 cells, the header has 7"):
        read_wide(ragged, SOURCES)
    empty = tmp_path / "empty.csv"
    empty.write_text(text + '13,"Is it safe?",,"a human answer",,,"a GPT answer"\n')
    with pytest.raises(InputError, match=r"empty\.csv:14: field 'Gemini-1\.5 Pro' no answer from 'Gemini-1\.5 Pro'"):
        read_wide(empty, SOURCES)
    assert len(read_wide(empty, ["Edited human answer", "GPT-4-Turbo"]).rows) == 3  # the row kept: its named answers are there
    again = tmp_path / "again.csv"
    again.write_text(text + '7,"Is it safe?",,"a human answer",,"b","a GPT answer"\n')
    with pytest.raises(InputError, match=r"again\.csv:14: field 'question_id' question '7' again \(first on line 2\)"):
        read_wide(again, SOURCES)
    r = _import(tmp_path, answers=ragged)
    assert r.exit_code == 2 and "ragged.csv:14" in " ".join(r.output.split()) and not (tmp_path / "r").exists()


def test_ratings_of_paragraphs_an_answer_does_not_have_are_refused(tmp_path):
    # the second question's GPT-4-Turbo answer made one paragraph where the ratings rate two (answer 0's)
    rows = WIDE.read_text().replace(
        "[gpt q7] It is a myth that lotion keeps radiation in the skin; once treatment ends there is nothing radioactive left.\n\n", "[gpt q7] "
    )
    swapped = tmp_path / "swapped.csv"
    swapped.write_text(rows)
    r = _import(tmp_path, answers=swapped)
    assert r.exit_code == 2 and not (tmp_path / "r").exists()
    msg = " ".join(r.output.split())
    assert "swapped.csv:2: field 'GPT-4-Turbo'" in msg and "rated paragraph 2 of unit 'q1-gpt-4-turbo', but this answer has 1 paragraphs" in msg


@pytest.mark.skipif(
    not (RELEASED / "data" / "human_answer_with_models.csv").is_file() or not (RELEASED / "result_analysis" / "survey_results.csv").is_file(),
    reason=f"the released CancerCare answers and survey export are not at {RELEASED} (data/, questionnaire/, result_analysis/)",
)
def test_the_released_answer_file_imports_with_the_released_export(tmp_path):
    sources = "Edited human answer,Gemini-1.5 Pro,GPT-4-Turbo,LLaMa-3.1-Instruct 405B"
    args = ["review", "import", str(RELEASED / "result_analysis" / "survey_results.csv"), "--rubric", "cancercare"]
    args += ["--survey", str(RELEASED / "questionnaire" / "full_survey.json"), "--answers", str(RELEASED / "data" / "human_answer_with_models.csv")]
    r = CliRunner().invoke(app, [*args, "--sources", sources, "--out", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "100 units shown with their answer" in out and "0 answers there rated by no one; columns left out: answer, comments" in out
    means = {s: round(v, 2) for s, v in _means(tmp_path / "r").items()}
    assert means == {"GPT-4-Turbo": 4.13, "Gemini-1.5 Pro": 3.91, "LLaMa-3.1-Instruct 405B": 3.57, "Edited human answer": 3.20}
    with ReviewDB(tmp_path / "r") as db:
        units = db.units()
    # every paragraph rated has its text: the survey's numbering (split at each blank line) holds for all 100 answers
    assert all(u.display and len(u.display[1]["parts"]) >= 1 for u in units.values())
    assert units["q1-gemini-1-5-pro"].display[0]["text"].startswith("I was diagnosed with CLL in 2003")


def test_a_review_sampled_from_the_wide_file_holds_the_units_of_the_long_layout(tmp_path):
    """`review sample --answers FILE --sources ...` on the wide file gives the units (ids, strata and
    what a reviewer sees) that the same answers in the long layout (question_id, question, source, answer) give."""
    long = tmp_path / "long.csv"
    rows = [[r.question_id, r.question, s, a] for r in read_wide(WIDE, SOURCES).rows for s, a in r.answers.items()]
    with open(long, "w", newline="") as fh:
        csv.writer(fh).writerows([["question_id", "question", "source", "answer"], *rows])
    common = ["review", "sample", "--rubric", "cancercare", "--reviewers", "ann,ben", "--raters", "2"]
    r = CliRunner().invoke(app, [*common, "--answers", str(WIDE), "--sources", ",".join(SOURCES), "--out", str(tmp_path / "wide")])
    assert r.exit_code == 0, r.output
    assert "6 of 6 units sampled" in r.output
    assert CliRunner().invoke(app, [*common, "--answers", str(long), "--out", str(tmp_path / "long")]).exit_code == 0
    with ReviewDB(tmp_path / "wide") as a, ReviewDB(tmp_path / "long") as b:
        assert a.units() == b.units()
        assert {u.strata["source"] for u in a.units().values()} == set(SOURCES)
    r = CliRunner().invoke(app, [*common, "--answers", str(WIDE), "--sources", "GPT-4-Turbo,GPT-4", "--out", str(tmp_path / "bad")])
    assert r.exit_code == 2 and "answers_wide.csv:1" in " ".join(r.output.split()) and not (tmp_path / "bad").exists()
    r = CliRunner().invoke(
        app, ["review", "sample", "--rubric", "realism", "--reviewers", "ann", "--pairs", str(WIDE), "--sources", "GPT-4-Turbo", "--out", str(tmp_path / "x")]
    )
    assert r.exit_code != 0 and "reads no wide answers file" in " ".join(r.output.split())
