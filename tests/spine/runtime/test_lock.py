"""One process at a time in a run directory or a build work directory (lock.RunLock): the holder is
named, a second one refused or made to wait, a stale lock of a dead process taken over; through
the real command and the stub server (the model, the boundary we do not own)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from typer.testing import CliRunner

from conftest import eval_command, make_tiny_suite, one_error_line, oracle_policy, tiny_items_and_bundles, wait_until
from medresilience.cli import app
from medresilience.models.spec import parse_model_spec
from medresilience.runtime.errors import MedresError
from medresilience.testing.stub import Faults, StubServer

runner = CliRunner()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _build_misleading(gen, out):
    from medresilience.families.misleading.construct.pipeline import build_misleading

    return build_misleading([it for it, *_ in tiny_items_and_bundles()], gen, out)


def _regenerate_subset(gen, out):
    from medresilience.families.misleading.construct.sensitivity import regenerate_subset

    return regenerate_subset(make_tiny_suite(), gen, out)


def _reassign_provenance(gen, out):
    from medresilience.families.misleading.construct.sensitivity import reassign_provenance

    return reassign_provenance(make_tiny_suite(), "forward", out, gen)


def test_lock_names_its_holder_refuses_a_second_and_waits(tmp_path):
    from medresilience.runtime.lock import LockHeld, RunLock

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
    from medresilience.runtime.lock import LockHeld, RunLock

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
        first = subprocess.Popen(eval_command(suite_dir, out, srv.base_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: srv.stats.total >= 4, proc=first)
            second = runner.invoke(app, eval_command(suite_dir, out, srv.base_url)[3:])
            line = one_error_line(second)
            assert f"pid {first.pid}" in line and socket.gethostname() in line and "--wait" in line
            waiting = subprocess.Popen(eval_command(suite_dir, out, srv.base_url, "--wait"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


@pytest.mark.parametrize("build", [_build_misleading, _regenerate_subset, _reassign_provenance], ids=["build", "regenerate", "reassign"])
def test_build_work_directory_is_locked(tmp_path, build):
    """A build, and each construction-sensitivity rebuild, holds its work directory: while another
    process holds it, it stops naming the holder, before its store is opened."""
    from medresilience.build.construction import default_work_dir
    from medresilience.runtime.lock import LockHeld, RunLock

    out = tmp_path / "suite"
    gen = parse_model_spec("openai:gen,base_url=http://127.0.0.1:9/v1")
    with RunLock(default_work_dir(out)), pytest.raises(LockHeld, match=r"\.build"):
        build(gen, out)
    assert not (default_work_dir(out) / "store.sqlite").exists()
    assert not out.exists()
