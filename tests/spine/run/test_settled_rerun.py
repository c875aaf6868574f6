"""A rerun of a settled run (the same suite, models, options and prompts, on a store where the
previous run left every unit answered and scored) plans, serves and calls nothing: the previous
run's units become the new run's and the results are the same. Anything else (another option, an
error to retry, an unreadable answer left unscored) takes the ordinary path. The stub server stands
in for the model (the boundary we do not own); the suite is the toy family's, so these test the spine only."""

from __future__ import annotations

import json

import pytest

from medresilience import EvalOptions, evaluate
from medresilience.models.spec import parse_model_spec
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer
from toy_family import answerer, make_toy_suite


def _spec(url: str):
    return parse_model_spec(f"openai:m,base_url={url},label=m,max_retries=0")


def _units(out) -> list[tuple]:
    with Store(out / "store.sqlite") as s:
        return sorted(s.conn.execute("SELECT model, unit_id, key FROM units WHERE run = ?", (s.latest_run(),)).fetchall())


def test_a_settled_run_is_reused_without_planning(tmp_path, toy_family):
    suite = make_toy_suite()
    out = tmp_path / "run"
    with StubServer(policy=answerer) as srv:
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


def test_a_settled_rerun_keeps_the_previous_results_and_recomputes_them_only_when_the_file_is_not_that_runs(tmp_path, monkeypatch, toy_family):
    import medresilience.run.evaluation as ev

    suite = make_toy_suite()
    out = tmp_path / "run"
    computed: list[str] = []
    real = ev.summarise_with_frame
    monkeypatch.setattr(ev, "summarise_with_frame", lambda *a, **k: computed.append("x") or real(*a, **k))  # a spy on our own code
    with StubServer(policy=answerer) as srv:
        first = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert computed == ["x"]
        again = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert computed == ["x"] and again.stats.settled_from == first.results.run.run_id  # not computed again
        stored = json.loads((out / "results.json").read_text())
        assert stored["run"]["run_id"] == again.results.run.run_id and stored["last_execution"]["settled_from"] == first.results.run.run_id
        assert {k: v for k, v in stored.items() if k not in ("run", "last_execution")} == {
            k: v for k, v in json.loads(first.results.model_dump_json()).items() if k not in ("run", "last_execution")
        }
        # a results.json that is not the previous run's (edited, or another run's) is computed again
        (out / "results.json").write_text(json.dumps({**stored, "run": {**stored["run"], "run_id": "someone-else"}}))
        third = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert computed == ["x", "x"] and third.stats.settled_from == again.results.run.run_id
        (out / "results.json").write_text("{not json")
        fourth = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert computed == ["x", "x", "x"] and fourth.results.models == first.results.models
        assert srv.stats.total == first.stats.called


def test_another_option_or_an_error_takes_the_ordinary_path(tmp_path, toy_family):
    suite = make_toy_suite()
    out = tmp_path / "run"
    # every call fails once: the first run leaves errors, so the next run is not a settled rerun
    with StubServer(policy=answerer, faults=Faults(rate_500=1.0)) as srv:
        bad = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
    assert bad.stats.errors > 0
    with StubServer(policy=answerer) as srv:
        fixed = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions())
        assert fixed.stats.settled_from is None and fixed.stats.called > 0 and fixed.stats.errors == 0
        limited = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions(limit=2))
        assert limited.stats.settled_from is None and limited.stats.called == 0  # planned again, all reused
        assert limited.stats.planned_units < fixed.stats.planned_units
        again = evaluate(suite, [_spec(srv.base_url)], out, EvalOptions(limit=2))
        assert again.stats.settled_from == limited.results.run.run_id


def test_an_unreadable_answer_is_not_settled(tmp_path, toy_family):
    suite = make_toy_suite()
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


def test_a_lazily_loaded_suite_is_not_read_by_a_settled_rerun_and_bad_records_still_fail_first(tmp_path, toy_family):
    from medresilience.runtime.errors import InputError
    from medresilience.suite import Suite

    d = make_toy_suite().save(tmp_path / "suite")
    out = tmp_path / "run"
    with StubServer(policy=answerer) as srv:
        first = evaluate(Suite.load(d, lazy=True), [_spec(srv.base_url)], out, EvalOptions())
        lazy = Suite.load(d, lazy=True)
        again = evaluate(lazy, [_spec(srv.base_url)], out, EvalOptions())
        assert again.stats.settled_from == first.results.run.run_id and again.results.models == first.results.models
        assert lazy._unread is not None and lazy._index is None  # its items and probes were never read, not even checked
        limited = Suite.load(d, lazy=True)
        other = evaluate(limited, [_spec(srv.base_url)], out, EvalOptions(limit=1))  # not the same run: checked and planned
        assert limited._index is not None and other.stats.settled_from is None
        assert limited._unread is not None  # its records were streamed from disk, never all held
    # a bad probe line in a lazily loaded suite fails with its file and line before the run writes
    lines = (d / "probes.jsonl").read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "item_id": "nope"})
    (d / "probes.jsonl").write_text("\n".join(lines) + "\n")
    bad = Suite.load(d, verify=False, lazy=True)
    fresh = tmp_path / "fresh"
    with pytest.raises(InputError, match=r"probes\.jsonl:2.*item_id"):
        evaluate(bad, [_spec("http://127.0.0.1:9/v1")], fresh, EvalOptions())
    assert not fresh.exists()
    with pytest.raises(InputError, match=r"probes\.jsonl:2"):
        evaluate(bad, [_spec("http://127.0.0.1:9/v1")], out, EvalOptions())  # an earlier run's store: read before writing
    assert json.loads((out / "run.json").read_text())["options"]["limit"] == 1  # run.json is still the last good run's
