"""The garbage collector around heavy phases of a run.

May import: runtime.devices."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from . import devices


@contextlib.contextmanager
def cheap_gc(device: str) -> Iterator[None]:
    """Freeze the objects alive now for the duration: the collector's passes then scan only what is
    new instead of the whole heap (every imported module's objects; 0.1 s per pass with pandas,
    scipy and matplotlib loaded, and more with a large frame). Frozen objects are unfrozen on exit,
    so what became garbage meanwhile is collected later. `device`: the switch (devices.on) of the use."""
    if not devices.on(device):
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def frozen_imports() -> Iterator[None]:
    """Import with the collector paused, then freeze what the imports made. Importing pandas, scipy
    and matplotlib allocates some 250,000 objects and leaves almost no garbage, so each pass the
    allocations trigger walks them for nothing (about 0.15 s over those imports); frozen, the
    modules' objects are skipped by the passes after them too. The little garbage the imports left
    is held until a `cheap_gc` block unfreezes everything. The collector is left as it was found
    (paused or not), so blocks nest."""
    if not devices.on("frozen_imports"):
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
