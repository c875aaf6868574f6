"""What the tests of the answer-loop settings (a search agent's steps, a clinical team's turns) share:
the `loop_runs` fixture, which runs the sample suite against the stub server in this process (and
again, to show a rerun makes no call) or as a real `medres eval` process killed -9 mid-loop and
resumed, and reads what the store holds.

This folder is a package (its __init__.py), so this conftest is `mitigations.conftest` and the
tests' `from conftest import ...` still finds the root conftest."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import sigkill_after
from medresilience.models.spec import ModelSpec, parse_model_spec
from medresilience.run.bundled_suite import sample_suite, sample_suite_dir
from medresilience.run.evaluation import RunResult, evaluate
from medresilience.run.runner import EvalOptions
from medresilience.testing.eval_command import stub_eval_command
from medresilience.testing.stub import Faults, StubServer

SRC = Path(__file__).resolve().parents[3] / "src"


class LoopRuns:
    """Runs of the sample suite on the stub model `stub-model` under an answer-loop setting."""

    @staticmethod
    def spec(url: str, retries: int = 2) -> ModelSpec:
        return parse_model_spec(f"openai:stub-model,base_url={url},max_retries={retries}")

    def twice(self, out: Path, policy, opts: EvalOptions, progress=None) -> tuple[RunResult, int, int]:
        """Evaluate the sample suite into `out` with the stub playing `policy`, then again: (the first
        run's result, the calls it sent, the calls the rerun sent). The rerun makes no call."""
        with StubServer(policy=policy) as srv:
            res = evaluate(sample_suite(), [self.spec(srv.base_url)], out, opts, progress=progress)
            sent = srv.stats.total
            again = evaluate(sample_suite(), [self.spec(srv.base_url)], out, opts)
            rerun = srv.stats.total - sent
            assert again.stats.called == 0
        return res, sent, rerun

    @staticmethod
    def command(out: Path, url: str, setting: str) -> list[str]:
        """`medres eval` of four items of the sample suite under `setting`, two calls at a time."""
        return stub_eval_command(sample_suite_dir(), out, url, [setting], limit=4)

    @staticmethod
    def calls_done(db: Path, but_text: str | None = None) -> set[str]:
        """The keys of the stub model's calls stored `ok` (without those whose text is `but_text`);
        empty while the store is not there yet."""
        if not db.exists():
            return set()
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT key, text FROM calls WHERE status = 'ok' AND model = 'stub-model'").fetchall()
        except sqlite3.OperationalError:
            return set()
        finally:
            con.close()
        return {k for k, text in rows if but_text is None or (text is not None and text != but_text)}  # as SQL's text != ?

    @staticmethod
    def rows(db: Path, tool_calls: bool = False) -> tuple[list, list, list, list]:
        """The store's units, calls (with their tool calls when asked), scores and unit -> call links, sorted."""
        calls = "key, model, status, text" + (", tool_calls" if tool_calls else "")
        con = sqlite3.connect(db)
        try:
            return (
                sorted(con.execute("SELECT model, unit_id, key FROM units").fetchall()),
                sorted(con.execute(f"SELECT {calls} FROM calls").fetchall()),
                sorted(con.execute("SELECT key, scorer, label, status FROM scores").fetchall()),
                sorted(con.execute("SELECT model, unit_id, key, role FROM unit_calls").fetchall()),
            )
        finally:
            con.close()

    def kill_and_resume(
        self, tmp_path: Path, policy, setting: str, done: Callable[[Path], set[str]], at_least: int, total: int, tool_calls: bool = False
    ) -> tuple[tuple, tuple]:
        """Kill -9 a `medres eval` under `setting` once `done(store)` holds `at_least` of its `total`
        stub-model calls, rerun it (it must make exactly the calls not finished before the kill),
        and run it once more from scratch: (the resumed store's rows, the uninterrupted one's)."""
        log = tmp_path / "stub.jsonl"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
        with StubServer(policy=policy, faults=Faults(delay=0.05), log_path=log) as srv:
            killed = tmp_path / "killed"
            proc = subprocess.Popen(self.command(killed, srv.base_url, setting), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            finished = sigkill_after(proc, lambda: done(killed / "store.sqlite"), at_least, timeout=90)
            assert at_least <= len(finished) < total, "the kill must land mid-loop"
            seen = len(log.read_text().splitlines())
            resumed = subprocess.run(self.command(killed, srv.base_url, setting), env=env, capture_output=True, text=True, timeout=120)
            assert resumed.returncode == 0, resumed.stderr
            after = log.read_text().splitlines()[seen:]
            assert len(after) == total - len(finished)  # exactly the calls not finished before the kill
            clean = tmp_path / "clean"
            ref = subprocess.run(self.command(clean, srv.base_url, setting), env=env, capture_output=True, text=True, timeout=120)
            assert ref.returncode == 0, ref.stderr
        return self.rows(killed / "store.sqlite", tool_calls), self.rows(clean / "store.sqlite", tool_calls)


@pytest.fixture
def loop_runs() -> LoopRuns:
    return LoopRuns()
