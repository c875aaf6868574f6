"""Planning in chunks changes when a call is made, never which: a suite run through
`execute_plan` with tiny chunks leaves the same units, calls and scores, and the same numbers,
as planning everything at once; a resume with nothing left to do makes no call."""

from __future__ import annotations

import asyncio

from conftest import eval_command, make_tiny_suite, oracle_policy
from medresilience.models.spec import parse_model_spec
from medresilience.run.frame import results_frame
from medresilience.run.runner import EvalOptions, execute, execute_plan, plan
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer
from toy_family import TOY, answerer, make_toy_suite


def _rows(store: Store):
    units = sorted(store.conn.execute("SELECT model, unit_id, item_id, probe_id, condition, setting, scoring, key FROM units"))
    calls = sorted(store.conn.execute("SELECT key, status, text FROM calls"))
    scores = sorted(store.conn.execute("SELECT key, scorer, label, status, value FROM scores"))
    return units, calls, scores


def test_chunks_give_the_same_store_and_numbers(tmp_path, toy_family):
    suite = make_toy_suite(30)  # 30 items x 2 conditions x 2 settings x 2 models = 240 units
    opts = EvalOptions(settings=("none", "caution"))
    seen = []
    with StubServer(policy=answerer) as srv:
        specs = [parse_model_spec(f"openai:stub-a,base_url={srv.base_url}"), parse_model_spec(f"openai:stub-b,temperature=0.3,base_url={srv.base_url}")]
        with Store(tmp_path / "whole.sqlite") as a:
            a.record_run("r", {})
            whole = asyncio.run(execute(plan(suite, specs, opts), specs, a))
            rows_a, frame_a = _rows(a), results_frame(a, suite)
        with Store(tmp_path / "chunks.sqlite") as b:
            b.record_run("r", {})
            parts = asyncio.run(execute_plan(suite, specs, opts, b, progress=lambda d, t: seen.append((d, t)), chunk_units=13))
            rows_b, frame_b = _rows(b), results_frame(b, suite)
            again = asyncio.run(execute_plan(suite, specs, opts, b, chunk_units=13))
    assert rows_a == rows_b
    assert (whole.called, whole.planned_units) == (parts.called, parts.planned_units) == (240, 240)
    assert again.called == 0 and again.cached == 240
    assert TOY.measures.metrics(frame_a) == TOY.measures.metrics(frame_b) and TOY.measures.metrics(frame_a)["models"]
    assert seen[-1] == (240, 240) and all(d <= t for d, t in seen)


def test_a_model_stopped_in_one_chunk_stays_stopped(tmp_path, toy_family):
    """A bad key stops the model after five authentication errors; the later chunks send nothing
    for it (their calls count as not run), so a run in chunks costs what a run at once does."""
    from medresilience.testing.stub import Faults

    suite = make_toy_suite(30)  # 60 units
    opts = EvalOptions()
    with StubServer(policy=answerer, faults=Faults(rate_401=1.0)) as srv:
        spec = parse_model_spec(f"openai:stub-a,base_url={srv.base_url},concurrency=1")
        with Store(tmp_path / "s.sqlite") as st:
            st.record_run("r", {})
            stats = asyncio.run(execute_plan(suite, [spec], opts, st, chunk_units=13))
        assert srv.stats.total == 5
    assert stats.called == 5 and stats.not_run == 60 - 5 and len(stats.stopped) == 1


def _ordered(store: Store):
    """The rows in the order they were written (the order of the results)."""
    units = list(store.conn.execute("SELECT model, unit_id, item_id, probe_id, condition, setting, scoring, key FROM units ORDER BY rowid"))
    requests = list(store.conn.execute("SELECT key FROM requests ORDER BY rowid"))
    return units, requests


def test_a_suite_streamed_from_disk_in_tiny_chunks_gives_the_store_of_one_held_whole(tmp_path):
    """A lazily loaded suite whose probe lines are scattered through the file, planned in chunks of
    a few units read from disk (sample order, a limit), leaves the units, requests, calls and scores
    of the same suite held in memory and run in the same chunks, written in the same order, and the
    same frame; and those of planning everything at once. The suite is never read whole."""
    import pandas as pd

    from test_suite_index import _shuffled_suite

    d = _shuffled_suite(tmp_path)
    opts = EvalOptions(settings=("none", "caution"), family={"type1": "all"}, sample_seed=3, limit=10)
    runs = {}
    with StubServer(policy=oracle_policy) as srv:
        specs = [parse_model_spec(f"openai:stub-a,base_url={srv.base_url}")]
        held = Suite.load(d)
        lazy = Suite.load(d, lazy=True)
        for name, suite in (("at once", held), ("held", held), ("streamed", lazy)):
            with Store(tmp_path / f"{name}.sqlite") as st:
                st.record_run("r", {})
                if name == "at once":
                    stats = asyncio.run(execute(plan(suite, specs, opts), specs, st))
                else:
                    stats = asyncio.run(execute_plan(suite, specs, opts, st, chunk_units=7))
                runs[name] = stats, _rows(st), _ordered(st), results_frame(st, suite)
        assert lazy._unread is not None  # streamed: its records were never all read
    assert runs["held"][1] == runs["streamed"][1] == runs["at once"][1]
    assert runs["held"][2] == runs["streamed"][2]
    pd.testing.assert_frame_equal(runs["held"][3], runs["streamed"][3])
    # 10 items x (clean + 3 Type 1 + Type 2) x 2 settings, one call each
    for stats, rows, _, frame in runs.values():
        assert stats.planned_units == stats.called == len(rows[1]) == 100
        assert frame["item_id"].nunique() == 10


def test_medres_eval_killed_between_chunks_resumes_without_repeating_losing_or_duplicating(tmp_path):
    """`medres eval` streaming its suite in chunks of 20 units, killed (SIGKILL) several chunks in,
    then run again: no finished call is sent again, and the store and results are those of an
    uninterrupted run (no row lost or duplicated)."""
    import json
    import os
    import sqlite3
    import subprocess

    from conftest import ok_keys, sigkill_after, store_key_by_stub_key
    from test_suite_index import _shuffled_suite

    d = _shuffled_suite(tmp_path)  # 12 items -> 60 calls, 3 chunks of 20 units
    log = tmp_path / "stub.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MEDRES_CHUNK_UNITS": "20"}
    from medresilience.testing.stub import Faults

    with StubServer(policy=oracle_policy, faults=Faults(delay=0.05), log_path=log) as srv:
        killed = tmp_path / "killed"
        proc = subprocess.Popen(eval_command(d, killed, srv.base_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        before = sigkill_after(proc, lambda: ok_keys(killed / "store.sqlite"), 25)
        assert 25 <= len(before) < 60, "the kill must land after the first chunk, before the last"
        seen = len(log.read_text().splitlines())
        again = subprocess.run(eval_command(d, killed, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        # the stub logs its own key (a hash of the body): read as the store's key to compare
        to_store = store_key_by_stub_key(killed / "store.sqlite")
        resent = {to_store[json.loads(line)["key"]] for line in log.read_text().splitlines()[seen:]}
        assert resent and not resent & before, "a finished call was made again"
        assert resent | before == ok_keys(killed / "store.sqlite"), "every call not finished before was made"
        clean = tmp_path / "clean"
        ref = subprocess.run(eval_command(d, clean, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert ref.returncode == 0, ref.stderr

    def rows(db):
        con = sqlite3.connect(db)
        try:
            return (
                sorted(con.execute("SELECT model, unit_id, key FROM units")),
                sorted(con.execute("SELECT key, status, text FROM calls")),
                sorted(con.execute("SELECT key, scorer, label, status FROM scores")),
                con.execute("SELECT COUNT(*) - COUNT(DISTINCT key) FROM calls").fetchone()[0],
            )
        finally:
            con.close()

    k, c = rows(killed / "store.sqlite"), rows(clean / "store.sqlite")
    assert k == c and len(k[1]) == 60 and k[3] == 0
    assert json.loads((killed / "results.json").read_text())["models"] == json.loads((clean / "results.json").read_text())["models"]


def test_a_bad_chunk_size_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from medresilience.cli import app

    d = make_tiny_suite().save(tmp_path / "suite")
    monkeypatch.setenv("MEDRES_CHUNK_UNITS", "0")
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["eval", "--suite", str(d), "--out", str(out), "--model", "openai:stub,base_url=http://127.0.0.1:9/v1"])
    assert r.exit_code == 2 and "MEDRES_CHUNK_UNITS" in r.output
    assert not out.exists()


def test_a_request_shared_by_units_in_different_chunks_is_made_once(tmp_path):
    """Items whose clean question is the same (another id, the same text) share one request key;
    streamed in chunks of 5 units, the copies fall in later chunks than the originals and their
    clean request is not made again: one call per distinct request, as when planned at once."""
    base = make_tiny_suite()
    copies = [it.model_copy(update={"id": f"{it.id}-again"}) for it in base.items.values()]
    d = Suite(base.manifest, [*base.items.values(), *copies], list(base.probes)).save(tmp_path / "suite")
    lazy = Suite.load(d, lazy=True)
    opts = EvalOptions(family={"type1": "all"})
    with StubServer(policy=oracle_policy) as srv:
        spec = parse_model_spec(f"openai:stub-a,base_url={srv.base_url}")
        with Store(tmp_path / "s.sqlite") as st:
            st.record_run("r", {})
            stats = asyncio.run(execute_plan(lazy, [spec], opts, st, chunk_units=5))
            units = list(st.conn.execute("SELECT unit_id, key FROM units ORDER BY rowid"))
        sent = srv.stats.total
    keys = {k for _, k in units}
    assert len(units) == 4 * 5 + 4 and len(keys) == 4 * 5  # each copy's clean unit has its original's key
    assert sent == stats.called == len(keys) and stats.cached == 4
    assert [u for u, _ in units[-4:]] == [f"{it.id}|clean|none|letter" for it in copies]


def test_the_next_chunk_is_planned_while_the_calls_of_the_one_before_run(tmp_path, toy_family, monkeypatch):
    """The first chunk is small and the calls start with it; each next chunk is planned in a thread
    while the replies of the chunk before are still awaited (the stub holds each for 0.4 s)."""
    import threading

    from medresilience.run import runner
    from medresilience.testing.stub import Faults

    planning: list[tuple[str, int, int]] = []  # (thread, requests the stub has, replies back) at each chunk's planning
    done = [0]
    inner = runner._plan_pairs

    def seen(pairs, *a, **k):
        planning.append((threading.current_thread().name, srv.stats.total, done[0]))
        return inner(pairs, *a, **k)

    monkeypatch.setattr(runner, "_plan_pairs", seen)
    monkeypatch.setattr(runner, "FIRST_CHUNK_ITEMS", 4)
    suite = make_toy_suite(12)  # 24 units: a first chunk of 4 items, then chunks of about 10 records
    with StubServer(policy=answerer, faults=Faults(delay=0.4)) as srv:
        spec = parse_model_spec(f"openai:stub-a,base_url={srv.base_url},concurrency=64")
        with Store(tmp_path / "s.sqlite") as st:
            st.record_run("r", {})
            stats = asyncio.run(execute_plan(suite, [spec], EvalOptions(), st, progress=lambda d, t: done.__setitem__(0, d), chunk_units=10))
    assert stats.called == stats.planned_units == 24
    first, second = planning[0], planning[1]
    assert first[0] == threading.main_thread().name and first[1] == 0  # nothing is sent before the first chunk is planned
    assert second[0] != threading.main_thread().name and second[2] == 0  # planned in a thread, no reply back yet
    assert len(planning) >= 3
