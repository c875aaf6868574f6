"""The event loop a run's calls are made on: uvloop's where it is installed (libuv under the same
asyncio API, with less CPU spent on each wake-up, which a run at a model's latency does once or
twice a reply), else asyncio's own. MEDRES_EVENT_LOOP=asyncio asks for asyncio's own loop."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import TypeVar

from .errors import ConfigError

T = TypeVar("T")

#: the loops MEDRES_EVENT_LOOP names
CHOICES = ("auto", "uvloop", "asyncio")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The new-loop function of the loop MEDRES_EVENT_LOOP asks for (auto: uvloop when installed);
    None: asyncio's own. ConfigError naming the variable for another value, or for uvloop when it
    is not installed."""
    choice = os.environ.get("MEDRES_EVENT_LOOP", "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise ConfigError("MEDRES_EVENT_LOOP", f"{choice!r} is not one of {', '.join(CHOICES)}")
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ConfigError("MEDRES_EVENT_LOOP", "uvloop is not installed (pip install uvloop)") from None
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[object, object, T], factory: Callable[[], asyncio.AbstractEventLoop] | None = None) -> T:
    """`asyncio.run(main)` on a loop of `factory` (a `loop_factory()` taken earlier, so that a bad
    MEDRES_EVENT_LOOP fails before anything is written; default: `loop_factory()` now)."""
    with asyncio.Runner(loop_factory=factory or loop_factory()) as runner:
        return runner.run(main)
