"""Source loaders for the other sources the MedMisBench study used: MedXpertQA and PubMedQA on the
real files in ../shared/data (skipped when absent), and hand-written fixtures (tests/fixtures) for
HLE, MedJourney, the layouts' variants and bad rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import FIXTURES, shared_data
from medresilience.errors import InputError
from medresilience.sources import (
    FORMATS,
    detect_format,
    hle_choices,
    inline_choices,
    load_items,
    read_hle,
    read_medjourney,
    read_medxpertqa,
    read_pubmedqa,
)


def fixture(name: str) -> Path:
    return FIXTURES / name


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


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


# --------------------------------------------------------------------------- MedXpertQA


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


# --------------------------------------------------------------------------- PubMedQA


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


# --------------------------------------------------------------------------- HLE


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


# --------------------------------------------------------------------------- MedJourney


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


# --------------------------------------------------------------------------- detection


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
