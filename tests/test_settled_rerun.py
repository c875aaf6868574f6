"""A rerun of a settled run (the same suite, models, options and prompts, on a store where the
previous run left every unit answered and scored) plans, serves and calls nothing: the previous
run's units become the new run's and the results are the same. Anything else (another option, an
error to retry, an unreadable answer left unscored) takes the ordinary path. The stub server stands
in for the model (the boundary we do not own)."""

from __future__ import annotations

import json

from conftest import make_tiny_suite, oracle_policy
from medresilience import EvalOptions, evaluate
from medresilience.models.spec import parse_model_spec
from medresilience.store import Store
from medresilience.testing.stub_server import Faults, StubServer


def _spec(url: str):
    return parse_model_spec(f"openai:m,base_url={url},label=m,max_retries=0")


def _units(out) -> list[tuple]:
    with Store(out / "store.sqlite") as s:
        return sorted(s.conn.execute("SELECT model, unit_id, key FROM units WHERE run = ?", (s.latest_run(),)).fetchall())


def test_a_settled_run_is_reused_without_planning(tmp_path):
    suite = make_tiny_suite()
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy) as srv:
        first = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        calls = srv.stats.total
        again = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert srv.stats.total == calls  # nothing sent
    assert first.stats.settled_from is None and again.stats.settled_from == first.results.run.run_id
    assert again.stats.called == 0 and again.stats.planned_units == first.stats.planned_units
    assert again.stats.cached == first.stats.unique_calls
    assert again.results.models == first.results.models
    assert again.results.run.run_id != first.results.run.run_id
    assert len(_units(out)) == first.stats.planned_units  # every unit now belongs to the latest run
    assert json.loads((out / "results.json").read_text())["run"]["run_id"] == again.results.run.run_id


def test_another_option_or_an_error_takes_the_ordinary_path(tmp_path):
    suite = make_tiny_suite()
    out = tmp_path / "run"
    # every call fails once: the first run leaves errors, so the next run is not a settled rerun
    with StubServer(policy=oracle_policy, faults=Faults(rate_500=1.0)) as srv:
        bad = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
    assert bad.stats.errors > 0
    with StubServer(policy=oracle_policy) as srv:
        fixed = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert fixed.stats.settled_from is None and fixed.stats.called > 0 and fixed.stats.errors == 0
        limited = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions(limit=2))
        assert limited.stats.settled_from is None and limited.stats.called == 0  # planned again, all reused
        assert limited.stats.planned_units < fixed.stats.planned_units
        again = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions(limit=2))
        assert again.stats.settled_from == limited.results.run.run_id


def test_an_unreadable_answer_is_not_settled(tmp_path):
    suite = make_tiny_suite()
    out = tmp_path / "run"
    with StubServer(policy=lambda m, r: "I cannot say.") as srv:
        first = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert first.stats.called > 0
        again = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
    # invalid answers are scored (invalid is a score), so this run is settled ...
    assert again.stats.settled_from == first.results.run.run_id
    # ... but a unit whose score is missing is not
    with Store(out / "store.sqlite") as s:
        s.conn.execute("DELETE FROM scores WHERE rowid IN (SELECT rowid FROM scores LIMIT 1)")
        s.conn.commit()
    with StubServer(policy=lambda m, r: "I cannot say.") as srv:
        third = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
    assert third.stats.settled_from is None
