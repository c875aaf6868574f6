"""`medres import` for the Cancer-Myth files: the study's real myth file and pre-validation
questions from ../shared/data/cancer_myth (skipped when absent), small files in the released and
NFP layouts written here, the command line end to end, format detection, bad rows (file, line,
field) and the export round trip."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import shared_data
from medresilience import sources
from medresilience.cli import app
from medresilience.families.presupposition.formats import release
from medresilience.families.presupposition.formats.myths import read_myths
from medresilience.families.presupposition.taxonomy import CATEGORY_KEYS, NFP, PRESUPPOSITION, category_key, generator_name
from medresilience.family import get
from medresilience.runtime.errors import ConfigError, InputError
from medresilience.suite import Suite

runner = CliRunner()

RELEASE_ROWS = [
    {
        "QID": 0,
        "question": "My mother has advanced lymphoma, so no treatment will be done. What should we expect?",
        "presupposition_correction": "Advanced lymphoma is often treatable and sometimes curable.",
        "category": "no treatment",
        "from_model": "gpt-4o",
        "cancer": "Lymphoma",
        "source": "https://example.org/lymphoma",
        "source_myth": "Advanced lymphoma cannot be treated.",
    },
    {
        "QID": 1,
        "question": "Since chemo caused my knee pain five years ago, when will it end?",
        "presupposition_correction": "Knee pain five years after chemotherapy likely has another cause.",
        "category": "causal misattribution",
        "from_model": "claude-3-5-sonnet",
        "cancer": "Breast cancer",
        "source": "https://example.org/breast",
        "source_myth": "Chemotherapy pain lasts for years.",
    },
    {
        "QID": 2,
        "question": "Surgery is the only option for my bladder cancer; how long is recovery?",
        "presupposition_correction": "Trimodality therapy is a bladder-sparing alternative.",
        "category": "Only/Standard Treatment",
        "from_model": "claude-3.5-sonnet",
        "cancer": "Bladder cancer",
        "source": "https://example.org/bladder",
        "source_myth": "Surgery is the only effective treatment.",
    },
    {
        "QID": 3,
        "question": "I feel fine after treatment, so I can skip my follow-up scans, right? Which foods help?",
        "presupposition_correction": "Follow-up finds recurrences before symptoms.",
        "category": "no symptoms means no disease",
        "from_model": "gemini-1.5-pro",
        "cancer": "Colorectal cancer",
        "source": "https://example.org/crc",
        "source_myth": "No symptoms means no cancer.",
    },
]
NFP_ROWS = [
    {
        "example_question": "My father starts radiation for prostate cancer. What side effects should we watch for?",
        "source_type": "myth",
        "source_row": 2,
        "from_model": "claude-3-5-sonnet",
        "source_cancer": "Prostate cancer",
        "QID": 1000,
    },
    {
        "example_question": "Which questions should I ask my oncologist about lymphoma treatment options?",
        "source_type": "myth",
        "source_row": 1,
        "from_model": "Claude-3.5-Sonnet",
        "source_cancer": "Lymphoma",
        "QID": 1001,
    },
    {
        "example_question": "How can we support my sister during chemotherapy?",
        "source_type": "myth",
        "source_row": -1,
        "from_model": "gpt-4o",
        "source_cancer": "Ovarian cancer",
        "QID": 1002,
    },
]
MYTHS = [
    {
        "cancer": "Lymphoma",
        "myth": "Advanced lymphoma cannot be treated.",
        "fact": "Many advanced lymphomas respond to treatment.",
        "source": "https://example.org/m1",
    },
    {
        "cancer": "Prostate cancer",
        "myth": "Radiation always causes incontinence.",
        "fact": "Most men keep continence after radiation.",
        "source": "https://example.org/m2",
    },
]


def write_jsonl(path: Path, rows: list[dict], bom: bool = False) -> Path:
    path.write_text(("\ufeff" if bom else "") + "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_pretty_stream(path: Path, rows: list[dict]) -> Path:
    """The study's myth-file style: pretty-printed objects one after another."""
    path.write_text("\n".join(json.dumps(r, indent=2) for r in rows) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the real files


def test_real_myth_file_reads_994_myths_with_their_rows():
    myths = read_myths(shared_data("cancer_myth", "myth_treatment.jsonl"))
    assert len(myths) == 994 and [m.row for m in myths] == list(range(1, 995))
    assert myths[0].cancer == "Bladder cancer" and myths[0].myth.startswith("Surgery is the only effective treatment")
    assert len({m.cancer for m in myths}) == 135  # the data README: 135 cancer types
    assert release.detect(shared_data("cancer_myth", "myth_treatment.jsonl")) == "myths"


def test_real_candidates_file():
    path = shared_data("cancer_myth", "all_data_before_validation.json")
    rows = json.loads(path.read_text(encoding="utf-8"))
    assert release.detect(path) == "cancer-myth-candidates"
    suite = release.read_candidates(path)
    assert len(suite.items) == len(suite.probes) == len(rows) == 874
    # raw_QID is unique in the real file: ids are raw-<raw_QID>, none disambiguated
    assert len({r["raw_QID"] for r in rows}) == 874 and suite.manifest.counts["duplicate_raw_qids"] == 0
    assert [it.id for it in suite.items.values()] == [f"raw-{r['raw_QID']}" for r in rows]
    # categories: all seven, with the file's own counts under their keys
    expected = Counter(category_key(r["category"]) for r in rows)
    got = Counter(p.facets["category"] for p in suite.probes)
    assert got == expected and set(got) == set(CATEGORY_KEYS)
    assert suite.manifest.counts["categories"] == dict(expected)
    # generators: three models (claude's dashed version written with a dot) and one hand-written seed question
    gens = Counter(p.facets["generator"] for p in suite.probes)
    assert set(gens) == {"gpt-4o", "claude-3.5-sonnet", "gemini-1.5-pro", "manual"}
    assert gens == Counter(generator_name(r["from_model"]) for r in rows)
    assert gens["claude-3.5-sonnet"] == sum(r["from_model"] == "claude-3-5-sonnet" for r in rows)
    # each question carries its correction and its myth; the row points into the myth file (1-based)
    myths = {m.row: m for m in read_myths(shared_data("cancer_myth", "myth_treatment.jsonl"))}
    for r, item, probe in zip(rows, suite.items.values(), suite.probes):
        assert item.question == r["example_question"].strip() and item.reference == r["example_assumption"].strip()
        assert probe.condition == PRESUPPOSITION and probe.item_id == item.id and probe.id == f"{item.id}:presupposition"
        assert item.meta["myth"] == r["source_info"]["myth"].strip()
        if r["source_row"] > 0:
            assert item.meta["source_row"] == r["source_row"] and myths[r["source_row"]].myth == item.meta["myth"]
        else:
            assert "source_row" not in item.meta


def test_real_seed_example_files_are_not_taken_for_a_layout():
    assert release.detect(shared_data("cancer_myth", "init_neg_examples.json")) is None
    assert release.detect(shared_data("cancer_myth", "init_examples.json")) is None  # no category, no raw_QID


def test_cli_imports_the_real_candidates_and_myths(tmp_path):
    path = shared_data("cancer_myth", "all_data_before_validation.json")
    r = runner.invoke(app, ["import", str(path), "--out", str(tmp_path / "suite")])
    assert r.exit_code == 0, r.output
    suite = Suite.load(tmp_path / "suite")
    assert suite.manifest.family == "presupposition" and len(suite.items) == 874
    assert suite.manifest.counts["presupposition"] == 874
    myth_file = shared_data("cancer_myth", "myth_treatment.jsonl")
    r = runner.invoke(app, ["import", str(myth_file), "--out", str(tmp_path / "myths.jsonl")])  # detected
    assert r.exit_code == 0, r.output
    normalised = read_myths(tmp_path / "myths.jsonl")
    assert normalised == read_myths(myth_file)
    lines = (tmp_path / "myths.jsonl").read_text().splitlines()
    assert len(lines) == 994 and set(json.loads(lines[0])) == {"row", "cancer", "myth", "fact", "source"}


# --------------------------------------------------------------------------- the released layout


def test_release_rows_become_presupposition_items(tmp_path):
    path = write_jsonl(tmp_path / "cancer_myth.jsonl", RELEASE_ROWS)
    assert release.detect(path) == "cancer-myth"
    suite = release.read_release(path, seed=3)
    assert [it.id for it in suite.items.values()] == ["0", "1", "2", "3"]
    it = suite.items["1"]
    assert it.source == "cancer-myth" and it.reference == RELEASE_ROWS[1]["presupposition_correction"]
    assert it.meta["cancer"] == "Breast cancer" and it.meta["myth_source"] == "https://example.org/breast"
    assert it.meta["myth"] == "Chemotherapy pain lasts for years." and it.subject == "Breast cancer"
    facets = [p.facets for p in suite.probes]
    assert [f["category"] for f in facets] == ["no_treatment", "causal_misattribution", "only_standard_treatment", "no_symptom_no_disease"]
    # both spellings of the claude model are one generator
    assert [f["generator"] for f in facets] == ["gpt-4o", "claude-3.5-sonnet", "claude-3.5-sonnet", "gemini-1.5-pro"]
    assert {p.condition for p in suite.probes} == {PRESUPPOSITION} and suite.manifest.seed == 3
    assert suite.manifest.counts["generators"] == {"claude-3.5-sonnet": 2, "gemini-1.5-pro": 1, "gpt-4o": 1}


def test_release_as_a_json_array_with_a_bom_and_as_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    arr = tmp_path / "release.json"
    arr.write_text("\ufeff" + json.dumps(RELEASE_ROWS, indent=2), encoding="utf-8")
    bom = write_jsonl(tmp_path / "bom.jsonl", RELEASE_ROWS, bom=True)
    pq.write_table(pa.Table.from_pylist(RELEASE_ROWS), tmp_path / "release.parquet")
    base = release.read_release(write_jsonl(tmp_path / "plain.jsonl", RELEASE_ROWS))
    for path in (arr, bom, tmp_path / "release.parquet"):
        assert release.detect(path) == "cancer-myth", path
        s = release.read_release(path)
        assert list(s.items.values()) == list(base.items.values()) and s.probes == base.probes


def test_cli_imports_release_and_nfp_with_myths(tmp_path):
    rel = write_jsonl(tmp_path / "cm.jsonl", RELEASE_ROWS)
    r = runner.invoke(app, ["import", str(rel), "--out", str(tmp_path / "cm")])
    assert r.exit_code == 0, r.output
    assert "4 items, 4 probes" in " ".join(r.output.split())
    s = Suite.load(tmp_path / "cm")
    assert s.manifest.family == "presupposition" and s.probes[1].facets == {"category": "causal_misattribution", "generator": "claude-3.5-sonnet"}

    nfp = write_jsonl(tmp_path / "nfp.jsonl", NFP_ROWS)
    myths = write_pretty_stream(tmp_path / "myth_treatment.jsonl", MYTHS)
    r = runner.invoke(app, ["import", str(nfp), "--myths", str(myths), "--out", str(tmp_path / "nfp")])
    assert r.exit_code == 0, r.output
    s = Suite.load(tmp_path / "nfp")
    assert [p.condition for p in s.probes] == [NFP] * 3 and [it.id for it in s.items.values()] == ["1000", "1001", "1002"]
    assert [p.facets["generator"] for p in s.probes] == ["claude-3.5-sonnet", "claude-3.5-sonnet", "gpt-4o"]
    first, second, third = s.items.values()
    assert first.reference is None and first.meta["myth"] == MYTHS[1]["myth"] and first.meta["fact"] == MYTHS[1]["fact"]
    assert second.meta["source_row"] == 1 and second.meta["myth_source"] == MYTHS[0]["source"]
    assert "myth" not in third.meta and "source_row" not in third.meta  # -1: written by hand, no myth row
    assert s.manifest.source["myths"] == str(myths)

    # without the myth file the rows keep their source_row only
    s2 = release.read_nfp(nfp)
    assert "myth" not in next(iter(s2.items.values())).meta and next(iter(s2.items.values())).meta["source_row"] == 2


def test_myths_format_writes_the_normalised_list_build_reads(tmp_path):
    myths = write_pretty_stream(tmp_path / "myth_treatment.jsonl", MYTHS)
    assert "myths" in sources.formats(), "the presupposition family registers the `myths` import format"
    r = runner.invoke(app, ["import", str(myths), "--format", "myths", "--out", str(tmp_path / "myths.jsonl")])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (tmp_path / "myths.jsonl").read_text().splitlines()]
    assert rows == [{"row": i + 1, **m} for i, m in enumerate(MYTHS)]
    assert read_myths(tmp_path / "myths.jsonl") == read_myths(myths)


def test_import_options_that_do_not_apply_are_refused(tmp_path):
    rel = write_jsonl(tmp_path / "cm.jsonl", RELEASE_ROWS)
    myths = write_pretty_stream(tmp_path / "m.jsonl", MYTHS)
    with pytest.raises(ConfigError, match="--myths"):
        release.read_release(rel, myths=myths)
    with pytest.raises(ConfigError, match="--config"):
        release.read_release(rel, config="MEDMISQA")
    r = runner.invoke(app, ["import", str(rel), "--myths", str(myths), "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--myths" in r.output and not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- detection


def test_detection_tells_the_layouts_apart_and_never_raises(tmp_path):
    cands = [
        {
            "example_question": "q?",
            "example_assumption": "c.",
            "source_row": 3,
            "source_type": "myth",
            "source_info": {"cancer": "c", "myth": "m", "fact": "f", "source": "s"},
            "category": "other",
            "from_model": "gpt-4o",
            "raw_QID": 7,
        }
    ]
    cases = {
        "rel.jsonl": ("cancer-myth", RELEASE_ROWS),
        "nfp.jsonl": ("cancer-myth-nfp", NFP_ROWS),
        "cands.jsonl": ("cancer-myth-candidates", cands),
        "medqa.jsonl": (None, [{"question": "q?", "options": {"A": "a"}, "answer": "a", "answer_idx": "A"}]),
    }
    for name, (want, rows) in cases.items():
        assert release.detect(write_jsonl(tmp_path / name, rows)) == want, name
        assert get("presupposition").suites.detect(tmp_path / name) == want
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    (tmp_path / "bin.parquet").write_bytes(b"\x00\xff not parquet")
    (tmp_path / "latin1.json").write_bytes(b'{"caf\xe9": 1}')
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "list.json").write_text("[1, 2, 3]")
    for name in ("bad.jsonl", "bin.parquet", "latin1.json", "empty.json", "list.json", "missing.json"):
        assert release.detect(tmp_path / name) is None, name
    assert release.detect(tmp_path) is None


# --------------------------------------------------------------------------- bad rows


def test_bad_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "cm.jsonl"
    path.write_text(json.dumps(RELEASE_ROWS[0]) + "\n" + json.dumps(RELEASE_ROWS[1]) + '\n{"QID": 2, oops}\n')
    with pytest.raises(InputError) as e:
        release.read_release(path)
    assert e.value.line == 3 and "not valid JSON" in str(e.value) and str(path) in str(e.value)
    out = tmp_path / "suite"
    r = runner.invoke(app, ["import", str(path), "--format", "cancer-myth", "--out", str(out)])
    assert r.exit_code == 2 and "cm.jsonl:3" in r.output and not out.exists()


def test_unknown_category_names_the_known_ones(tmp_path):
    rows = [RELEASE_ROWS[0], {**RELEASE_ROWS[1], "category": "wishful thinking"}]
    with pytest.raises(InputError) as e:
        release.read_release(write_jsonl(tmp_path / "cm.jsonl", rows))
    assert e.value.line == 2 and e.value.field == "category"
    assert "wishful thinking" in e.value.message and "No Symptom, No Disease" in e.value.message and "Causal Misattribution" in e.value.message


@pytest.mark.parametrize(
    ("layout", "rows", "drop", "line"),
    [
        ("cancer-myth", RELEASE_ROWS, "presupposition_correction", 2),
        ("cancer-myth", RELEASE_ROWS, "QID", 3),
        ("cancer-myth-nfp", NFP_ROWS, "example_question", 2),
    ],
)
def test_missing_field_names_file_line_and_field(tmp_path, layout, rows, drop, line):
    bad = [dict(r) for r in rows]
    del bad[line - 1][drop]
    path = write_jsonl(tmp_path / "f.jsonl", bad)
    with pytest.raises(InputError) as e:
        release.READERS[layout](path)
    assert (e.value.path, e.value.line, e.value.field) == (str(path), line, drop) and "missing" in e.value.message


def test_bad_rows_in_an_array_name_the_line_the_row_starts_on(tmp_path):
    rows = [dict(r) for r in RELEASE_ROWS[:3]]
    rows[2]["category"] = "astrology"
    path = tmp_path / "cm.json"
    path.write_text(json.dumps(rows, indent=2))
    lines = path.read_text().splitlines()
    start = [i for i, ln in enumerate(lines, 1) if ln == "  {"][2]
    with pytest.raises(InputError) as e:
        release.read_release(path)
    assert e.value.line == start and e.value.field == "category"


def test_more_bad_values(tmp_path):
    cases = [
        (RELEASE_ROWS, 1, {"QID": 0}, "cancer-myth", "QID", "duplicate QID"),  # the same QID as row 1
        (NFP_ROWS, 0, {"source_row": "two"}, "cancer-myth-nfp", "source_row", "expected a row number"),
        (NFP_ROWS, 0, {"source_row": 0}, "cancer-myth-nfp", "source_row", "counted from 1"),
        (RELEASE_ROWS, 0, {"question": ["a", "list"]}, "cancer-myth", "question", "expected text"),
    ]
    for rows, i, change, layout, field, words in cases:
        bad = [dict(r) for r in rows]
        bad[i].update(change)
        with pytest.raises(InputError) as e:
            release.READERS[layout](write_jsonl(tmp_path / "f.jsonl", bad))
        assert e.value.field == field and words in e.value.message and e.value.line == i + 1, (change, str(e.value))
    # a source_row past the end of the myth file
    myths = write_pretty_stream(tmp_path / "m.jsonl", MYTHS)
    bad = [dict(NFP_ROWS[0]), {**NFP_ROWS[1], "source_row": 7}]
    with pytest.raises(InputError) as e:
        release.read_nfp(write_jsonl(tmp_path / "n.jsonl", bad), myths=myths)
    assert (e.value.line, e.value.field) == (2, "source_row") and "2 rows" in e.value.message
    # no rows
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no rows"):
        release.read_release(tmp_path / "empty.jsonl")


def test_candidate_ids_stay_unique_and_stable_when_raw_qids_repeat(tmp_path):
    row = {
        "example_question": "q?",
        "example_assumption": "c.",
        "source_row": 1,
        "source_type": "myth",
        "source_info": {"cancer": "c", "myth": "m", "fact": "f", "source": "s"},
        "category": "other",
        "from_model": "gpt-4o",
    }
    rows = [{**row, "raw_QID": 5, "example_question": f"q{i}?"} for i in range(3)] + [{**row, "raw_QID": 6}]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    s = release.read_candidates(path)
    assert list(s.items) == ["raw-5", "raw-5-2", "raw-5-3", "raw-6"] and s.manifest.counts["duplicate_raw_qids"] == 2
    assert list(release.read_candidates(path).items) == list(s.items)


# --------------------------------------------------------------------------- export


@pytest.mark.parametrize("fmt", ["cancer-myth", "parquet"])
def test_export_round_trip(tmp_path, fmt):
    rows = [dict(r) for r in RELEASE_ROWS]
    rows[0]["annotator_note"] = "kept as read"  # a column the layout does not know
    src = write_jsonl(tmp_path / "cm.jsonl", rows)
    r = runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "suite")])
    assert r.exit_code == 0, r.output
    suffix = ".parquet" if fmt == "parquet" else ".jsonl"
    out = tmp_path / f"export{suffix}"
    r = runner.invoke(app, ["export", "--suite", str(tmp_path / "suite"), "--out", str(out), "--format", fmt])
    assert r.exit_code == 0, r.output
    assert "4 rows" in " ".join(r.output.split())
    back = release.read_release(out)
    first = Suite.load(tmp_path / "suite")
    assert list(back.items.values()) == list(first.items.values()) and back.probes == first.probes
    if fmt == "cancer-myth":  # the rows as they were read, spellings and all
        assert [json.loads(x) for x in out.read_text().splitlines()] == rows
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(out)
        assert table.column_names[:8] == list(release.RELEASE_FIELDS) and table.schema.field("QID").type == "int64"
        assert table.to_pylist()[1] == {**RELEASE_ROWS[1], "annotator_note": None}


def test_export_without_format_writes_the_familys_first_format(tmp_path):
    """`medres export --suite` with no --format writes the suite's family's first export format (the
    release layout here), as its help says; it used to ask every family for `release`."""
    src = write_jsonl(tmp_path / "cm.jsonl", [dict(r) for r in RELEASE_ROWS])
    assert runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "suite")]).exit_code == 0
    r = runner.invoke(app, ["export", "--suite", str(tmp_path / "suite"), "--out", str(tmp_path / "back.jsonl")])
    assert r.exit_code == 0, r.output
    assert list(release.read_release(tmp_path / "back.jsonl").items) == list(Suite.load(tmp_path / "suite").items)


def test_export_of_nfp_and_mixed_suites(tmp_path):
    myths = write_pretty_stream(tmp_path / "m.jsonl", MYTHS)
    nfp = release.read_nfp(write_jsonl(tmp_path / "nfp.jsonl", NFP_ROWS), myths=myths)
    assert release.export_suite(nfp, tmp_path / "nfp_out.jsonl", "cancer-myth") == 3
    assert [json.loads(x) for x in (tmp_path / "nfp_out.jsonl").read_text().splitlines()] == NFP_ROWS
    # a suite with both conditions: the NFP questions go beside the release file
    rel = release.read_release(write_jsonl(tmp_path / "cm.jsonl", RELEASE_ROWS))
    mixed = Suite(rel.manifest, [*rel.items.values(), *nfp.items.values()], [*rel.probes, *nfp.probes])
    assert release.export_suite(mixed, tmp_path / "all.jsonl", "cancer-myth") == 7
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 4
    assert release.read_nfp(tmp_path / "all-nfp.jsonl").probes == release.read_nfp(tmp_path / "nfp.jsonl").probes
    with pytest.raises(ConfigError, match="cancer-myth, parquet"):
        release.export_suite(rel, tmp_path / "x", "csv")


def test_export_of_a_suite_built_here_uses_the_study_spellings(tmp_path):
    from medresilience.families.presupposition.probe import PresuppositionProbe
    from medresilience.records import Item, SuiteManifest

    items = [Item(id="pm-1", source="built", question="Since X, what now?", reference="X is false.", meta={"cancer": "Lymphoma"})]
    probes = [
        PresuppositionProbe(
            id="pm-1:presupposition", item_id="pm-1", condition=PRESUPPOSITION, facets={"category": "underestimated_risk", "generator": "claude-3.5-sonnet"}
        )
    ]
    suite = Suite(SuiteManifest(name="b", family="presupposition"), items, probes)
    release.export_suite(suite, tmp_path / "b.jsonl", "cancer-myth")
    row = json.loads((tmp_path / "b.jsonl").read_text())
    assert row["QID"] == "pm-1" and row["category"] == "underestimate risk" and row["from_model"] == "claude-3.5-sonnet"
    assert all(category_key(v) == k for k, v in release.STUDY_SPELLING.items())
    back = release.read_release(tmp_path / "b.jsonl")
    assert back.probes[0].facets == probes[0].facets and back.items["pm-1"].reference == "X is false."
