"""The one execution path for model calls: dedupe requests by key, skip keys already stored `ok`,
run the rest with bounded concurrency per model, and record every outcome (ok or error, with its
score) through one writer that commits a batch per transaction. Evaluation, construction and
judging all call models through `run_calls`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .models.openai_compatible import ModelCallError, OpenAICompatibleModel
from .models.spec import ModelSpec
from .scoring.types import Score, Scorer
from .seeding import stable_hash
from .store import CallRow, ScoreRow, Store


def request_key(spec: ModelSpec, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """The cache and resume key of a call: hash of (model identity, messages, decoding parameters)."""
    return stable_hash(spec.identity(), messages, params)


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
                except TimeoutError:
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


