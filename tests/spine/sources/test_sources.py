"""Source loaders: real MedQA / MedMCQA files from ../shared/data, and small real-format fixtures
for MMLU CSV, malformed rows and MedMisBench-style release files; the other sources the MedMisBench
study used: MedXpertQA and PubMedQA on the real files in ../shared/data (skipped when absent), and
hand-written fixtures (tests/fixtures) for HLE, MedJourney, the layouts' variants and bad rows."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, ROOT, SHARED_DATA, one_error_line, shared_data
from medresilience.cli import app
from medresilience.families.misleading.bundles import probes_from_bundle
from medresilience.families.misleading.formats.release import RELEASE_ALIASES, iter_release, read_release, write_release
from medresilience.records import Item, SuiteManifest
from medresilience.runtime.errors import InputError
from medresilience.sources import (
    FORMATS,
    detect_format,
    formats,
    hle_choices,
    inline_choices,
    load_items,
    read_hle,
    read_medjourney,
    read_medmcqa,
    read_medqa,
    read_medxpertqa,
    read_mmlu,
    read_pubmedqa,
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
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows), encoding="utf-8")
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


def fixture(name: str) -> Path:
    return FIXTURES / name


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _hle_parquet(rows: list[dict], path: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("question", pa.string()),
            ("image", pa.string()),
            ("image_preview", image),
            ("answer", pa.string()),
            ("answer_type", pa.string()),
            ("author_name", pa.string()),
            ("rationale", pa.string()),
            ("rationale_image", image),
            ("raw_subject", pa.string()),
            ("category", pa.string()),
            ("canary", pa.string()),
        ]
    )
    rows = [{**r, "image_preview": {"bytes": b"\x89PNG fixture", "path": None} if r["image"] else None} for r in rows]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=2)
    return path


def test_medxpertqa_real_file():
    path = shared_data("medxpertqa", "text_sampled_half.jsonl")
    assert detect_format(path) == "medxpertqa"
    raw = rows_of(path)
    items = list(load_items(path))
    assert len(items) == len(raw) == 122
    assert len({it.id for it in items}) == 122
    for it, row in zip(items, raw, strict=True):
        assert it.source == "medxpertqa" and it.id == f"medxpertqa-{row['id']}"
        assert list(it.options) == list("ABCDEFGHIJ")
        assert it.options == {o["letter"]: o["content"] for o in row["options"]}
        assert it.answer == row["label"][0]
        # the stem only: the "Answer Choices: (A) ... (J) ..." block is gone
        assert "Answer Choices" not in it.question
        assert it.question == row["question"].split("\nAnswer Choices:")[0].strip()
        assert it.subject == row["body_system"]
        assert it.meta == {k: row[k] for k in ("medical_task", "body_system", "question_type")}
    first = items[0]
    assert first.id == "medxpertqa-Text-20" and first.answer == "J" and first.options["J"] == "Bacterial destruction"
    assert first.question.endswith("What is the most likely explanation for this patient's condition?")
    # a choice whose text holds "(D)" glued to a word ("Rh(D)-positive") is read whole
    rh = next(it for it in items if it.id == "medxpertqa-Text-191")
    assert rh.options["J"] == "Administer anti-D immunoglobulin only postpartum if the baby is Rh(D)-positive"
    assert Counter(it.meta["question_type"] for it in items) == {"Reasoning": 94, "Understanding": 28}


def test_medxpertqa_fixture_takes_choices_from_the_question():
    path = fixture("medxpertqa_sample.jsonl")
    assert detect_format(path) == "medxpertqa"
    with_options, without = list(read_medxpertqa(path))
    assert with_options.options["A"] == "Intravenous alteplase (tPA)" and with_options.answer == "A"
    assert with_options.question.endswith("What is the most appropriate next step in management?")
    assert "options" not in rows_of(path)[1]
    assert len(without.options) == 10 and without.answer == "A"
    assert without.options["D"] == "Hypomagnesemia due to proton pump inhibitor use"
    assert without.question.endswith("Which disturbance explains these findings?")
    assert (without.subject, without.meta["medical_task"]) == ("Urinary", "Diagnosis")


def test_medxpertqa_options_disagree_with_question():
    path = fixture("medxpertqa_bad.jsonl")
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    msg = assert_error(exc, path, 2, "options")
    assert "option D" in msg and "Hypermagnesemia due to antacid use" in msg


def test_medxpertqa_other_bad_rows(tmp_path):
    good = rows_of(fixture("medxpertqa_sample.jsonl"))[0]
    stem = good["question"].split("\nAnswer Choices:")[0]
    path = write_lines(tmp_path / "mx.jsonl", [good, {**good, "id": "Text-2", "question": stem, "options": []}])
    with pytest.raises(InputError) as exc:
        list(read_medxpertqa(path))
    assert_error(exc, path, 2, "options")
    path = write_lines(tmp_path / "mx.jsonl", [{**good, "label": ["A", "B"]}])
    with pytest.raises(InputError) as exc:
        list(read_medxpertqa(path))
    assert_error(exc, path, 1, "label")
    path = write_lines(tmp_path / "mx.jsonl", [good, good])
    with pytest.raises(InputError) as exc:
        list(read_medxpertqa(path))
    assert_error(exc, path, 2, "id")


def test_pubmedqa_real_file():
    path = shared_data("pubmedqa", "test_set_half.json")
    assert detect_format(path) == "pubmedqa"
    raw = json.loads(path.read_text(encoding="utf-8"))
    items = list(load_items(path))
    assert len(items) == len(raw) == 250
    assert [it.id for it in items] == [f"pubmedqa-{pmid}" for pmid in raw]
    assert all(it.options == {"A": "yes", "B": "no", "C": "maybe"} for it in items)
    # the answer distribution is the file's final_decision distribution
    letter = {"yes": "A", "no": "B", "maybe": "C"}
    assert Counter(it.answer for it in items) == Counter(letter[e["final_decision"]] for e in raw.values())
    assert Counter(it.answer for it in items) == {"A": 140, "B": 84, "C": 26}
    for it, (_pmid, entry) in zip(items, raw.items(), strict=True):
        assert it.question == entry["QUESTION"]
        assert it.answer == letter[entry["final_decision"]]
        assert it.meta["YEAR"] == entry["YEAR"] and it.meta["MESHES"] == entry["MESHES"]
        assert it.meta["LONG_ANSWER"] == entry["LONG_ANSWER"]
        assert it.meta["context"] == "\n".join(f"{lab}: {ctx}" for lab, ctx in zip(entry["LABELS"], entry["CONTEXTS"], strict=True))
    first = items[0]
    assert first.id == "pubmedqa-10135926" and first.answer == "A"
    assert first.meta["context"].startswith("INTRODUCTION: Patients transported by helicopter often require advanced airway management.")
    assert "\nSETTING: The study was conducted in an MBB BO-105 helicopter.\n" in first.meta["context"]
    assert sum(it.meta["YEAR"] is None for it in items) == 13


def test_pubmedqa_fixture_and_compact_file(tmp_path):
    path = fixture("pubmedqa_sample.json")
    assert detect_format(path) == "pubmedqa"
    items = list(read_pubmedqa(path))
    assert [(it.id, it.answer) for it in items] == [("pubmedqa-90000001", "A"), ("pubmedqa-90000002", "B"), ("pubmedqa-90000003", "C")]
    assert items[1].meta["context"] == (
        "BACKGROUND: Ferritin is an acute-phase reactant.\nRESULTS: In 96 patients with active disease, bone marrow iron staining was "
        "compared with serum ferritin; a ferritin above 100 ng/mL was found in 11 of 29 patients with absent marrow iron."
    )
    assert items[2].meta["YEAR"] is None and items[2].subject is None
    # the same object written on one line is still PubMedQA, and gives the same items
    compact = tmp_path / "ori_pqal.json"
    compact.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8"))), encoding="utf-8")
    assert detect_format(compact) == "pubmedqa"
    assert list(load_items(compact)) == items


def test_pubmedqa_bad_decision_names_its_line():
    path = fixture("pubmedqa_bad.json")
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, 1) if '"probably not"' in text)
    gen = load_items(path)
    assert next(gen).id == "pubmedqa-90000001"  # streamed: the first PMID comes before the bad one
    with pytest.raises(InputError) as exc:
        next(gen)
    msg = assert_error(exc, path, line, "final_decision")
    assert "probably not" in msg


def test_pubmedqa_bad_files(tmp_path):
    entry = json.loads(fixture("pubmedqa_sample.json").read_text(encoding="utf-8"))["90000001"]
    path = tmp_path / "pq.json"
    path.write_text('{\n "1": ' + json.dumps(entry) + ',\n "1": ' + json.dumps(entry) + "\n}\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(read_pubmedqa(path))
    assert_error(exc, path, 3, "PMID")
    path.write_text('{\n "1": ' + json.dumps(entry) + ',\n "2": {"QUESTION": "cut off\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(read_pubmedqa(path))
    msg = assert_error(exc, path, 3, None)
    assert "not valid JSON" in msg
    path.write_text(json.dumps([entry]), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(read_pubmedqa(path))
    assert "keyed by PMID" in assert_error(exc, path, 1, None)
    path.write_text(json.dumps({"1": {**entry, "LABELS": entry["LABELS"][:1]}}, indent=1), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(read_pubmedqa(path))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if '"LABELS"' in text)
    assert_error(exc, path, line, "LABELS")


def test_hle_fixture_counts_skips():
    path = fixture("hle_sample.jsonl")
    assert detect_format(path) == "hle"
    skips: Counter = Counter()
    items = list(load_items(path, skips=skips))
    assert skips == {"not multiple choice": 2, "image": 1}
    assert [it.id for it in items] == ["hle-66f0a1b2c3d4e5f600000001", "hle-66f0a1b2c3d4e5f600000002", "hle-66f0a1b2c3d4e5f600000006"]
    assert all(it.source == "hle" and it.answer == "B" for it in items)
    header, lines, inline = items
    # "Answer Choices:" + "A. ..." lines
    assert header.options == {"A": "Propranolol", "B": "Phenoxybenzamine", "C": "Hydrochlorothiazide", "D": "Spironolactone", "E": "Metyrapone"}
    assert header.question.endswith("Before adrenalectomy, which drug should be started first?")
    assert header.subject == "Endocrinology" and header.meta["category"] == "Biology/Medicine"
    assert header.meta["rationale"].startswith("Alpha blockade comes before beta blockade")
    # trailing "A) ..." lines without a header
    assert lines.options["B"] == "Schistocytes with thrombocytopenia" and len(lines.options) == 4
    assert lines.question == "Which finding on a peripheral blood smear is most specific for thrombotic thrombocytopenic purpura?"
    # "Answer Choices: (A) ... (B) ..." on one line
    assert inline.options["C"] == "Splitting of the glomerular basement membrane"
    assert "Answer Choices" not in inline.question
    # the counter is optional, and adds up across reads
    assert [it.id for it in read_hle(path)] == [it.id for it in items]
    list(read_hle(path, skips=skips))
    assert skips == {"not multiple choice": 4, "image": 2}


def test_hle_parquet_gives_the_same_items(tmp_path):
    src = fixture("hle_sample.jsonl")
    path = _hle_parquet(rows_of(src), tmp_path / "test-00000-of-00001.parquet")
    assert detect_format(path) == "hle"
    from_parquet, from_jsonl = Counter(), Counter()
    assert list(load_items(path, skips=from_parquet)) == list(load_items(src, skips=from_jsonl))
    assert from_parquet == from_jsonl == {"not multiple choice": 2, "image": 1}
    # a row with only an image preview (no data URI in `image`) is an image row too
    rows = rows_of(src)
    rows[0] = {**rows[0], "image": ""}
    path = _hle_parquet(rows, tmp_path / "preview.parquet")
    skips = Counter()
    assert len(list(read_hle(path, skips=skips))) == 3 and skips["image"] == 1
    # errors name the 1-based row
    bad = _hle_parquet(rows_of(fixture("hle_bad.jsonl")), tmp_path / "bad.parquet")
    with pytest.raises(InputError) as exc:
        list(load_items(bad))
    assert_error(exc, bad, 2, "answer")


def test_parquet_that_is_not_hle(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"question": ["q"], "opa": ["a"], "cop": [1]}), path)
    assert detect_format(path) == "medmcqa"  # the hub's layout of MedMCQA (sources.hub_layouts)
    pq.write_table(pa.table({"question": ["q"], "label": ["a"]}), path)
    with pytest.raises(InputError) as exc:
        detect_format(path)
    assert "Parquet is read for HLE and the hub's MedMCQA, MMLU and PubMedQA" in assert_error(exc, path, None, None)
    path.write_text("not parquet", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(read_hle(path))
    assert "Parquet" in str(exc.value)


def test_hle_choice_layouts(tmp_path):
    stem, choices = hle_choices("Which nerve?\n\nAnswer Choices:\nA. Median\nnerve at the wrist\nB. Ulnar\nC. Radial\n")
    assert stem == "Which nerve?" and choices == {"A": "Median\nnerve at the wrist", "B": "Ulnar", "C": "Radial"}
    assert hle_choices("Pick one.\nAnswer choices:\n(A) Left\n(B) Right") == ("Pick one.", {"A": "Left", "B": "Right"})
    assert hle_choices("Pick one.\nA: Left\nB: Right") == ("Pick one.", {"A": "Left", "B": "Right"})
    assert hle_choices("A free-text question with no choices at all.") is None
    assert hle_choices("Choose.\nAnswer Choices:\nB. starts at B\nC. no A") is None
    # more than ten choices cannot be lettered A-J: counted, not dropped silently
    many = "Which amino acid is essential?\nAnswer Choices:\n" + "\n".join(f"{c}. choice {c}" for c in "ABCDEFGHIJKL")
    base = rows_of(fixture("hle_sample.jsonl"))[0]
    path = write_lines(tmp_path / "hle.jsonl", [base, {**base, "id": "x2", "question": many}])
    skips = Counter()
    assert len(list(read_hle(path, skips=skips))) == 1 and skips == {"more than 10 options": 1}
    # a multipleChoice row whose choices cannot be found, and an unknown answer_type, are errors
    path = write_lines(tmp_path / "hle.jsonl", [base, {**base, "id": "x3", "question": "Which one is right?"}])
    with pytest.raises(InputError) as exc:
        list(read_hle(path))
    assert_error(exc, path, 2, "question")
    path = write_lines(tmp_path / "hle.jsonl", [{**base, "answer_type": "freeText"}])
    with pytest.raises(InputError) as exc:
        list(read_hle(path))
    assert_error(exc, path, 1, "answer_type")


def test_hle_bad_answer_letter():
    path = fixture("hle_bad.jsonl")
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    msg = assert_error(exc, path, 2, "answer")
    assert "'F'" in msg and "A, B, C, D" in msg


def test_medjourney_numbered_options():
    path = fixture("medjourney_sample.jsonl")
    assert detect_format(path) == "medjourney"
    items = list(load_items(path))
    assert [it.id for it in items] == [f"medjourney-{r['id']}" for r in rows_of(path)]
    assert all(it.source == "medjourney" and it.numbered for it in items)
    assert [it.letters for it in items] == ["12345", "12345", "1234", "12345", "1234"]
    assert [it.answer for it in items] == ["2", "3", "2", "3", "2"]
    first, exam, _drug, inline, from_object = items
    assert first.options["2"] == "急性前壁心肌梗死" and first.question.endswith("最可能的诊断是？")
    assert exam.options[exam.answer] == "经阴道超声联合血hCG测定"  # answer given as the integer 3
    # options written inside the question as "(1) ... (2) ...": the question keeps the stem only
    assert inline.options == {"1": "麻疹", "2": "风疹", "3": "猩红热", "4": "幼儿急疹", "5": "水痘"}
    assert inline.question.endswith("可见口周苍白圈和草莓舌。最可能的诊断是？") and "(1)" not in inline.question
    assert from_object.options["2"] == "丙硫氧嘧啶"


def test_medjourney_letter_answer_is_an_error():
    path = fixture("medjourney_bad.jsonl")
    with pytest.raises(InputError) as exc:
        list(load_items(path))
    msg = assert_error(exc, path, 2, "answer")
    assert "numbered" in msg and "'B'" in msg


def test_medjourney_other_bad_rows(tmp_path):
    good = rows_of(fixture("medjourney_sample.jsonl"))[0]
    path = write_lines(tmp_path / "mj.jsonl", [{**good, "opb": None}])
    with pytest.raises(InputError) as exc:
        list(read_medjourney(path))
    assert_error(exc, path, 1, "opb")
    path = write_lines(tmp_path / "mj.jsonl", [{**good, "answer": 7}])
    with pytest.raises(InputError) as exc:
        list(read_medjourney(path))
    assert "1-5" in assert_error(exc, path, 1, "answer")
    no_options = {k: v for k, v in good.items() if not k.startswith("op")}
    path = write_lines(tmp_path / "mj.jsonl", [good, {**no_options, "id": "x"}])
    with pytest.raises(InputError) as exc:
        list(read_medjourney(path))
    assert_error(exc, path, 2, "opa")


def test_auto_detection_of_each_format(tmp_path):
    assert {"medxpertqa", "pubmedqa", "hle", "medjourney"} <= set(FORMATS)
    expected = {
        "medxpertqa_sample.jsonl": "medxpertqa",
        "medxpertqa_bad.jsonl": "medxpertqa",
        "pubmedqa_sample.json": "pubmedqa",
        "pubmedqa_bad.json": "pubmedqa",
        "hle_sample.jsonl": "hle",
        "hle_bad.jsonl": "hle",
        "medjourney_sample.jsonl": "medjourney",
        "medjourney_bad.jsonl": "medjourney",
    }
    for name, fmt in expected.items():
        assert detect_format(fixture(name)) == fmt, name
    # the older formats are still told apart: MedMCQA keeps cop, MedQA its answer_idx
    medmcqa = {"question": "Q?", "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": 2, "id": "r1"}
    assert detect_format(write_lines(tmp_path / "dev.json", [medmcqa])) == "medmcqa"
    medqa = {"question": "Q (1) x (2) y?", "answer": "2", "options": {"A": "1", "B": "2"}, "answer_idx": "B"}
    assert detect_format(write_lines(tmp_path / "medqa.jsonl", [medqa])) == "medqa"
    # a MedJourney row with options only inside the question
    inline = {"id": "j1", "question": "哪一项正确？(1) 甲 (2) 乙 (3) 丙", "answer": "1"}
    assert detect_format(write_lines(tmp_path / "journey.jsonl", [inline])) == "medjourney"
    # a JSON object keyed by something other than PMIDs is not PubMedQA
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"alpha": {"QUESTION": "q"}}, indent=1), encoding="utf-8")
    with pytest.raises(InputError):
        detect_format(other)


def test_load_items_skips_is_optional_for_every_reader():
    skips: Counter = Counter()
    for name in ("medxpertqa_sample.jsonl", "pubmedqa_sample.json", "medjourney_sample.jsonl"):
        assert list(load_items(fixture(name), skips=skips))
    assert skips == {}
    items = list(load_items(fixture("hle_sample.jsonl"), fmt="hle", skips=skips))
    assert len(items) == 3 and sum(skips.values()) == 3


def test_inline_choices():
    assert inline_choices("Stem (A) one (B) two (C) three") == ("Stem ", {"A": "one", "B": "two", "C": "three"})
    assert inline_choices("Rh(D) only (A) x") is None
    assert inline_choices("问题？(1) 甲 (2) 乙", "123456789") == ("问题？", {"1": "甲", "2": "乙"})


runner = CliRunner()


def test_an_empty_mmlu_csv_is_an_error_and_writes_nothing(tmp_path):
    src = tmp_path / "anatomy_test.csv"
    src.write_text("")
    out = tmp_path / "items.jsonl"
    r = runner.invoke(app, ["import", str(src), "--out", str(out), "--format", "mmlu"])
    line = one_error_line(r)
    assert r.exit_code == 2 and str(src) in line and "no item found" in line
    assert not out.exists()


def test_importing_an_empty_release_is_refused_and_writes_nothing(tmp_path):
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n  \n")):
        f = tmp_path / name
        f.write_text(text, encoding="utf-8")
        out = tmp_path / f"suite-{name}"
        line = one_error_line(runner.invoke(app, ["import", str(f), "--format", "bundles", "--out", str(out)]))
        assert str(f) in line and "no item" in line, line
        assert not out.exists()
