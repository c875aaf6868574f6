"""The speed devices of the run path only change how fast a run is: each is on unless
MEDRES_DEVICES_OFF names it (a name there that is no device stops the command with an error naming
the variable), and `medres eval` with every device off measures the same numbers as with all on."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import eval_command, make_tiny_suite
from medresilience.runtime import devices
from medresilience.runtime.errors import ConfigError


def test_every_device_is_on_unless_named_off(monkeypatch):
    monkeypatch.delenv(devices.VARIABLE, raising=False)
    assert all(devices.on(name) for name in devices.DEVICES)
    first, *rest = devices.DEVICES
    monkeypatch.setenv(devices.VARIABLE, f" {first} ,")
    assert not devices.on(first) and all(devices.on(name) for name in rest)
    with pytest.raises(ValueError, match="no-such"):
        devices.on("no-such")


def test_a_name_that_is_no_device_is_a_config_error(monkeypatch):
    monkeypatch.setenv(devices.VARIABLE, f"turbo,{next(iter(devices.DEVICES))}")
    with pytest.raises(ConfigError, match=f"{devices.VARIABLE}.*'turbo' is not a device"):
        devices.check()
    monkeypatch.setenv(devices.VARIABLE, ",".join(devices.DEVICES))
    devices.check()


def _measured(out) -> dict:
    """What a run measured (results.json without its run's identity and timing)."""
    results = json.loads((out / "results.json").read_text())
    return results["models"]


def test_medres_eval_with_every_device_off_measures_the_same(tmp_path):
    """The real command (the console script's launcher, so the start and the exit are the ones a user
    runs) on the same suite and stub, all devices on and all off: the same results; a bad
    MEDRES_DEVICES_OFF exits non-zero naming the variable, before it writes a store."""
    from medresilience.testing.stub import StubServer

    make_tiny_suite().save(tmp_path / "suite")
    base = {k: v for k, v in os.environ.items() if k not in (devices.VARIABLE, "MEDRES_RESULTS_WORKER", "MEDRES_EVENT_LOOP")}
    every_off = {devices.VARIABLE: ",".join(devices.DEVICES), "MEDRES_RESULTS_WORKER": "0", "MEDRES_EVENT_LOOP": "asyncio"}
    seen = {}
    with StubServer(policy="hash") as srv:
        for name, env in (("on", base), ("off", {**base, **every_off})):
            argv = eval_command(tmp_path / "suite", tmp_path / name, srv.base_url)
            argv[argv.index("medresilience.cli")] = "medresilience.launch"
            p = subprocess.run(argv, env=env, capture_output=True, text=True)
            assert p.returncode == 0, p.stderr
            seen[name] = _measured(tmp_path / name)
        argv = eval_command(tmp_path / "suite", tmp_path / "bad", srv.base_url)
        bad = subprocess.run(argv, env={**base, devices.VARIABLE: "turbo"}, capture_output=True, text=True)
    assert seen["on"] == seen["off"] and seen["on"]
    assert bad.returncode != 0 and f"setting '{devices.VARIABLE}'" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "bad" / "store.sqlite").exists()
