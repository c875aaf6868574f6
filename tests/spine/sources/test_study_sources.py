"""The three benchmarks Cancer-Myth added to MedQA and PubMedQA for its mitigations (Table 1), read
by their real readers from fixtures shaped exactly like each release (tests/data/sources, licences
in its README): Medbullets (column-wise .json and .csv), CRAFT-MD (its case .csv) and SymCat (no
release found: MedQA's row shape, as MDAgents reads it). Also their detection, their errors (file,
line, field), `medres import` and `medres datasets`, a clinical-noise build from them, and the
optimiser's example draw (five per benchmark, as the study) over suites made from them."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT, one_error_line
from medresilience.cli import app
from medresilience.mitigations.examples import draw
from medresilience.records import Item, SuiteManifest
from medresilience.runtime.errors import InputError
from medresilience.runtime.fileio import read_jsonl
from medresilience.sources import detect_format, load_items, read_craftmd, read_medbullets, read_symcat
from medresilience.sources.catalog import get
from medresilience.sources.craftmd import SKIP_NO_ANSWER
from medresilience.suite import Suite

DATA = ROOT / "tests" / "data" / "sources"
MB4, MB5, CRAFT, SYMCAT = DATA / "medbullets_op4.json", DATA / "medbullets_op5.csv", DATA / "usmle_and_derm_dataset.csv", DATA / "symcat_test.jsonl"
runner = CliRunner()


def error(exc, path: Path, line: int | None, field: str | None) -> str:
    e = exc.value
    assert (e.path, e.line, e.field) == (str(path), line, field), str(e)
    return e.message


# --------------------------------------------------------------------------- Medbullets


def test_medbullets_json_is_read_column_by_column():
    table = json.loads(MB4.read_text())
    items = list(load_items(MB4))
    assert detect_format(MB4) == "medbullets"
    assert [i.id for i in items] == ["medbullets-op4-0", "medbullets-op4-1", "medbullets-op4-2"]
    for i, item in enumerate(items):
        k = str(i)
        assert item.source == "medbullets" and item.question == table["question"][k]
        assert item.options == {L: table[f"op{L.lower()}"][k] for L in "ABCD"}
        assert item.answer == table["answer_idx"][k] and item.options[item.answer] == table["answer"][k]
        assert item.meta == {"link": table["link"][k], "explanation": table["explanation"][k]}
    assert "99.1°F" in items[0].question  # the release's \u escapes decoded
    assert "\n" not in MB4.read_text()  # the fixture is one line, as the release


def test_medbullets_csv_reads_five_options_and_multiline_explanations():
    assert detect_format(MB5) == "medbullets"
    rows = list(csv.DictReader(io.StringIO(MB5.read_text(encoding="utf-8"))))
    items = list(read_medbullets(MB5))
    assert [i.id for i in items] == ["medbullets-op5-0", "medbullets-op5-1", "medbullets-op5-2"]
    assert items[0].options["E"] == rows[0]["ope"] and items[0].letters == "ABCDE"
    assert items[0].meta["explanation"] == rows[0]["explanation"] and "\n\n" in rows[0]["explanation"]
    # the same questions as the op4 file, with one more option
    assert [i.question for i in items] == [i.question for i in load_items(MB4)]


def test_medbullets_bad_rows_name_the_line_and_the_cell(tmp_path):
    table = json.loads(MB4.read_text())
    bad = tmp_path / "medbullets_op4.json"
    bad.write_text(json.dumps({**table, "answer_idx": {**table["answer_idx"], "1": "F"}}))
    with pytest.raises(InputError) as exc:
        list(load_items(bad))
    assert "'F' is not one of the options A, B, C, D" in error(exc, bad, 1, 'answer_idx["1"]')
    bad.write_text(json.dumps({**table, "answer": {**table["answer"], "2": "Influenza"}}))
    with pytest.raises(InputError) as exc:
        list(load_items(bad))
    assert "is not option A" in error(exc, bad, 1, 'answer["2"]')
    bad.write_text(json.dumps({**table, "opb": {**table["opb"], "0": "  "}}))
    with pytest.raises(InputError) as exc:
        list(load_items(bad))
    error(exc, bad, 1, 'opb["0"]')
    text = MB5.read_text(encoding="utf-8").splitlines(keepends=True)
    csv_bad = tmp_path / "medbullets_op5.csv"
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    rows = list(csv.reader(io.StringIO("".join(text))))
    rows[2][1] = ""  # the second question's text
    for r in rows:
        w.writerow(r)
    csv_bad.write_text(out.getvalue(), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        list(load_items(csv_bad))
    line = 2 + 1 + sum(c.count("\n") for c in rows[1])  # the header, then the first row's lines (its explanation spans three)
    assert line == 5
    error(exc, csv_bad, line, "question")


# --------------------------------------------------------------------------- CRAFT-MD


def test_craftmd_cases_and_the_one_answer_that_is_no_choice():
    assert detect_format(CRAFT) == "craftmd"
    rows = list(csv.DictReader(CRAFT.open(encoding="utf-8")))
    skips: Counter = Counter()
    items = list(load_items(CRAFT, skips=skips))
    assert skips == Counter({SKIP_NO_ANSWER: 1})  # case_112: "Henoch-Scholein vasculitis" among none of its choices
    assert [i.id for i in items] == [f"craftmd-{r['case_id']}" for r in rows if r["case_id"] != "case_112"]
    for item, r in zip(items, [r for r in rows if r["case_id"] != "case_112"]):
        assert item.question == r["case_vignette"].strip() and item.subject == r["category"]
        assert list(item.options.values()) == [r[f"choice_{k}"].strip() for k in range(1, 5)]
        assert item.options[item.answer] == r["answer"].strip()
        assert item.meta == {"dataset": r["dataset"], "category": r["category"]}
    padded = {i.id: i for i in items}["craftmd-case_124"]  # the release's answer "Melanoma " with a trailing space
    assert padded.options[padded.answer] == "Melanoma"
    assert {i.meta["dataset"] for i in items} == {"dermatology_public", "dermatology_private", "MedQA_USMLE"}


def test_craftmd_errors_name_line_and_column(tmp_path):
    rows = list(csv.reader(CRAFT.open(encoding="utf-8")))
    bad = tmp_path / "usmle_and_derm_dataset.csv"

    def write(rs):
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        for r in rs:
            w.writerow(r)
        bad.write_text(out.getvalue(), encoding="utf-8")

    write([rows[0], rows[1], [*rows[2][:1], " ", *rows[2][2:]]])
    with pytest.raises(InputError) as exc:
        list(read_craftmd(bad))
    assert error(exc, bad, 3, "case_vignette") == "is blank"
    write([rows[0], rows[1], rows[1]])
    with pytest.raises(InputError) as exc:
        list(read_craftmd(bad))
    assert "duplicate case_id 'case_0' (first on line 2)" in error(exc, bad, 3, "case_id")


# --------------------------------------------------------------------------- SymCat


def test_symcat_is_read_when_named_and_reported_as_symcat(tmp_path):
    assert detect_format(SYMCAT) == "medqa"  # MedQA's row shape: the format must be named
    items = list(load_items(SYMCAT, fmt="symcat"))
    rows = [json.loads(x) for x in SYMCAT.read_text().splitlines()]
    assert [(i.id, i.source, i.answer) for i in items] == [(f"symcat-{n}", "symcat", r["answer_idx"]) for n, r in enumerate(rows, 1)]
    assert list(read_symcat(SYMCAT)) == items
    bad = tmp_path / "symcat.jsonl"
    bad.write_text(json.dumps({**rows[0], "answer_idx": "E"}) + "\n")
    with pytest.raises(InputError) as exc:
        list(load_items(bad, fmt="symcat"))
    error(exc, bad, 1, "answer_idx")


# --------------------------------------------------------------------------- commands


def test_import_writes_items_and_counts_what_it_left_out(tmp_path):
    out = tmp_path / "craftmd.jsonl"
    r = runner.invoke(app, ["import", str(CRAFT), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert len(list(read_jsonl(out, Item))) == 6 and f"{SKIP_NO_ANSWER}: 1" in r.output
    # not the release's bytes: the catalogue's checksum says so, and the import goes on
    assert "differs from the craft-md file this project tested" in r.output.replace("\n", " ")
    for src, fmt in ((MB4, None), (MB5, None), (SYMCAT, "symcat")):
        out = tmp_path / f"{src.stem}.jsonl"
        r = runner.invoke(app, ["import", str(src), "--out", str(out), *(["--format", fmt] if fmt else [])])
        assert r.exit_code == 0, r.output
        assert len(list(read_jsonl(out, Item))) == 3


def test_import_of_a_bad_file_is_one_line(tmp_path):
    bad = tmp_path / "medbullets_op4.json"
    bad.write_text(json.dumps({"question": {"0": "Q?"}, "opa": {"0": "a"}, "opb": {"0": "b"}, "answer_idx": {"0": "C"}}))
    line = one_error_line(runner.invoke(app, ["import", str(bad), "--out", str(tmp_path / "x.jsonl")]))
    assert "medbullets_op4.json:1: field 'answer_idx[\"0\"]'" in line
    assert not (tmp_path / "x.jsonl").exists()


def test_datasets_lists_the_three_with_licence_and_size():
    r = runner.invoke(app, ["datasets", "--markdown"])
    assert r.exit_code == 0, r.output
    for name in ("medbullets", "craft-md", "symcat"):
        row = next(line for line in r.output.splitlines() if line.startswith(f"| {name} |"))
        d = get(name)
        assert d.licence.replace("|", "\\|") in row and d.size in row
    assert get("craft-md").licence.startswith("MIT") and "2,004" in get("craft-md").size
    assert get("symcat").licence.startswith("not verified") and get("symcat").checked.startswith("not verified")
    assert get("medbullets").size == "308 questions per file"


# --------------------------------------------------------------------------- builds and the optimiser


def test_a_noise_build_reads_them(tmp_path, stub_server):
    from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
    from medresilience.families.noise.testing import FakeGenerator
    from medresilience.models.spec import parse_model_spec

    srv = stub_server(policy=FakeGenerator())
    res = build_noise(
        CRAFT, tmp_path / "craft-noise", parse_model_spec(f"openai:fake-gen,base_url={srv.base_url}"), NoiseBuildOptions(seed=1, variants=("redherring-1",))
    )
    suite = Suite.load(res.out)
    assert suite.items and {i.source for i in suite.items.values()} == {"craftmd"}
    assert {p.item_id for p in suite.probes} <= set(suite.items)


def plain_suite(path: Path, fmt: str = "auto") -> Suite:
    items = list(load_items(path, fmt=fmt))
    return Suite(SuiteManifest(name=items[0].source, family="misleading", seed=3), items, [])


def test_the_optimiser_draws_from_each_benchmark():
    suites = [plain_suite(CRAFT), plain_suite(MB4), plain_suite(SYMCAT, "symcat")]
    train, val, tsplit, _ = draw(suites, [suites[0]], per_suite=5, seed=11)
    by = Counter(e.suite_name for e in train)
    # five per benchmark where it has them; a fixture of three gives its three to training
    assert by == Counter({"craftmd": 5, "medbullets": 3, "symcat": 3})
    assert Counter(e.suite_name for e in val) == Counter({"craftmd": 1})  # the one case left after five
    assert {e.item.id for e in train}.isdisjoint({e.item.id for e in val})
    assert [s.name for s in tsplit] == ["craftmd", "medbullets", "symcat"] and all(e.probe is None for e in train)
