"""Your own questions, end to end: the question sheet a clinician writes (examples/my_questions.csv,
five questions) -> `medres import` -> `medres build misleading` (the generator is the stub server
with the misleading family's fake generator: the boundary we do not own) -> `medres eval` on the
stub server -> `medres report`. The items layout `medres import` writes is read back by `import`
and by `build`, and the sheet itself is read by `build` directly."""

from __future__ import annotations

import csv
import json

from typer.testing import CliRunner

from conftest import ROOT
from medresilience.cli import app
from medresilience.families.misleading.testing import FakeGenerator
from medresilience.testing.stub import StubServer, message_text

SHEET = ROOT / "examples" / "my_questions.csv"


def _gold() -> dict[str, str]:
    with SHEET.open(encoding="utf-8") as fh:
        return {row["question"]: row["answer"] for row in csv.DictReader(fh)}


def _knows_the_answers(gold: dict[str, str]):
    """A model that answers every question of the sheet right, whatever context is around it."""

    def policy(messages, request):
        text = message_text(messages[-1])
        hits = [letter for question, letter in gold.items() if question in text]
        assert len(hits) == 1, text[:300]
        return f"Answer: {hits[0]}"

    return policy


def _ok(result) -> str:
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def test_a_question_sheet_becomes_a_report(tmp_path):
    run = CliRunner()
    items = tmp_path / "my_questions.jsonl"
    assert "5 items" in _ok(run.invoke(app, ["import", str(SHEET), "--out", str(items)]))
    rows = [json.loads(line) for line in items.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["chest-1", "sepsis-1", "hypo-1", "stroke-1", "anaph-1"]
    assert [r["answer"] for r in rows] == list("ABCDE") and all(len(r["options"]) == 5 for r in rows)
    assert rows[0]["source"] == "my_questions" and rows[0]["meta"]["explanation"].startswith("Aspirin")

    again = tmp_path / "again.jsonl"  # the items layout is itself an input of import
    _ok(run.invoke(app, ["import", str(items), "--out", str(again)]))
    assert again.read_text() == items.read_text()

    with StubServer(policy=FakeGenerator()) as srv:
        gen = f"openai:gen,base_url={srv.base_url}"
        out = _ok(run.invoke(app, ["build", "misleading", "--items", str(items), "--generator", gen, "--out", str(tmp_path / "suite")]))
        assert "kept 5 of 5 items" in out
        _ok(run.invoke(app, ["build", "misleading", "--items", str(SHEET), "--generator", gen, "--out", str(tmp_path / "suite-csv")]))
    assert (tmp_path / "suite" / "items.jsonl").read_text() == (tmp_path / "suite-csv" / "items.jsonl").read_text()

    with StubServer(policy=_knows_the_answers(_gold())) as srv:
        model = f"openai:m,base_url={srv.base_url},label=knows-all"
        out = _ok(run.invoke(app, ["eval", "--suite", str(tmp_path / "suite"), "--model", model, "--out", str(tmp_path / "run")]))
    assert "Clean acc" in out
    overall = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["knows-all"]["none"]["overall"]
    assert (overall["clean_acc"]["k"], overall["clean_acc"]["n"]) == (5, 5)
    assert (overall["type2_acc"]["k"], overall["type2_acc"]["n"]) == (5, 5)
    assert overall["type1"]["asr"]["k"] == 0 and overall["type1"]["asr"]["n"] == 5

    out = _ok(run.invoke(app, ["report", str(tmp_path / "run"), "--out", str(tmp_path / "report")]))
    html = (tmp_path / "report" / "report.html").read_text()
    assert "knows-all" in html and "my_questions" in html
    metrics = (tmp_path / "report" / "tables" / "metrics.csv").read_text()
    assert "my_questions" in metrics


def _import_error(tmp_path, name: str, text: str) -> str:
    src = tmp_path / name
    src.write_text(text, encoding="utf-8")
    r = CliRunner().invoke(app, ["import", str(src), "--out", str(tmp_path / "out.jsonl")])
    assert r.exit_code != 0 and not (tmp_path / "out.jsonl").exists()
    return " ".join(r.output.split())


def test_bad_sheet_rows_are_named_by_file_line_and_column(tmp_path):
    assert "bad.csv:1: field 'anwser' unknown column" in _import_error(tmp_path, "bad.csv", "question,A,B,anwser\nQ,a,b,A\n")
    assert "bad.csv:3: field 'B' is blank, but option C after it is not" in _import_error(tmp_path, "bad.csv", "question,A,B,C,answer\nQ1,a,b,c,A\nQ2,a,,c,B\n")
    assert "bad.csv:2: field 'Correct answer' 'Z' is neither an option letter (A, B)" in _import_error(
        tmp_path, "bad.csv", "Question,Option A,Option B,Option C,Correct answer\nQ3,a,b,,Z\n"
    )
    assert "bad.csv:3: field 'id' duplicate id 'x'" in _import_error(tmp_path, "bad.csv", "id,question,A,B,answer\nx,Q1,a,b,A\nx,Q2,a,b,B\n")
    assert "bad.csv:2: field 'question' is blank" in _import_error(tmp_path, "bad.csv", "question,A,B,answer\n,a,b,A\n")


def test_a_sheet_in_other_spellings_reads_the_same(tmp_path):
    """Semicolons (some locales' spreadsheets), option columns named `Option 1..`, answers given as
    text or as a lower-case letter, a question with fewer options than the sheet, blank rows."""
    src = tmp_path / "ward.csv"
    src.write_text(
        "\ufeffQuestion;Option 1;Option 2;Option 3;Answer;Source\n"
        '"First drug in anaphylaxis; adult?";Adrenaline IM;Antihistamine;;adrenaline im;ward-quiz\n'
        ";;;;;\n"
        "Second?;x;y;z;c;ward-quiz\n",
        encoding="utf-8",
    )
    _ok(CliRunner().invoke(app, ["import", str(src), "--out", str(tmp_path / "w.jsonl")]))
    rows = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    assert [(r["id"], r["source"], r["answer"], len(r["options"])) for r in rows] == [("ward-1", "ward-quiz", "A", 2), ("ward-2", "ward-quiz", "C", 3)]
    assert rows[0]["question"] == "First drug in anaphylaxis; adult?"


def test_bad_items_rows_are_named_by_file_line_and_field(tmp_path):
    good = '{"id": "q1", "source": "mine", "question": "Q?", "options": {"A": "a", "B": "b"}, "answer": "A"}\n'
    assert "bad.jsonl:2: field 'answer'" in _import_error(
        tmp_path, "bad.jsonl", good + '{"id": "q2", "source": "mine", "question": "Q?", "options": {"A": "a", "B": "b"}, "answer": "C"}\n'
    )
    assert "bad.jsonl:2: field 'id' duplicate id 'q1'" in _import_error(tmp_path, "bad.jsonl", good + good)
    assert "bad.jsonl:2: field 'optoins'" in _import_error(
        tmp_path, "bad.jsonl", good + '{"id": "q3", "source": "mine", "question": "Q?", "optoins": {"A": "a", "B": "b"}, "answer": "A"}\n'
    )
