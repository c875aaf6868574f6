"""Plan -> dedupe -> bounded-concurrency execution -> store.

A plan is a list of units: one clean unit per (model, item, defense, scoring) and one unit per
(model, probe, defense, scoring). Each unit has a request key = hash(model identity, messages,
decoding parameters); units with the same key share one call, and a key already stored `ok` is not
called again, so re-running a command resumes it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from .deliver import DEFAULT_PROMPTS, PromptSet, render_messages
from .models.openai_compatible import Completion, ModelCallError, OpenAICompatibleModel
from .models.spec import ModelSpec
from .records import Item, Probe, Suite
from .scoring import choice_from_logprobs, extract_letter
from .seeding import stable_hash
from .store import CallRow, ScoreRow, Store, UnitRow

Type1Mode = Literal["all", "sample"]
ScoringMode = Literal["letter", "logprob"]

LOGPROB_TOP_K = 20


@dataclass(frozen=True)
class EvalOptions:
    type1: Type1Mode = "all"
    scoring: ScoringMode = "letter"
    defense: tuple[bool, ...] = (False,)
    limit: int | None = None
    conditions: tuple[str, ...] = ("clean", "type1", "type2")
    prompts: PromptSet = DEFAULT_PROMPTS


@dataclass
class Planned:
    unit: UnitRow
    messages: list[dict[str, str]]
    params: dict[str, Any]
    letters: str


def request_key(spec: ModelSpec, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    return stable_hash(spec.identity(), messages, params)


def select_probes(suite: Suite, opts: EvalOptions) -> Iterator[tuple[Item, Probe | None]]:
    """(item, None) for clean, then (item, probe) for each selected probe, item by item."""
    items = list(suite.items.values())
    if opts.limit is not None:
        items = items[: opts.limit]
    by_item: dict[str, list[Probe]] = {}
    for p in suite.probes:
        by_item.setdefault(p.item_id, []).append(p)
    for it in items:
        if "clean" in opts.conditions:
            yield it, None
        for p in by_item.get(it.id, []):
            if p.condition not in opts.conditions:
                continue
            if p.condition == "type1" and opts.type1 == "sample" and not p.sampled:
                continue
            yield it, p


def plan(suite: Suite, specs: Iterable[ModelSpec], opts: EvalOptions) -> list[Planned]:
    out: list[Planned] = []
    pairs = list(select_probes(suite, opts))
    for spec in specs:
        params_cache: dict[str, dict[str, Any]] = {}
        for defense in opts.defense:
            for item, probe in pairs:
                letters = "".join(item.options)
                if opts.scoring == "logprob":
                    params = params_cache.setdefault("lp", spec.decoding(max_tokens=1, logprobs=LOGPROB_TOP_K))
                else:
                    params = params_cache.setdefault("letter", spec.decoding())
                messages = render_messages(item, probe, opts.scoring, defense, opts.prompts)
                key = request_key(spec, messages, params)
                cond = "clean" if probe is None else probe.condition
                base = item.id if probe is None else probe.id
                unit_id = f"{base}|{cond}|{'def' if defense else 'nodef'}|{opts.scoring}"
                unit = UnitRow(spec.label, unit_id, item.id, None if probe is None else probe.id, cond, defense, opts.scoring, key)
                out.append(Planned(unit, messages, params, letters))
    return out


def score_completion(c: Completion, scoring: str, letters: str) -> ScoreRow | None:
    if scoring == "logprob":
        label, dist = choice_from_logprobs(c.top_logprobs, letters)
        return ScoreRow("", "logprob", label, "valid" if label else "invalid", {"dist": dist, "text": c.text})
    label = extract_letter(c.text, letters)
    return ScoreRow("", "letter", label, "valid" if label else "invalid", None)


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
    `score` (optional) turns a completion into the score row stored with it."""

    model: str
    key: str
    messages: list[dict[str, str]]
    params: dict[str, Any]
    score: Callable[[Completion], ScoreRow | None] | None = None


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
                await writer.queue.put((CallRow(r.key, spec.label, "error", e.permanent, attempts=e.attempts, error=str(e)), None))
            else:
                cost = spec.cost(c.prompt_tokens, c.completion_tokens)
                stats.ok += 1
                stats.prompt_tokens += c.prompt_tokens
                stats.completion_tokens += c.completion_tokens
                stats.cost += cost or 0.0
                s = r.score(c) if r.score is not None else None
                row = CallRow(r.key, spec.label, "ok", False, c.text, c.top_logprobs, c.finish_reason, c.prompt_tokens, c.completion_tokens, cost, c.latency_s, c.attempts)
                await writer.queue.put((row, None if s is None else ScoreRow(r.key, s.scorer, s.label, s.status, s.detail)))
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
    """Record the plan's units, then run every unique, unfinished call and score it."""
    stats = RunStats(planned_units=len(planned))
    store.add_plan([p.unit for p in planned], [])

    def scorer(p: Planned) -> Callable[[Completion], ScoreRow | None]:
        return lambda c: score_completion(c, p.unit.scoring, p.letters)

    requests = (CallRequest(p.unit.model, p.unit.key, p.messages, p.params, scorer(p)) for p in planned)
    return await run_calls(requests, specs, store, progress, clients, stats)
