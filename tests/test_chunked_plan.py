"""Planning in chunks changes when a call is made, never which: a suite run through
`execute_plan` with tiny chunks leaves the same units, calls and scores, and the same numbers,
as planning everything at once; a resume with nothing left to do makes no call."""

from __future__ import annotations

import asyncio

from conftest import make_tiny_suite, oracle_policy
from medresilience.families.misleading.metrics import misleading_metrics
from medresilience.frame import results_frame
from medresilience.models.spec import parse_model_spec
from medresilience.runner import EvalOptions, execute, execute_plan, plan
from medresilience.store import Store
from medresilience.testing.stub_server import StubServer


def _rows(store: Store):
    units = sorted(store.conn.execute("SELECT model, unit_id, item_id, probe_id, condition, setting, scoring, key FROM units"))
    calls = sorted(store.conn.execute("SELECT key, status, text FROM calls"))
    scores = sorted(store.conn.execute("SELECT key, scorer, label, status, value FROM scores"))
    return units, calls, scores


def test_chunks_give_the_same_store_and_numbers(tmp_path):
    suite = make_tiny_suite(n_copies=3)
    opts = EvalOptions(settings=("none", "caution"), family={"type1": "all"})
    seen = []
    with StubServer(policy=oracle_policy) as srv:
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
    assert misleading_metrics(frame_a) == misleading_metrics(frame_b)
    assert seen[-1] == (240, 240) and all(d <= t for d, t in seen)


def test_a_model_stopped_in_one_chunk_stays_stopped(tmp_path):
    """A bad key stops the model after five authentication errors; the later chunks send nothing
    for it (their calls count as not run), so a run in chunks costs what a run at once does."""
    from medresilience.testing.stub_server import Faults

    suite = make_tiny_suite(n_copies=3)
    opts = EvalOptions(family={"type1": "all"})
    with StubServer(policy=oracle_policy, faults=Faults(rate_401=1.0)) as srv:
        spec = parse_model_spec(f"openai:stub-a,base_url={srv.base_url},concurrency=1")
        with Store(tmp_path / "s.sqlite") as st:
            st.record_run("r", {})
            stats = asyncio.run(execute_plan(suite, [spec], opts, st, chunk_units=13))
        assert srv.stats.total == 5
    assert stats.called == 5 and stats.not_run == 60 - 5 and len(stats.stopped) == 1
