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

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from . import settings as settings_mod
from .errors import ConfigError
from .family import Family, family_of
from .models.openai_compatible import Completion, ModelCallError, OpenAICompatibleModel
from .models.spec import ModelSpec
from .records import CLEAN, Item, Probe, Suite
from .scoring.mcq import mcq_params
from .scoring.types import Score, Scorer
from .seeding import stable_hash
from .store import CallRow, ScoreRow, Store, UnitRow


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


def is_deferred(scorer: Any) -> bool:
    """A scorer that makes calls of its own (a judge) rather than reading the reply directly."""
    return hasattr(scorer, "judge_requests")


def request_key(spec: ModelSpec, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    return stable_hash(spec.identity(), messages, params)


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


def check_options(family: Family, opts: EvalOptions) -> BaseModel:
    """The family's options, after checking the scoring and settings (ConfigError otherwise)."""
    fopts = family.parse_options(opts.family)
    if opts.scoring not in family.scorings:
        raise ConfigError("--scoring", f"family {family.name} scores by {', '.join(family.scorings)}, not {opts.scoring}")
    for n in opts.settings:
        settings_mod.get(n)
    return fopts


def plan(suite: Suite, specs: Iterable[ModelSpec], opts: EvalOptions) -> list[Planned]:
    family = family_of([suite.manifest.family])
    fopts = check_options(family, opts)
    settings = [settings_mod.get(n) for n in opts.settings]
    rendered = [(item, probe, family.render(item, probe, opts.scoring, fopts)) for item, probe in select_units(suite, family, fopts, opts)]
    overrides = mcq_params(opts.scoring)
    out: list[Planned] = []
    for spec in specs:
        params = spec.decoding(**overrides)
        for setting in settings:
            for item, probe, messages in rendered:
                messages = setting.apply(messages)
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


@dataclass
class RunStats:
    planned_units: int = 0
    unique_calls: int = 0
    cached: int = 0
    called: int = 0
    ok: int = 0
    errors: int = 0
    permanent_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    error_samples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


ProgressFn = Callable[[int, int], None]


class _Writer:
    """The one writer: batches results and commits them in one transaction per batch."""

    def __init__(self, store: Store, batch: int = 256, interval: float = 0.25):
        self.store, self.batch, self.interval = store, batch, interval
        self.queue: asyncio.Queue[tuple[CallRow, ScoreRow | None] | None] = asyncio.Queue()

    async def run(self) -> None:
        calls: list[CallRow] = []
        scores: list[ScoreRow] = []
        last = time.monotonic()
        get = self.queue.get
        while True:
            if calls:
                # something is pending: wait at most until the next flush is due
                try:
                    item = await asyncio.wait_for(get(), timeout=max(0.0, self.interval - (time.monotonic() - last)))
                except asyncio.TimeoutError:
                    item = ...
            else:
                item = await get()
                last = time.monotonic()
            if item is None:
                break
            if item is not ...:
                call, score = item  # type: ignore[misc]
                calls.append(call)
                if score is not None:
                    scores.append(score)
                # drain what is already queued without awaiting
                while len(calls) < self.batch:
                    try:
                        nxt = self.queue.get_nowait()
                    except asyncio.QueueEmpty:
                        break
                    if nxt is None:
                        self.queue.put_nowait(None)
                        break
                    calls.append(nxt[0])
                    if nxt[1] is not None:
                        scores.append(nxt[1])
            if calls and (len(calls) >= self.batch or time.monotonic() - last >= self.interval):
                self.store.write_results(calls, scores)
                calls, scores = [], []
                last = time.monotonic()
        if calls:
            self.store.write_results(calls, scores)


@dataclass
class CallRequest:
    """One call to make: the model label, its request key, messages and decoding parameters.
    `score` (optional) turns a completion into the score stored with it, under the scorer name
    `scorer` and the key `score_key` (default: this call's key; a judge scores the answer's key).
    `on_error` (optional) gives the score to store when the call fails for good (a judge outage
    is `unscored` with its reason)."""

    model: str
    key: str
    messages: list[dict[str, str]]
    params: dict[str, Any]
    score: Scorer | None = None
    scorer: str = ""
    score_key: str | None = None
    on_error: Callable[[ModelCallError], Score | None] | None = None


def _score_row(r: CallRequest, s: Score | None) -> ScoreRow | None:
    if s is None:
        return None
    return ScoreRow(r.score_key or r.key, r.scorer, s.label, s.status, s.detail, s.value)


async def run_calls(
    requests: Iterable[CallRequest],
    specs: Iterable[ModelSpec],
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    stats: RunStats | None = None,
) -> RunStats:
    """The one execution path: dedupe by key, skip keys stored `ok`, run the rest with bounded
    concurrency per model, record every outcome (ok or error) through the one writer."""
    t0 = time.perf_counter()
    stats = stats or RunStats()
    unique: dict[str, CallRequest] = {}
    for r in requests:
        unique.setdefault(r.key, r)
    stats.unique_calls = len(unique)
    store.add_plan([], [(r.key, r.model, r.messages, r.params) for r in unique.values()])
    done = store.finished_keys(unique)
    stats.cached = len(done)
    todo_by_model: dict[str, list[CallRequest]] = {}
    for k, r in unique.items():
        if k not in done:
            todo_by_model.setdefault(r.model, []).append(r)
    total = sum(len(v) for v in todo_by_model.values())
    finished = 0
    if progress:
        progress(0, total)
    spec_by_label = {s.label: s for s in specs}
    own: list[OpenAICompatibleModel] = []
    writer = _Writer(store)
    writer_task = asyncio.create_task(writer.run())

    async def worker(model: OpenAICompatibleModel, queue: asyncio.Queue[CallRequest]) -> None:
        nonlocal finished
        spec = model.spec
        while True:
            try:
                r = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                c = await model.complete(r.messages, r.params)
            except ModelCallError as e:
                stats.errors += 1
                stats.permanent_errors += int(e.permanent)
                if len(stats.error_samples) < 5:
                    stats.error_samples.append(str(e))
                s = r.on_error(e) if r.on_error is not None else None
                await writer.queue.put((CallRow(r.key, spec.label, "error", e.permanent, attempts=e.attempts, error=str(e)), _score_row(r, s)))
            else:
                cost = spec.cost(c.prompt_tokens, c.completion_tokens)
                stats.ok += 1
                stats.prompt_tokens += c.prompt_tokens
                stats.completion_tokens += c.completion_tokens
                stats.cost += cost or 0.0
                s = r.score(c) if r.score is not None else None
                row = CallRow(r.key, spec.label, "ok", False, c.text, c.top_logprobs, c.finish_reason, c.prompt_tokens, c.completion_tokens, cost, c.latency_s, c.attempts)
                await writer.queue.put((row, _score_row(r, s)))
            stats.called += 1
            finished += 1
            if progress:
                progress(finished, total)

    try:
        jobs = []
        for label, todo in todo_by_model.items():
            spec = spec_by_label[label]
            model = (clients or {}).get(label)
            if model is None:
                model = OpenAICompatibleModel(spec)
                own.append(model)
            q: asyncio.Queue[CallRequest] = asyncio.Queue()
            for r in todo:
                q.put_nowait(r)
            jobs += [worker(model, q) for _ in range(min(spec.concurrency, len(todo)))]
        await asyncio.gather(*jobs)
    finally:
        await writer.queue.put(None)
        await writer_task
        for m in own:
            with contextlib.suppress(Exception):
                await m.close()
    stats.seconds += time.perf_counter() - t0
    return stats


async def execute(
    planned: list[Planned],
    specs: Iterable[ModelSpec],
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
) -> RunStats:
    """Record the plan's units, run every unique, unfinished call and score it; then run the
    deferred scorers (judges) on the stored replies."""
    stats = RunStats(planned_units=len(planned))
    store.add_plan([p.unit for p in planned], [])
    requests = (CallRequest(p.unit.model, p.unit.key, p.messages, p.params, None if is_deferred(p.score) else p.score, p.unit.scoring)
                for p in planned)
    stats = await run_calls(requests, specs, store, progress, clients, stats)
    deferred = [p for p in planned if is_deferred(p.score)]
    if deferred:
        from .scoring.judge import run_deferred

        stats = await run_deferred(deferred, specs, store, progress, clients, stats)
    return stats
