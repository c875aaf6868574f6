"""Faults at the model boundary: a real local HTTP stub injects 429s (with Retry-After), 500s,
503s, timeouts, malformed bodies and permanent 400s. The run completes; transient faults are
retried until they pass; permanent ones are recorded as errors, excluded from every rate, counted.
The suite is the toy family's (tests/toy_family.py): these test the spine only."""

from __future__ import annotations

import json

from medresilience.evaluation import evaluate
from medresilience.models.spec import parse_model_spec
from medresilience.runner import EvalOptions
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer
from toy_family import answerer, make_toy_suite


def test_faults_retried_or_recorded_never_scored(tmp_path, toy_family):
    suite = make_toy_suite(60)  # 60 items, clean and shouted: 120 calls
    faults = Faults(
        seed=3,
        rate_429=0.15,
        retry_after=0.02,
        rate_500=0.1,
        rate_503=0.05,
        retry_after_5xx=0.02,
        rate_timeout=0.05,
        timeout_sleep=2.0,
        rate_malformed=0.1,
        rate_permanent=0.08,
        transient_attempts=1,
    )
    log = tmp_path / "stub.jsonl"
    with StubServer(policy=answerer, faults=faults, log_path=log) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=16,timeout=0.5,max_retries=4")
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions())
        outcomes = srv.stats.by_outcome
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    first = {e["key"]: e["outcome"] for e in entries if e["attempt"] == 1}
    permanent = {k for k, o in first.items() if o == "permanent"}
    transient = {k for k, o in first.items() if o in {"429", "500", "503", "timeout", "malformed"}}
    assert len(first) == 120
    assert permanent and transient and all(outcomes.get(o, 0) > 0 for o in ("429", "500", "503", "timeout", "malformed"))
    # every transient fault was retried and then answered
    finals = {}
    for e in entries:
        finals[e["key"]] = e["outcome"]
    assert all(finals[k] == "ok" for k in transient)
    # permanent faults are not retried and end as recorded errors
    assert all(sum(1 for e in entries if e["key"] == k) == 1 for k in permanent)
    assert res.stats.errors == res.stats.permanent_errors == len(permanent)
    assert res.stats.ok == 120 - len(permanent)
    with Store(tmp_path / "run" / "store.sqlite") as st:
        assert st.count("calls", "WHERE status = 'error'") == len(permanent)
        assert st.count("scores") == 120 - len(permanent)
        assert st.count("calls", "WHERE status='ok' AND attempts > 1") >= len(transient) - 1
    # errors are excluded from the rates and counted
    block = res.results.models["stub-model"]["none"]
    assert block["counts"]["errors"] == len(permanent)
    assert block["overall"]["clean_acc"]["n"] + block["overall"]["shouted_acc"]["n"] == 120 - len(permanent)


def test_exhausted_retries_are_errors_then_resumed(tmp_path, toy_family):
    """A transient fault that outlasts the retry budget is recorded as an error; the next run
    retries it and it becomes a normal result."""
    suite = make_toy_suite()
    faults = Faults(seed=1, rate_503=0.5, retry_after_5xx=0.0, transient_attempts=3)
    with StubServer(policy=answerer, faults=faults) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},max_retries=1")
        first = evaluate(suite, [spec], tmp_path / "run", EvalOptions())
        assert first.stats.errors > 0 and first.stats.permanent_errors == 0
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},max_retries=3")
        second = evaluate(suite, [spec], tmp_path / "run", EvalOptions())
        assert second.stats.called == first.stats.errors and second.stats.errors == 0
    assert second.results.models["stub-model"]["none"]["counts"]["errors"] == 0
