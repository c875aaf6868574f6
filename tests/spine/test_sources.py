"""Source loaders: real MedQA / MedMCQA files from ../shared/data, and small real-format fixtures
for MMLU CSV, malformed rows and MedMisBench-style release files."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT, SHARED_DATA
from medresilience.errors import InputError
from medresilience.families.misleading.bundles import probes_from_bundle
from medresilience.families.misleading.formats.release import RELEASE_ALIASES, iter_release, read_release, write_release
from medresilience.records import Item, SuiteManifest
from medresilience.sources import (
    detect_format,
    formats,
    load_items,
    read_medmcqa,
    read_medqa,
    read_mmlu,
)
from medresilience.suite import Suite

DATA = SHARED_DATA
SAMPLE_RELEASE = ROOT / "src" / "medresilience" / "data" / "basic_medicine_release.jsonl"


def shared(*parts: str) -> Path:
    p = DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not available: {p} is missing (../shared/data is not part of the project)")
    return p


def write_lines(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def assert_error(exc: pytest.ExceptionInfo, path: Path, line: int | None, field: str | None) -> str:
    err = exc.value
    msg = str(err)
    assert "\n" not in msg, msg
    assert path.name in msg, msg
    assert err.line == line, msg
    if line is not None:
        assert f":{line}:" in msg, msg
    assert err.field == field, msg
    if field is not None:
        assert f"field '{field}'" in msg, msg
    return msg


# --------------------------------------------------------------------------- real data


def test_medqa_real_file():
    path = shared("medqa", "us_4options_test_even.jsonl")
    assert detect_format(path) == "medqa"
    items = list(load_items(path))
    assert len(items) == 637
    assert len({it.id for it in items}) == 637
    assert all(it.source == "medqa" and it.answer in "ABCD" and list(it.options) == list("ABCD") for it in items)
    assert Counter(it.meta["meta_info"] for it in items) == {"step1": 324, "step2&3": 313}
    first = items[0]
    assert first.id == "medqa-1"
    assert first.question.startswith("A junior orthopaedic surgery resident is completing a carpal tunnel repair")
    assert first.answer == "B"
    assert first.options["B"] == "Tell the attending that he cannot fail to disclose this mistake"
    assert first.meta == {"meta_info": "step1"}
    assert first.subject is None


def test_medmcqa_real_file():
    path = shared("medmcqa", "dev.json")
    assert detect_format(path) == "medmcqa"
    items = list(read_medmcqa(path))
    assert len(items) == 4183
    by_id = {it.id: it for it in items}
    assert len(by_id) == 4183
    # line 22 of dev.json: cop 3 -> C
    it = by_id["medmcqa-406b5b4f-9ad4-42c0-9669-12d038df4ac8"]
    assert it.question == "Highest concentration of oxygen is delivered through?"
    assert it.answer == "C" and it.options["C"] == "Bag and mask"
    assert it.subject == "Anaesthesia"
    assert it.meta["choice_type"] == "single" and it.meta["topic"] == "AIIMS 2017"
    assert it.meta["exp"].startswith("Bag and mask-100% O2")
    # line 1: cop 1 -> A, a "multi" item, no topic
    first = items[0]
    assert first.id == "medmcqa-45258d3d-b974-44dd-a161-c3fccbdadd88"
    assert first.answer == "A" and first.meta["choice_type"] == "multi" and first.meta["topic"] is None
    kinds = Counter(i.meta["choice_type"] for i in items)
    assert set(kinds) == {"single", "multi"} and kinds["multi"] > 0
    assert Counter(i.answer for i in items) == {"A": 1348, "B": 1085, "C": 925, "D": 825}
    assert len({i.subject for i in items}) == 21


# --------------------------------------------------------------------------- MMLU CSV


def test_mmlu_csv_quoted_fields(tmp_path):
    path = tmp_path / "clinical_knowledge_test.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Which vessel, if any, supplies the SA node?", "Right coronary artery", "Aorta", "Left, then right", "None", "A"])
        w.writerow(["Multi-line\nquestion text", "one", "two", "three", "four", "d"])
        fh.write("\n")
        w.writerow(["Third question", "1", "2", "3", "4", "C"])
    assert detect_format(path) == "mmlu"
    gen = load_items(path)
    assert iter(gen) is gen  # streamed
    items = list(gen)
    assert [i.id for i in items] == [f"mmlu-clinical_knowledge_test-{n}" for n in (1, 2, 3)]
    assert items[0].question == "Which vessel, if any, supplies the SA node?"
    assert items[0].options["C"] == "Left, then right" and items[0].answer == "A"
    assert items[1].question == "Multi-line\nquestion text" and items[1].answer == "D"
    assert all(i.source == "mmlu" and i.subject == "clinical_knowledge" for i in items)
    assert [i.subject for i in read_mmlu(path, subject="ck")] == ["ck"] * 3


def test_mmlu_wrong_column_count_and_answer(tmp_path):
    path = tmp_path / "anatomy_dev.csv"
    path.write_text('"Stem\nover two lines",a,b,c,d,B\nQ2,a,b,c,d\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    msg = assert_error(exc, path, 3, "columns")
    assert "expected 6 columns" in msg and "got 5" in msg
    path.write_text("Q1,a,b,c,d,E\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(read_mmlu(path))
    assert_error(exc, path, 1, "answer")


# --------------------------------------------------------------------------- bad rows

MEDQA_ROW = {
    "question": "Which drug reverses heparin?",
    "answer": "Protamine sulfate",
    "options": {"A": "Vitamin K", "B": "Protamine sulfate", "C": "Idarucizumab", "D": "Andexanet"},
    "meta_info": "step1",
    "answer_idx": "B",
    "metamap_phrases": ["drug", "heparin"],
}
MEDMCQA_ROW = {
    "question": "Drug of choice for absence seizures?",
    "exp": None,
    "cop": 2,
    "opa": "Phenytoin",
    "opb": "Ethosuximide",
    "opc": "Carbamazepine",
    "opd": "Phenobarbital",
    "subject_name": "Pharmacology",
    "topic_name": None,
    "id": "row-1",
    "choice_type": "single",
}


def test_malformed_json_line_names_the_line(tmp_path):
    path = write_lines(tmp_path / "medqa_bad.jsonl", [MEDQA_ROW, "", '{"question": "cut off', MEDQA_ROW])
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    msg = assert_error(exc, path, 3, None)
    assert "not valid JSON" in msg


def test_medmcqa_cop_out_of_range(tmp_path):
    path = write_lines(tmp_path / "dev.json", [MEDMCQA_ROW, {**MEDMCQA_ROW, "id": "row-2", "cop": 5}])
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    msg = assert_error(exc, path, 2, "cop")
    assert "1-4" in msg and "5" in msg


def test_medqa_answer_text_mismatch(tmp_path):
    path = write_lines(tmp_path / "medqa.jsonl", [MEDQA_ROW, {**MEDQA_ROW, "answer": "Vitamin K"}])
    with pytest.raises(InputError) as exc:
        list(read_medqa(path))
    msg = assert_error(exc, path, 2, "answer")
    assert "Vitamin K" in msg


def test_duplicate_ids(tmp_path):
    path = write_lines(tmp_path / "dev.json", [MEDMCQA_ROW, {**MEDMCQA_ROW, "id": "row-2"}, MEDMCQA_ROW])
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    msg = assert_error(exc, path, 3, "id")
    assert "first on line 1" in msg
    path = write_lines(tmp_path / "medqa.jsonl", [{**MEDQA_ROW, "id": "x"}, {**MEDQA_ROW, "id": "x"}])
    with pytest.raises(InputError) as exc:
        list(load_items(path, fmt="medqa"))
    assert_error(exc, path, 2, "id")


def test_blank_question_and_empty_option(tmp_path):
    path = write_lines(tmp_path / "dev.json", [{**MEDMCQA_ROW, "question": "   "}])
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    assert_error(exc, path, 1, "question")
    path = write_lines(tmp_path / "dev.json", [{**MEDMCQA_ROW, "opb": ""}])
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    assert_error(exc, path, 1, "opb")
    path = write_lines(tmp_path / "medqa.jsonl", [{**MEDQA_ROW, "options": {**MEDQA_ROW["options"], "C": ""}}])
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    assert_error(exc, path, 1, "options.C")


def test_unknown_format(tmp_path):
    path = write_lines(tmp_path / "other.jsonl", [{"prompt": "hi", "completion": "there"}])
    with pytest.raises(InputError) as exc:
        load_items(path)
    msg = assert_error(exc, path, 1, None)
    assert all(f in msg for f in formats())
    with pytest.raises(InputError) as exc:
        load_items(path, fmt="nosuchformat")
    assert ", ".join(formats()) in str(exc.value)
    with pytest.raises(InputError) as exc:
        load_items(tmp_path / "missing.jsonl")
    assert "file not found" in str(exc.value)


# --------------------------------------------------------------------------- releases


def release_row(n: int, **over) -> dict:
    row = {
        "id": f"bm-{n}",
        "source_dataset": "medqa" if n % 2 else "medmcqa",
        "subject": "cardiology",
        "question": f"Question {n}: which finding fits?",
        "options": {"A": f"alpha {n}", "B": f"beta {n}", "C": f"gamma {n}", "D": f"delta {n}"},
        "answer": "ABCD"[n % 4],
        "content_type": "threshold_corruption",
        "provenance": "authority",
        "option_contexts": {k: f"Sentence for option {k} of item {n}." for k in "ABCD"},
    }
    row.update(over)
    return row


def test_release_round_trip(tmp_path):
    rows = [
        release_row(1),
        release_row(2, subject=None, meta={"note": "kept"}),
        # one item with two bundles (crossed design): row ids are bundle ids, item_id names the item
        release_row(3, id="bm-3#a", item_id="bm-3", content_type="cue_remapping", provenance="patient"),
        release_row(
            3,
            id="bm-3#b",
            item_id="bm-3",
            content_type="exception_poisoning",
            provenance="neutral",
            option_contexts={k: f"Another sentence for {k}." for k in "ABCD"},
            bundle_meta={"gen": "m1"},
        ),
    ]
    src = write_lines(tmp_path / "mini_release.jsonl", rows)
    suite = read_release(src, seed=11)
    assert suite.manifest.name == "mini_release" and suite.manifest.seed == 11
    assert "mini_release.jsonl" in suite.manifest.description
    assert list(suite.items) == ["bm-1", "bm-2", "bm-3"]
    assert suite.items["bm-2"].subject is None and suite.items["bm-2"].meta == {"note": "kept"}
    assert suite.items["bm-1"].source == "medqa" and suite.items["bm-2"].source == "medmcqa"
    assert len(suite.probes) == 4 * 4  # 4 bundles x (3 Type 1 + 1 Type 2)
    assert sum(p.sampled for p in suite.probes) == 4
    assert {p.bundle_id for p in suite.probes if p.item_id == "bm-3"} == {"bm-3#a", "bm-3#b"}
    assert all(p.meta == {"gen": "m1"} for p in suite.probes if p.bundle_id == "bm-3#b")

    out = tmp_path / "out" / "again.jsonl"
    assert write_release(suite, out) == 4
    again = read_release(out, seed=11)
    assert list(again.items.values()) == list(suite.items.values())
    assert again.probes == suite.probes
    # the written file reads back to itself, and through a saved suite directory too
    assert write_release(again, tmp_path / "third.jsonl") == 4
    assert (tmp_path / "third.jsonl").read_text() == out.read_text()
    saved = Suite.load(suite.save(tmp_path / "suite"))
    write_release(saved, tmp_path / "fourth.jsonl")
    assert (tmp_path / "fourth.jsonl").read_text() == out.read_text()
    # items only, through the one entry point
    assert detect_format(src) == "bundles"
    assert [i.id for i in load_items(src)] == ["bm-1", "bm-2", "bm-3"]


def test_write_release_from_built_suite(tmp_path):
    item = Item(id="k1", source="mmlu", question="Q?", options={"A": "a", "B": "b", "C": "c"}, answer="C", meta={"choice_type": "single"})
    solo = Item(id="k2", source="mmlu", question="Q2?", options={"A": "a", "B": "b"}, answer="A")
    bundle = {"A": "false a", "B": "false b", "C": "true c"}
    probes = (
        probes_from_bundle(item, bundle, "cue_remapping", "neutral", 5)
        + probes_from_bundle(item, bundle, "spurious_anchoring", "authority", 5, meta={"model": "x"})
        + probes_from_bundle(solo, {"A": "true", "B": "false"}, "cue_remapping", "patient", 5, bundle_id="custom")
    )
    suite = Suite(SuiteManifest(family="misleading", name="built", seed=5), [item, solo], probes)
    path = tmp_path / "built.jsonl"
    assert write_release(suite, path) == 3
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["k1:cue_remapping:neutral", "k1:spurious_anchoring:authority", "k2"]
    assert rows[0]["item_id"] == "k1" and "item_id" not in rows[2] and rows[2]["bundle_id"] == "custom"
    back = read_release(path, seed=5)
    assert list(back.items.values()) == [item, solo]
    assert back.probes == probes


def test_write_release_writes_nothing_on_error(tmp_path):
    item = Item(id="k1", source="mmlu", question="Q?", options={"A": "a", "B": "b", "C": "c"}, answer="C")
    probes = probes_from_bundle(item, {"A": "fa", "B": "fb", "C": "tc"}, "cue_remapping", "neutral", 0)
    type1_only = Suite(SuiteManifest(family="misleading", name="t1", seed=0), [item], [p for p in probes if p.condition == "type1"])
    path = tmp_path / "out.jsonl"
    with pytest.raises(InputError) as exc:
        write_release(type1_only, path)
    assert exc.value.field == "option_contexts" and "C" in str(exc.value)
    assert not path.exists() and list(tmp_path.iterdir()) == []
    path.write_text("old\n")
    wrong_seed = Suite(SuiteManifest(family="misleading", name="s", seed=1), [item], probes)  # probes were drawn with seed 0
    with pytest.raises(InputError) as exc:
        write_release(wrong_seed, path)
    assert exc.value.field == "probes" and "seed 1" in str(exc.value)
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_release_aliases(tmp_path):
    assert "correct_answer" in RELEASE_ALIASES["answer"] and "contexts" in RELEASE_ALIASES["option_contexts"]
    row = {
        "id": 17,
        "dataset": "MedQA",
        "question": "Which electrolyte is low in refeeding syndrome?",
        "options": ["Sodium", "Phosphate", "Calcium", "Chloride"],
        "correct_answer": "Phosphate",
        "answer_idx": "b",
        "selected_content_type": "Threshold / reference corruption",
        "sampled_provenance": "Patient belief / claim",
        "contexts": ["Sodium falls first.", "Phosphate falls on refeeding.", "Calcium falls first.", "Chloride falls first."],
        "explanation": "extra fields are kept in meta",
    }
    path = write_lines(tmp_path / "real_release.jsonl", [row])
    (rr,) = list(iter_release(path))
    assert rr.item.id == "17" and rr.item.source == "MedQA"
    assert rr.item.options == {"A": "Sodium", "B": "Phosphate", "C": "Calcium", "D": "Chloride"}
    assert rr.item.answer == "B"
    assert rr.item.meta == {"explanation": "extra fields are kept in meta"}
    assert (rr.content_type, rr.provenance) == ("threshold_corruption", "patient")
    assert rr.contexts["B"] == "Phosphate falls on refeeding."
    assert rr.bundle_id == "17:threshold_corruption:patient"
    suite = read_release(path)
    assert len(suite.probes) == 4
    write_release(suite, tmp_path / "canonical.jsonl")
    assert read_release(tmp_path / "canonical.jsonl").probes == suite.probes
    # aliases that disagree are an error naming the second field
    bad = write_lines(tmp_path / "bad.jsonl", [{**row, "answer_idx": "C"}])
    with pytest.raises(InputError) as exc:
        list(iter_release(bad))
    assert_error(exc, bad, 1, "answer_idx")


def test_release_unknown_content_type_and_provenance(tmp_path):
    path = write_lines(tmp_path / "rel.jsonl", [release_row(1), release_row(2, content_type="made_up_attack")])
    with pytest.raises(InputError) as exc:
        read_release(path)
    msg = assert_error(exc, path, 2, "content_type")
    assert "made_up_attack" in msg and "threshold_corruption" in msg
    path = write_lines(tmp_path / "rel.jsonl", [{**release_row(1), "provenance": None, "sampled_provenance": "rumour"}])
    with pytest.raises(InputError) as exc:
        read_release(path)
    assert_error(exc, path, 1, "sampled_provenance")
    path = write_lines(tmp_path / "rel.jsonl", [release_row(1, content_type=" ")])
    with pytest.raises(InputError) as exc:
        read_release(path)
    assert_error(exc, path, 1, "content_type")


def test_release_missing_option_context(tmp_path):
    ctx = {k: f"Sentence {k}." for k in "ABC"}
    path = write_lines(tmp_path / "rel.jsonl", [release_row(1), release_row(2, option_contexts=ctx)])
    with pytest.raises(InputError) as exc:
        read_release(path)
    msg = assert_error(exc, path, 2, "option_contexts")
    assert "D" in msg
    path = write_lines(tmp_path / "rel.jsonl", [release_row(1, option_contexts={**ctx, "D": "  "})])
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    assert_error(exc, path, 1, "option_contexts")


def test_release_duplicate_rows(tmp_path):
    path = write_lines(tmp_path / "rel.jsonl", [release_row(1), release_row(2), release_row(1)])
    with pytest.raises(InputError) as exc:
        read_release(path)
    assert_error(exc, path, 3, "id")
    # two rows of one item must repeat the item exactly
    path = write_lines(
        tmp_path / "rel.jsonl",
        [
            release_row(3, id="a", item_id="bm-3"),
            release_row(3, id="b", item_id="bm-3", question="changed", content_type="cue_remapping"),
        ],
    )
    with pytest.raises(InputError) as exc:
        read_release(path)
    assert_error(exc, path, 2, "item_id")


def test_project_sample_release(tmp_path):
    if not SAMPLE_RELEASE.exists():
        pytest.skip(f"{SAMPLE_RELEASE.name} is not in the package data")
    assert detect_format(SAMPLE_RELEASE) == "bundles"
    suite = read_release(SAMPLE_RELEASE, seed=3)
    assert len(suite.items) > 0
    assert sum(p.condition == "type2" for p in suite.probes) == sum(1 for _ in iter_release(SAMPLE_RELEASE))
    out = tmp_path / "sample.jsonl"
    write_release(suite, out)
    again = read_release(out, seed=3)
    assert list(again.items.values()) == list(suite.items.values()) and again.probes == suite.probes
