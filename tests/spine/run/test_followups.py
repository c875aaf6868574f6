"""Dependent calls: a unit whose turn continues an earlier unit's conversation (`Family.evaluation.follows`,
medresilience.run.followups). Shown on a toy family of the tests (tests/toy_family.py: each toy MCQ asked
clean, then "think again" in a second turn), so the mechanism is the spine's, not a family's: the
second turn carries the first turn's stored reply and its key is the hash of those messages; a
failed first turn leaves the second not run (counted, shown missing, never asked without the
answer); a run killed between the turns resumes without asking a finished turn again."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import TESTS, ok_keys, sigkill_after
from medresilience import EvalOptions, Suite, evaluate, parse_model_spec
from medresilience.calls import request_key
from medresilience.family import register, unregister
from medresilience.mitigations.caution import CAUTION_INSTRUCTION
from medresilience.run.frame import results_frame
from medresilience.runtime.errors import ConfigError
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer
from toy_family import AGAIN, AGAIN_TURN, again_answerer, make_again_suite


@pytest.fixture
def again_family():
    register(AGAIN)
    yield AGAIN
    unregister(AGAIN.name)


@pytest.fixture
def suite(tmp_path, again_family):
    make_again_suite(8).save(tmp_path / "suite")
    return Suite.load(tmp_path / "suite")


def _spec(srv):
    return parse_model_spec(f"openai:toy-model,base_url={srv.base_url}")


def _units(run):
    con = sqlite3.connect(run / "store.sqlite")
    try:
        return {u: (c, k) for u, c, k in con.execute("SELECT unit_id, condition, key FROM units")}
    finally:
        con.close()


def test_the_second_turn_carries_the_first_reply_and_is_keyed_by_it(tmp_path, suite):
    with StubServer(policy=again_answerer) as srv:
        spec = _spec(srv)
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions())
    h = res.results.headline("toy-model")
    # clean: items 3 and 7 wrong; again: 0, 3, 6 move one letter on (0, 6 right -> wrong; 3 stays wrong)
    assert (h["clean"].k, h["clean"].n) == (6, 8) and (h["again"].k, h["again"].n) == (4, 8)
    with Store(tmp_path / "run" / "store.sqlite") as st:
        first = st.ok_texts([k for c, k in _units(tmp_path / "run").values() if c == "clean"])
        for unit_id, (cond, key) in _units(tmp_path / "run").items():
            if cond != "again":
                continue
            sent = st.request(key)
            clean_key = _units(tmp_path / "run")[unit_id.replace(":again|again", "|clean")][1]
            assert sent["messages"][-2:] == [{"role": "assistant", "content": first[clean_key]}, {"role": "user", "content": AGAIN_TURN}]
            assert key == request_key(spec, sent["messages"], sent["params"])  # the hash of what was sent, reply included
    assert res.stats.planned_units == 16 and res.stats.not_run == 0


def test_another_first_reply_gives_another_second_key(tmp_path, suite):
    def wrong_first(messages, request):
        return "Answer: B" if len(messages) < 3 else again_answerer(messages, request)

    runs = {}
    policy = {"now": again_answerer}
    with StubServer(policy=lambda messages, request: policy["now"](messages, request)) as srv:
        for name, answer in (("a", again_answerer), ("b", wrong_first)):
            policy["now"] = answer
            evaluate(suite, [_spec(srv)], tmp_path / name, EvalOptions())
            runs[name] = _units(tmp_path / name)
    same = [u for u, (c, k) in runs["a"].items() if c == "clean" and runs["b"][u][1] == k]
    assert len(same) == 8  # the first turns are the same requests
    # items 1 and 5 (gold B) answer B at first in both runs: the same reply, the same second-turn key
    changed = {u for u, (c, k) in runs["a"].items() if c == "again" and runs["b"][u][1] != k}
    assert changed == {f"t{i}:again|again|none|letter" for i in (0, 2, 3, 4, 6, 7)}


def test_a_failed_first_turn_leaves_the_second_not_run_and_a_rerun_asks_it(tmp_path, suite):
    def first_fails_on_item_2(messages, request):
        if len(messages) < 3 and "Toy question 2:" in messages[-1]["content"]:
            raise RuntimeError("down")
        return again_answerer(messages, request)

    log = tmp_path / "stub.jsonl"
    with StubServer(policy=first_fails_on_item_2, log_path=log) as srv:
        res = evaluate(suite, [_spec(srv)], tmp_path / "run", EvalOptions())
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert not [e for e in seen if "Toy question 2:" in json.dumps(e) and AGAIN_TURN in json.dumps(e)], "a second turn was asked without its first"
    assert res.stats.not_run == 1 and any("second-turn" in line for line in res.stats.stopped)
    with Store(tmp_path / "run" / "store.sqlite") as st:
        df = results_frame(st, suite)
    status = {(r.item_id, r.condition): r.status for r in df.itertuples()}
    assert status[("t2", "clean")] == "error" and status[("t2", "again")] == "missing"
    assert sum(s == "valid" for s in status.values()) == 14
    before = ok_keys(tmp_path / "run" / "store.sqlite")
    log2 = tmp_path / "stub2.jsonl"
    with StubServer(policy=again_answerer, log_path=log2) as srv:
        again = evaluate(suite, [_spec(srv)], tmp_path / "run", EvalOptions())
    assert len(log2.read_text().splitlines()) == 2  # item 2's two turns, nothing else
    assert again.stats.not_run == 0 and len(ok_keys(tmp_path / "run" / "store.sqlite") - before) == 2
    h = again.results.headline("toy-model")
    assert (h["clean"].n, h["again"].n) == (8, 8)


def test_a_setting_applies_to_both_turns_and_a_second_turn_brings_its_first(tmp_path, suite):
    with StubServer(policy=again_answerer) as srv:
        res = evaluate(suite, [_spec(srv)], tmp_path / "run", EvalOptions(settings=("caution",), conditions=("again",)))
    assert res.stats.planned_units == 16  # the clean turns come along with the second turns
    with Store(tmp_path / "run" / "store.sqlite") as st:
        for cond, key in _units(tmp_path / "run").values():
            msgs = st.request(key)["messages"]
            assert sum(m["role"] == "system" for m in msgs) == 1 and len(msgs) == (4 if cond == "again" else 2)
            assert msgs[0]["content"].endswith(CAUTION_INSTRUCTION)  # the setting over the whole conversation


def test_a_setting_with_a_call_before_the_answer_is_refused(tmp_path, suite):
    with pytest.raises(ConfigError, match="second turns"):
        evaluate(suite, [parse_model_spec("openai:toy-model,base_url=http://127.0.0.1:9")], tmp_path / "run", EvalOptions(settings=("monitor",)))


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from medresilience.family import register
from toy_family import AGAIN
register(AGAIN)
from medresilience.cli import app
app(sys.argv[1:])
"""


def _cmd(script, suite_dir, out, url):
    return [sys.executable, str(script), "eval", "--suite", str(suite_dir), "--out", str(out), "--model", f"openai:toy-model,base_url={url},concurrency=4"]


def _rows(db):
    con = sqlite3.connect(db)
    try:
        return (
            sorted(con.execute("SELECT model, unit_id, key FROM units").fetchall()),
            sorted(con.execute("SELECT key, status, text FROM calls").fetchall()),
            sorted(con.execute("SELECT key, scorer, label, status FROM scores").fetchall()),
        )
    finally:
        con.close()


def test_a_run_killed_between_the_turns_resumes_without_asking_a_finished_turn(tmp_path, again_family):
    make_again_suite(40).save(tmp_path / "suite")  # 40 first turns, then 40 second turns
    script = tmp_path / "run_toy.py"
    script.write_text(SCRIPT.format(tests=str(TESTS)))
    log = tmp_path / "stub.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    with StubServer(policy=again_answerer, faults=Faults(delay=0.04), log_path=log) as srv:
        killed = tmp_path / "killed"
        proc = subprocess.Popen(_cmd(script, tmp_path / "suite", killed, srv.base_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finished = sigkill_after(proc, lambda: ok_keys(killed / "store.sqlite"), 44)
        assert 44 <= len(finished) < 80, "the kill must land in the second turns"
        seen_before = len(log.read_text().splitlines())
        done = subprocess.run(_cmd(script, tmp_path / "suite", killed, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        after = [json.loads(line) for line in log.read_text().splitlines()[seen_before:]]
        assert len(after) == 80 - len(finished)
        clean = tmp_path / "clean"
        ref = subprocess.run(_cmd(script, tmp_path / "suite", clean, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert ref.returncode == 0, ref.stderr
    assert _rows(killed / "store.sqlite") == _rows(clean / "store.sqlite")
    assert len(_rows(killed / "store.sqlite")[1]) == 80
    assert json.loads((killed / "results.json").read_text())["models"] == json.loads((clean / "results.json").read_text())["models"]
