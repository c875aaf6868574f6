"""The scaffolding every answer loop shares (mitigations.loop_units): the pending units of a loop
(grouped by unit key in plan order, without the keys stored `ok`) on a real store, and the progress
that counts across a loop's rounds, with and without the retry waits, also through `run_calls`
against the stub server."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from medresilience.calls import CallRequest, RunStats, run_calls, takes_waits
from medresilience.mitigations.loop_units import StagedProgress, pending_units, unit_links
from medresilience.store import CallRow, Store, UnitRow
from medresilience.testing.stub import StubServer


@dataclass
class Unit:
    """A planned unit as a loop reads it (runner.Planned has more fields; the helpers read `unit`)."""

    unit: UnitRow
    note: str = ""


def unit(unit_id: str, key: str, model: str = "m") -> Unit:
    return Unit(UnitRow(model, unit_id, unit_id.split("/")[0], None, "clean", "s", "letter", key), unit_id)


def test_pending_units_are_grouped_by_key_in_plan_order_without_the_finished_ones(tmp_path):
    planned = [unit("i1/a", "k-two"), unit("i2/a", "k-done"), unit("i3/a", "k-failed"), unit("i1/b", "k-two"), unit("i4/a", "k-new")]
    with Store(tmp_path / "s.sqlite") as st:
        st.write_results([CallRow("k-done", "m", "ok", text="A"), CallRow("k-failed", "m", "error", True, error="boom")], [])
        got = pending_units(planned, st)
    # k-done is answered: dropped; the two units under k-two stay one group, in plan order; an error is not finished
    assert [[u.note for u in g] for g in got] == [["i1/a", "i1/b"], ["i3/a"], ["i4/a"]]
    with Store(tmp_path / "empty.sqlite") as st:
        assert pending_units([], st) == [] and len(pending_units(planned, st)) == 4
    assert unit_links(got[0], "call-1", "loop.step1") == [("m", "i1/a", "call-1", "loop.step1"), ("m", "i1/b", "call-1", "loop.step1")]


def test_the_progress_counts_across_rounds_with_or_without_waits():
    seen: list[tuple[int, int, int]] = []
    shown = StagedProgress(lambda d, t, waits=0: seen.append((d, t, waits)))
    shown(1, 3)
    shown(3, 3, waits=2)
    shown.next_round(3)  # the first round made three calls
    shown(0, 2)
    shown(2, 2, waits=1)
    assert seen == [(1, 3, 0), (3, 3, 2), (3, 5, 0), (5, 5, 1)]

    plain: list[tuple[int, int]] = []
    shown = StagedProgress(lambda d, t: plain.append((d, t)), waits=False)  # a progress that takes no waits
    shown(2, 2, waits=4)
    shown.next_round(2)
    shown(1, 1)
    assert plain == [(2, 2), (3, 3)]
    assert takes_waits(shown)  # run_calls hands it the waits either way; it keeps them or not
    StagedProgress(None)(1, 1)  # no progress asked for: nothing shown, nothing raised


def test_the_progress_rises_across_two_rounds_of_run_calls(tmp_path):
    """Two rounds through the one call path (as a loop makes them): the count of the second round
    starts where the first ended, and a rerun (every call stored) makes none."""
    from medresilience.models.spec import parse_model_spec

    seen: list[tuple[int, int]] = []
    with StubServer() as srv, Store(tmp_path / "s.sqlite") as st:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},max_retries=0")
        rounds = [[f"q{i}" for i in range(3)], ["q3", "q4"]]
        shown = StagedProgress(lambda d, t, waits=0: seen.append((d, t)))

        async def go() -> int:
            made = 0
            for qs in rounds:
                requests = [CallRequest("stub-model", f"key-{q}", [{"role": "user", "content": q}], {"max_tokens": 8}) for q in qs]
                part = await run_calls(requests, [spec], st, shown, None, RunStats())
                shown.next_round(part.called)
                made += part.called
            return made

        assert asyncio.run(go()) == 5
        assert seen[-1] == (5, 5) and [d for d, _ in seen] == sorted(d for d, _ in seen)
        assert {t for _, t in seen} == {3, 5}  # the second round's total counts the first round's calls
        seen.clear()
        shown = StagedProgress(lambda d, t, waits=0: seen.append((d, t)))
        assert asyncio.run(go()) == 0 and srv.stats.total == 5  # every call stored: none made again
