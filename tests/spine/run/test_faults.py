"""Faults at the model boundary: a real local HTTP stub injects 429s (with Retry-After), 500s,
503s, timeouts, malformed bodies and permanent 400s. The run completes; transient faults are
retried until they pass; permanent ones are recorded as errors, excluded from every rate, counted.
The suite is the toy family's (tests/toy_family.py): these test the spine only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sqlite3
import subprocess
import threading
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import eval_args, last_line, make_tiny_suite, ok_keys, oracle_policy, output_lines, stub_spec, wait_until
from medresilience.cli import app
from medresilience.models.openai_compatible import ModelCallError, OpenAICompatibleModel
from medresilience.models.spec import parse_model_spec
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.runtime.errors import MedresError
from medresilience.store import Store
from medresilience.suite import Suite
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


runner = CliRunner()


ALL = EvalOptions(family={"type1": "all"})


MSGS = [{"role": "user", "content": "Question number 1: which option is right?\nA. a\nB. b\nC. c\nD. d"}]


PARAMS = {"temperature": 0.0, "max_tokens": 16}


SECRET = "sk-hardening-SECRET-0123456789abcdef"


@pytest.fixture
def tiny_fs(tmp_path):
    """A 16 MiB tmpfs (root only; skipped elsewhere: the max_page_count test covers the logic)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(path: Path) -> None:
    with contextlib.suppress(OSError), open(path, "wb") as fh:
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()


def test_a_bad_key_stops_the_model_says_so_and_exits_non_zero(tmp_path, tiny_suite, monkeypatch):
    monkeypatch.setenv("MEDRES_HARDEN_KEY", SECRET)
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=6).save(suite_dir)  # 120 calls
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(rate_401=1.0)) as srv:
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(suite_dir),
                "--out",
                str(out),
                "-O",
                "type1=all",
                "--model",
                f"openai:stub-model,base_url={srv.base_url},api_key_env=MEDRES_HARDEN_KEY,concurrency=2",
            ],
        )
        sent = srv.stats.total
    assert r.exit_code == 1, r.output
    assert sent <= 5 + 1, f"{sent} requests sent with a rejected key"
    stopped = [ln for ln in r.output.splitlines() if "stopped" in ln]
    assert len(stopped) == 1 and "stub-model" in stopped[0] and "401" in stopped[0] and "not sent" in stopped[0]
    assert (out / "results.json").exists()  # the summary is still written
    res = json.loads((out / "results.json").read_text())
    assert res["last_execution"]["not_run"] == 120 - sent
    with Store(out / "store.sqlite") as st:
        assert st.count("calls") == sent and st.count("scores") == 0


def test_unknown_model_stops_after_the_configured_count(tmp_path, tiny_suite, monkeypatch):
    monkeypatch.setenv("MEDRES_STOP_AFTER_AUTH_ERRORS", "2")
    from medresilience.run.frame import results_frame

    with StubServer(policy=oracle_policy, faults=Faults(rate_404=1.0)) as srv:
        res = evaluate(tiny_suite, [stub_spec(srv.base_url, concurrency=1)], tmp_path / "run", ALL)
        assert srv.stats.total == 2
    s = res.stats
    assert s.errors == s.permanent_errors == 2 and s.not_run == 18 and s.called == 2
    assert len(s.stopped) == 1 and "404" in s.stopped[0] and "18" in s.stopped[0]
    with Store(tmp_path / "run" / "store.sqlite") as st:
        df = results_frame(st, tiny_suite)
    assert Counter(df["status"].astype(str)) == {"error": 2, "missing": 18}


def test_a_run_whose_calls_all_failed_is_never_a_success(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    # permanent 400s on every call, and transient 503s that outlast the retries
    for i, faults in enumerate([Faults(rate_permanent=1.0), Faults(rate_503=1.0, retry_after_5xx=0.0, transient_attempts=99)]):
        with StubServer(policy=oracle_policy, faults=faults) as srv:
            r = runner.invoke(
                app, ["eval", "--suite", str(d), "--out", str(tmp_path / f"run{i}"), "--model", f"openai:stub-model,base_url={srv.base_url},max_retries=0"]
            )
        assert r.exit_code == 1, r.output
        assert "error:" in last_line(r) and (tmp_path / f"run{i}" / "results.json").exists()


def test_some_permanent_failures_exit_non_zero_after_the_summary(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    with StubServer(policy=oracle_policy, faults=Faults(seed=2, rate_permanent=0.3)) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(d), "--out", str(tmp_path / "run"), "-O", "type1=all", "--model", f"openai:stub-model,base_url={srv.base_url}"]
        )
    assert r.exit_code == 1, r.output
    assert "calls:" in r.output and "report:" in r.output  # the summary came first
    assert "failed permanently" in last_line(r)
    # a clean run still exits 0
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(app, ["eval", "--suite", str(d), "--out", str(tmp_path / "ok"), "--model", f"openai:stub-model,base_url={srv.base_url}"])
    assert r.exit_code == 0, r.output


async def test_a_huge_retry_after_is_capped_not_slept():
    with StubServer(policy=oracle_policy, faults=Faults(rate_429_long=1.0, retry_after_long=3600)) as srv:
        async with OpenAICompatibleModel(stub_spec(srv.base_url), backoff_base=0.01) as m:
            c = await asyncio.wait_for(m.complete(MSGS, PARAMS), timeout=15)
        assert c.text == "Answer: A" and c.attempts == 2
        assert srv.stats.by_outcome == {"429_long": 1, "ok": 1}
    # with no retry left the over-cap wait is a transient error that names the cap
    with StubServer(policy=oracle_policy, faults=Faults(rate_429_long=1.0, retry_after_long=3600)) as srv:
        async with OpenAICompatibleModel(stub_spec(srv.base_url, max_retries=0)) as m:
            with pytest.raises(ModelCallError) as ei:
                await asyncio.wait_for(m.complete(MSGS, PARAMS), timeout=15)
    assert not ei.value.permanent and "3600" in str(ei.value) and "cap" in str(ei.value)


async def test_the_retry_after_cap_is_configurable(monkeypatch):
    monkeypatch.setenv("MEDRES_MAX_RETRY_AFTER", "0.05")
    with StubServer(policy=oracle_policy, faults=Faults(rate_429=1.0, retry_after=2.0)) as srv:
        async with OpenAICompatibleModel(stub_spec(srv.base_url), backoff_base=0.01) as m:
            c = await m.complete(MSGS, PARAMS)
        # the 2 s Retry-After is over the cap: the retry came after the client's own backoff
        # (0.01 s at most, as the client counts its waits), not after 2 s
        assert c.attempts == 2 and c.waits == 1 and 0 < c.waited_s <= 0.01
    monkeypatch.setenv("MEDRES_MAX_RETRY_AFTER", "soon")
    with pytest.raises(MedresError, match="MEDRES_MAX_RETRY_AFTER"):
        OpenAICompatibleModel(stub_spec("http://127.0.0.1:9/v1"))


def test_retry_waits_are_counted_and_stored(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy, faults=Faults(seed=1, rate_429=0.5, retry_after=0.2)) as srv:
        res = evaluate(tiny_suite, [stub_spec(srv.base_url)], tmp_path / "run", ALL)
        n429 = srv.stats.by_outcome["429"]
    assert res.stats.retry_waits == n429 and res.stats.retry_wait_s == pytest.approx(0.2 * n429)
    with Store(tmp_path / "run" / "store.sqlite") as st:
        rows = st.conn.execute("SELECT attempts, waited_s FROM calls").fetchall()
    assert sorted(w >= 0.2 for a, w in rows if a == 2) == [True] * n429
    assert all(w == 0 for a, w in rows if a == 1)


def test_the_progress_line_counts_waits():
    from medresilience.cli.kit import progress, progress_callback

    with progress() as prog:
        update = progress_callback(prog, "calls")
        update(3, 10)
        update(4, 10, waits=2)
        desc = prog.tasks[0].description
    assert "2" in desc and "wait" in desc


@pytest.mark.parametrize("kind", ["null_content", "null_message"])
def test_a_null_reply_is_malformed_retried_and_never_scored(tmp_path, tiny_suite, kind):
    # always null: retried, then an error, never scored
    with StubServer(policy=oracle_policy, faults=Faults(**{f"rate_{kind}": 1.0}, transient_attempts=99)) as srv:
        res = evaluate(tiny_suite, [stub_spec(srv.base_url, max_retries=1)], tmp_path / "always", ALL)
        assert srv.stats.by_outcome == {kind: 40}
    assert res.stats.ok == 0 and res.stats.errors == 20 and res.stats.permanent_errors == 0
    with Store(tmp_path / "always" / "store.sqlite") as st:
        assert st.count("scores") == 0 and st.count("calls", "WHERE status = 'error'") == 20
    # null once: the retry is answered and scored
    with StubServer(policy=oracle_policy, faults=Faults(**{f"rate_{kind}": 1.0}, transient_attempts=1)) as srv:
        res = evaluate(tiny_suite, [stub_spec(srv.base_url, max_retries=1)], tmp_path / "once", ALL)
    assert res.stats.ok == 20 and res.stats.errors == 0
    with Store(tmp_path / "once" / "store.sqlite") as st:
        assert st.count("scores", "WHERE status = 'valid'") == 20


def test_a_full_disk_stops_the_calls_and_names_the_cause(tmp_path, tiny_fs):
    from medresilience.store import StoreWriteError

    suite = make_tiny_suite(n_copies=20)  # 400 calls
    out = tiny_fs / "run"
    with StubServer(policy=oracle_policy, faults=Faults(delay=0.01)) as srv:
        # the disk fills up once the first answers are committed
        filler = threading.Thread(target=lambda: (wait_until(lambda: len(ok_keys(out / "store.sqlite")) >= 20), _fill(tiny_fs / "filler")))
        filler.start()
        with pytest.raises(StoreWriteError) as ei:
            evaluate(suite, [stub_spec(srv.base_url)], out, ALL)
        filler.join()
        sent = srv.stats.total
    msg = str(ei.value)
    assert "disk is full" in msg and str(out / "store.sqlite") in msg and "rollback" not in msg and "\n" not in msg
    assert sent < 250, f"{sent} of 400 calls made after the store stopped accepting them"
    (tiny_fs / "filler").unlink()
    con = sqlite3.connect(out / "store.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    kept = con.execute("SELECT COUNT(*) FROM calls WHERE status = 'ok'").fetchone()[0]
    con.close()
    assert 0 < kept <= sent


def test_a_store_that_cannot_grow_stops_run_calls(tmp_path):
    """The same through run_calls alone, with the store capped by `PRAGMA max_page_count`."""
    from medresilience.calls import CallRequest, run_calls
    from medresilience.store import StoreWriteError

    msgs = [[{"role": "user", "content": f"Question number {i}: which?\nA. a\nB. b " + "x" * 3000}] for i in range(300)]
    with StubServer(policy="echo", faults=Faults(delay=0.005)) as srv, Store(tmp_path / "s.sqlite") as st:  # 3 kB answers
        spec = stub_spec(srv.base_url)
        reqs = [CallRequest(spec.label, f"k{i}", m, PARAMS) for i, m in enumerate(msgs)]
        st.add_plan([], [(r.key, r.model, r.messages, r.params) for r in reqs])
        pages = st.conn.execute("PRAGMA page_count").fetchone()[0]
        st.conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        with pytest.raises(StoreWriteError, match="disk is full"):
            asyncio.run(run_calls(reqs, [spec], st))
        sent = srv.stats.total
    assert sent < 200


@pytest.fixture
def dead_url():
    """The URL of a port that refuses connections: bound, never listening, held for the test (so no
    server started meanwhile can take it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_content_as_text_parts_is_joined_and_scored(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy, faults=Faults(rate_content_parts=1.0)) as srv:
        res = evaluate(tiny_suite, [stub_spec(srv.base_url)], tmp_path / "run", ALL)
        assert srv.stats.by_outcome == {"content_parts": 20}
    assert res.stats.ok == 20 and res.stats.errors == 0
    with Store(tmp_path / "run" / "store.sqlite") as st:
        texts = [t for (t,) in st.conn.execute("SELECT text FROM calls")]
        assert st.count("scores", "WHERE status = 'valid'") == 20
    assert all(t.startswith("Answer: ") and len(t) == len("Answer: A") for t in texts)
    with StubServer(policy=oracle_policy) as srv:  # the same answers as plain strings: the same numbers
        plain = evaluate(tiny_suite, [stub_spec(srv.base_url)], tmp_path / "plain", ALL)
    assert res.results.models == plain.results.models


def test_content_that_is_not_text_is_malformed_retried_and_never_scored(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(rate_content_number=1.0, transient_attempts=99)) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(d), "--out", str(out), "-O", "type1=all", "--model", f"openai:stub-model,base_url={srv.base_url},max_retries=1"]
        )
        assert srv.stats.by_outcome == {"content_number": 40}  # each call tried twice
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert r.exit_code == 1 and "every call failed" in output_lines(r)[-1], r.output
    with Store(out / "store.sqlite") as st:
        assert st.count("calls", "WHERE status = 'error'") == 20 and st.count("scores") == 0
        err = st.conn.execute("SELECT error FROM calls LIMIT 1").fetchone()[0]
    assert "int" in err and "not text" in err
    # a number once: the retry is answered and scored
    with StubServer(policy=oracle_policy, faults=Faults(rate_content_number=1.0, transient_attempts=1)) as srv:
        res = evaluate(tiny_suite, [stub_spec(srv.base_url, max_retries=1)], tmp_path / "once", ALL)
    assert res.stats.ok == 20 and res.stats.errors == 0


async def test_timeout_is_a_deadline_for_the_whole_attempt():
    # one byte a second: each read succeeds within the timeout, the reply never ends within it
    with StubServer(policy=oracle_policy, faults=Faults(rate_drip=1.0, drip_interval=1.0, transient_attempts=99)) as srv:
        async with OpenAICompatibleModel(stub_spec(srv.base_url, timeout=2, max_retries=1), backoff_base=0.01) as m:
            with pytest.raises(ModelCallError) as ei:
                await m.complete(MSGS, PARAMS)
        dripped = srv.stats.by_outcome
    # each attempt ended by the 2 s deadline (a reply of hundreds of bytes at one a second would
    # otherwise take minutes): two attempts, each named as the deadline
    assert dripped == {"drip": 2}
    assert ei.value.attempts == 2 and not ei.value.permanent and "no complete reply within the timeout of 2 s" in str(ei.value)
    # a drip that ends within the deadline is an answer
    with StubServer(policy=oracle_policy, faults=Faults(rate_drip=1.0, drip_interval=0.0005)) as srv:
        async with OpenAICompatibleModel(stub_spec(srv.base_url, timeout=5)) as m:
            c = await m.complete(MSGS, PARAMS)
    assert c.text == "Answer: A"


async def test_a_refused_connection_is_named_with_its_url_and_not_retried_long(dead_url):
    url = dead_url
    async with OpenAICompatibleModel(stub_spec(url, max_retries=6), backoff_base=0.05) as m:
        with pytest.raises(ModelCallError) as ei:
            await m.complete(MSGS, PARAMS)
    e = ei.value
    assert f"connection refused at {url}" in str(e) and "timed out" not in str(e)
    assert e.attempts == 3 and e.stops_model == "connection-refused"


async def test_a_404_names_its_url_and_what_to_check():
    """A base_url without the API's /v1, or a model the server does not serve: the permanent 404
    says where it came from and what to check, and still stops the model."""
    with StubServer(policy=oracle_policy) as srv:
        root = srv.base_url.removesuffix("/v1")  # the server's root: no chat endpoint there
        async with OpenAICompatibleModel(stub_spec(root), backoff_base=0.05) as m:
            with pytest.raises(ModelCallError) as ei:
                await m.complete(MSGS, PARAMS)
    e = ei.value
    assert "404" in str(e) and f"at {root}" in str(e) and "usually ends in /v1" in str(e)
    assert e.permanent and e.attempts == 1 and e.stops_model == "not-found"
    with StubServer(policy=oracle_policy, faults=Faults(rate_404=1.0)) as srv:  # the model is unknown
        async with OpenAICompatibleModel(stub_spec(srv.base_url), backoff_base=0.05) as m:
            with pytest.raises(ModelCallError) as ei:
                await m.complete(MSGS, PARAMS)
    assert "serves model 'stub-model'" in str(ei.value) and ei.value.stops_model == "not-found"


def test_a_dead_endpoint_stops_the_model_after_a_few_refused_calls(tmp_path, tiny_suite, monkeypatch, dead_url):
    monkeypatch.setenv("MEDRES_STOP_AFTER_AUTH_ERRORS", "2")
    url = dead_url
    d = tmp_path / "suite"
    tiny_suite.save(d)
    r = runner.invoke(
        app, ["eval", "--suite", str(d), "--out", str(tmp_path / "run"), "-O", "type1=all", "--model", f"openai:stub-model,base_url={url},concurrency=1"]
    )
    assert r.exit_code == 1, r.output
    stopped = [ln for ln in output_lines(r) if "stopped" in ln]
    assert len(stopped) == 1 and "connection-refused" in stopped[0] and "18 remaining calls were not sent" in stopped[0]
    assert f"connection refused at {url}" in r.output


def test_logprob_scoring_on_an_endpoint_without_logprobs_stops_with_one_line(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    with StubServer(policy=oracle_policy, faults=Faults(rate_no_logprobs=1.0)) as srv:  # answers, never with log-probabilities
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(d),
                "--out",
                str(tmp_path / "run"),
                "-O",
                "type1=all",
                "--scoring",
                "logprob",
                "--model",
                f"openai:stub-model,base_url={srv.base_url},concurrency=1",
            ],
        )
        sent = srv.stats.total
    assert r.exit_code == 1, r.output
    assert sent == 5
    stopped = [ln for ln in output_lines(r) if "stopped" in ln]
    assert len(stopped) == 1 and "no-logprobs" in stopped[0] and "--scoring letter" in stopped[0]
    with Store(tmp_path / "run" / "store.sqlite") as st:
        assert st.count("scores") == 0 and st.count("calls", "WHERE status = 'error'") == 5


def test_an_empty_suite_evaluated_exits_1(tmp_path):
    from medresilience.records import SuiteManifest

    Suite(SuiteManifest(name="empty", family="misleading"), [], []).save(tmp_path / "suite")
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(tmp_path / "suite"), "--out", str(tmp_path / "run"), "--model", f"openai:stub-model,base_url={srv.base_url}"]
        )
        assert srv.stats.total == 0
    assert r.exit_code == 1, r.output
    assert "nothing was evaluated" in output_lines(r)[-1], r.output


async def test_a_scorer_that_raises_on_a_reply_loses_nothing(tmp_path):
    from medresilience.calls import CallRequest, run_calls
    from medresilience.score import Score

    def scorer(c):
        if c.text.endswith("C"):
            raise AttributeError("'list' object has no attribute 'strip'")
        return Score("A", "valid", 1.0)

    spec = stub_spec("http://127.0.0.1:9/v1")
    reqs = [
        CallRequest(spec.label, f"k{i}", [{"role": "user", "content": f"Question number {i}: ?\nA. a\nB. b\nC. c\nD. d"}], PARAMS, scorer, "letter")
        for i in range(1, 13)
    ]
    with StubServer(policy=oracle_policy) as srv, Store(tmp_path / "store.sqlite") as st:
        spec = stub_spec(srv.base_url)
        stats = await run_calls(reqs, [spec], st)
        assert stats.ok == 12 and any("scorer failed" in e for e in stats.error_samples)
        assert st.count("calls", "WHERE status = 'ok'") == 12
        unscored = st.conn.execute("SELECT key, detail FROM scores WHERE status = 'unscored'").fetchall()
        assert sorted(k for k, _ in unscored) == ["k11", "k3", "k7"]  # gold C: questions 3, 7, 11
        assert all("AttributeError" in d for _, d in unscored) and st.count("scores", "WHERE status = 'valid'") == 9


def test_a_reply_with_a_lone_surrogate_is_stored_and_never_sent_again(tmp_path, tiny_suite):
    """Every reply ends in a lone UTF-16 surrogate (valid JSON: `\\ud800`): the run finishes with
    every reply stored (the surrogate replaced, the answer still read), and a rerun sends nothing."""
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(rate_surrogate=1.0)) as srv:
        r = runner.invoke(app, eval_args(d, out, srv.base_url))
        assert r.exit_code == 0, r.output
        first = srv.stats.total
        again = runner.invoke(app, eval_args(d, out, srv.base_url))
        assert again.exit_code == 0, again.output
        assert srv.stats.total == first, "a stored reply was sent again"
    assert first == 20  # 4 items x (clean + 3 Type 1 + Type 2), one call each
    con = sqlite3.connect(out / "store.sqlite")
    try:
        texts = [t for (t,) in con.execute("SELECT text FROM calls WHERE status = 'ok'")]
    finally:
        con.close()
    assert len(texts) == 20
    assert all(t.endswith(" \ufffd") for t in texts), texts[:3]  # the surrogate replaced by U+FFFD
    with Store(out / "store.sqlite") as st:
        assert st.count("scores", "WHERE status = 'valid'") == 20  # the answer before it is still read
