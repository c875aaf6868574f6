"""A run killed with SIGKILL mid-way and restarted ends with exactly the rows of an uninterrupted
run: none lost, none duplicated, and no call that was stored as finished is made again."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from conftest import make_tiny_suite, ok_keys, oracle_policy, sigkill_after, store_key_by_stub_key
from medresilience.testing.stub import Faults, StubServer


def _cmd(suite_dir, out, url):
    return [
        sys.executable,
        "-m",
        "medresilience.cli",
        "eval",
        "--suite",
        str(suite_dir),
        "--out",
        str(out),
        "-O",
        "type1=all",
        "--model",
        f"openai:stub-model,base_url={url},concurrency=4",
    ]


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
        proc = subprocess.Popen(_cmd(suite_dir, killed, srv.base_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        db = killed / "store.sqlite"
        finished_before = sigkill_after(proc, lambda: ok_keys(db), 60)
        assert 60 <= len(finished_before) < 200, "the kill must land mid-run"
        seen_before = len(log.read_text().splitlines())
        done = subprocess.run(_cmd(suite_dir, killed, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        # the stub logs its own key (a hash of the body): read as the store's key to compare
        to_store = store_key_by_stub_key(killed / "store.sqlite")
        after = {to_store[json.loads(line)["key"]] for line in log.read_text().splitlines()[seen_before:]}
        assert after and not after & finished_before, "a finished call was made again"
        assert after | finished_before == ok_keys(killed / "store.sqlite"), "every call not finished before was made"
        clean = tmp_path / "clean"
        ref = subprocess.run(_cmd(suite_dir, clean, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert ref.returncode == 0, ref.stderr
    k_units, k_calls, k_scores, k_dup = _rows(killed / "store.sqlite")
    c_units, c_calls, c_scores, c_dup = _rows(clean / "store.sqlite")
    assert k_dup == c_dup == 0
    assert len(k_calls) == 200
    assert k_units == c_units and k_calls == c_calls and k_scores == c_scores
    k_res = json.loads((killed / "results.json").read_text())["models"]
    c_res = json.loads((clean / "results.json").read_text())["models"]
    assert k_res == c_res
