"""Batch request and result lines: a call as an OpenAI batch request line (the JSONL that OpenAI's
Batch API, vLLM's `run_batch` and Ray Data read) or as an Anthropic message-batch request, whose
`custom_id` is the call's store key; and a result line read back as the outcome a live call has
(a Completion, or a permanent error stored as one), or as a request to send again (expired,
cancelled, a transient failure). A line that cannot be read is an InputError naming the file, the
line and the field, raised before any result of that file is stored."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..calls import CallRequest
from ..models.openai_compatible import TRANSIENT_STATUS, Completion, ModelCallError, read_completion
from ..models.spec import ModelSpec
from ..runtime.errors import ConfigError, InputError
from ..runtime.jsontypes import JSONObject
from .tool_schema import asked_schema, schema_of, schema_tool

#: the chat-completions endpoint every OpenAI batch line is a request to
CHAT_URL = "/v1/chat/completions"
#: why a call with tools (function calling) does not go through Anthropic's message batches
ANTHROPIC_TOOLS = (
    "calls with tools (function calling: the agent setting's tools protocol) are not sent through Anthropic's message batches; "
    "give the agent setting protocol=text, or use --batch openai"
)


@dataclass(frozen=True)
class Resend:
    """A request the batch did not answer for good (expired, cancelled, failed transiently): sent
    again. `failed`: the request itself failed (a server error), not the batch's window or a cancel."""

    why: str
    failed: bool = False


Outcome = Completion | ModelCallError | Resend


def chat_body(r: CallRequest, spec: ModelSpec) -> dict[str, Any]:
    """The chat-completions body of a call, exactly as the live client sends it."""
    return {"model": spec.model, "messages": r.messages, **r.params, **spec.extra_body}


def openai_line(r: CallRequest, spec: ModelSpec) -> dict[str, Any]:
    """One OpenAI batch request line (custom_id: the call's store key)."""
    return {"custom_id": r.key, "method": "POST", "url": CHAT_URL, "body": chat_body(r, spec)}


def anthropic_request(r: CallRequest, spec: ModelSpec) -> dict[str, Any]:
    """One Anthropic message-batch request: the chat call in the Messages API's shape (system
    messages joined into `system`, the output budget as max_tokens, stop as stop_sequences, a
    JSON schema (`response_format` json_schema, or the call's `schema_format`) as one tool the
    request must call: `tool_schema`).
    Log-probabilities, other response formats and tools (function calling, as the agent setting's
    tools protocol asks) are not translated to the Messages API: a ConfigError, before the batch is
    recorded."""
    body = chat_body(r, spec)
    schema = schema_of(body) or asked_schema(r)
    if body.get("logprobs") or (body.get("response_format") and schema_of(body) is None):
        raise ConfigError(
            "--batch anthropic", "Anthropic's message batches take no logprobs or response format but a JSON schema: use --scoring letter and the prompt format"
        )
    if body.get("tools") or any(m.get("role") == "tool" or m.get("tool_calls") for m in body["messages"]):
        raise ConfigError("--batch anthropic", ANTHROPIC_TOOLS)
    system = "\n\n".join(str(m["content"]) for m in body["messages"] if m.get("role") == "system")
    params: dict[str, Any] = {
        "model": spec.model,
        "max_tokens": body.get("max_tokens") or body.get("max_completion_tokens") or spec.max_tokens,
        "messages": [m for m in body["messages"] if m.get("role") != "system"],
    }
    if system:
        params["system"] = system
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            params[name] = body[name]
    if body.get("stop"):
        params["stop_sequences"] = body["stop"] if isinstance(body["stop"], list) else [body["stop"]]
    if schema is not None:
        params.update(schema_tool(*schema))
    return {"custom_id": r.key, "params": params}


def jsonl(rows: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for x in rows)


def _field(obj: object, name: str, source: str, n: int, kind: type | tuple[type, ...] = dict) -> Any:
    value = obj.get(name) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        raise InputError(source, n, name, f"missing or not a {getattr(kind, '__name__', 'value')}")
    return value


def _json_lines(data: bytes, source: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise InputError(source, n, None, f"not a JSON object: {e}") from None
        if not isinstance(obj, dict):
            raise InputError(source, n, None, "not a JSON object")
        out.append((n, obj))
    return out


def read_openai_results(data: bytes, source: str) -> list[tuple[str, Outcome]]:
    """(custom id, outcome) of every line of an OpenAI batch output or error file (vLLM's
    run_batch writes the same shape). A 200 is read as a live reply is; a transient status,
    an expiry or a cancellation is sent again; any other status is a permanent error."""
    out: list[tuple[str, Outcome]] = []
    for n, obj in _json_lines(data, source):
        cid = _field(obj, "custom_id", source, n, str)
        resp, err = obj.get("response"), obj.get("error")
        if resp is None:
            code = err.get("code") if isinstance(err, dict) else None
            if not isinstance(err, dict):
                raise InputError(source, n, "response", "neither a response nor an error")
            out.append((cid, Resend(f"{code or 'error'}: {str(err.get('message') or '')[:200]}")))
            continue
        status = _field(resp, "status_code", source, n, int)
        body = resp.get("body")
        if status != 200:
            message = json.dumps(body)[:300] if body is not None else ""
            if status in TRANSIENT_STATUS:
                out.append((cid, Resend(f"status {status}: {message}", failed=True)))
            else:
                out.append((cid, ModelCallError(f"batch request failed (permanent): status {status}: {message}", permanent=True, attempts=1, status=status)))
            continue
        try:
            out.append((cid, read_completion(_field(resp, "body", source, n), 0.0, 1)))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise InputError(source, n, "response.body", f"not a chat completion: {e}") from None
    return out


def read_anthropic_results(data: bytes, source: str) -> list[tuple[str, Outcome]]:
    """(custom id, outcome) of every line of an Anthropic message-batch results file: a succeeded
    message as a Completion (text blocks joined, tool_use blocks as tool calls in the chat shape;
    end_turn -> stop, max_tokens -> length, tool_use -> tool_calls), an expired, cancelled or
    API-errored request sent again, an invalid request a permanent error. What a schema request's
    reply reads as is `tool_schema.tool_reply`'s, which needs the request."""
    out: list[tuple[str, Outcome]] = []
    for n, obj in _json_lines(data, source):
        cid = _field(obj, "custom_id", source, n, str)
        result = _field(obj, "result", source, n)
        kind = result.get("type")
        if kind == "succeeded":
            msg = _field(result, "message", source, n)
            blocks = _field(msg, "content", source, n, list)
            usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else {}
            stop = msg.get("stop_reason")
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            finish = "length" if stop == "max_tokens" else "stop" if stop in ("end_turn", "stop_sequence") else "tool_calls" if stop == "tool_use" else stop
            calls = [_tool_call(b) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"] or None
            out.append((cid, Completion(text, finish, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0), 0.0, 1, tool_calls=calls)))
        elif kind == "errored":
            inner = (result.get("error") or {}).get("error") or {}
            what = f"{inner.get('type')}: {str(inner.get('message') or '')[:200]}"
            if inner.get("type") == "invalid_request_error":
                out.append((cid, ModelCallError(f"batch request failed (permanent): {what}", permanent=True, attempts=1, status=400)))
            else:
                out.append((cid, Resend(what, failed=True)))
        elif kind in ("expired", "canceled"):
            out.append((cid, Resend(str(kind))))
        else:
            raise InputError(source, n, "result.type", f"{kind!r} is not succeeded, errored, canceled or expired")
    return out


def _tool_call(block: JSONObject) -> JSONObject:
    """A tool_use block as the chat shape's tool call (its input as JSON arguments)."""
    args = json.dumps(block.get("input"), ensure_ascii=False, separators=(",", ":"))
    return {"id": str(block.get("id") or ""), "type": "function", "function": {"name": str(block.get("name") or ""), "arguments": args}}
