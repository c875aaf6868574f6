"""Switches for the speed devices of the run path, so that a benchmark can measure what each one
buys (bench/bench_devices.py): MEDRES_DEVICES_OFF=name[,name...] turns the named devices off, read
here and nowhere else. A device only changes how fast a run is, never what it computes: a run with
any of them off gives the same units, scores and results. The two devices with a variable of their
own keep it: the results worker (MEDRES_RESULTS_WORKER=0) and uvloop (MEDRES_EVENT_LOOP=asyncio).

May import: runtime.errors."""

from __future__ import annotations

import os

from .errors import ConfigError, did_you_mean

VARIABLE = "MEDRES_DEVICES_OFF"

#: each device by its switch's name
DEVICES = {
    "frozen_imports": "the command's and the results worker's imports made with the collector paused, then frozen (heap.frozen_imports)",
    "exit_freeze": "the command's objects frozen out of the collector's passes at exit (cli.main)",
    "calls_gc": "the heap frozen while the calls run (heap.cheap_gc in evaluation)",
}


def _named_off() -> set[str]:
    return {s.strip() for s in os.environ.get(VARIABLE, "").split(",") if s.strip()}


def check() -> None:
    """A ConfigError naming the variable when MEDRES_DEVICES_OFF names something that is no device
    (a run calls it before it writes anything: a misspelt switch measures nothing)."""
    for unknown in sorted(_named_off() - DEVICES.keys()):
        raise ConfigError(VARIABLE, f"{unknown!r} is not a device{did_you_mean(unknown, DEVICES)}; the devices: {', '.join(DEVICES)}")


def on(name: str) -> bool:
    """Whether device `name` (one of DEVICES) is on: unless MEDRES_DEVICES_OFF names it."""
    if name not in DEVICES:
        raise ValueError(f"{name!r} is not a device")
    return name not in _named_off()
