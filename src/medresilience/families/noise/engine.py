"""The generator calls of the clinical-noise builder: stages of structured-output calls through the
one execution path (`calls.run_calls`) and a store beside the suite.

A stage is a set of tasks (one per case). Each round sends every pending task's request, reads
the reply back from the store and parses and checks it. A reply that fails is asked again with a
note saying why (another request, so another key), at most `retries` times; then the task fails
with the last reason (`parse_failed`, or the check's own code). A call that fails after the
client's retries is `call_error` (stored as an error, so a rerun tries it again). Finished calls
are never repeated: a rerun recomputes every decision from the stored replies and costs nothing."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...calls import CallRequest, request_key, run_calls
from ...models.spec import ModelSpec
from ...store import Store

StageProgress = Callable[[str, int, int], None]


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
    schema_name: str
    schema: dict[str, Any]
    max_tokens: int
    parse: Callable[[str | None], Any]  # raises Rejected


@dataclass
class Outcome:
    ok: bool
    value: Any = None
    code: str | None = None
    detail: str = ""
    attempts: int = 0
    keys: list[str] = field(default_factory=list)


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


RETRY_NOTE = ("[retry {n}] Your previous reply could not be used: {why}. Reply again, following every instruction, "
              "with only the JSON object.")


def with_retry(messages: list[dict[str, str]], attempt: int, why: str | None) -> list[dict[str, str]]:
    if attempt == 0 or why is None:
        return messages
    last = messages[-1]
    note = RETRY_NOTE.format(n=attempt, why=why.rstrip("."))
    return [*messages[:-1], {**last, "content": f"{last['content']}\n\n{note}"}]


def request_for(spec: ModelSpec, task: Task, attempt: int = 0, why: str | None = None) -> CallRequest:
    msgs = with_retry(task.messages, attempt, why)
    params = spec.decoding(max_tokens=task.max_tokens, response_format=response_format(task.schema_name, task.schema))
    return CallRequest(spec.label, request_key(spec, msgs, params), msgs, params)


def run_stage(store: Store, spec: ModelSpec, stage: str, tasks: Mapping[str, Task], retries: int = 2,
              progress: StageProgress | None = None, stats: StageStats | None = None) -> dict[str, Outcome]:
    """Run the tasks (id -> Task) of one stage; id -> Outcome."""
    t0 = time.perf_counter()
    st = stats if stats is not None else StageStats()
    st.units += len(tasks)
    results: dict[str, Outcome] = {}
    pending: dict[str, tuple[int, str | None]] = {tid: (0, None) for tid in tasks}
    history: dict[str, list[str]] = {tid: [] for tid in tasks}
    used: set[str] = set()
    while pending:
        reqs = {tid: (request_for(spec, tasks[tid], attempt, why), attempt) for tid, (attempt, why) in pending.items()}
        label = stage if all(a == 0 for _, a in reqs.values()) else f"{stage} (retry)"

        def on_progress(done: int, total: int, _label: str = label) -> None:
            if progress is not None:
                progress(_label, done, total)

        rs = asyncio.run(run_calls([r for r, _ in reqs.values()], [spec], store, on_progress))
        st.calls_made += rs.called
        st.reused += rs.cached
        nxt: dict[str, tuple[int, str | None]] = {}
        for tid, (r, attempt) in reqs.items():
            used.add(r.key)
            history[tid].append(r.key)
            row = store.call(r.key)
            if row is None or row["status"] != "ok":
                why = (row or {}).get("error") or "no reply stored"
                st.call_errors += 1
                results[tid] = Outcome(False, code="call_error", detail=str(why)[:300], attempts=attempt + 1, keys=history[tid])
                continue
            try:
                value = tasks[tid].parse(row["text"])
            except Rejected as e:
                detail = e.detail + (" (the reply hit max_tokens)" if row.get("finish_reason") == "length" else "")
                if attempt < retries:
                    st.retries += 1
                    nxt[tid] = (attempt + 1, detail)
                else:
                    st.failures += 1
                    results[tid] = Outcome(False, code=e.code, detail=f"{attempt + 1} replies could not be used; last: {detail}",
                                           attempts=attempt + 1, keys=history[tid])
            else:
                results[tid] = Outcome(True, value, attempts=attempt + 1, keys=history[tid])
        pending = nxt
    keys = sorted(used)
    st.requests += len(keys)
    u = store.usage_for(keys)
    st.prompt_tokens += int(u.get("prompt_tokens") or 0)
    st.completion_tokens += int(u.get("completion_tokens") or 0)
    if u.get("cost") is not None:
        st.cost = (st.cost or 0.0) + float(u["cost"])
    st.seconds += time.perf_counter() - t0
    return results
