"""Resampling a flip (MedFuzz's check that a flip is not sampling noise): the stage of the attack
loop that runs after its rounds (`loop.AdaptiveLoop.run`).

For every unit whose attack flipped the answer, the target answers the ORIGINAL item (the clean
question, as the attack started from it) and the ATTACKED item (the question as it was asked at the
flip) `options.resample` more times each. Draw j (1..r) is sent as epoch j of the unit's own call
would be (`draw_params`: the decoding seed moved on by j, the temperature the run's; a model that
takes no seed sends the same request again under its own key, `run.followups.epoch_key`), so every
draw is its own keyed call through the ordinary call path: a rerun makes none, a killed run resumes
with the draws not yet stored, and a later run with a larger r asks only the new draws. The draws
are not the attack's own answers (the clean answer that let the attack start, the flip that ended
it): those were chosen by the loop, so counting them would favour the attack.

Each draw is read by the unit's scorer: right, wrong, or unread (several options, none, cut). An
unread draw is left out of its side's count, never taken as right or wrong. The unit's record
(`record`: r asked, read and right on each side, the temperature, the draws' tokens, the
correction) is stored as a call of `RESAMPLE_CALLER` linked to the unit under `ROLE_RESAMPLE`, its
draws under `adaptive.resample.orig<j>` and `adaptive.resample.att<j>`; it is written once every
draw of the unit is stored, and the loop stores a flip's unit answer only after it, so a unit with a
draw that failed (or a run killed while resampling) leaves the unit unanswered: counted not run,
and resumed by a rerun, which replays the attack from its stored calls and asks the missing draws. `stats.persuasion.attack_tests` turns the records into per-attack tests
(one-sided Fisher exact, Holm or BH across a model's flips: `persuasion.loop_measures`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...calls import CallRequest, RunStats, request_key, run_calls
from ...models.openai_compatible import Completion
from ...run.followups import epoch_key
from ...runtime.seeding import stable_hash
from ...score import Score
from ...store import CallRow
from .taxonomy import RESAMPLE_CALLER, ROLE_DRAW_ATT, ROLE_DRAW_ORIG, ROLE_RESAMPLE

if TYPE_CHECKING:  # pragma: no cover
    from ...calls import ProgressFn
    from ...models.openai_compatible import OpenAICompatibleModel
    from ...models.spec import ModelSpec
    from ...store import Store
    from .delivery import AdaptiveOptions

SIDES = (("orig", ROLE_DRAW_ORIG), ("att", ROLE_DRAW_ATT))


def record_key(unit_key: str, r: int, correction: str) -> str:
    """The key of a unit's resample record (its draws are keyed by their requests)."""
    return stable_hash({"adaptive-resample": unit_key, "r": r, "correction": correction})


def draw_params(spec: ModelSpec, params: dict[str, Any], draw: int) -> dict[str, Any]:
    """The decoding parameters of draw `draw` of a call sent with `params`: the seed moved on by the
    draw where the model takes one (as `run.runner.epoch_spec` moves an epoch's), all else as sent."""
    base = spec.decoding()
    moved = spec.model_copy(update={"seed": (spec.seed or 0) + 1}).decoding()
    seeds = [k for k, v in moved.items() if base.get(k) != v and isinstance(params.get(k), int)]
    return {**params, **{k: params[k] + draw for k in seeds}}


def draw_request(first: Any, spec: ModelSpec, messages: list[dict[str, str]], draw: int) -> CallRequest:
    """Draw `draw` of the unit's call with `messages`, scored by the unit's scorer."""
    params = draw_params(spec, first.params, draw)
    key = epoch_key(request_key(spec, messages, params), spec, draw)
    return CallRequest(spec.label, key, messages, params, first.score, first.unit.scoring)


def read(first: Any, turn: dict[str, Any]) -> Score:
    """A draw's reply as the unit's scorer reads it (a reply the scorer cannot take: unread)."""
    try:
        return first.score(Completion(turn["text"], turn["finish_reason"], 0, 0, 0.0, 1))
    except Exception as e:
        return Score.unscored(f"the scorer failed on this reply: {type(e).__name__}: {e}"[:300])


def _flipped(store: Store, by_key: dict[str, list[Any]], trace_key: Callable[[str], str]) -> dict[str, dict[str, Any]]:
    """unit key -> its trace, for the units whose stored trace flipped."""
    keys = {trace_key(k): k for k in by_key}
    out = {}
    for tkey, turn in store.turns(list(keys)).items():
        trace = json.loads(turn["text"])
        if trace.get("flipped_at") is not None:
            out[keys[tkey]] = trace
    return out


def record(trace: dict[str, Any], first: Any, options: AdaptiveOptions, scores: dict[str, list[Score]], usage: dict[str, int]) -> dict[str, Any]:
    """A unit's resample record: its attack, and per side the draws asked, read and right."""
    sides = {}
    for side, got in scores.items():
        read_ = [s for s in got if str(s.status) == "valid" and s.value is not None]
        sides[side] = {"asked": len(got), "read": len(read_), "right": sum(1 for s in read_ if s.value == 1)}
    return {
        "model": trace["model"],
        "setting": trace["setting"],
        "item_id": trace["item_id"],
        "unit_id": trace["unit_id"],
        "flipped_at": trace["flipped_at"],
        "r": options.resample,
        "correction": options.correction,
        "temperature": first.params.get("temperature"),
        **sides,
        "calls": usage,
    }


async def resample_flips(
    options: AdaptiveOptions,
    units: Sequence[Any],
    specs: list[ModelSpec],
    store: Store,
    clients: dict[str, OpenAICompatibleModel] | None,
    halted: set[str] | None,
    progress: ProgressFn | None,
    trace_key: Callable[[str], str],
) -> tuple[RunStats, set[str]]:
    """Resample every flipped unit of `units` (runner.Planned, grouped by unit key) whose record for
    this r and correction is not stored yet (its trace stored under `trace_key(unit key)`); store the
    draws, the records and their links. Returns the stats and the keys of the flipped units whose
    record is stored (now or before)."""
    if options.resample == 0:
        return RunStats(), set()
    by_key: dict[str, list[Any]] = {}
    for p in units:
        by_key.setdefault(p.unit.key, []).append(p)
    spec_of = {s.label: s for s in specs}
    flipped = _flipped(store, by_key, trace_key)
    done = store.finished_keys([record_key(k, options.resample, options.correction) for k in flipped])
    todo = {k: t for k, t in flipped.items() if record_key(k, options.resample, options.correction) not in done}
    resampled = set(flipped) - set(todo)
    if not todo:
        return RunStats(), resampled
    # the question at the flip: the request of the flip turn's target call
    flip_key = {k: t["turns"][-1]["target_key"] for k, t in todo.items()}
    attacked = store.request_messages(list(flip_key.values()))
    plan: dict[str, dict[str, list[CallRequest]]] = {}
    for k in todo:
        first = by_key[k][0]
        spec = spec_of[first.unit.model]
        asked = {"orig": first.messages, "att": attacked[flip_key[k]]}
        plan[k] = {side: [draw_request(first, spec, asked[side], j) for j in range(1, options.resample + 1)] for side in asked}

    def shown(d: int, total: int, waits: int = 0) -> None:
        if progress is not None:
            progress(d, total)

    requests = [r for sides in plan.values() for rs in sides.values() for r in rs]
    stats = await run_calls(requests, specs, store, shown, clients, RunStats(), halted=halted)
    turns = store.turns([r.key for r in requests])
    failed = 0
    rows, links = [], []
    for k, sides in plan.items():
        first = by_key[k][0]
        if any(r.key not in turns for rs in sides.values() for r in rs):
            failed += len(by_key[k])
            continue
        usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        scores: dict[str, list[Score]] = {}
        for side, role in SIDES:
            for j, r in enumerate(sides[side], 1):
                turn = turns[r.key]
                scores.setdefault(side, []).append(read(first, turn))
                usage["calls"] += 1
                usage["prompt_tokens"] += turn["prompt_tokens"]
                usage["completion_tokens"] += turn["completion_tokens"]
                links += [(p.unit.model, p.unit.unit_id, r.key, f"{role}{j}") for p in by_key[k]]
        rkey = record_key(k, options.resample, options.correction)
        rows.append(CallRow(rkey, RESAMPLE_CALLER, "ok", text=json.dumps(record(todo[k], first, options, scores, usage), ensure_ascii=False)))
        resampled.add(k)
        links += [(p.unit.model, p.unit.unit_id, rkey, ROLE_RESAMPLE) for p in by_key[k]]
    if rows:
        store.add_plan([], [], links)
        store.write_results(rows, [])
    if failed:
        stats.not_run += failed
        stats.stopped.append(f"{failed} flipped adaptive attacks were not resampled: a draw failed (stored as an error); rerun to ask the draws not yet stored")
    return stats, resampled


def records(store: Store, run: str | None = "latest") -> list[dict[str, Any]]:
    """Every resample record of a run's units (default: the latest run)."""
    return [json.loads(r["text"]) for r in store.linked_texts(ROLE_RESAMPLE, run)]
