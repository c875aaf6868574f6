"""The libraries a run needs only after its calls (pandas, scipy and statsmodels for the results,
matplotlib and Jinja2 for the report, the family's metrics and report modules) imported in a
background thread while the calls are in flight.

Their import costs about a second of CPU; a run's request phase waits on the network most of the
time, so the import fills CPU the calls leave idle instead of adding a second after them. While
the calls run, the thread imports one library at a time and rests three times as long as each
took, so the event loop keeps most of the CPU (an import holds the interpreter lock in long
stretches); once the calls are done (`Preload.finish`) it imports the rest at full speed and the
caller waits for it, so no module is used half-imported. A module that fails to import here is
left for the caller's own import to fail, where its error is reported."""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Sequence

from .family import Family

#: the results' and the report's libraries and the spine's modules over them, in import order
#: (each import a step, so no step holds the interpreter for long)
MODULES = (
    "numpy",
    "pandas",
    "scipy.stats",
    "statsmodels.stats.proportion",
    "statsmodels.stats.contingency_tables",
    "statsmodels.stats.multitest",
    "jinja2",
    "matplotlib.pyplot",
    "medresilience.frame",
    "medresilience.reading",
    "medresilience.report.build",
)
#: the share of the CPU the thread takes while the calls run
DUTY = 0.25
#: the interpreter's switch interval while the thread imports (Python's default is 5 ms, long
#: enough for an import to hold up every reply the event loop has waiting)
SWITCH_S = 0.0005


def family_modules(family: Family) -> list[str]:
    """The modules of a family's results and report hooks that load on their first call."""
    hooks = (family.metrics, family.headline, family.report)
    return [m for m in (getattr(h, "module", None) for h in hooks) if m]


class Preload:
    """`Preload(family).start()` before the calls, `.finish()` after them."""

    def __init__(self, family: Family, modules: Sequence[str] = MODULES):
        self.modules = [*modules, *family_modules(family)]
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="medres-preload", daemon=True)

    def start(self) -> Preload:
        self._thread.start()
        return self

    def finish(self) -> None:
        """The calls are done: import the rest at full speed and return when all are imported."""
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_S)  # the event loop gets the interpreter back within SWITCH_S
        try:
            for name in self.modules:
                t = time.perf_counter()
                try:
                    importlib.import_module(name)
                except Exception:  # the caller's own import reports it
                    continue
                self._done.wait((time.perf_counter() - t) * (1 - DUTY) / DUTY)
        finally:
            sys.setswitchinterval(interval)
