"""Ctrl-C early in `medres eval` (SIGINT to the command's whole process group, as a terminal sends
it): one "interrupted" line and exit status 130, no traceback from the command or from the results
worker it forks, at the moments a user presses it early: as the command prints what will run (the
worker is being forked), and once the first request reached the server. The moments are found by
waiting on output, never by sleeping."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from medresilience.run.bundled_suite import sample_suite
from medresilience.testing.stub import StubServer


def _interrupt_eval(tmp_path, when: str) -> tuple[int, str]:
    suite = sample_suite().save(tmp_path / "suite")
    first = threading.Event()
    release = threading.Event()

    def policy(messages, request):
        first.set()
        release.wait(30)  # hold the calls until the command was interrupted
        return "Answer: A"

    with StubServer(policy=policy) as srv:
        cmd = [sys.executable, "-m", "medresilience.launch", "eval", "--suite", str(suite)]
        cmd += ["--model", f"openai:m,base_url={srv.base_url},concurrency=2", "--out", str(tmp_path / "run")]
        env = dict(os.environ, COLUMNS="100")
        if when == "loading":  # -X importtime reports each module as it is imported: a moment among the command's imports
            cmd[1:1] = ["-X", "importtime"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
        lines: list[str] = []
        try:
            mark = "medresilience.families.misleading" if when == "loading" else "output:"  # the preview comes first, on stderr
            for line in proc.stderr:
                lines.append(line)
                if mark in line:
                    break
            assert lines and mark in lines[-1], "".join(lines)
            if when == "first request":
                assert first.wait(60)
            os.killpg(proc.pid, signal.SIGINT)
            rest = proc.stderr.read()
            proc.wait(60)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    err = "".join(lines) + rest
    return proc.returncode, "".join(x for x in err.splitlines(keepends=True) if not x.startswith("import time:"))


@pytest.mark.parametrize("when", ["loading", "preview printed", "first request"])
def test_ctrl_c_early_in_a_run_is_one_clean_line(tmp_path, when):
    code, err = _interrupt_eval(tmp_path, when)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted" in err.splitlines()[-1]
    assert code in (130, -signal.SIGINT)  # -2: the interpreter re-raised it to end with the signal's status, as a shell sees 130
