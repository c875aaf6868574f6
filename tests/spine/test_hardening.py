"""Hardening (issue #14): what an attack campaign broke, each reproduced against the real code
paths, with the stub server standing in for the model (the boundary we do not own).

Faults and resources: a locked run directory (and build work directory); a model stopped after
consecutive authentication / not-found errors, and a non-zero exit for a run with failed calls;
a capped Retry-After, its waits counted and stored; a client-side configuration error failing at
once; null content or message as a malformed reply; a full disk stopping the calls with one line;
an unwritable --out as one line; SIGTERM and Ctrl-C stopping cleanly with every answer kept.
Bad input: a suite missing a file its manifest lists; a UTF-8 BOM; the line of a non-UTF-8 byte;
field-size limits. Secrets: a key echoed by the endpoint, credentials in base_url, and a report
on a half-finished run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite, ok_keys, oracle_policy, store_key_by_stub_key, tiny_items_and_bundles
from medresilience.cli import app
from medresilience.errors import InputError, MedresError
from medresilience.evaluation import evaluate
from medresilience.fileio import iter_json_lines
from medresilience.models.openai_compatible import ModelCallError, OpenAICompatibleModel
from medresilience.models.spec import parse_model_spec
from medresilience.runner import EvalOptions
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import Faults, StubServer

runner = CliRunner()
ALL = EvalOptions(family={"type1": "all"})
MSGS = [{"role": "user", "content": "Question number 1: which option is right?\nA. a\nB. b\nC. c\nD. d"}]
PARAMS = {"temperature": 0.0, "max_tokens": 16}
SECRET = "sk-hardening-SECRET-0123456789abcdef"


def _spec(url: str, **kw):
    opts = {"concurrency": 4, "max_retries": 2, "timeout": 5, **kw}
    return parse_model_spec(f"openai:stub-model,base_url={url}," + ",".join(f"{k}={v}" for k, v in opts.items()))


def _one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def _last_line(result) -> str:
    return [ln for ln in result.output.splitlines() if ln.strip()][-1]


def _cli_cmd(suite_dir: Path, out: Path, url: str, *extra: str, model_opts: str = "concurrency=2") -> list[str]:
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
        f"openai:stub-model,base_url={url},{model_opts}",
        *extra,
    ]


def _wait_until(cond, timeout: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out"
        if proc is not None:
            assert proc.poll() is None, "the process ended too early"
        time.sleep(0.02)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# =========================================================================== faults and resources
# --------------------------------------------------------------------------- the run-directory lock


def test_lock_names_its_holder_refuses_a_second_and_waits(tmp_path):
    from medresilience.lock import LockHeld, RunLock

    d = tmp_path / "run"
    with RunLock(d) as held:
        info = json.loads(held.path.read_text())
        assert info["pid"] == os.getpid() and info["host"] == socket.gethostname() and info["started"]
        with pytest.raises(LockHeld) as ei:
            RunLock(d).acquire()
        msg = str(ei.value)
        assert f"pid {os.getpid()}" in msg and socket.gethostname() in msg and str(d) in msg and "--wait" in msg
        assert isinstance(ei.value, MedresError)

        got: list[float] = []
        notes: list[str] = []

        def waiter() -> None:
            with RunLock(d, wait=True, poll=0.02, on_wait=notes.append):
                got.append(time.time())

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.3)
        assert not got and len(notes) == 1 and f"pid {os.getpid()}" in notes[0]
        released = time.time()
    t.join(5)
    assert got and got[0] >= released
    assert not (d / RunLock.NAME).exists()  # released: the lock file is gone


def test_a_stale_lock_of_a_dead_pid_on_this_host_is_taken_over(tmp_path):
    from medresilience.lock import LockHeld, RunLock

    d = tmp_path / "run"
    d.mkdir()
    stale = {"pid": _dead_pid(), "host": socket.gethostname(), "started": "2020-01-01T00:00:00+00:00"}
    (d / RunLock.NAME).write_text(json.dumps(stale))
    with RunLock(d) as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()
    # a lock from another host cannot be checked: it is not taken over, and the message says how to clear it
    other = {"pid": 1, "host": "some-other-host.example", "started": "2020-01-01T00:00:00+00:00"}
    (d / RunLock.NAME).write_text(json.dumps(other))
    with pytest.raises(LockHeld, match=r"some-other-host\.example"):
        RunLock(d).acquire()


def test_two_evals_on_one_run_directory_make_each_call_once(tmp_path):
    """A second `medres eval` on a busy --out says who holds it and stops; with --wait it waits,
    then resumes from the store: no call is made twice."""
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=3).save(suite_dir)  # 12 items -> 60 calls, 6 s at 0.2 s a call two at a time: the others start meanwhile
    log = tmp_path / "stub.jsonl"
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # the stub holds the first run's calls after its fourth until the waiting run says it waits, so
    # the first cannot finish before the others start, however slowly a loaded machine starts them
    gate, seen = threading.Event(), []

    def gated(messages, request):
        seen.append(1)
        if len(seen) > 4:
            gate.wait(120)
        return oracle_policy(messages, request)

    err3_lines: list[str] = []

    def read_err(stream) -> None:
        for text in stream:
            err3_lines.append(text)
            if "waiting" in text:
                gate.set()

    with StubServer(policy=gated, faults=Faults(delay=0.2), log_path=log) as srv:
        first = subprocess.Popen(_cli_cmd(suite_dir, out, srv.base_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _wait_until(lambda: srv.stats.total >= 4, proc=first)
            second = runner.invoke(app, _cli_cmd(suite_dir, out, srv.base_url)[3:])
            line = _one_error_line(second)
            assert f"pid {first.pid}" in line and socket.gethostname() in line and "--wait" in line
            waiting = subprocess.Popen(_cli_cmd(suite_dir, out, srv.base_url, "--wait"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            reader = threading.Thread(target=read_err, args=(waiting.stderr,), daemon=True)
            reader.start()
            assert gate.wait(120), "the waiting run never said it waits"
            _, err1 = first.communicate(timeout=120)
            out3 = waiting.stdout.read()
            waiting.wait(timeout=120)
            reader.join(timeout=30)
            err3 = "".join(err3_lines)
        finally:
            gate.set()
            for p in (first, locals().get("waiting")):
                if p is not None and p.poll() is None:
                    p.kill()
        assert first.returncode == 0, err1
        assert waiting.returncode == 0, err3
        assert "waiting" in err3 and f"pid {first.pid}" in err3, (out3, err3, err1)
        assert "0 made, 60 reused" in out3
    attempts = Counter(json.loads(x)["key"] for x in log.read_text().splitlines())
    assert len(attempts) == 60 and set(attempts.values()) == {1}


def _build_misleading(gen, out):
    from medresilience.families.misleading.construct.pipeline import build_misleading

    return build_misleading([it for it, *_ in tiny_items_and_bundles()], gen, out)


def _regenerate_subset(gen, out):
    from medresilience.families.misleading.construct.sensitivity import regenerate_subset

    return regenerate_subset(make_tiny_suite(), gen, out)


def _reassign_provenance(gen, out):
    from medresilience.families.misleading.construct.sensitivity import reassign_provenance

    return reassign_provenance(make_tiny_suite(), "forward", out, gen)


@pytest.mark.parametrize("build", [_build_misleading, _regenerate_subset, _reassign_provenance], ids=["build", "regenerate", "reassign"])
def test_build_work_directory_is_locked(tmp_path, build):
    """A build, and each construction-sensitivity rebuild, holds its work directory: while another
    process holds it, it stops naming the holder, before its store is opened."""
    from medresilience.construction import default_work_dir
    from medresilience.lock import LockHeld, RunLock

    out = tmp_path / "suite"
    gen = parse_model_spec("openai:gen,base_url=http://127.0.0.1:9/v1")
    with RunLock(default_work_dir(out)), pytest.raises(LockHeld, match=r"\.build"):
        build(gen, out)
    assert not (default_work_dir(out) / "store.sqlite").exists()
    assert not out.exists()


# --------------------------------------------------------------------------- a bad key, an unknown model


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
    from medresilience.frame import results_frame

    with StubServer(policy=oracle_policy, faults=Faults(rate_404=1.0)) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url, concurrency=1)], tmp_path / "run", ALL)
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
        assert "error:" in _last_line(r) and (tmp_path / f"run{i}" / "results.json").exists()


def test_some_permanent_failures_exit_non_zero_after_the_summary(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    with StubServer(policy=oracle_policy, faults=Faults(seed=2, rate_permanent=0.3)) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(d), "--out", str(tmp_path / "run"), "-O", "type1=all", "--model", f"openai:stub-model,base_url={srv.base_url}"]
        )
    assert r.exit_code == 1, r.output
    assert "calls:" in r.output and "report:" in r.output  # the summary came first
    assert "failed permanently" in _last_line(r)
    # a clean run still exits 0
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(app, ["eval", "--suite", str(d), "--out", str(tmp_path / "ok"), "--model", f"openai:stub-model,base_url={srv.base_url}"])
    assert r.exit_code == 0, r.output


# --------------------------------------------------------------------------- Retry-After


async def test_a_huge_retry_after_is_capped_not_slept():
    with StubServer(policy=oracle_policy, faults=Faults(rate_429_long=1.0, retry_after_long=3600)) as srv:
        async with OpenAICompatibleModel(_spec(srv.base_url), backoff_base=0.01) as m:
            c = await asyncio.wait_for(m.complete(MSGS, PARAMS), timeout=15)
        assert c.text == "Answer: A" and c.attempts == 2
        assert srv.stats.by_outcome == {"429_long": 1, "ok": 1}
    # with no retry left the over-cap wait is a transient error that names the cap
    with StubServer(policy=oracle_policy, faults=Faults(rate_429_long=1.0, retry_after_long=3600)) as srv:
        async with OpenAICompatibleModel(_spec(srv.base_url, max_retries=0)) as m:
            with pytest.raises(ModelCallError) as ei:
                await asyncio.wait_for(m.complete(MSGS, PARAMS), timeout=15)
    assert not ei.value.permanent and "3600" in str(ei.value) and "cap" in str(ei.value)


async def test_the_retry_after_cap_is_configurable(monkeypatch):
    monkeypatch.setenv("MEDRES_MAX_RETRY_AFTER", "0.05")
    with StubServer(policy=oracle_policy, faults=Faults(rate_429=1.0, retry_after=2.0)) as srv:
        async with OpenAICompatibleModel(_spec(srv.base_url), backoff_base=0.01) as m:
            c = await m.complete(MSGS, PARAMS)
        # the 2 s Retry-After is over the cap: the retry came after the client's own backoff
        # (0.01 s at most, as the client counts its waits), not after 2 s
        assert c.attempts == 2 and c.waits == 1 and 0 < c.waited_s <= 0.01
    monkeypatch.setenv("MEDRES_MAX_RETRY_AFTER", "soon")
    with pytest.raises(MedresError, match="MEDRES_MAX_RETRY_AFTER"):
        OpenAICompatibleModel(_spec("http://127.0.0.1:9/v1"))


def test_retry_waits_are_counted_and_stored(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy, faults=Faults(seed=1, rate_429=0.5, retry_after=0.2)) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", ALL)
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


def test_an_old_store_gains_the_wait_column(tmp_path):
    db = tmp_path / "store.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""CREATE TABLE calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, status TEXT NOT NULL, permanent INTEGER NOT NULL DEFAULT 0,
        text TEXT, top_logprobs TEXT, finish_reason TEXT, prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL, latency_s REAL, attempts INTEGER NOT NULL DEFAULT 1, error TEXT, updated REAL NOT NULL);
        INSERT INTO calls VALUES ('k', 'm', 'ok', 0, 'Answer: A', NULL, 'stop', 1, 1, NULL, 0.1, 1, NULL, 0);""")
    con.commit()
    con.close()
    from medresilience.store import CallRow

    with Store(db) as st:
        st.write_results([CallRow("k2", "m", "error", attempts=3, error="x", waited_s=1.5)], [])
        assert st.call("k")["waited_s"] == 0 and st.call("k2")["waited_s"] == 1.5


# --------------------------------------------------------------------------- client-side configuration errors


async def test_credentials_in_base_url_fail_at_once():
    with StubServer(policy=oracle_policy) as srv:
        url = srv.base_url.replace("http://", "http://user:hunter2@")
        async with OpenAICompatibleModel(_spec(url, max_retries=6), backoff_base=0.2) as m:
            with pytest.raises(ModelCallError) as ei:
                await m.complete(MSGS, PARAMS)
        assert srv.stats.total == 0
    e = ei.value
    assert e.attempts == 1 and e.waited_s == 0  # failed at once: no retry, no wait
    assert e.permanent and e.attempts == 1 and "configuration" in str(e) and "hunter2" not in str(e)


# --------------------------------------------------------------------------- null content, null message


@pytest.mark.parametrize("kind", ["null_content", "null_message"])
def test_a_null_reply_is_malformed_retried_and_never_scored(tmp_path, tiny_suite, kind):
    # always null: retried, then an error, never scored
    with StubServer(policy=oracle_policy, faults=Faults(**{f"rate_{kind}": 1.0}, transient_attempts=99)) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url, max_retries=1)], tmp_path / "always", ALL)
        assert srv.stats.by_outcome == {kind: 40}
    assert res.stats.ok == 0 and res.stats.errors == 20 and res.stats.permanent_errors == 0
    with Store(tmp_path / "always" / "store.sqlite") as st:
        assert st.count("scores") == 0 and st.count("calls", "WHERE status = 'error'") == 20
    # null once: the retry is answered and scored
    with StubServer(policy=oracle_policy, faults=Faults(**{f"rate_{kind}": 1.0}, transient_attempts=1)) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url, max_retries=1)], tmp_path / "once", ALL)
    assert res.stats.ok == 20 and res.stats.errors == 0
    with Store(tmp_path / "once" / "store.sqlite") as st:
        assert st.count("scores", "WHERE status = 'valid'") == 20


# --------------------------------------------------------------------------- a full disk


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


def test_a_full_disk_stops_the_calls_and_names_the_cause(tmp_path, tiny_fs):
    from medresilience.store import StoreWriteError

    suite = make_tiny_suite(n_copies=20)  # 400 calls
    out = tiny_fs / "run"
    with StubServer(policy=oracle_policy, faults=Faults(delay=0.01)) as srv:
        # the disk fills up once the first answers are committed
        filler = threading.Thread(target=lambda: (_wait_until(lambda: len(ok_keys(out / "store.sqlite")) >= 20), _fill(tiny_fs / "filler")))
        filler.start()
        with pytest.raises(StoreWriteError) as ei:
            evaluate(suite, [_spec(srv.base_url)], out, ALL)
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
        spec = _spec(srv.base_url)
        reqs = [CallRequest(spec.label, f"k{i}", m, PARAMS) for i, m in enumerate(msgs)]
        st.add_plan([], [(r.key, r.model, r.messages, r.params) for r in reqs])
        pages = st.conn.execute("PRAGMA page_count").fetchone()[0]
        st.conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        with pytest.raises(StoreWriteError, match="disk is full"):
            asyncio.run(run_calls(reqs, [spec], st))
        sent = srv.stats.total
    assert sent < 200


# --------------------------------------------------------------------------- unwritable --out


def test_an_unusable_out_is_one_line(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile / "run", afile):
        r = runner.invoke(app, ["eval", "--suite", str(d), "--out", str(out), "--model", "openai:m,base_url=http://127.0.0.1:9/v1"])
        line = _one_error_line(r)
        assert str(out) in line and r.exit_code == 2
    assert "afile is a file, not a directory" in line or "is a file" in line
    # the import command: an items file or a suite directory under a file
    src = tmp_path / "medqa.jsonl"
    src.write_text(json.dumps(MEDQA_ROW) + "\n")
    line = _one_error_line(runner.invoke(app, ["import", str(src), "--out", str(afile / "items.jsonl")]))
    assert f"cannot write {afile / 'items.jsonl'}: {afile} is a file, not a directory" in line
    from medresilience.bundled_suite import sample_release_path

    line = _one_error_line(runner.invoke(app, ["import", str(sample_release_path()), "--out", str(afile / "suite")]))
    assert f"{afile} is a file, not a directory" in line


@pytest.fixture
def read_only_dir(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        yield d
        d.chmod(0o755)
        return
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("root cannot make a read-only directory here")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


def test_a_read_only_out_is_one_line(tmp_path, tiny_suite, read_only_dir):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    for out in (read_only_dir, read_only_dir / "run"):
        r = runner.invoke(app, ["eval", "--suite", str(d), "--out", str(out), "--model", "openai:m,base_url=http://127.0.0.1:9/v1"])
        line = _one_error_line(r)
        assert str(read_only_dir) in line


# --------------------------------------------------------------------------- SIGTERM and Ctrl-C


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_cleanly_and_keeps_every_answer(tmp_path, sig):
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=10).save(suite_dir)  # 200 calls
    log = tmp_path / "stub.jsonl"
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with StubServer(policy=oracle_policy, faults=Faults(delay=0.05), log_path=log) as srv:
        proc = subprocess.Popen(
            _cli_cmd(suite_dir, out, srv.base_url, model_opts="concurrency=4"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            _wait_until(lambda: srv.stats.total >= 60, proc=proc)
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
        done = subprocess.run(_cli_cmd(suite_dir, out, srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        again = {to_store[json.loads(x)["key"]] for x in log.read_text().splitlines()[seen:]}
        assert again and not again & kept and len(ok_keys(out / "store.sqlite")) == 200


# =========================================================================== bad input


def test_a_suite_missing_a_file_it_lists_is_refused(tmp_path, tiny_suite):
    d = tmp_path / "s"
    tiny_suite.save(d)
    (d / "probes.jsonl").unlink()
    with pytest.raises(InputError, match=r"probes\.jsonl.*missing"):
        Suite.load(d)
    line = _one_error_line(
        runner.invoke(app, ["eval", "--suite", str(d), "--model", "openai:m,base_url=http://127.0.0.1:9/v1", "--out", str(tmp_path / "run")])
    )
    assert "probes.jsonl" in line and "missing" in line
    assert not (tmp_path / "run").exists()


MEDQA_ROW = {"question": "Which is right?", "options": {"A": "a", "B": "b", "C": "c", "D": "d"}, "answer": "a", "answer_idx": "A"}


def _medqa_lines(n: int) -> list[str]:
    return [json.dumps({**MEDQA_ROW, "question": f"Question {i}: " + "padding " * 20 + "which is right?"}) for i in range(1, n + 1)]


def test_a_utf8_bom_is_accepted_everywhere(tmp_path):
    from medresilience.sources import detect_format, load_items

    src = tmp_path / "medqa.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + "\n".join(_medqa_lines(3)).encode() + b"\n")
    assert detect_format(src) == "medqa"
    assert len(list(load_items(src))) == 3
    assert [n for n, _ in iter_json_lines(src)] == [1, 2, 3]
    r = runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "items.jsonl")])
    assert r.exit_code == 0, r.output


def test_a_non_utf8_byte_is_reported_on_its_line(tmp_path):
    from medresilience.fileio import json_lines
    from medresilience.sources import load_items
    from medresilience.sources.detect import detect_format

    lines = [s.encode() for s in _medqa_lines(200)]
    lines[149] = lines[149].replace(b"which", b"wh\xffich")
    src = tmp_path / "medqa.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    for read in (lambda: list(iter_json_lines(src)), lambda: list(json_lines(src)), lambda: list(load_items(src))):
        with pytest.raises(InputError) as ei:
            read()
        assert ei.value.line == 150 and "UTF-8" in str(ei.value)
    line = _one_error_line(runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "items.jsonl")]))
    assert "medqa.jsonl:150" in line
    first = tmp_path / "first.jsonl"
    first.write_bytes(lines[149] + b"\n")
    with pytest.raises(InputError) as ei:
        detect_format(first)
    assert ei.value.line == 1


def test_an_oversized_field_is_refused_naming_file_line_and_field(tmp_path, tiny_suite, monkeypatch):
    from medresilience.sources import load_items

    rows = _medqa_lines(3)
    rows[1] = json.dumps({**MEDQA_ROW, "question": "x" * 150_000})
    src = tmp_path / "medqa.jsonl"
    src.write_text("\n".join(rows) + "\n")
    line = _one_error_line(runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "items.jsonl")]))
    assert "medqa.jsonl:2" in line and "question" in line and "100,000" in line and "MEDRES_MAX_FIELD_CHARS" in line
    monkeypatch.setenv("MEDRES_MAX_FIELD_CHARS", "200000")
    assert len(list(load_items(src))) == 3
    monkeypatch.setenv("MEDRES_MAX_FIELD_CHARS", "2000")
    # a suite's probe (a nested field)
    d = tmp_path / "s"
    tiny_suite.save(d)
    probes = (d / "probes.jsonl").read_text().splitlines()
    obj = json.loads(probes[4])
    obj["context"][0]["text"] = "y" * 3000
    probes[4] = json.dumps(obj)
    (d / "probes.jsonl").write_text("\n".join(probes) + "\n")
    with pytest.raises(InputError) as ei:
        Suite.load(d, verify=False)
    assert ei.value.line == 5 and ei.value.field == "context.0.text" and "3,000" in str(ei.value)
    # an MMLU row (CSV: the record check, and the text-field check of the JSON-lines readers)
    csv_src = tmp_path / "anatomy_test.csv"
    csv_src.write_text('q1?,a,b,c,d,A\n"' + "z" * 2500 + '",a,b,c,d,B\n')
    with pytest.raises(InputError) as ei:
        list(load_items(csv_src))
    assert ei.value.line == 2 and ei.value.field == "question"
    mcqa = tmp_path / "mcqa.jsonl"
    mcqa.write_text(json.dumps({"question": "q?", "opa": "w" * 2500, "opb": "b", "opc": "c", "opd": "d", "cop": 1, "id": "x"}) + "\n")
    with pytest.raises(InputError) as ei:
        list(load_items(mcqa))
    assert ei.value.line == 1 and ei.value.field == "opa"
    for bad in ("lots", "0", "100"):  # not a number; below the least limit (1,024)
        monkeypatch.setenv("MEDRES_MAX_FIELD_CHARS", bad)
        with pytest.raises(MedresError, match="MEDRES_MAX_FIELD_CHARS"):
            list(load_items(src))


# =========================================================================== secrets


def test_a_key_echoed_by_the_endpoint_is_scrubbed_everywhere(tmp_path, tiny_suite, monkeypatch):
    monkeypatch.setenv("MEDRES_HARDEN_KEY", SECRET)
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(seed=4, rate_401=0.3)) as srv:
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(d),
                "--out",
                str(out),
                "-O",
                "type1=all",
                "--model",
                f"openai:stub-model,base_url={srv.base_url},api_key_env=MEDRES_HARDEN_KEY,concurrency=1",
            ],
        )
        assert srv.stats.by_outcome.get("401")
    assert r.exit_code == 1, r.output
    assert "error sample" in r.output and "Incorrect API key provided: [redacted]" in r.output
    assert SECRET not in r.output
    for f in out.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    with Store(out / "store.sqlite") as st:
        errors = [row[0] for row in st.conn.execute("SELECT error FROM calls WHERE status = 'error'")]
    assert errors and all("Incorrect API key provided: [redacted]" in e and SECRET not in e for e in errors)


def test_credentials_in_base_url_are_not_stored(tmp_path, tiny_suite):
    url = "http://user:hunter2@127.0.0.1:9/v1?token=tok-abc123"
    res = evaluate(tiny_suite, [_spec(url, max_retries=0)], tmp_path / "run", ALL)
    assert res.stats.ok == 0
    stored = (tmp_path / "run" / "run.json").read_text()
    with Store(tmp_path / "run" / "store.sqlite") as st:
        stored += "".join(row[0] for row in st.conn.execute("SELECT config FROM runs"))
        stored += "".join(row[0] or "" for row in st.conn.execute("SELECT error FROM calls"))
    stored += (tmp_path / "run" / "results.json").read_text()
    assert "hunter2" not in stored and "tok-abc123" not in stored
    assert "127.0.0.1:9/v1" in stored  # the endpoint itself is kept


def test_a_report_on_a_half_finished_run_warns(tmp_path, tiny_suite):
    from medresilience.report import build_report

    with StubServer(policy=oracle_policy) as srv:
        evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", ALL)
    rep = build_report([tmp_path / "run"])
    assert not any("missing" in n for n in rep.notes)
    with Store(tmp_path / "run" / "store.sqlite") as st:  # as if killed after 15 of its 20 calls
        st.conn.execute("DELETE FROM calls WHERE key IN (SELECT key FROM calls ORDER BY key LIMIT 5)")
    rep = build_report([tmp_path / "run"])
    notes = [n for n in rep.notes if "missing" in n]
    assert len(notes) == 1 and "25%" in notes[0] and "5 of 20" in notes[0]
    html = rep.html.read_text()
    assert "5 of 20" in html and "class='warn'" in html
    assert "5 of 20" in rep.markdown.read_text()


def test_a_model_spec_public_form_holds_no_credentials():
    """Every stored copy of a spec (run.json, a build's manifest) comes from public(): endpoints
    without user:password@ or query strings."""
    from medresilience.models.spec import parse_model_spec

    spec = parse_model_spec("openai:m,base_url=https://user:hunter2@llm.example.org/v1?token=tok-abc|http://127.0.0.1:8000/v1")
    pub = spec.public()
    assert pub["base_urls"] == ["https://***@llm.example.org/v1?***", "http://127.0.0.1:8000/v1"]
    assert "hunter2" not in str(pub) and "tok-abc" not in str(pub) and spec.base_urls[0].startswith("https://user:hunter2@")
