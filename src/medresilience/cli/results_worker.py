"""The results and the report of `medres eval` computed in a worker process that loads their
libraries at low priority while the run's calls are in flight.

pandas, scipy, statsmodels and matplotlib take about a second to import; imported after the calls,
that second is added to every run. The worker is forked before the calls start (it shares the
suite as the command loaded it), imports those libraries in a thread at the lowest CPU priority
(nice 19, a per-thread value on Linux: the process making the calls gets the CPU whenever it wants
it, which a thread of that process could not be given), then waits. When the calls are done it
computes the results from the store (`summarise_with_frame`: the same code the command's own
process would run) and, with the same frame, writes the report, at the command's own priority:
the command is waiting on them.

Nothing depends on the worker: when it cannot be started (no fork on this platform, or
MEDRES_RESULTS_WORKER=0), dies, or fails, the command computes the same results and report in its
own process. The worker never writes results.json (the command does, under the run's lock) and
exits when the command's end of its pipe closes (the command ended, even by kill -9), silently: a
signal that ends the command mid-request leaves an answer with no one to read it, which is no
error. SIGINT (Ctrl-C reaches the whole foreground group) is the command's to handle: the worker
ignores it, and a SIGTERM (multiprocessing's terminate at the command's exit) ends it silently,
not as the command's SIGTERM handler would (an interruption with a traceback). Both are blocked
across the fork and unblocked in the worker once it has set them, so a Ctrl-C as it starts prints
no traceback either."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..run.resolved import ResolvedRun
from ..run.results import BLOCK, Results
from ..runtime.heap import frozen_imports
from ..runtime.jsontypes import JSONObject
from ..store import Store
from ..suite import Suite

if TYPE_CHECKING:  # pragma: no cover
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    import pandas as pd

    from ..calls import RunStats

#: what the worker imports while it waits (the results' and the report's libraries)
PRELOAD = ("medresilience.run.frame", "medresilience.run.reading", "medresilience.report.build")
#: the worker's niceness: the lowest CPU priority
NICE = 19
#: blocked across the fork, until the worker has its own dispositions of them
_STARTUP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def enabled() -> bool:
    """Whether `medres eval` uses a worker: on platforms that fork, unless MEDRES_RESULTS_WORKER=0."""
    return sys.platform.startswith("linux") and os.environ.get("MEDRES_RESULTS_WORKER", "1") != "0"


def _serve(conn: Connection, command_end: Connection, source: Suite | ResolvedRun, modules: tuple[str, ...]) -> None:
    """The worker: import (in a low-priority thread), then answer requests until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the command's handler (SIGTERM as Ctrl-C): a terminate ends the worker silently
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STARTUP_SIGNALS)  # blocked by the command across the fork
    command_end.close()  # the command's end, inherited by the fork: held open, its closing would go unseen

    loader = threading.Thread(target=_preload, args=(modules,), name="medres-results-preload", daemon=True)
    loader.start()
    try:
        (
            source.suite if isinstance(source, ResolvedRun) else source
        ).check()  # a lazily loaded suite's index (a no-op when the command checked it before the fork)
    except Exception:  # the command's own check reports a bad suite
        pass
    frames: dict[Path, pd.DataFrame] = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if msg is None:
            return
        _unnice()
        loader.join()
        try:
            answer = ("ok", _handle(msg, source, frames))
        except Exception:  # every failure goes back to the command, which computes it itself
            answer = ("error", traceback.format_exc(limit=20))
        try:
            conn.send(answer)
        except OSError:  # the command is gone (its end closed): no one is left to answer
            return


def _preload(modules: tuple[str, ...]) -> None:
    """The worker's imports, in a thread of their own at the lowest CPU priority. Linux keeps a nice
    value per thread: the requests, which the command waits on, are answered by the worker's main
    thread at the command's own priority (a worker niced whole is starved by any busy process at
    normal priority while the command waits on it)."""
    import importlib

    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except OSError:  # pragma: no cover - a platform that refuses it: the worker still helps
        pass
    with frozen_imports():  # no collector pass over the libraries as they load, nor after
        for name in modules:
            importlib.import_module(name)


def _unnice() -> None:
    """The command waits on the worker now: every thread of it (the imports, if still running, and
    the threads they started) gets the priority of the thread answering. Raising a priority back
    needs the privilege to: without it they stay low, as the worker was before."""
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    for tid in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), mine)
        except OSError:
            pass


def _handle(msg: tuple[Any, ...], source: Suite | ResolvedRun, frames: dict[Path, pd.DataFrame]) -> str:
    kind = msg[0]
    if kind == "results":
        from ..run.evaluation import summarise_with_frame

        _, store_path, config, stats = msg
        with Store(Path(store_path)) as store:
            results, frame = summarise_with_frame(store, source, config, stats)
        frames[Path(store_path).resolve().parent] = frame
        return results.model_dump_json()
    if kind == "report":
        from ..report import build_report

        _, out, kwargs = msg
        held = frames.get(Path(out).resolve())
        rep = build_report([Path(out)], frames=None if held is None else {Path(out): held}, **kwargs)
        return str(rep.html)
    raise ValueError(f"unknown request {kind!r}")


class ResultsWorker:
    """`with ResultsWorker(run) as w:` then `evaluate(run, ..., summarise=w.summarise)` and
    `w.report(out)`; every request falls back to the command's own process. `run`: the resolved
    run (the worker computes its results with the run's family and options as resolved), or a suite."""

    def __init__(self, suite: Suite | ResolvedRun):
        self.suite = suite
        self._conn: Connection | None = None
        self._proc: BaseProcess | None = None
        self.used = False  # whether the worker produced what was asked (for tests and diagnostics)

    def __enter__(self) -> ResultsWorker:
        if enabled():
            ctx = multiprocessing.get_context("fork")
            self._conn, child = ctx.Pipe()
            self._proc = ctx.Process(target=_serve, args=(child, self._conn, self.suite, PRELOAD), name="medres-results", daemon=True)
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STARTUP_SIGNALS)  # the worker starts with them blocked
            try:
                self._proc.start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one that came meanwhile is delivered here, now
            child.close()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            self._proc.join(timeout=5)
            if self._proc.is_alive():  # pragma: no cover - a worker stuck in a request
                self._proc.kill()
            self._proc = None

    def _ask(self, *msg: object) -> str | None:
        """The worker's answer (results.json's text, or the report's path), or None when it could not give one (not started, dead, failed)."""
        if self._conn is None:
            return None
        try:
            self._conn.send(msg)
            status, value = self._conn.recv()
        except (EOFError, OSError):
            self.close()
            return None
        return value if status == "ok" else None

    def summarise(self, store: Store, suite: Suite | ResolvedRun, config: JSONObject, stats: RunStats | None = None) -> tuple[Results, pd.DataFrame | None]:
        """The results as `evaluation.summarise_with_frame` computes them, from the worker when it
        can (the frame stays there, for the report), else in this process."""
        from ..run.evaluation import summarise_with_frame

        got = self._ask("results", str(store.path), config, stats)
        if got is not None:
            self.used = True
            block = suite.family.measures.results_block if isinstance(suite, ResolvedRun) else None
            return Results.model_validate_json(got, context=None if block is None else {BLOCK: block}), None
        return summarise_with_frame(store, suite, config, stats)

    def report(self, out: Path, frame: pd.DataFrame | None = None, **kwargs: Any) -> Path:
        """The report of run directory `out` (its report.html), written by the worker when it holds
        the run's frame, else here (with `frame` when the command computed it)."""
        got = self._ask("report", str(out), kwargs) if frame is None else None
        if got is not None:
            return Path(got)
        from ..report import build_report

        return build_report([out], frames=None if frame is None else {Path(out): frame}, **kwargs).html
