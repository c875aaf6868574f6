"""An adaptive run killed with SIGKILL at each stage of the loop (after the clean answers, while an
attacker call is out, after a checker's verdict, after a target's answer, while the flips' draws are
being resampled) and run again makes no finished call again, and ends with exactly the store and
results of an uninterrupted run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
from test_adaptive import scripted_suite

from conftest import ok_keys, run_medres, store_key_by_stub_key, wait_until
from medresilience.families.adaptive.attack import ATTACKER_SYSTEM, CHECKER_SYSTEM
from medresilience.families.adaptive.testing import ScriptedAttack
from medresilience.testing.stub import StubServer


def command(suite, out, url) -> list[str]:
    return [
        sys.executable,
        "-m",
        "medresilience.cli",
        "eval",
        "--suite",
        str(suite),
        "--out",
        str(out),
        "--model",
        f"openai:stub-model,base_url={url},concurrency=4,max_retries=0",
        "--attacker",
        f"openai:stub-attacker,base_url={url},concurrency=4,max_retries=0",
        "-O",
        "budget=3",
        "-O",
        "kind=noise",
    ]


def rows(db):
    con = sqlite3.connect(db)
    try:
        units = sorted(con.execute("SELECT model, unit_id, key FROM units").fetchall())
        calls = sorted(con.execute("SELECT key, model, status, text FROM calls").fetchall())
        scores = sorted(con.execute("SELECT key, scorer, label, status FROM scores").fetchall())
        links = sorted(con.execute("SELECT * FROM unit_calls").fetchall())
    finally:
        con.close()
    return units, calls, scores, links


#: the request held while the run is killed: (role, its n-th request of that role); the first round
#: is the seven clean calls, then the attackers' first turns, the checkers', the targets'
STAGES = {
    "after the clean answers": ("attacker", 1),
    "mid attacker": ("attacker", 7),
    "after a checker verdict": ("target", 8),
    "after a target answer": ("attacker", 9),
    # the target's 18 requests of the loop (7 clean, 11 stressed), then the draws of the four flips (resample=5 by default)
    "mid resample": ("target", 30),
}
#: what each stage has stored when the run is killed: role -> (at least, at most) calls stored ok
STORED = {
    "after the clean answers": {"clean": (7, 8), "attacker": (0, 0)},  # q6, wrong at clean, is finished: its unit row asks the clean question
    "mid attacker": {"attacker": (6, 7), "target": (0, 0)},
    "after a checker verdict": {"checker": (1, 6), "target": (0, 0)},
    "after a target answer": {"target": (1, 12)},  # the stressed answers and the units finished with one
    # every loop call (the stressed answers and the units finished with one), and some of the draws
    "mid resample": {"attacker": (14, 14), "checker": (13, 13), "target": (11, 17 + 20)},
}


def stored_roles(db) -> dict[str, int]:
    """How many rows of each role a store holds ok (by their request: a finished unit counts with the question it was last asked)."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT r.messages FROM calls c JOIN requests r ON r.key = c.key WHERE c.status = 'ok'").fetchall()
    finally:
        con.close()
    out = {"clean": 0, "attacker": 0, "checker": 0, "target": 0}
    for (text,) in rows:
        messages = json.loads(text)
        first = messages[0]["content"]
        role = "attacker" if first == ATTACKER_SYSTEM else "checker" if first == CHECKER_SYSTEM else "target" if "Level" in messages[-1]["content"] else "clean"
        out[role] += 1
    return out


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_run_killed_at_each_stage_resumes_without_repeating_a_finished_call(tmp_path, stage):
    suite = tmp_path / "suite"
    scripted_suite(suite)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "stub.jsonl"
    policy = ScriptedAttack(hold=STAGES[stage], hold_s=4.0)
    role, n = STAGES[stage]
    with StubServer(policy=policy, log_path=log) as srv:
        killed = tmp_path / "killed"
        proc = subprocess.Popen(command(suite, killed, srv.base_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: policy.seen.count(role) >= n, proc=proc)
            time.sleep(0.3)  # the held request is out: the run waits on it
        finally:
            os.kill(proc.pid, 9)
            proc.wait()
        before = ok_keys(killed / "store.sqlite")
        held = stored_roles(killed / "store.sqlite")
        for r, (lo, hi) in STORED[stage].items():
            assert lo <= held[r] <= hi, (stage, held)
        policy.release()  # the held request ends (its reply meets a closed socket) ...
        wait_until(lambda: srv.stats.total == len(policy.seen))  # ... and is in the stub's log
        seen = len(log.read_text().splitlines())
        done = run_medres(command(suite, killed, srv.base_url))  # in this process (the killed run was a real one)
        assert done.returncode == 0, done.stderr
        to_store = store_key_by_stub_key(killed / "store.sqlite")
        after = {to_store[json.loads(line)["key"]] for line in log.read_text().splitlines()[seen:]}
        assert after and not after & before, "a finished call was made again"
        clean = tmp_path / "clean"
        ref = run_medres(command(suite, clean, srv.base_url))
        assert ref.returncode == 0, ref.stderr
    assert rows(killed / "store.sqlite") == rows(clean / "store.sqlite")
    k, c = (json.loads((d / "results.json").read_text()) for d in (killed, clean))
    assert k["models"] == c["models"] and k["loop"] == c["loop"]
