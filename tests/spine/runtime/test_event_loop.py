"""A run's calls are made on uvloop's event loop where it is installed, on asyncio's own when
MEDRES_EVENT_LOOP=asyncio asks for it, and a bad value of that variable stops a run before it
writes anything."""

from __future__ import annotations

import asyncio

import pytest

from medresilience.runtime import event_loop
from medresilience.runtime.errors import ConfigError

uvloop = pytest.importorskip("uvloop", reason="uvloop is a dependency on Linux and macOS; without it asyncio's loop is the only one")


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_the_loop_is_uvloops_unless_asyncios_is_asked_for(monkeypatch):
    monkeypatch.delenv("MEDRES_EVENT_LOOP", raising=False)
    assert event_loop.run(_loop_type()) is uvloop.Loop
    monkeypatch.setenv("MEDRES_EVENT_LOOP", "asyncio")
    assert not issubclass(event_loop.run(_loop_type()), uvloop.Loop)
    monkeypatch.setenv("MEDRES_EVENT_LOOP", "uvloop")
    assert event_loop.run(_loop_type()) is uvloop.Loop
    monkeypatch.setenv("MEDRES_EVENT_LOOP", "tokio")
    with pytest.raises(ConfigError, match="MEDRES_EVENT_LOOP"):
        event_loop.loop_factory()


def test_a_runs_calls_are_made_on_the_chosen_loop(tmp_path, toy_family, monkeypatch):
    """The progress of a run is called from its loop: uvloop's by default, asyncio's on request; the
    same units and scores either way. A bad MEDRES_EVENT_LOOP writes no run directory."""
    from medresilience import EvalOptions, evaluate, parse_model_spec
    from medresilience.testing.stub import StubServer
    from toy_family import answerer, make_toy_suite

    suite = make_toy_suite(6)
    seen: dict[str, set] = {}
    with StubServer(policy=answerer) as srv:
        spec = parse_model_spec(f"openai:toy-model,base_url={srv.base_url}")
        results = {}
        for name in ("auto", "asyncio"):
            monkeypatch.setenv("MEDRES_EVENT_LOOP", name)
            got = seen.setdefault(name, set())
            res = evaluate(suite, [spec], tmp_path / name, EvalOptions(), progress=lambda *a, got=got, **k: got.add(type(asyncio.get_running_loop())))
            results[name] = res.results.models
        monkeypatch.setenv("MEDRES_EVENT_LOOP", "tokio")
        with pytest.raises(ConfigError, match="MEDRES_EVENT_LOOP"):
            evaluate(suite, [spec], tmp_path / "bad", EvalOptions())
    assert seen["auto"] == {uvloop.Loop} and seen["asyncio"] and uvloop.Loop not in seen["asyncio"]
    assert results["auto"] == results["asyncio"]
    assert not (tmp_path / "bad").exists()
