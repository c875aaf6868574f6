"""A run killed with SIGKILL mid-way and restarted ends with exactly the rows of an uninterrupted
run: none lost, none duplicated, and no call that was stored as finished is made again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest
from typer.testing import CliRunner

from conftest import eval_args, eval_command, make_tiny_suite, ok_keys, oracle_policy, sigkill_after, store_key_by_stub_key, wait_until
from medresilience.cli import app
from medresilience.models.spec import parse_model_spec
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer


def _rows(db):
    con = sqlite3.connect(db)
    try:
        units = sorted(con.execute("SELECT model, unit_id, key FROM units").fetchall())
        calls = sorted(con.execute("SELECT key, status, text FROM calls").fetchall())
        scores = sorted(con.execute("SELECT key, scorer, label, status FROM scores").fetchall())
        dup = con.execute("SELECT COUNT(*) - COUNT(DISTINCT key) FROM calls").fetchone()[0]
    finally:
        con.close()
    return units, calls, scores, dup


def test_sigkill_and_resume_matches_uninterrupted_run(tmp_path):
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=10).save(suite_dir)  # 40 items -> 200 calls
    log = tmp_path / "stub.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with StubServer(policy=oracle_policy, faults=Faults(delay=0.04), log_path=log) as srv:
        killed = tmp_path / "killed"
        proc = subprocess.Popen(
            eval_command(suite_dir, killed, srv.base_url, model_opts="concurrency=4"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        db = killed / "store.sqlite"
        finished_before = sigkill_after(proc, lambda: ok_keys(db), 60)
        assert 60 <= len(finished_before) < 200, "the kill must land mid-run"
        seen_before = len(log.read_text().splitlines())
        done = subprocess.run(eval_command(suite_dir, killed, srv.base_url, model_opts="concurrency=4"), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        # the stub logs its own key (a hash of the body): read as the store's key to compare
        to_store = store_key_by_stub_key(killed / "store.sqlite")
        after = {to_store[json.loads(line)["key"]] for line in log.read_text().splitlines()[seen_before:]}
        assert after and not after & finished_before, "a finished call was made again"
        assert after | finished_before == ok_keys(killed / "store.sqlite"), "every call not finished before was made"
        clean = tmp_path / "clean"
        ref = subprocess.run(eval_command(suite_dir, clean, srv.base_url, model_opts="concurrency=4"), env=env, capture_output=True, text=True, timeout=120)
        assert ref.returncode == 0, ref.stderr
    k_units, k_calls, k_scores, k_dup = _rows(killed / "store.sqlite")
    c_units, c_calls, c_scores, c_dup = _rows(clean / "store.sqlite")
    assert k_dup == c_dup == 0
    assert len(k_calls) == 200
    assert k_units == c_units and k_calls == c_calls and k_scores == c_scores
    k_res = json.loads((killed / "results.json").read_text())["models"]
    c_res = json.loads((clean / "results.json").read_text())["models"]
    assert k_res == c_res


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_cleanly_and_keeps_every_answer(tmp_path, sig):
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=10).save(suite_dir)  # 200 calls
    log = tmp_path / "stub.jsonl"
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with StubServer(policy=oracle_policy, faults=Faults(delay=0.05), log_path=log) as srv:
        proc = subprocess.Popen(
            eval_command(suite_dir, out, srv.base_url, model_opts="concurrency=4"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_until(lambda: srv.stats.total >= 60, proc=proc)
            t_sig = time.time()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        assert "interrupted" in [ln for ln in err.splitlines() if ln.strip()][-1]
        kept = ok_keys(out / "store.sqlite")
        to_store = store_key_by_stub_key(out / "store.sqlite")
        # every answer delivered well before the signal is in the store
        delivered = {to_store[e["key"]] for e in map(json.loads, log.read_text().splitlines()) if e["outcome"] == "ok" and e["t"] < t_sig - 0.3}
        assert len(delivered) >= 20 and delivered <= kept
        assert not (out / "medres.lock").exists()
        seen = len(log.read_text().splitlines())
        done = subprocess.run(eval_command(suite_dir, out, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        again = {to_store[json.loads(x)["key"]] for x in log.read_text().splitlines()[seen:]}
        assert again and not again & kept and len(ok_keys(out / "store.sqlite")) == 200


runner = CliRunner()


def test_a_rerun_over_more_finished_calls_than_one_query_chunk_sends_none_again(tmp_path):
    """1,901 finished calls (more than two of the store's 900-key query chunks, the last one
    partial): a rerun of the same requests makes no call, and the store's readers by key see every
    one of them (a chunk that dropped or skipped a key would re-send it)."""

    from medresilience.calls import CallRequest, run_calls

    params = {"temperature": 0.0, "max_tokens": 8}
    n = 1901
    with StubServer(policy=oracle_policy) as srv, Store(tmp_path / "s.sqlite") as st:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=64,max_retries=0")
        reqs = [CallRequest(spec.label, f"k{i:05d}", [{"role": "user", "content": f"Question {i}?\nA. a\nB. b"}], params) for i in range(n)]
        first = asyncio.run(run_calls(reqs, [spec], st))
        assert first.called == srv.stats.total == n
        again = asyncio.run(run_calls(reqs, [spec], st))
        assert srv.stats.total == n and again.cached == n and again.called == 0
        keys = [r.key for r in reqs]
        assert st.finished_keys([*keys, "never-planned"]) == set(keys)
        assert set(st.replies(keys)) == set(keys)


def test_the_results_worker_is_silent_when_the_command_leaves_mid_request(tmp_path, tiny_suite, capfd):
    """A signal in the results phase ends the command while its worker computes: the worker's
    answer then meets a closed pipe. It ends without a word (the command prints the one
    "interrupted" line), for an answer and for an error alike; SIGINT (sent to the whole
    foreground group by Ctrl-C) is the command's to handle, not the worker's."""
    import signal

    from medresilience.cli import results_worker
    from medresilience.cli.results_worker import ResultsWorker

    if not results_worker.enabled():
        import pytest

        pytest.skip("the results worker runs where processes fork (Linux)")
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(app, eval_args(d, out, srv.base_url))
        assert r.exit_code == 0, r.output
    capfd.readouterr()
    for request in (("report", str(out), {}), ("no such request",)):
        w = ResultsWorker(tiny_suite).__enter__()
        proc = w._proc
        w._conn.send(request)
        w._conn.close()  # the command is gone before the answer (its end of the pipe closed)
        w._conn = None
        proc.join(timeout=120)
        assert proc.exitcode == 0
        assert capfd.readouterr().err == "", request
    w = ResultsWorker(tiny_suite).__enter__()
    try:
        assert w._ask("no such request") is None  # one round trip: the worker is serving
        os_kill = __import__("os").kill
        os_kill(w._proc.pid, signal.SIGINT)
        w._conn.send(("no such request",))
        status, _ = w._conn.recv()  # answered (an error), not killed by the SIGINT
        assert status == "error" and w._proc.is_alive()
    finally:
        w.close()
    assert capfd.readouterr().err == ""
