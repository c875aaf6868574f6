"""`--batch` on the commands other than `medres eval` that call models through the one call path:
`medres audit --reader` and `medres build misleading` submit their calls to the local batch server
(the stub's OpenAI files + batches, answered by the same policy as its chat completions), exit 3
while a batch is in progress, collect on the next run and end with the same stored replies, scores
and outputs as the same command run live against the same stub. `medres mitigate optimise` is
sequential by nature and refuses `--batch` in one line. No network: every server is on 127.0.0.1."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from conftest import make_tiny_suite, oracle_policy
from medresilience.cli import app
from medresilience.families.misleading.testing import FakeGenerator
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer

WAITING = 3
runner = CliRunner()


def _until_done(args: list[str], rounds: int = 10) -> list:
    """Reruns the command until it stops waiting; every run before the last exits 3."""
    runs = []
    for _ in range(rounds):
        runs.append(runner.invoke(app, args))
        if runs[-1].exit_code != WAITING:
            break
    return runs


def _rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return sorted(con.execute(sql).fetchall())
    finally:
        con.close()


def _calls(db: Path) -> list[tuple]:
    return _rows(db, "SELECT key, model, status, text, finish_reason, prompt_tokens, completion_tokens FROM calls")


def _reader_policy(messages, request):
    """The run's model answers as the oracle; the reader model reads the fenced reply's letter."""
    if request.get("model") == "reader":
        text = messages[-1]["content"]
        return next((f"{x}" for x in "ABCD" if f"Answer: {x}" in text), "none")
    return oracle_policy(messages, request)


def test_audit_reader_calls_go_out_as_a_batch_and_end_as_the_live_audit(tmp_path):
    make_tiny_suite(n_copies=2).save(tmp_path / "suite")
    eps = BatchEndpoints(BatchFaults(polls=1))
    with StubServer(policy=_reader_policy, batches=eps) as srv:
        model = f"openai:stub,base_url={srv.base_url}"
        ran = runner.invoke(app, ["eval", "--suite", str(tmp_path / "suite"), "--model", model, "--out", str(tmp_path / "live"), "-O", "type1=all"])
        assert ran.exit_code == 0, ran.output
        shutil.copytree(tmp_path / "live", tmp_path / "batch")
        reader = f"openai:reader,base_url={srv.base_url}"
        live = runner.invoke(app, ["audit", str(tmp_path / "live"), "--n", "100", "--reader", reader, "--viewer-url", "none"])
        assert live.exit_code == 0, live.output
        before = srv.stats.by_outcome.get("ok", 0)
        runs = _until_done(["audit", str(tmp_path / "batch"), "--n", "100", "--reader", reader, "--viewer-url", "none", "--batch", "openai"])
        made_live = srv.stats.by_outcome.get("ok", 0) - before
    assert [r.exit_code for r in runs] == [WAITING, WAITING, 0], [r.output for r in runs]
    assert "submitted, 40 calls" in runs[0].output and "waiting for a batch: 40 calls" in runs[0].output
    assert made_live == 0 and len(eps.paid) == 40 and not eps.paid_twice()
    assert list((tmp_path / "batch" / "batches").glob("medres-*.jsonl"))
    db_live, db_batch = tmp_path / "live" / "store.sqlite", tmp_path / "batch" / "store.sqlite"
    assert _calls(db_batch) == _calls(db_live)
    scores = "SELECT key, scorer, label, status, value FROM scores"
    assert _rows(db_batch, scores) == _rows(db_live, scores)
    assert runs[-1].output.split("label audit:")[1] == live.output.split("label audit:")[1]


def test_build_misleading_goes_stage_by_stage_through_batches_to_the_live_builds_suite(tmp_path):
    make_tiny_suite(n_copies=2).save(tmp_path / "src")
    items = str(tmp_path / "src" / "items.jsonl")
    with StubServer(policy=FakeGenerator()) as srv:
        spec = f"openai:fake,base_url={srv.base_url},concurrency=4"
        live = runner.invoke(app, ["build", "misleading", "--items", items, "--generator", spec, "--out", str(tmp_path / "live"), "--seed", "2"])
    assert live.exit_code == 0, live.output
    eps = BatchEndpoints(BatchFaults(polls=0))
    with StubServer(policy=FakeGenerator(), batches=eps) as srv:
        spec = f"openai:fake,base_url={srv.base_url},concurrency=4"
        args = ["build", "misleading", "--items", items, "--generator", spec, "--out", str(tmp_path / "batch"), "--seed", "2", "--batch", "openai"]
        runs = _until_done(args)
        chat = srv.stats.by_outcome
    codes = [r.exit_code for r in runs]
    assert codes[-1] == 0 and codes[:-1] == [WAITING] * (len(codes) - 1) and len(codes) >= 3, [r.output for r in runs]  # a batch per stage
    assert set(chat) == {"batch"}, "no call was made live"
    assert not eps.paid_twice() and not eps.duplicates
    for name in ("items.jsonl", "probes.jsonl"):
        assert (tmp_path / "batch" / name).read_text() == (tmp_path / "live" / name).read_text()
    assert _calls(tmp_path / "batch.build" / "store.sqlite") == _calls(tmp_path / "live.build" / "store.sqlite")


def test_the_optimiser_refuses_batch_in_one_line(tmp_path):
    r = runner.invoke(
        app,
        [
            "mitigate",
            "optimise",
            "--train",
            str(tmp_path),
            "--val",
            str(tmp_path),
            "--task-model",
            "openai/gpt-4o-mini",
            "--reflection-model",
            "openai/gpt-4o-mini",
            "--budget",
            "10",
            "--out",
            str(tmp_path / "p.json"),
            "--batch",
            "openai",
        ],
    )
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "error: --batch: the optimiser's calls are sequential (each proposal is written from the replies to the last one); run it live (without --batch)"
    ]
    assert not (tmp_path / "p.json.work").exists()
