"""Free-form cases: the common open layout (question, answer) is read as items without options,
`medres import --format diagnosis` turns any MCQ or free-form file into diagnosis cases, and a
suite of free-form cases runs in diagnosis mode (MCQ mode refuses it, saying why)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, shared_data
from medresilience import EvalOptions, evaluate
from medresilience.cli import app
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item
from medresilience.runtime.errors import ConfigError, InputError
from medresilience.runtime.fileio import read_jsonl
from medresilience.sources import detect_format, load_items
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer


def _freeform(tmp_path: Path) -> Path:
    """The handmade MCQ fixtures in the free-form layout: question, the gold option's text as the answer."""
    rows = []
    for line in (FIXTURES / "noise_items.jsonl").read_text().splitlines():
        o = json.loads(line)
        rows.append({"id": o["id"], "question": o["question"], "answer": o["options"][o["answer"]]})
    p = tmp_path / "open.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_the_free_form_layout_is_read_as_items_without_options(tmp_path):
    p = _freeform(tmp_path)
    assert detect_format(p) == "freeform"
    items = list(load_items(p))
    assert [i.id for i in items] == ["h1", "h2", "h3", "h4", "h5", "h6"]
    assert items[0].options is None and items[0].reference == "Iron deficiency anemia" and items[0].source == "freeform"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"question": "A case. What is the most likely diagnosis?", "answer": "Gout"}\n'
        '{"question": "Another case. What is the most likely diagnosis?", "answer": "  "}\n'
    )
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'answer' is blank"):
        list(load_items(bad, fmt="freeform"))


def test_import_format_diagnosis_from_a_free_form_file(tmp_path):
    out = tmp_path / "cases.jsonl"
    r = CliRunner().invoke(app, ["import", str(_freeform(tmp_path)), "--format", "diagnosis", "--out", str(out)])
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert "5 items" in said and "not_a_diagnosis_question: 1" in said  # h5 asks for a next step
    cases = list(read_jsonl(out, Item))
    h1 = cases[0]
    assert h1.reference == "Iron deficiency anemia" and h1.options is None
    assert h1.question.endswith("Ferritin 6 ng/mL") and h1.meta["ask"] == "Which of the following is the most likely diagnosis?"
    assert h1.meta["open_ask"] == "What is the most likely diagnosis?"


def test_import_format_diagnosis_that_finds_no_case_fails_and_writes_nothing(tmp_path):
    # PubMedQA asks yes/no questions about abstracts: no diagnosis case among them
    fixture = FIXTURES / "pubmedqa_sample.json"
    out = tmp_path / "cases.jsonl"
    r = CliRunner().invoke(app, ["import", str(fixture), "--format", "diagnosis", "--out", str(out)])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "pubmedqa_sample.json" in lines[0] and "no diagnosis case" in lines[0], r.output
    assert "not_a_diagnosis_question" in lines[0]  # why each row was passed over
    assert not out.exists() and not list(tmp_path.iterdir())


def test_import_format_diagnosis_from_medqa():
    path = shared_data("medqa", "us_4options_test_even.jsonl")
    from collections import Counter

    from medresilience.families.noise.construct.cases import read_diagnosis_cases

    skips: Counter = Counter()
    cases = list(read_diagnosis_cases(path, skips))
    assert len(cases) == 139 and sum(skips.values()) == 637 - 139
    assert all(c.options and c.reference == c.options[c.answer] and c.meta["ask_kind"] in ("diagnosis", "cause") for c in cases)


def test_free_form_cases_run_in_diagnosis_mode_only(tmp_path):
    inventory = str(FIXTURES / "noise_abbreviations.tsv")
    res = build_noise(_freeform(tmp_path), tmp_path / "suite", None, NoiseBuildOptions(variants=("abbreviations",), abbreviations=(inventory,)))
    suite = Suite.load(res.out)
    assert res.report["dropped"] == {"no_variant": 3}  # the small inventory abbreviates nothing in three of the five cases
    assert list(suite.items) == ["h1", "h2"] and {p.condition for p in suite.probes} == {"abbreviations"}
    with pytest.raises(ConfigError, match="has no options"):
        evaluate(suite, [parse_model_spec("openai:m,base_url=http://127.0.0.1:9")], tmp_path / "mcq", EvalOptions())

    def answerer(messages, request):
        assert "A)" not in messages[-1]["content"]  # no options shown
        return "Reasoning.\nFINAL DIAGNOSIS: Iron deficiency anemia"

    def judge(messages, request):
        user = messages[-1]["content"]
        same = "<reference>\nIron deficiency anemia\n</reference>" in user
        return json.dumps({"reason": "compared", "verdict": "match" if same else "no_match"})

    with StubServer(policy=answerer) as srv, StubServer(policy=judge) as jsrv:
        run = evaluate(
            suite,
            [parse_model_spec(f"openai:m,base_url={srv.base_url}")],
            tmp_path / "dx",
            EvalOptions(family={"mode": "diagnosis", "judge": f"openai:j,base_url={jsrv.base_url}"}),
        )
    o = run.results.models["m"]["none"]["overall"]
    assert (o["clean_acc"]["k"], o["clean_acc"]["n"]) == (1, 2) and (o["abbreviations_acc"]["k"], o["abbreviations_acc"]["n"]) == (1, 2)
