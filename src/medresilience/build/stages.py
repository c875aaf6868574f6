"""Stages of structured-output calls for suite builders: a stage is a set of tasks sent through
the one execution path (`calls.run_calls`) into a build's store, each reply read back, parsed and
checked.

Each pass sends every pending task's request, reads the reply back from the store and parses it.
A reply that fails its parse is asked again with a note saying why (another request, so another
key), at most `retries` times; then the task fails with the last reason (`parse_failed`, or the
parser's own code). A call that fails after the client's retries is `call_error` (stored as an
error, so a rerun tries it again). Finished calls are never repeated: a rerun recomputes every
decision from the stored replies and costs nothing.

A task may carry its family's wording of the re-ask (`Task.retry`, default `with_retry`) and a
budget cap (`Task.grow_to`): a reply cut at max_tokens is then asked again with twice the budget,
up to the cap. A stage's figures count each request once however many passes or calls of
`run_stage` used it (the stats object keeps the keys it has counted).

A task names its model (`Task.model`) or takes the stage's; one stage may mix models (one
`run_calls` over all of them). A task sends the schema's `response_format` unless it gives its
decoding parameters whole (`Task.params`, e.g. a judge's), or has no schema (free text); to a
model whose endpoint takes no response format the schema goes with the request outside its
parameters (`CallRequest.schema_format`), which Anthropic's message batches send as a forced tool.

A builder that runs many small stages (one per round of a loop) runs them in one `CallSession`:
one event loop and one client per model for all of them, instead of a new loop and new clients
(each loading the TLS trust store) per stage.

In a batch mode (`calls.batch_mode`) a stage whose replies are not all back stops the build with
`BatchWaiting`; the same build run again collects them and goes on. Steps that need none of each
other's replies run through `independent`, so each one's batch goes out before the build stops
to wait (one round trip for all of them, not one each)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..calls import BatchWaiting, CallRequest, ProgressFn, RunStats, request_key, run_calls
from ..models.openai_compatible import OpenAICompatibleModel
from ..models.spec import ModelSpec
from ..runtime import event_loop
from ..runtime.errors import ConfigError
from ..runtime.jsontypes import JSONObject
from ..store import Store

StageProgress = Callable[[str, int, int], None]

__all__ = [
    "RETRY_NOTE",
    "CallSession",
    "Outcome",
    "Rejected",
    "StageProgress",
    "StageStats",
    "Task",
    "add_stage_stats",
    "independent",
    "parse_object",
    "request_for",
    "response_format",
    "run_stage",
    "with_retry",
]


class Rejected(ValueError):
    """A reply that cannot be used: `code` names why (parse_failed, or a check's code)."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class Task:
    id: str
    messages: list[dict[str, str]]
    schema_name: str | None
    schema: JSONObject | None
    max_tokens: int
    parse: Callable[[str | None], object]  # raises Rejected
    model: ModelSpec | None = None  # None: the stage's model
    params: Mapping[str, Any] | None = None  # the whole decoding parameters (schema and max_tokens then unused)
    retry: Callable[[list[dict[str, str]], int, str | None], list[dict[str, str]]] | None = None  # the re-ask's messages
    grow_to: int | None = None  # a reply cut at max_tokens is asked again with twice the budget, up to this


@dataclass
class Outcome:
    ok: bool
    value: Any = None
    code: str | None = None
    detail: str = ""
    attempts: int = 0
    keys: list[str] = field(default_factory=list)
    permanent: bool = False  # a call_error the endpoint called permanent (a 400, 401, 404)


@dataclass
class StageStats:
    units: int = 0
    requests: int = 0
    calls_made: int = 0
    reused: int = 0
    call_errors: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    seconds: float = 0.0
    counted: set[str] = field(default_factory=set, repr=False, compare=False)  # the request keys in the figures

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "counted"}

    def count_usage(self, store: Store, used: set[str]) -> None:
        """Count the requests of `used` (request keys) not counted yet: their number, tokens and cost."""
        fresh = sorted(used - self.counted)
        self.counted.update(fresh)
        self.requests += len(fresh)
        u = store.usage_for(fresh)
        self.prompt_tokens += int(u.get("prompt_tokens") or 0)
        self.completion_tokens += int(u.get("completion_tokens") or 0)
        if (cost := u["cost"]) is not None:
            self.cost = (self.cost or 0.0) + float(cost)


def add_stage_stats(total: StageStats, part: StageStats) -> StageStats:
    """Add one stage's counters to a total (cost stays None while no call had a price)."""
    for k, v in part.as_dict().items():
        if k == "cost":
            if v is not None:
                total.cost = (total.cost or 0.0) + v
        else:
            setattr(total, k, getattr(total, k) + v)
    return total


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_object(text: str | None) -> dict[str, Any]:
    """A JSON object from a reply (a code fence around it is fine); Rejected otherwise."""
    if text is None or not text.strip():
        raise Rejected("parse_failed", "empty reply")
    t = text.strip()
    m = _FENCE.match(t)
    if m:
        t = m.group(1)
    try:
        obj = json.loads(t)
    except json.JSONDecodeError as e:
        raise Rejected("parse_failed", f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(obj, dict):
        raise Rejected("parse_failed", f"expected a JSON object, got {type(obj).__name__}")
    return obj


def response_format(name: str, schema: Mapping[str, object]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


RETRY_NOTE = "[retry {n}] Your previous reply could not be used: {why}. Reply again, following every instruction, with only the JSON object."


def with_retry(messages: list[dict[str, str]], attempt: int, why: str | None) -> list[dict[str, str]]:
    if attempt == 0 or why is None:
        return messages
    last = messages[-1]
    note = RETRY_NOTE.format(n=attempt, why=why.rstrip("."))
    return [*messages[:-1], {**last, "content": f"{last['content']}\n\n{note}"}]


def request_for(spec: ModelSpec, task: Task, attempt: int = 0, why: str | None = None, max_tokens: int | None = None) -> CallRequest:
    msgs = (task.retry or with_retry)(task.messages, attempt, why)
    rf = None
    if task.params is not None:
        params = dict(task.params)
    else:
        rf = response_format(task.schema_name, task.schema) if task.schema_name and task.schema is not None else None
        params = spec.decoding(max_tokens=max_tokens or task.max_tokens, response_format=rf)
    # a schema the model's live endpoint takes none of still goes with the request (not its key),
    # for an execution that asks for it its own way (Anthropic's message batches)
    unsent = rf if rf is not None and "response_format" not in params else None
    return CallRequest(spec.label, request_key(spec, msgs, params), msgs, params, schema_format=unsent)


class CallSession:
    """One event loop and one client per model label, kept for every stage run in it.

    with CallSession() as session:
        run_stage(store, spec, "a", tasks_a, session=session)
        run_stage(store, spec, "b", tasks_b, session=session)
    """

    def __init__(self) -> None:
        self._runner = asyncio.Runner(loop_factory=event_loop.loop_factory())
        self._clients: dict[str, OpenAICompatibleModel] = {}

    def __enter__(self) -> CallSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_calls(self, requests: list[CallRequest], specs: list[ModelSpec], store: Store, progress: ProgressFn | None = None) -> RunStats:
        async def go() -> RunStats:
            for s in specs:
                known = self._clients.get(s.label)
                if known is None or known.spec.identity() != s.identity() or known.spec.base_urls != s.base_urls:
                    self._clients[s.label] = OpenAICompatibleModel(s)
            return await run_calls(requests, specs, store, progress, clients={s.label: self._clients[s.label] for s in specs})

        return self._runner.run(go())

    def close(self) -> None:
        async def shut() -> None:
            for c in self._clients.values():
                with contextlib.suppress(Exception):
                    await c.close()

        try:
            if self._clients:
                self._runner.run(shut())
        finally:
            self._clients.clear()
            self._runner.close()


def _specs(spec: ModelSpec | None, tasks: Mapping[str, Task]) -> dict[str, ModelSpec]:
    """label -> spec of every model the tasks use (one spec per label)."""
    out: dict[str, ModelSpec] = {}
    for t in tasks.values():
        s = t.model or spec
        if s is None:
            raise ValueError(f"task {t.id} names no model and the stage has none")
        known = out.setdefault(s.label, s)
        if known is not s and known.identity() != s.identity():
            raise ConfigError(f"model {s.label}", "two different models share this label; give one another label=")
    return out


def run_stage(
    store: Store,
    spec: ModelSpec | None,
    stage: str,
    tasks: Mapping[str, Task],
    retries: int = 2,
    progress: StageProgress | None = None,
    stats: StageStats | None = None,
    session: CallSession | None = None,
) -> dict[str, Outcome]:
    """Run the tasks (id -> Task) of one stage; id -> Outcome. `spec`: the model of tasks that name
    none; `session`: run the calls in it (default: a fresh event loop and clients)."""
    t0 = time.perf_counter()
    st = stats if stats is not None else StageStats()
    st.units += len(tasks)
    specs = _specs(spec, tasks)
    results: dict[str, Outcome] = {}
    pending: dict[str, tuple[int, str | None, int]] = {tid: (0, None, t.max_tokens) for tid, t in tasks.items()}
    history: dict[str, list[str]] = {tid: [] for tid in tasks}
    used: set[str] = set()
    while pending:
        reqs = {
            tid: (request_for(tasks[tid].model or spec, tasks[tid], attempt, why, budget), attempt, budget)  # type: ignore[arg-type]
            for tid, (attempt, why, budget) in pending.items()
        }
        label = stage if all(a == 0 for _, a, _ in reqs.values()) else f"{stage} (retry)"

        def on_progress(done: int, total: int, _label: str = label) -> None:
            if progress is not None:
                progress(_label, done, total)

        batch = [r for r, _, _ in reqs.values()]
        if session is not None:
            rs = session.run_calls(batch, list(specs.values()), store, on_progress)
        else:
            rs = event_loop.run(run_calls(batch, list(specs.values()), store, on_progress))
        if rs.batch_waiting:  # a batch mode: this pass's replies are not all back; the same build run again collects them
            raise BatchWaiting(rs)
        st.calls_made += rs.called
        st.reused += rs.cached
        nxt: dict[str, tuple[int, str | None, int]] = {}
        for tid, (r, attempt, budget) in reqs.items():
            used.add(r.key)
            history[tid].append(r.key)
            row = store.call(r.key)
            if row is None or row["status"] != "ok":
                why = (row or {}).get("error") or "no reply stored"
                st.call_errors += 1
                results[tid] = Outcome(
                    False, code="call_error", detail=str(why)[:300], attempts=attempt + 1, keys=history[tid], permanent=bool((row or {}).get("permanent"))
                )
                continue
            try:
                value = tasks[tid].parse(row["text"])
            except Rejected as e:
                cut = row.get("finish_reason") == "length"
                detail = e.detail + (" (the reply hit max_tokens)" if cut else "")
                if attempt < retries:
                    st.retries += 1
                    grow_to = tasks[tid].grow_to
                    nxt[tid] = (attempt + 1, detail, min(grow_to, budget * 2) if cut and grow_to else budget)
                else:
                    st.failures += 1
                    results[tid] = Outcome(
                        False, code=e.code, detail=f"{attempt + 1} replies could not be used; last: {detail}", attempts=attempt + 1, keys=history[tid]
                    )
            else:
                results[tid] = Outcome(True, value, attempts=attempt + 1, keys=history[tid])
        pending = nxt
    st.count_usage(store, used)
    st.seconds += time.perf_counter() - t0
    return results


def independent(*steps: Callable[[], None]) -> None:
    """Run steps (each a stage or a chain of stages) that need none of each other's replies. Live,
    they run one after the other; in a batch mode a step that waits for a batch does not hold
    back the next one: every step's batch is sent, then the build stops with one `BatchWaiting`
    counting all of them."""
    waits: list[RunStats] = []
    for step in steps:
        try:
            step()
        except BatchWaiting as w:
            waits.append(w.stats)
    if waits:
        raise BatchWaiting(_merged_waits(waits))


def _merged_waits(waits: list[RunStats]) -> RunStats:
    """What several waiting steps sent and collected, as one waiting run's figures."""
    out = RunStats()
    for w in waits:
        out.batch_waiting += w.batch_waiting
        out.ok += w.ok
        out.errors += w.errors
        out.called += w.called
        out.cached += w.cached
        out.batch_lines += w.batch_lines
    return out


def stage_table(stages: Mapping[str, Mapping[str, Any]], totals: Mapping[str, object]) -> list[str]:
    """A build report's Markdown table of its stages' figures (StageStats as dicts) and their total."""
    lines = [
        "| Stage | tasks | requests | made now | reused | call errors | retries | failures | prompt tok | completion tok |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in [*stages.items(), ("total", totals)]:
        lines.append(
            f"| {name} | {s['units']} | {s['requests']} | {s['calls_made']} | {s['reused']} | {s['call_errors']} | "
            f"{s['retries']} | {s['failures']} | {s['prompt_tokens']} | {s['completion_tokens']} |"
        )
    return [*lines, ""]
