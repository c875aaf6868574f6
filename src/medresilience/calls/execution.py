"""The one execution path for model calls: dedupe requests by key, skip keys already stored `ok`,
run the rest with bounded concurrency per model, and record every outcome (ok or error, with its
score) through one writer that commits a batch per transaction. Evaluation, construction and
judging all call models through `run_calls`.

A model whose calls fail with authentication or not-found errors (401, 403, 404) or a client-side
configuration error `stop_after` times in a row (MEDRES_STOP_AFTER_AUTH_ERRORS, default 5) is
stopped: its remaining calls are not sent, counted as not run (`RunStats.not_run`) and never
scored, and `RunStats.stopped` says so in one line. When the store cannot be written the calls
stop and the StoreWriteError is raised; what was committed stays. Error texts and replies are
stored and shown without the specs' secrets (API keys, URL passwords and tokens): an endpoint that
echoes a key gets `[redacted]` stored, scored and passed on (to a judge) in its place. A scorer that
raises on a reply does not stop the run: the reply is stored, its score `unscored` with the reason.

Execution mode: inside `batch_mode(dispatcher)` (a provider batch, see the batch package) the calls
left after the plan are handed to the dispatcher first, which stores the results of finished
batches as the rows a live call's would be (`CallSink`: the same rows, the same scoring), submits
the rest as batches and hands back only the calls to make live now (a fallback); the calls still in
a batch are counted in `RunStats.batch_waiting`."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, Protocol

from ..models.openai_compatible import Completion, ModelCallError, OpenAICompatibleModel, scrub, spec_secrets
from ..models.spec import ModelSpec
from ..runtime.breaker import Breaker, stop_limit
from ..runtime.counters import RunStats
from ..runtime.jsontypes import JSONObject
from ..runtime.seeding import stable_hash
from ..score import Score, Scorer
from ..store import CallRow, ScoreRow, Store


def request_key(spec: ModelSpec, messages: list[dict[str, str]], params: Mapping[str, object]) -> str:
    """The cache and resume key of a call: hash of (model identity, messages, decoding parameters)."""
    return stable_hash(spec.identity(), messages, params)


def add_stats(total: RunStats, part: RunStats) -> RunStats:
    """Add one part's counters (a chunk of a run, or its judge calls) to the run's: numbers add
    up, error samples are kept up to five, stopped-model lines all."""
    import dataclasses

    for f in dataclasses.fields(part):
        a, b = getattr(total, f.name), getattr(part, f.name)
        if isinstance(b, bool):
            setattr(total, f.name, a or b)
        elif isinstance(b, (int, float)):
            setattr(total, f.name, a + b)
        elif isinstance(b, list):
            a.extend(x for x in b if x not in a)
            if f.name == "error_samples":
                del a[5:]
        elif isinstance(b, dict):
            for k, v in b.items():
                a[k] = a.get(k, 0) + v if isinstance(v, (int, float)) else v
    return total


ProgressFn = Callable[[int, int], None]  # (done, total); one that also takes `waits=` gets the count of retry waits


def takes_waits(fn: Callable[..., object]) -> bool:
    """Whether a progress callback also takes `waits=` (the count of retry waits)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "waits" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


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
        item: tuple[CallRow, ScoreRow | None] | EllipsisType | None  # ...: the flush is due, nothing came
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
            if isinstance(item, tuple):
                call, score = item
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
    is `unscored` with its reason). `schema_format`: see the field."""

    model: str
    key: str
    messages: list[dict[str, str]]
    params: JSONObject
    score: Scorer | None = None
    scorer: str = ""
    score_key: str | None = None
    on_error: Callable[[ModelCallError], Score | None] | None = None
    #: the response format (json_schema) the call asks for where its model's live endpoint takes
    #: none, so `params` do not carry it (Anthropic's OpenAI-compatible endpoint ignores it): an
    #: execution that can ask for it its own way does (Anthropic's message batches: a forced tool);
    #: not part of the key
    schema_format: JSONObject | None = None


def _score_row(r: CallRequest, s: Score | None) -> ScoreRow | None:
    if s is None:
        return None
    return ScoreRow(r.score_key or r.key, r.scorer, s.label, s.status, s.detail, s.value)


def _plan(requests: Iterable[CallRequest], store: Store, stats: RunStats, halted: set[str] | None) -> dict[str, list[CallRequest]]:
    """Dedupe by key, store the plan, and keep per model the calls not yet stored `ok`; the calls of
    a model already halted are counted as not run."""
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
    for label in [m for m in todo_by_model if halted and m in halted]:
        stats.not_run += len(todo_by_model.pop(label))
    return todo_by_model


class _Calls:
    """One execution of run_calls: its counters and progress, the error streaks that stop a model,
    and the workers that send each model's queue and hand every outcome to the writer."""

    def __init__(self, stats: RunStats, progress: ProgressFn | None, total: int, secrets: list[str], limit: int, writer: _Writer):
        self.stats, self.progress, self.total = stats, progress, total
        self.secrets, self.limit, self.writer = secrets, limit, writer
        self.with_waits = progress is not None and takes_waits(progress)
        self.finished = 0
        self.breaker = Breaker(limit)
        self.stopped: dict[str, tuple[str, ModelCallError]] = self.breaker.stopped

    def show(self) -> None:
        if self.progress is not None:
            if self.with_waits:
                self.progress(self.finished, self.total, waits=self.stats.retry_waits)  # type: ignore[call-arg]
            else:
                self.progress(self.finished, self.total)

    def on_wait(self, seconds: float) -> None:
        self.stats.retry_waits += 1
        self.stats.retry_wait_s += seconds
        self.show()

    async def worker(self, model: OpenAICompatibleModel, queue: asyncio.Queue[CallRequest]) -> None:
        label = model.spec.label
        while label not in self.stopped:
            try:
                r = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                c = await model.complete(r.messages, r.params)
            except ModelCallError as e:
                await self.failed(r, label, e)
            else:
                await self.answered(r, model.spec, c)
            self.stats.called += 1
            self.finished += 1
            self.show()

    async def failed(self, r: CallRequest, label: str, e: ModelCallError) -> None:
        """Store a failed call (its text without secrets) and stop its model after `limit` errors in a row that stop a model."""
        await self.writer.queue.put(self.failed_row(r, label, e))
        self.breaker.failed(label, e.stops_model, e)

    def failed_row(self, r: CallRequest, label: str, e: ModelCallError) -> tuple[CallRow, ScoreRow | None]:
        """The rows of a failed call (its text without secrets; the call's score on error), counted."""
        stats = self.stats
        text = scrub(str(e), self.secrets)
        if text != str(e):
            e.args = (text,)
        stats.errors += 1
        stats.permanent_errors += int(e.permanent)
        if len(stats.error_samples) < 5:
            stats.error_samples.append(text)
        s = r.on_error(e) if r.on_error is not None else None
        row = CallRow(r.key, label, "error", e.permanent, attempts=e.attempts, error=text, waited_s=e.waited_s)
        return row, _score_row(r, s)

    async def answered(self, r: CallRequest, spec: ModelSpec, c: Completion) -> None:
        """Store a reply (without secrets) with its cost and score."""
        self.breaker.succeeded(spec.label)
        await self.writer.queue.put(self.answered_row(r, spec, c))

    def answered_row(self, r: CallRequest, spec: ModelSpec, c: Completion) -> tuple[CallRow, ScoreRow | None]:
        """The rows of a reply (without secrets) with its cost (at `spec`'s prices) and score,
        counted; a scorer that raises leaves it unscored with why."""
        stats = self.stats
        c.text = scrub(c.text, self.secrets)
        cost = spec.cost(c.prompt_tokens, c.completion_tokens)
        stats.ok += 1
        stats.prompt_tokens += c.prompt_tokens
        stats.completion_tokens += c.completion_tokens
        stats.cost += cost or 0.0
        try:
            s = r.score(c) if r.score is not None else None
        except Exception as e:  # a reply its scorer cannot take: the answer is kept, unscored with why (never a crash)
            why = scrub(f"the scorer failed on this reply: {type(e).__name__}: {e}", self.secrets)[:300]
            s = Score.unscored(why)
            if len(stats.error_samples) < 5:
                stats.error_samples.append(why)
        row = CallRow(
            r.key,
            spec.label,
            "ok",
            False,
            c.text,
            c.top_logprobs,
            c.finish_reason,
            c.prompt_tokens,
            c.completion_tokens,
            cost,
            c.latency_s,
            c.attempts,
            waited_s=c.waited_s,
            tool_calls=c.tool_calls,
            reasoning_tokens=c.reasoning_tokens,
        )
        return row, _score_row(r, s)

    def count_left(self, queues: dict[str, asyncio.Queue[CallRequest]]) -> None:
        """Count the calls left in the queues as not run, with one line per stopped model."""
        stats = self.stats
        for label, q in queues.items():
            left = q.qsize()
            stats.not_run += left
            if label in self.stopped:
                why, e = self.stopped[label]
                code = f" ({e.status})" if e.status is not None else ""
                last = " ".join(str(e).split())[:200]
                stats.stopped.append(
                    f"model {label} stopped after {self.limit} consecutive {why} errors{code}: its {left} remaining calls were not sent "
                    f"(not run, not scored); last error: {last}"
                )


class CallSink(Protocol):
    """What an outcome of a call is stored as: the rows (and score) a live call's would be, counted
    in the run's stats; the caller writes them (`Store.write_results`)."""

    def answered_row(self, r: CallRequest, spec: ModelSpec, c: Completion) -> tuple[CallRow, ScoreRow | None]: ...

    def failed_row(self, r: CallRequest, label: str, e: ModelCallError) -> tuple[CallRow, ScoreRow | None]: ...


class Dispatcher(Protocol):
    """An execution mode other than live calls (a provider batch): takes the calls left after the
    plan (by model label), stores what it has for them through `sink`, counts the calls it still
    waits for in `stats.batch_waiting`, and returns the calls to make live now."""

    async def dispatch(
        self, todo_by_model: dict[str, list[CallRequest]], specs: Mapping[str, ModelSpec], store: Store, sink: CallSink, stats: RunStats
    ) -> dict[str, list[CallRequest]]: ...


class BatchWaiting(Exception):
    """Calls wait for a batch that has not ended (`stats.batch_waiting` of them): a caller whose
    next step needs their replies stops here; the same command run again collects them."""

    def __init__(self, stats: RunStats):
        super().__init__(f"{stats.batch_waiting} calls wait for a batch")
        self.stats = stats


_DISPATCHER: ContextVar[Dispatcher | None] = ContextVar("medres_dispatcher", default=None)


@contextlib.contextmanager
def batch_mode(dispatcher: Dispatcher) -> Iterator[Dispatcher]:
    """Every run_calls inside this block hands its pending calls to `dispatcher` (a batch mode)."""
    token = _DISPATCHER.set(dispatcher)
    try:
        yield dispatcher
    finally:
        _DISPATCHER.reset(token)


def batching() -> bool:
    """Whether the calls made here go through a batch mode (`batch_mode`): a caller that plans in
    chunks plans no small first chunk (it exists to start live calls at once; a batch waits anyway)."""
    return _DISPATCHER.get() is not None


def _client(
    spec: ModelSpec, given: OpenAICompatibleModel | None, own: list[OpenAICompatibleModel], borrowed: list[tuple[OpenAICompatibleModel, Any]]
) -> OpenAICompatibleModel:
    """The client a model's calls go through: the caller's (`given`; kept in `borrowed` with the wait
    callback it had) or one of our own (kept in `own`); `_release` undoes both after the calls."""
    if given is None:
        own.append(OpenAICompatibleModel(spec))
        return own[-1]
    borrowed.append((given, given.on_wait))
    return given


async def _release(own: list[OpenAICompatibleModel], borrowed: list[tuple[OpenAICompatibleModel, Any]]) -> None:
    """After the calls: a borrowed client gets back the wait callback it had, a client of our own is
    closed (a failure to close one is not the run's)."""
    for m, before in borrowed:
        m.on_wait = before
    for m in own:
        with contextlib.suppress(Exception):
            await m.close()


async def run_calls(
    requests: Iterable[CallRequest],
    specs: Iterable[ModelSpec],
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    stats: RunStats | None = None,
    stop_after: int | None = None,
    halted: set[str] | None = None,
) -> RunStats:
    """The one execution path: dedupe by key, skip keys stored `ok`, run the rest with bounded
    concurrency per model, record every outcome (ok or error) through the one writer. A model is
    stopped after `stop_after` consecutive authentication / not-found / configuration errors
    (None: MEDRES_STOP_AFTER_AUTH_ERRORS, default 5; 0: never). `halted` carries the stopped
    models across calls (a run in chunks): their calls are not sent and count as not run."""
    t0 = time.perf_counter()
    stats = stats or RunStats()
    todo_by_model = _plan(requests, store, stats, halted)
    spec_by_label = {s.label: s for s in specs}
    secrets = sorted({x for s in spec_by_label.values() for x in spec_secrets(s)}, key=len, reverse=True)
    limit = stop_limit() if stop_after is None else stop_after
    writer = _Writer(store)
    run = _Calls(stats, progress, sum(len(v) for v in todo_by_model.values()), secrets, limit, writer)
    run.show()
    queues: dict[str, asyncio.Queue[CallRequest]] = {}
    own: list[OpenAICompatibleModel] = []
    borrowed: list[tuple[OpenAICompatibleModel, Any]] = []
    writer_task = asyncio.create_task(writer.run())
    tasks: list[asyncio.Task[None]] = []

    def writer_done(t: asyncio.Task[None]) -> None:
        if not t.cancelled() and t.exception() is not None:  # the store cannot be written: stop calling
            for w in tasks:
                w.cancel()

    writer_task.add_done_callback(writer_done)
    try:
        dispatcher = _DISPATCHER.get()
        if dispatcher is not None and todo_by_model:  # a batch mode: only its fallback calls are made live
            todo_by_model = await dispatcher.dispatch(todo_by_model, spec_by_label, store, run, stats)
        for label, todo in todo_by_model.items():
            spec = spec_by_label[label]
            model = _client(spec, (clients or {}).get(label), own, borrowed)
            model.on_wait = run.on_wait
            q: asyncio.Queue[CallRequest] = asyncio.Queue()
            for r in todo:
                q.put_nowait(r)
            queues[label] = q
            tasks += [asyncio.create_task(run.worker(model, q)) for _ in range(min(spec.concurrency, len(todo)))]
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            if not (writer_task.done() and not writer_task.cancelled() and writer_task.exception() is not None):
                raise  # cancelled from outside (Ctrl-C): the finally keeps what was received
    finally:
        for w in tasks:
            w.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await writer.queue.put(None)
        try:
            await writer_task  # a store that could not be written raises here (StoreWriteError)
        finally:
            await _release(own, borrowed)
    run.count_left(queues)
    if halted is not None:
        halted.update(run.stopped)
    stats.seconds += time.perf_counter() - t0
    return stats
