"""Plan -> dedupe -> bounded-concurrency execution -> store.

A plan is a list of units: one clean unit per (model, item, setting, scoring) when the family
asks items clean, and one unit per (model, probe, setting, scoring). The suite's family selects
the probes, renders the messages and gives each unit its scorer; a setting (a named mitigation)
turns the rendered messages into the messages sent. Each unit has a request key = hash(model
identity, messages, decoding parameters); units with the same key share one call, and a key
already stored `ok` is not called again, so re-running a command resumes it.

A scorer that needs a call of its own (a judge) is deferred: once the answers are stored, its
requests are built from the stored replies and run through the same path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from . import settings as settings_mod
from .calls import CallRequest, ProgressFn, RunStats, _takes_waits, add_stats, request_key, run_calls
from .errors import ConfigError
from .family import Family, family_of
from .models.openai_compatible import OpenAICompatibleModel
from .models.spec import ModelSpec
from .records import CLEAN, Item, Probe, Suite
from .scoring.judge import run_deferred
from .scoring.mcq import mcq_params
from .scoring.types import Scorer, is_deferred
from .store import Store, UnitRow

__all__ = ["CallRequest", "EvalOptions", "Planned", "ProgressFn", "RunStats", "check_options", "execute", "is_deferred",
           "plan", "request_key", "run_calls", "select_units"]


@dataclass(frozen=True)
class EvalOptions:
    """What a run plans. `family` holds the suite family's own options (a mapping validated by
    the family, or its options model); `conditions` None means clean plus every condition."""

    settings: tuple[str, ...] = (settings_mod.NONE,)
    scoring: str = "letter"
    limit: int | None = None
    conditions: tuple[str, ...] | None = None
    family: Mapping[str, Any] | BaseModel | None = None

    def __post_init__(self) -> None:
        if not self.settings:
            raise ConfigError("--setting", "at least one setting is needed (none for no mitigation)")
        if len(set(self.settings)) != len(self.settings):
            raise ConfigError("--setting", f"a setting is named twice: {', '.join(self.settings)}")


@dataclass
class Planned:
    unit: UnitRow
    messages: list[dict[str, str]]
    params: dict[str, Any]
    score: Scorer | Any  # a direct Scorer, or a deferred one (scoring.judge)


def select_units(suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions) -> list[tuple[Item, Probe | None]]:
    """(item, None) for clean, then (item, probe) for each selected probe, item by item."""
    items = list(suite.items.values())
    if opts.limit is not None:
        items = items[: opts.limit]
    wanted = None if opts.conditions is None else set(opts.conditions)
    by_item: dict[str, list[Probe]] = {}
    for p in family.select(suite, family_options):
        if wanted is None or p.condition in wanted:
            by_item.setdefault(p.item_id, []).append(p)
    out: list[tuple[Item, Probe | None]] = []
    for it in items:
        if family.clean and (wanted is None or CLEAN in wanted):
            out.append((it, None))
        out += [(it, p) for p in by_item.get(it.id, [])]
    return out


def check_options(family: Family, opts: EvalOptions, specs: Iterable[ModelSpec] = ()) -> BaseModel:
    """The family's options, after checking the scoring and settings, and that each model takes
    what the scoring needs (log-probabilities) (ConfigError otherwise)."""
    fopts = family.parse_options(opts.family)
    if opts.scoring not in family.scorings:
        raise ConfigError("--scoring", f"family {family.name} scores by {', '.join(family.scorings)}, not {opts.scoring}")
    for n in opts.settings:
        settings_mod.get(n)
    if {**family.decoding(fopts), **mcq_params(opts.scoring)}.get("logprobs"):
        for spec in specs:
            if not spec.supports("logprobs"):
                raise ConfigError(f"--model {spec.label}", f"{spec.why_not('logprobs')}: --scoring {opts.scoring} needs log-probabilities (use --scoring letter)")
    return fopts


def plan(suite: Suite, specs: Iterable[ModelSpec], opts: EvalOptions) -> list[Planned]:
    """Every unit of a run at once (`execute_plan` plans and runs in chunks)."""
    family = family_of([suite.manifest.family])
    specs = list(specs)
    fopts = check_options(family, opts, specs)
    return _plan_pairs(select_units(suite, family, fopts, opts), family, fopts, specs, opts)


async def execute(
    planned: list[Planned],
    specs: Iterable[ModelSpec],
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    halted: set[str] | None = None,
) -> RunStats:
    """Record the plan's units, run every unique, unfinished call and score it; then run the
    deferred scorers (judges) on the stored replies. `halted`: models stopped earlier in the run."""
    stats = RunStats(planned_units=len(planned))
    store.add_plan([p.unit for p in planned], [])
    requests = (CallRequest(p.unit.model, p.unit.key, p.messages, p.params, None if is_deferred(p.score) else p.score, p.unit.scoring)
                for p in planned)
    stats = await run_calls(requests, specs, store, progress, clients, stats, halted=halted)
    deferred = [p for p in planned if is_deferred(p.score)]
    if deferred:
        stats = await run_deferred(deferred, specs, store, progress, clients, stats)
    return stats


async def execute_plan(
    suite: Suite,
    specs: Iterable[ModelSpec],
    opts: EvalOptions,
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    chunk_units: int = 20_000,
) -> RunStats:
    """Plan and run a suite in chunks of about `chunk_units` units: each chunk is planned, recorded,
    deduplicated against the store and run before the next is planned, so memory stays flat as
    the suite grows (the suite itself is loaded once) and a resume with nothing to do costs one
    key lookup per unit. The results are the same as `execute(plan(...))`: a chunk boundary only
    decides when a call is made, never which."""
    specs = list(specs)
    family = family_of([suite.manifest.family])
    fopts = check_options(family, opts, specs)
    pairs = select_units(suite, family, fopts, opts)
    per_pair = max(1, len(specs) * len(opts.settings))
    step = max(1, chunk_units // per_pair)
    total = RunStats()
    n_units = len(pairs) * per_pair
    done_before = 0

    with_waits = progress is not None and _takes_waits(progress)
    waits_before = 0
    halted: set[str] = set()

    def chunk_progress(done: int, todo: int, waits: int = 0) -> None:
        if progress is None:
            return
        shown = (done_before + done, done_before + todo + max(0, n_units - done_before - todo))
        if with_waits:
            progress(*shown, waits=waits_before + waits)  # type: ignore[call-arg]
        else:
            progress(*shown)

    for start in range(0, len(pairs), step):
        planned = _plan_pairs(pairs[start:start + step], family, fopts, specs, opts)
        part = await execute(planned, specs, store, chunk_progress, clients, halted)
        waits_before += part.retry_waits
        done_before += part.called
        total = add_stats(total, part)
        del planned
    if progress is not None:
        progress(done_before, done_before)
    return total


def _plan_pairs(pairs: list[tuple[Item, Probe | None]], family: Family, fopts: BaseModel, specs: list[ModelSpec],
                opts: EvalOptions) -> list[Planned]:
    """The units of some (item, probe-or-clean) pairs, for every model and setting (as `plan`)."""
    settings = [settings_mod.get(n) for n in opts.settings]
    rendered = [(item, probe, family.render(item, probe, opts.scoring, fopts)) for item, probe in pairs]
    overrides = {**family.decoding(fopts), **mcq_params(opts.scoring)}  # the scoring's needs win (logprob: 1 token)
    out: list[Planned] = []
    for spec in specs:
        params = spec.decoding(**overrides)
        for setting in settings:
            for item, probe, messages in rendered:
                messages = setting.apply_to(messages, item)  # a setting may need the item (to keep its answer key out)
                key = request_key(spec, messages, params)
                cond = CLEAN if probe is None else probe.condition
                base = item.id if probe is None else probe.id
                scorer = family.scorer(item, probe, opts.scoring, fopts)
                # a judge's name carries its model and rubric hash: another judge makes other units
                scoring = scorer.name if is_deferred(scorer) else opts.scoring
                unit_id = f"{base}|{cond}|{setting.name}|{scoring}"
                unit = UnitRow(spec.label, unit_id, item.id, None if probe is None else probe.id, cond, setting.name, scoring, key)
                out.append(Planned(unit, messages, params, scorer))
    return out
