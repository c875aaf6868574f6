"""Datasets by hub name: `medres import hf:OWNER/NAME[:CONFIG][@REVISION]` against a local server
that speaks the hub's HTTP API (testing.hub_server, pointed to by HF_ENDPOINT, the client's own
setting), serving small fixtures in the real layouts: MedMisBench configs (Parquet, and the card's
JSON lines), a Cancer-Myth JSON release, the hub's Parquet layouts of MedMCQA, MMLU and PubMedQA,
and a gated HLE. Every test runs with its own empty cache (HF_HOME) and an HF_ENDPOINT that is
either the local server or a closed port: the real hub is never called."""

from __future__ import annotations

import hashlib
import io
import json
import re
import socket
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from conftest import ROOT
from medresilience.build.importing import provenance_path
from medresilience.cli import app
from medresilience.records import Item
from medresilience.runtime.fileio import read_jsonl, sha256_file
from medresilience.suite import Suite
from medresilience.testing.hub_server import HubRepo, HubServer, git_blob_id

runner = CliRunner()


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(autouse=True)
def hub_env(tmp_path, monkeypatch):
    """An empty cache of the test's own and no way to the real hub."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", _closed_port())


def _parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _card(configs: dict[str, list[tuple[str, str]]]) -> bytes:
    lines = ["---", "license: other", "configs:"]
    for name, files in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {path}" for split, path in files]
    return ("\n".join(lines) + "\n---\n# A dataset card\n").encode()


def _flat(i: int, answer: str = "B", numbered: bool = False) -> dict:
    labels = "1234" if numbered else "ABCD"
    row = {
        "id": i,
        "question": f"Question {i}: which one?",
        "answer": answer,
        "injection_content": "Cue Remapping",
        "injection_provenance": "Authority (Guideline, Discharge Note, SOP)",
    }
    for k, lab in zip("abcd", labels):
        row[f"op{k}"] = f"option {lab} of {i}"
        row[f"inject{k}"] = f"A sentence about option {lab} of {i}."
    return row


MEDMIS_FILES = {
    "README.md": _card(
        {
            "MEDMISQA": [("MEDMISQA", "data/medmisqa.parquet")],
            "MEDMISJOURNEY": [("MEDMISJOURNEY", "data/medmisjourney.parquet")],
            "MEDMISHLE": [("MEDMISHLE", "data/medmishle.jsonl")],
        }
    ),
    "data/medmisqa.parquet": _parquet([_flat(1), _flat(2, "C")]),
    "data/medmisjourney.parquet": _parquet([_flat(7, "2", numbered=True)]),
    "data/medmishle.jsonl": _jsonl([_flat(9, "A")]),
    ".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n",
}
CANCER_MYTH = [
    {
        "QID": 1,
        "question": "Since chemo always makes hair fall out, which wig should my mother buy?",
        "presupposition_correction": "Not every chemotherapy causes hair loss.",
        "category": "inevitable side effect",
        "from_model": "gpt-4o",
        "cancer": "Breast Cancer",
        "source": "https://www.cancer.gov",
        "source_myth": "Chemo always causes hair loss.",
    },
    {
        "QID": 2,
        "question": "As stage 4 means no treatment, how do we plan the last months?",
        "presupposition_correction": "Stage 4 cancers are often treated.",
        "category": "no treatment",
        "from_model": "claude-3.5-sonnet",
        "cancer": "Lung Cancer",
        "source": "https://www.cancer.gov",
        "source_myth": "Stage 4 is untreatable.",
    },
]


def _medmcqa_row(i: int, cop: int) -> dict:
    return {
        "id": f"q{i}",
        "question": f"MedMCQA question {i}?",
        "opa": "a",
        "opb": "b",
        "opc": "c",
        "opd": "d",
        "cop": cop,
        "choice_type": "single",
        "exp": None,
        "subject_name": "Anatomy",
        "topic_name": None,
    }


def _repos() -> dict[str, HubRepo]:
    medmis = HubRepo("AI4HealthResearch/MedMisBench")
    medmis.commit(MEDMIS_FILES)
    cm = HubRepo("Cancer-Myth/Cancer-Myth")
    cm.commit({"README.md": b"---\nlicense: unknown\n---\n", "data/cancer_myth.json": json.dumps(CANCER_MYTH, indent=2).encode()})
    mcqa = HubRepo("openlifescienceai/medmcqa")
    mcqa.commit(
        {
            "README.md": _card({"default": [("train", "data/train-*"), ("validation", "data/validation-*"), ("test", "data/test-*")]}),
            "data/train-00000-of-00001.parquet": _parquet([_medmcqa_row(1, 0)]),
            "data/validation-00000-of-00001.parquet": _parquet([_medmcqa_row(2, 0), _medmcqa_row(3, 3)]),
            "data/test-00000-of-00001.parquet": _parquet([_medmcqa_row(4, -1)]),
        }
    )
    mmlu = HubRepo("cais/mmlu")
    mmlu_row = {"question": "Which bone is in the arm?", "subject": "anatomy", "choices": ["femur", "humerus", "tibia", "fibula"], "answer": 1}
    mmlu.commit(
        {
            "README.md": _card({"anatomy": [("test", "anatomy/test-*"), ("dev", "anatomy/dev-*")]}),
            "anatomy/test-00000-of-00001.parquet": _parquet([mmlu_row, {**mmlu_row, "answer": 0}]),
            "anatomy/dev-00000-of-00001.parquet": _parquet([mmlu_row]),
        }
    )
    pqa = HubRepo("qiaojin/PubMedQA")
    pqa.commit(
        {
            "README.md": _card({"pqa_labeled": [("train", "pqa_labeled/train-*")]}),
            "pqa_labeled/train-00000-of-00001.parquet": _parquet(
                [
                    {
                        "pubid": 123,
                        "question": "Do statins help?",
                        "context": {"contexts": ["We studied."], "labels": ["METHODS"], "meshes": ["Statins"]},
                        "long_answer": "Yes they do.",
                        "final_decision": "yes",
                    }
                ]
            ),
        }
    )
    hle = HubRepo("cais/hle", gated=True)
    hle_row = {
        "id": "h1",
        "question": "Which?\n\nAnswer Choices:\nA. one\nB. two",
        "image": "",
        "answer": "B",
        "answer_type": "multipleChoice",
        "raw_subject": "Medicine",
        "category": "Biology/Medicine",
        "canary": "c",
    }
    hle.commit(
        {
            "README.md": b"---\nlicense: mit\n---\n",
            "data/test-00000-of-00001.parquet": _parquet([hle_row, {**hle_row, "id": "h2", "answer_type": "exactMatch", "answer": "two"}]),
        }
    )
    return {r.repo_id: r for r in (medmis, cm, mcqa, mmlu, pqa, hle)}


@pytest.fixture
def hub(monkeypatch):
    repos = _repos()
    with HubServer(list(repos.values()), tokens={"hf_good"}) as srv:
        monkeypatch.setenv("HF_ENDPOINT", srv.url)
        srv.repos = repos
        yield srv


def _import(*args: str):
    return runner.invoke(app, ["import", *args])


def _one_line(r) -> str:
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, r.output
    return lines[0]


def _resolved(hub: HubServer) -> list[str]:
    return [p for m, p in hub.requests if m == "GET" and "/resolve/" in p]


# --------------------------------------------------------------------------- releases become suites


def test_medmisbench_by_name_is_one_suite_with_every_config_and_records_commit_and_checksums(hub, tmp_path):
    r = _import("hf:AI4HealthResearch/MedMisBench", "--out", str(tmp_path / "suite"))
    assert r.exit_code == 0, r.output
    suite = Suite.load(tmp_path / "suite")
    assert {i.meta["release"]["config"] for i in suite.items.values()} == {"MEDMISQA", "MEDMISJOURNEY", "MEDMISHLE"}
    assert len(suite.items) == 4 and suite.items["MEDMISJOURNEY/7"].answer == "2"
    src = suite.manifest.source
    commit = hub.repos["AI4HealthResearch/MedMisBench"].refs["main"]
    assert src["dataset"] == "hf:AI4HealthResearch/MedMisBench" and src["commit"] == commit and src["revision"] == "main"
    assert src["format"] == "medmisbench"
    import hashlib

    assert src["files"] == {p: hashlib.sha256(b).hexdigest() for p, b in MEDMIS_FILES.items() if p.startswith("data/")}
    assert commit[:12] in r.output


def test_one_config_downloads_only_its_file(hub, tmp_path):
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISQA", "--out", str(tmp_path / "qa"))
    assert r.exit_code == 0, r.output
    suite = Suite.load(tmp_path / "qa")
    assert {i.meta["release"]["config"] for i in suite.items.values()} == {"MEDMISQA"}
    assert list(suite.manifest.source["files"]) == ["data/medmisqa.parquet"]
    assert sorted(p.rsplit("/", 1)[-1] for p in _resolved(hub)) == ["README.md", "medmisqa.parquet"]


def test_unknown_config_names_the_configs(hub, tmp_path):
    line = _one_line(_import("hf:AI4HealthResearch/MedMisBench:MEDMISXX", "--out", str(tmp_path / "x")))
    assert "MEDMISXX" in line and "MEDMISQA, MEDMISJOURNEY, MEDMISHLE" in line
    assert not (tmp_path / "x").exists()


def test_a_pinned_revision_is_what_is_read_and_recorded(hub, tmp_path):
    repo = hub.repos["AI4HealthResearch/MedMisBench"]
    old = repo.refs["main"]
    new = repo.commit({**MEDMIS_FILES, "data/medmisqa.parquet": _parquet([_flat(1), _flat(2, "C"), _flat(3, "D")])})
    r = _import(f"hf:AI4HealthResearch/MedMisBench:MEDMISQA@{old}", "--out", str(tmp_path / "old"))
    assert r.exit_code == 0, r.output
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISQA", "--out", str(tmp_path / "new"))
    assert r.exit_code == 0, r.output
    s_old, s_new = Suite.load(tmp_path / "old"), Suite.load(tmp_path / "new")
    assert len(s_old.items) == 2 and s_old.manifest.source["commit"] == old and s_old.manifest.source["revision"] == old
    assert len(s_new.items) == 3 and s_new.manifest.source["commit"] == new
    assert s_old.manifest.source["files"] != s_new.manifest.source["files"]
    line = _one_line(_import("hf:AI4HealthResearch/MedMisBench@v9", "--out", str(tmp_path / "v9")))
    assert "no revision 'v9'" in line


def test_the_cache_is_reused_and_offline_with_a_cached_copy_works(hub, tmp_path, monkeypatch):
    ref = "hf:AI4HealthResearch/MedMisBench:MEDMISQA"
    assert _import(ref, "--out", str(tmp_path / "a")).exit_code == 0
    downloads = len(_resolved(hub))
    r = _import(ref, "--out", str(tmp_path / "b"))
    assert r.exit_code == 0, r.output
    assert len(_resolved(hub)) == downloads  # nothing downloaded twice
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", _closed_port())  # and no server either
    before = len(hub.requests)
    r = _import(ref, "--out", str(tmp_path / "c"))
    assert r.exit_code == 0, r.output
    assert len(hub.requests) == before
    a, c = Suite.load(tmp_path / "a"), Suite.load(tmp_path / "c")
    assert a.manifest.source["commit"] == c.manifest.source["commit"] and a.manifest.source["files"] == c.manifest.source["files"]
    assert [i.id for i in a.items.values()] == [i.id for i in c.items.values()]
    # another config of the same dataset is not in the cache: one line, exit 2
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISHLE", "--out", str(tmp_path / "d"))
    assert r.exit_code == 2 and "not in the local cache" in _one_line(r)


def test_offline_with_an_empty_cache_is_one_line_saying_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = _import("hf:AI4HealthResearch/MedMisBench", "--out", str(tmp_path / "s"))
    assert r.exit_code == 2
    line = _one_line(r)
    assert "hf:AI4HealthResearch/MedMisBench" in line and "HF_HUB_OFFLINE" in line and "connected machine" in line
    assert not (tmp_path / "s").exists()
    # an items file as the output: the advice names no directory for it
    r = _import("hf:someone/items-only", "--out", str(tmp_path / "items.jsonl"))
    line = _one_line(r)
    assert r.exit_code == 2 and "`medres import hf:someone/items-only` command" in line and "DIR" not in line


def test_no_network_and_no_cache_is_one_line(tmp_path):
    r = _import("hf:AI4HealthResearch/MedMisBench", "--out", str(tmp_path / "s"))  # HF_ENDPOINT: a closed port
    assert r.exit_code == 2 and "cannot be reached" in _one_line(r)


def test_cancer_myth_by_name_is_a_suite(hub, tmp_path):
    r = _import("hf:Cancer-Myth/Cancer-Myth", "--out", str(tmp_path / "cm"))
    assert r.exit_code == 0, r.output
    suite = Suite.load(tmp_path / "cm")
    assert suite.manifest.family == "presupposition" and len(suite.items) == 2 and len(suite.probes) == 2
    assert suite.manifest.source["format"] == "cancer-myth"
    assert suite.manifest.source["commit"] == hub.repos["Cancer-Myth/Cancer-Myth"].refs["main"]
    assert list(suite.manifest.source["files"]) == ["data/cancer_myth.json"]


def test_a_run_on_a_suite_imported_by_name_records_the_data_in_run_json(hub, tmp_path):
    from medresilience.testing.stub import StubServer

    assert _import("hf:AI4HealthResearch/MedMisBench:MEDMISQA", "--out", str(tmp_path / "s")).exit_code == 0
    with StubServer(policy="hash") as srv:
        r = runner.invoke(app, ["eval", "--suite", str(tmp_path / "s"), "--model", f"openai:stub,base_url={srv.base_url}", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    source = json.loads((tmp_path / "run" / "run.json").read_text())["suite"]["source"]
    assert source["dataset"] == "hf:AI4HealthResearch/MedMisBench"
    assert source["commit"] == hub.repos["AI4HealthResearch/MedMisBench"].refs["main"]
    assert "data/medmisqa.parquet" in source["files"]


# --------------------------------------------------------------------------- sources become items


def test_medmcqa_in_its_hub_layout_reads_the_0_based_answer(hub, tmp_path):
    out = tmp_path / "mcqa.jsonl"
    r = _import("hf:openlifescienceai/medmcqa:validation", "--out", str(out))
    assert r.exit_code == 0, r.output
    items = list(read_jsonl(out, Item))
    assert [(i.id, i.answer) for i in items] == [("medmcqa-q2", "A"), ("medmcqa-q3", "D")]
    prov = json.loads(provenance_path(out).read_text())
    assert prov["commit"] == hub.repos["openlifescienceai/medmcqa"].refs["main"] and prov["items"] == 2
    assert list(prov["files"]) == ["data/validation-00000-of-00001.parquet"]
    # the test split has no answers: one line naming file, row and field
    line = _one_line(_import("hf:openlifescienceai/medmcqa:default/test", "--out", str(tmp_path / "t.jsonl")))
    assert "of-00001.parquet:1: field 'cop'" in line and "no published answers" in line


def test_mmlu_subject_split_and_pubmedqa_in_their_hub_layouts(hub, tmp_path):
    r = _import("hf:cais/mmlu:anatomy/test", "--out", str(tmp_path / "anat.jsonl"))
    assert r.exit_code == 0, r.output
    items = list(read_jsonl(tmp_path / "anat.jsonl", Item))
    assert [(i.id, i.answer, i.subject) for i in items] == [("mmlu-anatomy-test-1", "B", "anatomy"), ("mmlu-anatomy-test-2", "A", "anatomy")]
    assert items[0].options == {"A": "femur", "B": "humerus", "C": "tibia", "D": "fibula"}
    r = _import("hf:qiaojin/PubMedQA:pqa_labeled", "--out", str(tmp_path / "pqa.jsonl"))
    assert r.exit_code == 0, r.output
    (item,) = read_jsonl(tmp_path / "pqa.jsonl", Item)
    assert item.id == "pubmedqa-123" and item.answer == "A" and item.meta["context"] == "METHODS: We studied."


def test_a_gated_dataset_says_how_to_get_access_and_works_with_a_token(hub, tmp_path, monkeypatch):
    r = _import("hf:cais/hle", "--out", str(tmp_path / "hle.jsonl"))
    assert r.exit_code == 2
    line = _one_line(r)
    assert "gated" in line and "HF_TOKEN" in line and "accept its terms" in line and "/datasets/cais/hle" in line
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    line = _one_line(_import("hf:cais/hle", "--out", str(tmp_path / "hle.jsonl")))
    assert "HF_TOKEN is set" in line
    monkeypatch.setenv("HF_TOKEN", "hf_good")
    r = _import("hf:cais/hle", "--out", str(tmp_path / "hle.jsonl"))
    assert r.exit_code == 0, r.output
    assert "skipped not multiple choice: 1" in r.output
    assert [i.id for i in read_jsonl(tmp_path / "hle.jsonl", Item)] == ["hle-h1"]


def test_a_release_config_read_as_items_with_format(hub, tmp_path):
    out = tmp_path / "journey.jsonl"
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISJOURNEY", "--format", "medjourney", "--out", str(out))
    assert r.exit_code == 0, r.output
    (item,) = read_jsonl(out, Item)
    assert item.answer == "2" and list(item.options) == ["1", "2", "3", "4"]


def test_not_a_hub_name_is_one_line(tmp_path):
    line = _one_line(_import("hf:nothing", "--out", str(tmp_path / "x.jsonl")))
    assert "hf:OWNER/NAME" in line


# --------------------------------------------------------------------------- the catalog, known files, help


def test_datasets_lists_every_benchmark_and_source_with_a_date(tmp_path):
    r = runner.invoke(app, ["datasets"])
    assert r.exit_code == 0, r.output
    from medresilience.sources.catalog import CATALOG, CHECKED

    assert CHECKED in r.output
    names = {d.name for d in CATALOG}
    assert {
        "medmisbench",
        "cancer-myth",
        "cancer-myth-nfp",
        "medqa",
        "medmcqa",
        "mmlu-medical",
        "pubmedqa",
        "medxpertqa",
        "hle",
        "medjourney",
        "vanderbilt-abbreviations",
    } <= names
    # wrapped at spaces to the terminal; a long command continued on the next line, as a shell reads it
    shown = " ".join(re.sub(r" \\\n", " ", r.output).split())
    for d in CATALOG:
        assert d.name in r.output and d.where in shown and d.command in shown
        assert d.command.split()[0] in ("medres", "HF_TOKEN=hf_...")


def test_every_catalog_hub_command_uses_a_format_the_toolkit_reads():
    from medresilience import sources
    from medresilience.family import families

    known = set(sources.formats()) | {n for f in families() for n in f.suites.readers} | {"abbreviations"}
    from medresilience.sources.catalog import CATALOG

    assert all(d.fmt in known for d in CATALOG)


def test_a_known_file_with_another_checksum_is_said_and_still_imported(tmp_path):
    inv = tmp_path / "vanderbilt_clinic_notes.txt"
    inv.write_text("abbreviation\tsense\tvariation\tCUI\tfrequency\nbp\tblood pressure\tbp_1\tc1\t0.9\n")
    r = _import(str(inv), "--out", str(tmp_path / "abbr"))
    assert r.exit_code == 0, r.output
    assert "differs from the vanderbilt-abbreviations file this project tested" in r.output and sha256_file(inv) in r.output
    assert (tmp_path / "abbr" / inv.name).read_bytes() == inv.read_bytes()


def test_the_tested_vanderbilt_inventory_checks_clean(tmp_path):
    from conftest import shared_data

    src = shared_data("abbreviations", "vanderbilt_discharge_sums.txt")
    r = _import(str(src), "--out", str(tmp_path / "abbr"))
    assert r.exit_code == 0 and "differs" not in r.output, r.output
    assert sha256_file(tmp_path / "abbr" / src.name) == sha256_file(src)


def test_format_help_needs_no_out_and_a_missing_out_is_one_line(tmp_path):
    r = _import("--format", "help")
    assert r.exit_code == 0 and "suite formats" in r.output and "medmisbench" in r.output
    line = _one_line(_import(str(tmp_path / "x.jsonl")))
    assert "--out" in line


def test_hub_server_answers_what_the_client_reads():
    repo = HubRepo("o/n")
    commit = repo.commit({"a.json": b"{}"})
    with HubServer([repo]) as srv:
        import urllib.request

        req = urllib.request.Request(f"{srv.url}/datasets/o/n/resolve/main/a.json", method="HEAD")
        with urllib.request.urlopen(req) as resp:
            assert resp.headers["X-Repo-Commit"] == commit and resp.headers["ETag"].startswith('"') and resp.headers["Content-Length"] == "2"
        with urllib.request.urlopen(f"{srv.url}/api/datasets/o/n/revision/main") as resp:
            assert json.loads(resp.read())["sha"] == commit
    assert isinstance(Path(__file__), Path)


def test_a_missing_file_the_catalog_knows_says_where_to_get_it(tmp_path):
    line = _one_line(_import(str(tmp_path / "nfp.json"), "--format", "cancer-myth-nfp", "--out", str(tmp_path / "s")))
    assert "file not found" in line and "github.com/Bill1235813/cancer-myth" in line


def test_the_docs_get_their_data_by_name_and_name_the_shared_folder_once():
    """The data page (docs/how-to/data.md) gets every catalogued dataset by hub name; every `hf:`
    import anywhere in the documentation names a catalogued dataset; one line, about the tests,
    names ../shared."""
    import re

    from medresilience.sources.catalog import CATALOG
    from medresilience.sources.hub import parse_ref

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    docs = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    page = (ROOT / "docs" / "how-to" / "data.md").read_text(encoding="utf-8")
    data = page[: page.index("## Data in and out")]
    for d in CATALOG:
        if d.hub_id:
            assert f"hf:{d.hub_id}" in data, d.name
    hub_ids = {d.hub_id for d in CATALOG if d.hub_id}
    refs = re.findall(r"medres import (hf:\S+)", docs)
    assert refs and all(parse_ref(r).repo_id in hub_ids for r in refs)
    shared = [ln for ln in docs.splitlines() if "../shared" in ln]
    assert len(shared) == 1 and "tests" in shared[0], shared


def test_datasets_as_one_markdown_table():
    from medresilience.sources.catalog import CATALOG, CHECKED

    r = runner.invoke(app, ["datasets", "--markdown"])
    assert r.exit_code == 0, r.output
    rows = [ln for ln in r.output.splitlines() if ln.startswith("| ") and not ln.startswith("| dataset")]
    assert [row.split(" | ")[0][2:] for row in rows] == [d.name for d in CATALOG] and CHECKED in r.output
    assert all(row.count(" | ") == 6 for row in rows)


def test_a_local_import_over_a_hub_import_drops_the_old_provenance(hub, tmp_path):
    out = tmp_path / "items.jsonl"
    assert _import("hf:openlifescienceai/medmcqa:validation", "--out", str(out)).exit_code == 0
    assert provenance_path(out).exists()
    local = tmp_path / "medqa.jsonl"
    local.write_text(json.dumps({"question": "Q?", "options": {"A": "a", "B": "b"}, "answer": "a", "answer_idx": "A"}) + "\n")
    r = _import(str(local), "--out", str(out))
    assert r.exit_code == 0, r.output
    assert not provenance_path(out).exists()


def test_a_one_file_release_with_several_files_says_to_name_one(hub, tmp_path):
    repo = hub.repos["Cancer-Myth/Cancer-Myth"]
    repo.commit(
        {
            "README.md": b"# no configs\n",
            "data/cancer_myth.json": json.dumps(CANCER_MYTH).encode(),
            "data/cancer_myth_v2.json": json.dumps(CANCER_MYTH[:1]).encode(),
        }
    )
    line = _one_line(_import("hf:Cancer-Myth/Cancer-Myth", "--out", str(tmp_path / "cm")))
    assert "2 data files" in line and "name one" in line and not (tmp_path / "cm").exists()
    r = _import("hf:Cancer-Myth/Cancer-Myth:v2", "--out", str(tmp_path / "cm"))
    assert r.exit_code == 0, r.output
    assert len(Suite.load(tmp_path / "cm").items) == 1


# --------------------------------------------------------------------------- bytes against the listed ids

QA = "data/medmisqa.parquet"
OTHER = _parquet([_flat(1, "C"), _flat(2, "B")])  # a valid file of the same layout and size, the answers swapped
assert len(OTHER) == len(MEDMIS_FILES[QA]) and MEDMIS_FILES[QA] != OTHER


def test_bytes_other_than_the_listed_blob_id_are_refused_naming_the_file(hub, tmp_path):
    """A mirror that serves other bytes under the blob id the tree lists (ETag included) is caught by
    hashing what arrived (git's blob SHA-1 of a regular file); nothing is imported and the bad copy
    does not stay in the cache to be read offline later."""
    repo = hub.repos["AI4HealthResearch/MedMisBench"]
    repo.served[QA] = OTHER
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISQA", "--out", str(tmp_path / "s"))
    assert r.exit_code == 2, r.output
    line = _one_line(r)
    assert QA in line and "does not match" in line and git_blob_id(MEDMIS_FILES[QA]) in line and git_blob_id(OTHER) in line
    assert not (tmp_path / "s").exists()
    repo.served.clear()  # the mirror is fixed: the file is fetched again, and imported
    before = len(_resolved(hub))
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISQA", "--out", str(tmp_path / "s"))
    assert r.exit_code == 0, r.output
    assert len(_resolved(hub)) > before and len(Suite.load(tmp_path / "s").items) == 2


def test_an_lfs_file_is_checked_against_its_sha256(hub, tmp_path, monkeypatch):
    repo = hub.repos["AI4HealthResearch/MedMisBench"]
    repo.lfs.add(QA)
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISQA", "--out", str(tmp_path / "good"))
    assert r.exit_code == 0, r.output  # the LFS listing and headers as the client reads them
    repo.served[QA] = OTHER
    monkeypatch.setenv("HF_HOME", str(tmp_path / "another-cache"))  # not the good copy just cached
    r = _import("hf:AI4HealthResearch/MedMisBench:MEDMISQA", "--out", str(tmp_path / "bad"))
    assert r.exit_code == 2, r.output
    line = _one_line(r)
    assert QA in line and hashlib.sha256(MEDMIS_FILES[QA]).hexdigest() in line and "SHA-256" in line
    assert not (tmp_path / "bad").exists()


def test_a_cached_file_changed_since_is_refused_offline(hub, tmp_path, monkeypatch):
    """Offline the listing is not at hand: the cache names each file's blob by its id, and the
    bytes are checked against that name."""
    ref = "hf:AI4HealthResearch/MedMisBench:MEDMISQA"
    assert _import(ref, "--out", str(tmp_path / "a")).exit_code == 0
    [blob] = [p for p in (tmp_path / "hf-home").rglob(git_blob_id(MEDMIS_FILES[QA])) if p.parent.name == "blobs"]
    blob.write_bytes(OTHER)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = _import(ref, "--out", str(tmp_path / "b"))
    assert r.exit_code == 2 and QA in _one_line(r) and "does not match" in _one_line(r), r.output
    assert not (tmp_path / "b").exists()


def test_a_pubmedqa_parquet_row_whose_context_is_no_object_names_its_row_and_field(tmp_path):
    # the hub layout's `context` is a struct (contexts, labels, meshes); a plain string there is bad
    # input named by file, row and field, not an AttributeError from reading it as one
    from medresilience.runtime.errors import InputError
    from medresilience.sources.hub_layouts import read_pubmedqa_parquet

    path = tmp_path / "pqa.parquet"
    rows = {"pubid": [123], "question": ["Does it work?"], "context": ["METHODS: We studied."], "long_answer": ["Yes."], "final_decision": ["yes"]}
    pq.write_table(pa.table(rows), path)
    with pytest.raises(InputError) as e:
        list(read_pubmedqa_parquet(path))
    assert e.value.field == "context" and e.value.line == 1 and "must be an object" in str(e.value)
