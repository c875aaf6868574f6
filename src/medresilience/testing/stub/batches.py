"""The provider batch endpoints, served by the stub next to chat completions and answered by the
same policy (`StubApp.completion_of`), so a batch run and a live run of the same stub get the same
replies:

- OpenAI: ``POST /v1/files`` (multipart, purpose=batch), ``GET /v1/files/{id}/content``,
  ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``,
  ``GET /v1/batches`` (newest first, with each batch's metadata);
- Anthropic: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
  ``GET /v1/messages/batches/{id}/results`` (the batch's ``results_url``), ``GET /v1/messages/batches``.
  A request that forces a tool (``tool_choice`` type tool) is asked of the policy with the tool's
  ``input_schema`` as its ``response_format`` json_schema, and answered with a ``tool_use`` block
  whose input is the policy's JSON object (a text that is no JSON object comes back as text).

The fault model (`BatchFaults`), fixed by (seed, custom id) like the chat faults, never by order:
a batch answers `in_progress` for its first `polls` reads; `fail_batches` first batches fail
validation (no results); a share `rate_failed` of lines gets a 500 error line, `rate_expired`
expire (the batch ends `expired`) and `rate_cancelled` are cancelled (the batch ends
`cancelled`) — each only the first time its custom id is sent, so a retrying client succeeds;
`rate_no_tool` of forced tool calls (by custom id) are answered in text, without the tool_use block.
`hold` names an endpoint ("upload", "create", "poll", "content", "results") whose requests are
held without an answer once they arrive (`held` is set): a test kills its client there. A
`create` is recorded before it is held (the provider has the batch, the client never hears its id).

What a test reads: `sent` (custom id -> the batches it was in), `paid` (custom id -> the result
lines that answered it), `duplicates` (custom ids sent while a batch holding them was open)."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .bodies import dumps
from .faults import uniform

if TYPE_CHECKING:  # pragma: no cover
    from .app import StubApp


@dataclass
class BatchFaults:
    seed: int = 0
    polls: int = 1  # reads of a batch that answer in_progress before it ends
    fail_batches: int = 0  # the first N batches fail validation
    rate_failed: float = 0.0
    rate_expired: float = 0.0
    rate_cancelled: float = 0.0
    rate_no_tool: float = 0.0  # Anthropic: forced tool calls answered in a text block, no tool_use


@dataclass
class _Batch:
    id: str
    kind: str  # openai | anthropic
    lines: list[dict[str, Any]]  # openai: request lines; anthropic: {custom_id, params}
    created: float
    metadata: dict[str, object]
    input_file_id: str | None = None
    reads: int = 0
    status: str = "in_progress"
    output: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0  # the order it was created in (1: the first batch)


class BatchEndpoints:
    """The batch endpoints' state and handlers (`StubServer(..., batches=BatchEndpoints(...))`)."""

    def __init__(self, faults: BatchFaults | None = None, hold: str | None = None):
        self.faults = faults or BatchFaults()
        self.hold = hold
        self.held = threading.Event()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.sent: dict[str, list[str]] = {}
        self.paid: dict[str, int] = {}
        self.duplicates: list[str] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._app: StubApp | None = None

    def add_routes(self, app: web.Application, stub: StubApp) -> None:
        self._app = stub
        r = app.router
        r.add_post("/v1/files", self.upload)
        r.add_get("/v1/files/{id}/content", self.content)
        r.add_post("/v1/batches", self.create)
        r.add_get("/v1/batches", self.list_openai)
        r.add_get("/v1/batches/{id}", self.retrieve)
        r.add_post("/v1/batches/{id}/cancel", self.cancel)
        r.add_post("/v1/messages/batches", self.create_anthropic)
        r.add_get("/v1/messages/batches", self.list_anthropic)
        r.add_get("/v1/messages/batches/{id}", self.retrieve_anthropic)
        r.add_get("/v1/messages/batches/{id}/results", self.results_anthropic)

    # ---- what a test reads
    def submitted_total(self) -> int:
        return sum(len(v) for v in self.sent.values())

    def paid_twice(self) -> list[str]:
        return sorted(k for k, n in self.paid.items() if n > 1)

    # ---- helpers
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_stub{next(self._ids):06d}"

    async def _maybe_hold(self, stage: str) -> None:
        if self.hold == stage:
            self.held.set()
            await asyncio.sleep(3600)  # the client is killed while it waits

    def _first_time(self, custom_id: str, batch_id: str) -> bool:
        return self.sent.get(custom_id, [batch_id])[0] == batch_id

    def _register(self, batch: _Batch, custom_ids: list[str]) -> None:
        open_ids = {c for b in self.batches.values() if b.status in ("in_progress", "validating", "finalizing", "cancelling") for c in _ids_of(b)}
        with self._lock:
            batch.seq = len(self.batches) + 1
            for c in custom_ids:
                if c in open_ids:
                    self.duplicates.append(c)
                self.sent.setdefault(c, []).append(batch.id)
            self.batches[batch.id] = batch

    def _fate(self, custom_id: str, batch: _Batch) -> str:
        """What a line gets: ok, failed, expired or cancelled (faults only the first time it is sent)."""
        if not self._first_time(custom_id, batch.id):
            return "ok"
        f = self.faults
        u = uniform(custom_id, f"batch:{f.seed}")
        for fate, width in (("failed", f.rate_failed), ("expired", f.rate_expired), ("cancelled", f.rate_cancelled)):
            if u < width:
                return fate
            u -= width
        return "ok"

    def _finish(self, batch: _Batch) -> None:
        """End a batch: answer its lines (once), set its final status."""
        if batch.status != "in_progress":
            return
        if batch.seq <= self.faults.fail_batches:
            batch.status = "failed"
            return
        fates = [self._fate(c, batch) for c in _ids_of(batch)]
        batch.status = "expired" if "expired" in fates else "cancelled" if "cancelled" in fates else "completed"
        for line, fate in zip(batch.lines, fates):
            if batch.kind == "openai":
                self._answer_openai(batch, line, fate)
            else:
                self._answer_anthropic(batch, line, fate)

    # ---- OpenAI
    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        part = form.get("file")
        purpose = form.get("purpose")
        if purpose != "batch" or not isinstance(part, web.FileField):
            return _error(400, "a batch input file needs purpose=batch and a file part")
        data = part.file.read()
        await self._maybe_hold("upload")
        fid = self._new_id("file")
        self.files[fid] = data
        return _ok({"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()), "filename": part.filename, "purpose": "batch"})

    async def content(self, request: web.Request) -> web.Response:
        fid = request.match_info["id"]
        if fid not in self.files:
            return _error(404, f"no file {fid}")
        await self._maybe_hold("content")
        return web.Response(body=self.files[fid], headers={"Content-Type": "application/jsonl"})

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        fid = body.get("input_file_id")
        if fid not in self.files or body.get("endpoint") != "/v1/chat/completions":
            return _error(400, "input_file_id must name an uploaded file and endpoint must be /v1/chat/completions")
        lines = [json.loads(x) for x in self.files[fid].decode().splitlines() if x.strip()]
        batch = _Batch(self._new_id("batch"), "openai", lines, time.time(), body.get("metadata") or {}, fid)
        self._register(batch, [x["custom_id"] for x in lines])
        await self._maybe_hold("create")
        return _ok(self._openai_view(batch))

    async def retrieve(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.kind != "openai":
            return _error(404, "no such batch")
        await self._maybe_hold("poll")
        self._read(batch)
        return _ok(self._openai_view(batch))

    async def cancel(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "no such batch")
        if batch.status == "in_progress":
            batch.status = "cancelled"
            for line in batch.lines:
                self._answer_openai(batch, line, "cancelled")
        return _ok(self._openai_view(batch))

    async def list_openai(self, request: web.Request) -> web.Response:
        data = [self._openai_view(b) for b in sorted(self.batches.values(), key=lambda b: b.id, reverse=True) if b.kind == "openai"]
        return _ok({"object": "list", "data": data, "has_more": False})

    def _read(self, batch: _Batch) -> None:
        batch.reads += 1
        if batch.reads > self.faults.polls:
            self._finish(batch)

    def _answer_openai(self, batch: _Batch, line: dict[str, Any], fate: str) -> None:
        cid = line["custom_id"]
        rid = f"batch_req_{cid[:12]}_{batch.id}"
        if fate == "ok":
            assert self._app is not None
            try:
                body = self._app.completion_of(line["body"])
            except Exception as e:  # a policy that raises: the line's 500, as the live endpoint answers it
                err = {"error": {"message": f"stub policy raised {type(e).__name__}: {e}", "type": "server_error"}}
                batch.errors.append({"id": rid, "custom_id": cid, "response": {"status_code": 500, "request_id": rid, "body": err}, "error": None})
                return
            batch.output.append({"id": rid, "custom_id": cid, "response": {"status_code": 200, "request_id": rid, "body": body}, "error": None})
            self.paid[cid] = self.paid.get(cid, 0) + 1
        elif fate == "failed":
            err = {"error": {"message": "The server had an error while processing your request (stub batch fault)", "type": "server_error"}}
            batch.errors.append({"id": rid, "custom_id": cid, "response": {"status_code": 500, "request_id": rid, "body": err}, "error": None})
        else:
            code = "batch_expired" if fate == "expired" else "batch_cancelled"
            batch.errors.append({"id": rid, "custom_id": cid, "response": None, "error": {"code": code, "message": f"request {fate} (stub batch fault)"}})

    def _openai_view(self, batch: _Batch) -> dict[str, object]:
        done = batch.status not in ("in_progress",)
        out_id = err_id = None
        if done and batch.status != "failed":
            out_id, err_id = f"file_out_{batch.id}", f"file_err_{batch.id}"
            self.files.setdefault(out_id, b"".join(dumps(x) + b"\n" for x in batch.output))
            self.files.setdefault(err_id, b"".join(dumps(x) + b"\n" for x in batch.errors))
        errors = {"object": "list", "data": [{"code": "invalid_request", "message": "stub batch fault: validation failed", "line": None}]}
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": out_id if batch.output else None,
            "error_file_id": err_id if batch.errors else None,
            "created_at": int(batch.created),
            "metadata": batch.metadata,
            "errors": errors if batch.status == "failed" else None,
            "request_counts": {"total": len(batch.lines), "completed": len(batch.output), "failed": len(batch.errors)},
        }

    # ---- Anthropic
    async def create_anthropic(self, request: web.Request) -> web.Response:
        body = await request.json()
        reqs = body.get("requests")
        if not isinstance(reqs, list) or not reqs:
            return _error(400, "requests: a non-empty list of {custom_id, params}")
        batch = _Batch(self._new_id("msgbatch"), "anthropic", reqs, time.time(), {})
        self._register(batch, [x["custom_id"] for x in reqs])
        await self._maybe_hold("create")
        return _ok(self._anthropic_view(batch, request))

    async def retrieve_anthropic(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.kind != "anthropic":
            return _error(404, "no such message batch")
        await self._maybe_hold("poll")
        self._read(batch)
        return _ok(self._anthropic_view(batch, request))

    async def list_anthropic(self, request: web.Request) -> web.Response:
        data = [self._anthropic_view(b, request) for b in sorted(self.batches.values(), key=lambda b: b.id, reverse=True) if b.kind == "anthropic"]
        return _ok({"data": data, "has_more": False, "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None})

    async def results_anthropic(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.status == "in_progress":
            return _error(404, "the batch has no results yet")
        await self._maybe_hold("results")
        return web.Response(body=b"".join(dumps(x) + b"\n" for x in batch.output), headers={"Content-Type": "application/binary"})

    def _answer_anthropic(self, batch: _Batch, line: dict[str, Any], fate: str) -> None:
        cid = line["custom_id"]
        if fate == "ok":
            assert self._app is not None
            params = line["params"]
            messages = ([{"role": "system", "content": params["system"]}] if params.get("system") else []) + params["messages"]
            chat = {k: v for k, v in params.items() if k not in ("system", "messages", "stop_sequences", "tools", "tool_choice")} | {"messages": messages}
            tool = _forced_tool(params)
            if tool is not None:  # the policy sees the schema as the chat request's response_format
                chat["response_format"] = {"type": "json_schema", "json_schema": {"name": tool["name"], "strict": True, "schema": tool.get("input_schema")}}
            c = self._app.completion_of(chat)
            choice = c["choices"][0]
            content, stop = _anthropic_content(cid, choice["message"]["content"], tool, self._no_tool(cid))
            message = {
                "id": f"msg_{cid[:16]}",
                "type": "message",
                "role": "assistant",
                "model": params.get("model"),
                "content": content,
                "stop_reason": "max_tokens" if choice["finish_reason"] == "length" else stop,
                "stop_sequence": None,
                "usage": {"input_tokens": c["usage"]["prompt_tokens"], "output_tokens": c["usage"]["completion_tokens"]},
            }
            batch.output.append({"custom_id": cid, "result": {"type": "succeeded", "message": message}})
            self.paid[cid] = self.paid.get(cid, 0) + 1
        elif fate == "failed":
            err = {"type": "error", "error": {"type": "api_error", "message": "Internal server error (stub batch fault)"}}
            batch.output.append({"custom_id": cid, "result": {"type": "errored", "error": err}})
        else:
            batch.output.append({"custom_id": cid, "result": {"type": "expired" if fate == "expired" else "canceled"}})

    def _no_tool(self, custom_id: str) -> bool:
        """Whether a forced tool call is answered in text (a model that ignores tool_choice)."""
        return uniform(custom_id, f"no_tool:{self.faults.seed}") < self.faults.rate_no_tool

    def _anthropic_view(self, batch: _Batch, request: web.Request) -> dict[str, object]:
        ended = batch.status != "in_progress"
        counts = {"processing": 0 if ended else len(batch.lines), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for x in batch.output:
            kind = x["result"]["type"]
            counts[kind] = counts.get(kind, 0) + 1
        root = f"{request.scheme}://{request.host}"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created)),
            "ended_at": None,
            "expires_at": None,
            "results_url": f"{root}/v1/messages/batches/{batch.id}/results" if ended else None,
        }


def _ids_of(batch: _Batch) -> list[str]:
    return [x["custom_id"] for x in batch.lines]


def _ok(data: Mapping[str, object]) -> web.Response:
    return web.Response(body=dumps(data), headers={"Content-Type": "application/json"})


def _error(status: int, message: str) -> web.Response:
    return web.Response(
        body=dumps({"error": {"message": message, "type": "invalid_request_error"}}), status=status, headers={"Content-Type": "application/json"}
    )


def _forced_tool(params: Mapping[str, object]) -> Mapping[str, object] | None:
    """The tool an Anthropic request forces (`tool_choice` {"type": "tool", "name": ...}), or None."""
    choice = params.get("tool_choice")
    if not isinstance(choice, Mapping) or choice.get("type") != "tool":
        return None
    tools = params.get("tools")
    return next((t for t in tools if isinstance(t, dict) and t.get("name") == choice.get("name")), None) if isinstance(tools, list) else None


def _anthropic_content(cid: str, text: str, tool: Mapping[str, object] | None, no_tool: bool) -> tuple[list[dict[str, Any]], str]:
    """A reply's content blocks and stop reason: a forced tool call is answered with a tool_use
    block whose input is the policy's JSON object; a policy text that is no JSON object (or the
    `rate_no_tool` fault) is answered in a text block, as a model that did not call the tool."""
    if tool is not None and not no_tool:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return [{"type": "tool_use", "id": f"toolu_{cid[:16]}", "name": tool["name"], "input": value}], "tool_use"
    return [{"type": "text", "text": text}], "end_turn"
