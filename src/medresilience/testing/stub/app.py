"""The stub's request handling, shared by the thread and subprocess modes (runs on one event loop):
the chat-completions, models and health endpoints, the counters and the request log."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from aiohttp import web

from .bodies import canonical_body, dumps
from .faults import PERMANENT_FAULTS, Faults, fault_digest, fault_from_digest
from .policies import (
    DEFAULT_LETTERS,
    REJECT_MESSAGE,
    RESPONSE_FORMAT_MODES,
    Policy,
    answer_letter,
    fit_to_schema,
    make_policy,
    message_text,
    messages_digest,
    option_letters,
)

if TYPE_CHECKING:  # pragma: no cover
    from .batches import BatchEndpoints


def _error_body(message: str, type_: str, code: str | None, param: str | None = None) -> bytes:
    return dumps({"error": {"message": message, "type": type_, "param": param, "code": code}})


def _json_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, headers={"Content-Type": "application/json", **(headers or {})})


def _fmt_seconds(s: float) -> str:
    return str(int(s)) if float(s).is_integer() else repr(float(s))


def _words(text: str) -> int:
    return len(text.split())


def _is_tool_reply(reply: object) -> bool:
    return isinstance(reply, dict) and isinstance(reply.get("tool_calls"), list)


def _reply_dict(reply: object) -> bool:
    """Whether a policy's reply is a dict the stub can send: tool calls (agent_policy), or a
    `content` text with `reasoning_content` (sent as the message's reasoning text) and/or
    `reasoning_tokens` (an int, or None for a null, sent as usage.completion_tokens_details)."""
    if _is_tool_reply(reply):
        return True
    if not (isinstance(reply, dict) and isinstance(reply.get("content"), str)) or set(reply) - {"content", "reasoning_content", "reasoning_tokens"}:
        return False
    thought = reply.get("reasoning_tokens")
    return (thought is None or (isinstance(thought, int) and not isinstance(thought, bool))) and isinstance(reply.get("reasoning_content", ""), str)


def _logprobs_entry(messages: Sequence[Mapping[str, object]], letter: str | None, top_n: int) -> dict[str, object]:
    letters = option_letters(messages) or list(DEFAULT_LETTERS)
    if letter is None:
        letter = letters[0]
    others = [x for x in letters if x != letter]
    digest = messages_digest(messages)
    p_top = 0.55 + 0.4 * (digest[0] / 255.0)
    weights = [1.0 + digest[1 + i % 31] for i in range(len(others))]
    total_w = sum(weights) or 1.0
    probs = [(letter, p_top)] + [(x, (1.0 - p_top) * w / total_w) for x, w in zip(others, weights)]
    probs.sort(key=lambda kv: -kv[1])
    top = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in probs[: max(0, top_n)]]
    return {"token": letter, "logprob": math.log(p_top), "bytes": list(letter.encode()), "top_logprobs": top}


#: Faults whose reply still carries the policy's answer (the policy runs for them).
_ANSWERED = (None, "timeout", "content_parts", "content_number", "drip", "no_logprobs", "surrogate")
#: Faults answered by a 200 that is no usable answer.
_BROKEN_REPLIES = ("echo_key", "null_content", "null_message", "malformed")
#: The HTTP status of each fault that takes the answer's place.
_FAULT_STATUS = {
    "permanent": 400,
    "429": 429,
    "500": 500,
    "503": 503,
    "malformed": 200,
    "null_content": 200,
    "null_message": 200,
    "429_long": 429,
    "401": 401,
    "404": 404,
    "echo_key": 200,
}


def _json_schema(body: Mapping[str, object]) -> dict[str, object] | None:
    """The schema of a request's `response_format` json_schema, or None (no such response_format)."""
    rf = body.get("response_format")
    if not isinstance(rf, dict) or rf.get("type") != "json_schema":
        return None
    js = rf.get("json_schema")
    schema = js.get("schema") if isinstance(js, dict) else None
    return schema if isinstance(schema, dict) else {}


def _chat_body(raw: bytes) -> dict[str, Any] | None:
    """The request body if it is a JSON object with a non-empty messages list, else None."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return None
    return body


def _bearer_key(request: web.Request) -> str:
    """The API key the client sent (its Authorization header without 'Bearer ')."""
    auth = request.headers.get("Authorization", "")
    return auth[len("Bearer ") :] if auth.startswith("Bearer ") else auth


def _error_reply(fault: str, faults: Faults, request: web.Request, body: Mapping[str, object]) -> web.Response:
    """The error response of a fault that replaces the answer (400, 401, 404, 429, 500, 503)."""
    if fault == "permanent":
        return _json_response(
            _error_body("stub permanent fault: this request is rejected every time", "invalid_request_error", "stub_permanent_fault"),
            400,
        )
    if fault == "429_long":
        return _json_response(
            _error_body("Rate limit reached; come back later (stub fault)", "requests", "rate_limit_exceeded"),
            429,
            {"Retry-After": _fmt_seconds(faults.retry_after_long)},
        )
    if fault == "401":
        return _json_response(
            _error_body(
                f"Incorrect API key provided: {_bearer_key(request)}. You can find your API key in your account settings (stub fault).",
                "invalid_request_error",
                "invalid_api_key",
            ),
            401,
        )
    if fault == "404":
        return _json_response(
            _error_body(
                f"The model `{body.get('model')}` does not exist or you do not have access to it (stub fault).", "invalid_request_error", "model_not_found"
            ),
            404,
        )
    if fault == "429":
        return _json_response(
            _error_body("Rate limit reached (stub fault)", "requests", "rate_limit_exceeded"),
            429,
            {"Retry-After": _fmt_seconds(faults.retry_after)},
        )
    headers = {"Retry-After": _fmt_seconds(faults.retry_after_5xx)} if faults.retry_after_5xx is not None else None
    msg = "The server had an error while processing your request (stub fault)" if fault == "500" else "The server is overloaded (stub fault)"
    return _json_response(_error_body(msg, "server_error", None), int(fault), headers)


@dataclass(frozen=True)
class StubStats:
    """A snapshot of the server's counters (chat-completions requests only)."""

    total: int
    by_outcome: dict[str, int]
    by_key: dict[str, int]  # request key -> attempts seen

    def attempts(self, key: str) -> int:
        return self.by_key.get(key, 0)


class StubApp:
    """The request handling shared by the thread and subprocess modes (runs on one event loop)."""

    def __init__(
        self,
        policy: str | Policy = "hash",
        faults: Faults | None = None,
        log_path: str | os.PathLike[str] | None = None,
        json_text: str = "{}",
        model: str = "stub-model",
        response_format: str = "ignore",
        batches: BatchEndpoints | None = None,
    ) -> None:
        self.batches = batches
        if response_format not in RESPONSE_FORMAT_MODES:
            raise ValueError(f"response_format must be one of {', '.join(RESPONSE_FORMAT_MODES)}, not {response_format!r}")
        self.response_format = response_format
        self.policy = make_policy(policy, json_text=json_text)
        self.policy_name = policy if isinstance(policy, str) else getattr(policy, "__name__", "callable")
        self.faults = faults or Faults()
        self.log_path = Path(log_path) if log_path is not None else None
        self.model = model
        self._log: TextIO | None = None
        self._lock = threading.Lock()
        self._total = 0
        self._by_outcome: dict[str, int] = {}
        self._by_key: dict[str, int] = {}
        self._seq = 0
        self._closing: asyncio.Event | None = None

    # ---- lifecycle (called on the serving loop)
    def open(self) -> None:
        self._closing = asyncio.Event()
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def begin_closing(self) -> None:
        if self._closing is not None:
            self._closing.set()

    def build(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)
        if self.batches is not None:  # the batch endpoints (batches.BatchEndpoints), answered by this policy
            self.batches.add_routes(app, self)
        return app

    # ---- counters
    def stats(self) -> StubStats:
        with self._lock:
            return StubStats(self._total, dict(self._by_outcome), dict(self._by_key))

    def _record(self, key: str, outcome: str, status: int) -> int:
        with self._lock:
            attempt = self._by_key.get(key, 0) + 1
            self._by_key[key] = attempt
            self._total += 1
            self._by_outcome[outcome] = self._by_outcome.get(outcome, 0) + 1
            self._seq += 1
        if self._log is not None:
            line = {"t": time.time(), "key": key, "attempt": attempt, "outcome": outcome, "status": status}
            self._log.write(json.dumps(line) + "\n")
            self._log.flush()
        return attempt

    def _next_attempt(self, key: str) -> int:
        with self._lock:
            return self._by_key.get(key, 0) + 1

    async def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        closing = self._closing
        if closing is None or closing.is_set():
            return
        try:
            await asyncio.wait_for(closing.wait(), timeout=seconds)
        except TimeoutError:
            pass

    def completion_of(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat completion the stub answers a request body with, faults aside (a batch result
        line's response; counted as outcome `batch`). A policy that raises raises here."""
        canon = canonical_body(body)
        key = hashlib.sha256(canon).hexdigest()
        text = self.policy(body["messages"], body)
        schema = _json_schema(body)
        if schema is not None and self.response_format == "honour" and isinstance(text, str):
            text = fit_to_schema(text, schema)
        self._record(key, "batch", 200)
        return json.loads(self._completion(body, key, text))

    # ---- handlers
    async def health(self, request: web.Request) -> web.Response:
        return _json_response(b'{"status":"ok"}')

    async def models(self, request: web.Request) -> web.Response:
        data = {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "medresilience-stub"}]}
        return _json_response(dumps(data))

    async def chat(self, request: web.Request) -> web.StreamResponse:
        """POST /v1/chat/completions: read the body, fix its fault, then answer with the policy's
        text (as the fault shapes it) or with the fault in its place."""
        raw = await request.read()
        body = _chat_body(raw)
        if body is None:
            return await self._reject(hashlib.sha256(raw).hexdigest(), "request body must be a JSON object with a non-empty 'messages' list", "messages")
        canon = canonical_body(body)
        key = hashlib.sha256(canon).hexdigest()
        if body.get("stream"):
            return await self._reject(key, "streaming is not supported by the stub server", "stream")
        schema = _json_schema(body)
        if schema is not None and self.response_format == "reject":
            return await self._reject(key, REJECT_MESSAGE, "response_format")
        fault, digest = self._fault_of(canon, self._next_attempt(key))
        text: object = ""
        if fault in _ANSWERED:
            answer = self._answer(body, key)
            if isinstance(answer, web.Response):
                return answer
            text = answer
            if schema is not None and self.response_format == "honour" and isinstance(text, str):
                text = fit_to_schema(text, schema)
        attempt = self._record(key, fault or "ok", 200 if fault in _ANSWERED else _FAULT_STATUS[fault])
        faults = self.faults
        await self._sleep(faults.timeout_sleep + faults.delay if fault == "timeout" else faults.delay)
        if fault in _ANSWERED:
            return await self._answered_reply(request, fault, body, key, text)
        if fault in _BROKEN_REPLIES:
            return self._broken_reply(request, fault, body, key, digest, attempt)
        return _error_reply(fault, faults, request, body)

    async def _reject(self, key: str, message: str, param: str) -> web.Response:
        """A request the stub does not serve: counted as bad_request, answered 400 after the delay."""
        self._record(key, "bad_request", 400)
        await self._sleep(self.faults.delay)
        return _json_response(_error_body(message, "invalid_request_error", None, param), 400)

    def _fault_of(self, canon: bytes, attempt: int) -> tuple[str | None, bytes]:
        """The fault this attempt of a body gets (transient ones only on its first
        `transient_attempts` attempts), and the digest it was drawn from."""
        faults = self.faults
        if not faults.has_faults:
            return None, b""
        digest = fault_digest(faults.seed, canon)
        fault = fault_from_digest(faults, digest)
        if fault is not None and fault not in PERMANENT_FAULTS and attempt > faults.transient_attempts:
            fault = None
        return fault, digest

    def _answer(self, body: dict[str, Any], key: str) -> object:
        """The policy's reply text (or a reply dict: `content` and `tool_calls`, or `content` with
        `reasoning_content` and/or `reasoning_tokens`); a policy that raises (a bug in a test's
        policy) or returns anything else is a 500 the client must not retry, so it fails loudly."""
        try:
            text = self.policy(body["messages"], body)
            if not isinstance(text, str) and not _reply_dict(text):
                raise TypeError(f"policy returned {type(text).__name__}, not str or a reply dict (tool_calls, or content with reasoning)")
        except Exception as e:
            self._record(key, "error", 500)
            return _json_response(
                _error_body(f"stub policy raised {type(e).__name__}: {e}", "server_error", "stub_policy_error"),
                500,
                {"x-should-retry": "false"},
            )
        return text

    async def _answered_reply(self, request: web.Request, fault: str | None, body: dict[str, Any], key: str, text: object) -> web.StreamResponse:
        """The completion of the policy's text, as a fault that keeps the answer shapes it."""
        if fault in (None, "timeout") or _is_tool_reply(text):  # a tool-call reply keeps its shape
            return _json_response(self._completion(body, key, text))
        if fault == "drip":
            return await self._drip(request, self._completion(body, key, text))
        reply = json.loads(self._completion(body, key, text))
        if fault == "surrogate":  # valid JSON (the stdlib escapes the lone surrogate as \ud800) no UTF-8 can hold
            for choice in reply["choices"]:
                choice["message"]["content"] += " \ud800"
            return _json_response(json.dumps(reply).encode("ascii"))
        for choice in reply["choices"]:
            if fault == "no_logprobs":
                choice["logprobs"] = None
                continue
            content = choice["message"]["content"]
            half = len(content) // 2
            choice["message"]["content"] = (
                [{"type": "text", "text": content[:half]}, {"type": "text", "text": content[half:]}] if fault == "content_parts" else 42
            )
        return _json_response(dumps(reply))

    def _broken_reply(self, request: web.Request, fault: str, body: dict[str, Any], key: str, digest: bytes, attempt: int) -> web.Response:
        """A 200 that is not a usable answer: the bearer key echoed as the answer, a null message
        or content, or a malformed body (invalid JSON or no choices)."""
        if fault == "echo_key":
            return _json_response(self._completion(body, key, _bearer_key(request)))
        if fault in ("null_content", "null_message"):
            reply = json.loads(self._completion(body, key, ""))
            for choice in reply["choices"]:
                if fault == "null_message":
                    choice["message"] = None
                else:
                    choice["message"]["content"] = None
            return _json_response(dumps(reply))
        kind = self.faults.malformed_kind
        if kind == "alternate":
            kind = "invalid_json" if (digest[8] + attempt) % 2 == 0 else "no_choices"
        if kind == "invalid_json":
            return _json_response(b'{"id": "chatcmpl-stub-malformed", "object": "chat.completion", "choices": [{"index": 0, "mess')
        return _json_response(
            dumps({"id": f"chatcmpl-stub-{key[:16]}", "object": "chat.completion", "created": int(time.time()), "model": body.get("model") or self.model})
        )

    async def _drip(self, request: web.Request, payload: bytes) -> web.StreamResponse:
        """A 200 whose body is sent one byte every `drip_interval` seconds (a server that keeps a
        connection alive without ever finishing)."""
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Content-Length": str(len(payload))})
        try:
            await resp.prepare(request)
            for i in range(len(payload)):
                await resp.write(payload[i : i + 1])
                if self._closing is None or self._closing.is_set():
                    break
                await self._sleep(self.faults.drip_interval)
        except (ConnectionError, RuntimeError):  # the client gave up
            pass
        return resp

    def _completion(self, body: dict[str, Any], key: str, text: Any) -> bytes:
        messages = body["messages"]
        if _is_tool_reply(text):  # a reply with tool calls (agent_policy)
            return self._tool_completion(body, key, text)
        reasoning: dict[str, Any] = {}
        if isinstance(text, dict):  # a reply with reasoning: the text is its content
            reasoning, text = text, text["content"]
        want_logprobs = bool(body.get("logprobs"))
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        finish = "stop"
        letter = None
        if want_logprobs:
            letter = answer_letter(text) or (option_letters(messages) or list(DEFAULT_LETTERS))[0]
        if isinstance(max_tokens, int) and max_tokens > 0:
            if want_logprobs and max_tokens == 1:  # a one-token reply is the answer letter itself
                finish = "stop" if text.strip() == letter else "length"
                text = letter
            else:
                words = text.split()
                if len(words) > max_tokens:
                    text = " ".join(words[:max_tokens])
                    finish = "length"
        logprobs = None
        if want_logprobs:
            top_n = body.get("top_logprobs")
            logprobs = {"content": [_logprobs_entry(messages, letter, int(top_n) if isinstance(top_n, int) else 0)], "refusal": None}
        n = body.get("n")
        n = n if isinstance(n, int) and 0 < n <= 128 else 1
        message = {"role": "assistant", "content": text, "refusal": None}
        if "reasoning_content" in reasoning:
            message["reasoning_content"] = reasoning["reasoning_content"]
        choices = [{"index": i, "message": message, "logprobs": logprobs, "finish_reason": finish} for i in range(n)]
        prompt_tokens = sum(_words(message_text(m)) for m in messages if isinstance(m, dict))
        # reasoning tokens count among the completion tokens, as the OpenAI API counts them
        thought = reasoning.get("reasoning_tokens")
        completion_tokens = (_words(text) + (thought if isinstance(thought, int) else 0)) * n
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
        if "reasoning_tokens" in reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": thought if thought is None else thought * n}
        out = {
            "id": f"chatcmpl-stub-{key[:20]}-{self._seq}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": "medres-stub",
            "choices": choices,
            "usage": usage,
        }
        return dumps(out)

    def _tool_completion(self, body: dict[str, Any], key: str, reply: dict[str, Any]) -> bytes:
        """A completion whose message carries the policy's tool calls (finish_reason tool_calls)."""
        content = reply.get("content")
        message = {"role": "assistant", "content": content, "refusal": None, "tool_calls": reply["tool_calls"]}
        prompt_tokens = sum(_words(message_text(m)) for m in body["messages"] if isinstance(m, dict))
        completion_tokens = _words(content or "") + sum(_words(json.dumps(c)) for c in reply["tool_calls"])
        out = {
            "id": f"chatcmpl-stub-{key[:20]}-{self._seq}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": "medres-stub",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
        }
        return dumps(out)
