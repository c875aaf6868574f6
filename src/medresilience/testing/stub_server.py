"""A small, fast, local OpenAI-compatible chat-completions server for tests, benchmarks and dry
runs. Answers come from a policy (a callable or a named built-in); faults (429 with Retry-After,
500, 503, timeouts, malformed bodies, permanent 400s, and the hostile replies of a hardening
test: a 200 whose message content is null or whose message is null, a 429 whose Retry-After is
huge (an hour by default), a 401 whose message echoes the API key the client sent, a 404 for an
unknown model, a 200 whose content is a list of text parts or a number, a 200 whose answer is the
API key the client sent, a reply dripped one byte at a time, a reply without the log-probabilities
asked for) are injected deterministically: which request gets which fault depends only on
(seed, canonical request body), never on call order, so results do not depend on concurrency.
Transient faults (429, 500, 503, timeouts, malformed bodies, null content or message, the long
Retry-After, a numeric content, the drip) hit a request body only on its first `transient_attempts`
attempts, so a retrying client eventually succeeds; permanent ones (400, 401, 404) and the
persistent reply shapes (text parts, the echoed key, no log-probabilities) hit every attempt.

In-process (background thread with its own event loop)::

    with StubServer(policy="hash", faults=Faults(rate_429=0.1), log_path="req.jsonl") as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="stub")

As a subprocess (prints ``LISTENING http://127.0.0.1:PORT/v1`` first, serves until SIGTERM)::

    python -m medresilience.testing.stub_server --port 0 --policy hash --rate-429 0.1 --log req.jsonl

or from Python: ``with StubProcess(policy="hash", faults=...) as proc: proc.base_url``.

Endpoints: ``POST /v1/chat/completions`` (non-streaming), ``GET /v1/models``, ``GET /health``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, model_validator

try:  # optional speed-up; the stdlib json is fine
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

__all__ = [
    "FAULT_OUTCOMES",
    "OUTCOMES",
    "PERMANENT_FAULTS",
    "POLICIES",
    "TRANSIENT_FAULTS",
    "Faults",
    "Policy",
    "StubProcess",
    "StubServer",
    "StubStats",
    "answer_letter",
    "assign_fault",
    "canonical_body",
    "hash_letter",
    "main",
    "make_policy",
    "message_text",
    "option_letters",
    "policy_server",
    "request_key",
    "uniform",
]

Policy = Callable[[list[dict[str, Any]], dict[str, Any]], str]

#: Every outcome a chat-completions request can have in the log and in `StubStats.by_outcome`.
#: "bad_request": the client sent something the stub rejects (invalid JSON, no messages,
#: stream=true). "error": the policy callable raised (500 with `x-should-retry: false`).
OUTCOMES = (
    "ok",
    "429",
    "500",
    "503",
    "timeout",
    "malformed",
    "permanent",
    "null_content",
    "null_message",
    "429_long",
    "401",
    "404",
    "content_parts",
    "content_number",
    "echo_key",
    "drip",
    "no_logprobs",
    "bad_request",
    "error",
)
#: The injected faults, in the order of their bands in [0, 1) (see `assign_fault`; new bands go
#: last, so a seed keeps assigning the same bodies the faults it did).
FAULT_OUTCOMES = (
    "permanent",
    "429",
    "500",
    "503",
    "timeout",
    "malformed",
    "null_content",
    "null_message",
    "429_long",
    "401",
    "404",
    "content_parts",
    "content_number",
    "echo_key",
    "drip",
    "no_logprobs",
)
TRANSIENT_FAULTS = frozenset({"429", "500", "503", "timeout", "malformed", "null_content", "null_message", "429_long", "content_number", "drip"})
#: Faults on every attempt of a body: the permanent errors and the persistent reply shapes.
PERMANENT_FAULTS = frozenset({"permanent", "401", "404", "content_parts", "echo_key", "no_logprobs"})

DEFAULT_LETTERS = ("A", "B", "C", "D")
_OPTION_RE = re.compile(r"^([A-J])[.)]\s", re.MULTILINE)
_MARKER_RE = re.compile(r"\[\[ANSWER:\s*([A-Z])\s*\]\]")
_ANSWER_RE = re.compile(r"\banswer\b(?:\s+is)?\s*[:\-]?\s*\(?([A-J])\b", re.IGNORECASE)
_BARE_RE = re.compile(r"^\s*\(?([A-J])\)?[.):]?\s*$")


# --------------------------------------------------------------------------- canonical bodies


def _dumps(obj: Any) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def canonical_body(body: Any) -> bytes:
    """The canonical encoding of a parsed request body: sorted keys, no spaces, UTF-8."""
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def request_key(body: Any) -> str:
    """SHA-256 hex of the canonical body: the `key` of the request log and `StubStats.by_key`.
    The openai SDK resends the same body on retries, so all attempts of a call share a key."""
    return hashlib.sha256(canonical_body(body)).hexdigest()


# --------------------------------------------------------------------------- faults


class Faults(BaseModel):
    """Which faults the stub injects. Rates are fractions of distinct request bodies (they must
    sum to at most 1); the fault of a body is fixed by a stable hash of (seed, canonical body)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    rate_429: float = Field(0.0, ge=0.0, le=1.0)
    retry_after: float = Field(1.0, ge=0.0, description="Retry-After seconds on 429s (fractional allowed)")
    rate_500: float = Field(0.0, ge=0.0, le=1.0)
    rate_503: float = Field(0.0, ge=0.0, le=1.0)
    retry_after_5xx: float | None = Field(None, ge=0.0, description="if set, 500/503 also carry Retry-After")
    rate_timeout: float = Field(0.0, ge=0.0, le=1.0)
    timeout_sleep: float = Field(10.0, ge=0.0, description="seconds a 'timeout' request sleeps before answering")
    rate_malformed: float = Field(0.0, ge=0.0, le=1.0)
    malformed_kind: Literal["alternate", "invalid_json", "no_choices"] = "alternate"
    rate_permanent: float = Field(0.0, ge=0.0, le=1.0)
    rate_null_content: float = Field(0.0, ge=0.0, le=1.0, description="a 200 whose message has content: null")
    rate_null_message: float = Field(0.0, ge=0.0, le=1.0, description="a 200 whose choice has message: null")
    rate_429_long: float = Field(0.0, ge=0.0, le=1.0, description="a 429 whose Retry-After is retry_after_long")
    retry_after_long: float = Field(3600.0, ge=0.0, description="Retry-After seconds of the long 429s")
    rate_401: float = Field(0.0, ge=0.0, le=1.0, description="a 401 on every attempt; its message echoes the bearer key sent")
    rate_404: float = Field(0.0, ge=0.0, le=1.0, description="a 404 'model not found' on every attempt")
    rate_content_parts: float = Field(0.0, ge=0.0, le=1.0, description="a 200 whose content is a list of text parts (every attempt)")
    rate_content_number: float = Field(0.0, ge=0.0, le=1.0, description="a 200 whose content is a number")
    rate_echo_key: float = Field(0.0, ge=0.0, le=1.0, description="a 200 whose answer is the bearer key sent (every attempt)")
    rate_drip: float = Field(0.0, ge=0.0, le=1.0, description="a 200 sent one byte every drip_interval seconds")
    drip_interval: float = Field(1.0, ge=0.0, description="seconds between the bytes of a dripped reply")
    rate_no_logprobs: float = Field(0.0, ge=0.0, le=1.0, description="a 200 without log-probabilities though asked (every attempt)")
    transient_attempts: int = Field(1, ge=0, description="a transient fault hits only the first N attempts of a body")
    delay: float = Field(0.0, ge=0.0, description="seconds added to every chat-completions response")

    @model_validator(mode="after")
    def _rates_sum(self) -> Faults:
        total = sum(rate for _, rate in self.bands())
        if total > 1.0 + 1e-9:
            raise ValueError(f"fault rates sum to {total:.4f} > 1")
        return self

    @property
    def has_faults(self) -> bool:
        return any(rate > 0 for _, rate in self.bands())

    def bands(self) -> list[tuple[str, float]]:
        return [
            ("permanent", self.rate_permanent),
            ("429", self.rate_429),
            ("500", self.rate_500),
            ("503", self.rate_503),
            ("timeout", self.rate_timeout),
            ("malformed", self.rate_malformed),
            ("null_content", self.rate_null_content),
            ("null_message", self.rate_null_message),
            ("429_long", self.rate_429_long),
            ("401", self.rate_401),
            ("404", self.rate_404),
            ("content_parts", self.rate_content_parts),
            ("content_number", self.rate_content_number),
            ("echo_key", self.rate_echo_key),
            ("drip", self.rate_drip),
            ("no_logprobs", self.rate_no_logprobs),
        ]


def uniform(text: str, salt: str) -> float:
    """A fixed number in [0, 1) for (salt, text): how a scripted policy puts a request in a band
    (its share of invalid replies, rejections, ...) the same way on every run."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{text}".encode()).digest()[:8], "big") / 2.0**64


def band_of(u: float, bands: Iterable[tuple[str, float]]) -> str | None:
    """The band a number u in [0, 1) falls in, the bands laid end to end from 0 in the order
    given (name, width); None past the last one."""
    edge = 0.0
    for name, width in bands:
        edge += width
        if u < edge:
            return name
    return None


def _fault_digest(seed: int, canonical: bytes) -> bytes:
    return hashlib.sha256(b"medres-stub-fault:%d:" % seed + canonical).digest()


def _assigned_from_digest(faults: Faults, digest: bytes) -> str | None:
    return band_of(int.from_bytes(digest[:8], "big") / 2.0**64, faults.bands())


def assign_fault(faults: Faults, body: Any, attempt: int | None = None) -> str | None:
    """The fault the stub assigns to a request body (one of FAULT_OUTCOMES) or None.

    With `attempt` (1-based) given, the outcome that attempt actually gets: transient faults
    apply only while attempt <= transient_attempts; the permanent ones ("permanent", "401",
    "404") apply to every attempt."""
    if not faults.has_faults:
        return None
    fault = _assigned_from_digest(faults, _fault_digest(faults.seed, canonical_body(body)))
    if fault is None or attempt is None or fault in PERMANENT_FAULTS:
        return fault
    return fault if attempt <= faults.transient_attempts else None


# --------------------------------------------------------------------------- policies


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message (string content or a list of text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _last_user_text(messages: Sequence[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            return message_text(m)
    return ""


def option_letters(messages: Sequence[dict[str, Any]]) -> list[str]:
    """Option letters of the last user message: lines matching ^([A-J])[.)]\\s, in order, unique."""
    seen: list[str] = []
    for letter in _OPTION_RE.findall(_last_user_text(messages)):
        if letter not in seen:
            seen.append(letter)
    return seen


def _messages_digest(messages: Sequence[dict[str, Any]]) -> bytes:
    return hashlib.sha256(canonical_body(list(messages))).digest()


def hash_letter(messages: Sequence[dict[str, Any]], letters: Sequence[str] | None = None) -> str:
    """The "hash" policy's letter: chosen among `letters` (default: the prompt's option letters,
    or A-D when the prompt has none) by a SHA-256 of the canonical messages."""
    letters = list(letters) if letters else (option_letters(messages) or list(DEFAULT_LETTERS))
    return letters[int.from_bytes(_messages_digest(messages)[:8], "big") % len(letters)]


def answer_letter(text: str) -> str | None:
    """The letter an answer text gives ("Answer: C", "answer is (C)", or a bare "C"), or None."""
    m = _ANSWER_RE.search(text) or _BARE_RE.match(text)
    return m.group(1).upper() if m else None


def _policy_hash(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return f"Answer: {hash_letter(messages)}"


def _policy_first(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    letters = option_letters(messages)
    return f"Answer: {letters[0] if letters else DEFAULT_LETTERS[0]}"


def _policy_gullible(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    for m in messages:
        if isinstance(m, dict):
            found = _MARKER_RE.search(message_text(m))
            if found:
                return f"Answer: {found.group(1)}"
    return _policy_hash(messages, request)


def _policy_echo(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return _last_user_text(messages)


#: Named built-in policies.
POLICIES = ("hash", "first", "gullible", "echo", "json_fixed")


def make_policy(policy: str | Policy, *, json_text: str = "{}") -> Policy:
    """A policy callable from a name in POLICIES or a callable (returned as is).

    hash: "Answer: X", X chosen by a hash of the messages among the prompt's option letters.
    first: "Answer: X" for the first option letter. gullible: "Answer: X" when any message
    contains the marker [[ANSWER:X]], else as hash. echo: the last user message. json_fixed:
    `json_text` for every request (for structured-output / response_format calls)."""
    if callable(policy):
        return policy
    if policy == "hash":
        return _policy_hash
    if policy == "first":
        return _policy_first
    if policy == "gullible":
        return _policy_gullible
    if policy == "echo":
        return _policy_echo
    if policy == "json_fixed":
        text = str(json_text)

        def _policy_json_fixed(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
            return text

        return _policy_json_fixed
    raise ValueError(f"unknown stub policy {policy!r}; expected one of {', '.join(POLICIES)} or a callable")


# --------------------------------------------------------------------------- responses


def _error_body(message: str, type_: str, code: str | None, param: str | None = None) -> bytes:
    return _dumps({"error": {"message": message, "type": type_, "param": param, "code": code}})


def _json_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, headers=headers, content_type="application/json")


def _fmt_seconds(s: float) -> str:
    return str(int(s)) if float(s).is_integer() else repr(float(s))


def _words(text: str) -> int:
    return len(text.split())


def _logprobs_entry(messages: list[dict[str, Any]], letter: str | None, top_n: int) -> dict[str, Any]:
    letters = option_letters(messages) or list(DEFAULT_LETTERS)
    if letter is None:
        letter = letters[0]
    others = [x for x in letters if x != letter]
    digest = _messages_digest(messages)
    p_top = 0.55 + 0.4 * (digest[0] / 255.0)
    weights = [1.0 + digest[1 + i % 31] for i in range(len(others))]
    total_w = sum(weights) or 1.0
    probs = [(letter, p_top)] + [(x, (1.0 - p_top) * w / total_w) for x, w in zip(others, weights)]
    probs.sort(key=lambda kv: -kv[1])
    top = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in probs[: max(0, top_n)]]
    return {"token": letter, "logprob": math.log(p_top), "bytes": list(letter.encode()), "top_logprobs": top}


@dataclass(frozen=True)
class StubStats:
    """A snapshot of the server's counters (chat-completions requests only)."""

    total: int
    by_outcome: dict[str, int]
    by_key: dict[str, int]  # request key -> attempts seen

    def attempts(self, key: str) -> int:
        return self.by_key.get(key, 0)


class _StubApp:
    """The request handling shared by the thread and subprocess modes (runs on one event loop)."""

    def __init__(
        self,
        policy: str | Policy = "hash",
        faults: Faults | None = None,
        log_path: str | os.PathLike[str] | None = None,
        json_text: str = "{}",
        model: str = "stub-model",
    ) -> None:
        self.policy = make_policy(policy, json_text=json_text)
        self.policy_name = policy if isinstance(policy, str) else getattr(policy, "__name__", "callable")
        self.faults = faults or Faults()
        self.log_path = Path(log_path) if log_path is not None else None
        self.model = model
        self._log: Any = None
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
        return app

    # ---- counters
    def stats(self) -> StubStats:
        with self._lock:
            return StubStats(self._total, dict(self._by_outcome), dict(self._by_key))

    def reset(self) -> None:
        with self._lock:
            self._total = 0
            self._by_outcome.clear()
            self._by_key.clear()

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

    # ---- handlers
    async def health(self, request: web.Request) -> web.Response:
        return _json_response(b'{"status":"ok"}')

    async def models(self, request: web.Request) -> web.Response:
        data = {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "medresilience-stub"}]}
        return _json_response(_dumps(data))

    async def chat(self, request: web.Request) -> web.Response:
        raw = await request.read()
        faults = self.faults
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
            self._record(hashlib.sha256(raw).hexdigest(), "bad_request", 400)
            await self._sleep(faults.delay)
            return _json_response(
                _error_body("request body must be a JSON object with a non-empty 'messages' list", "invalid_request_error", None, "messages"),
                400,
            )
        canon = canonical_body(body)
        key = hashlib.sha256(canon).hexdigest()
        if body.get("stream"):
            self._record(key, "bad_request", 400)
            await self._sleep(faults.delay)
            return _json_response(_error_body("streaming is not supported by the stub server", "invalid_request_error", None, "stream"), 400)

        attempt = self._next_attempt(key)
        fault: str | None = None
        if faults.has_faults:
            digest = _fault_digest(faults.seed, canon)
            fault = _assigned_from_digest(faults, digest)
            if fault is not None and fault not in PERMANENT_FAULTS and attempt > faults.transient_attempts:
                fault = None
        else:
            digest = b""

        if fault in (None, "timeout", "content_parts", "content_number", "drip", "no_logprobs"):
            try:
                text = self.policy(body["messages"], body)
                if not isinstance(text, str):
                    raise TypeError(f"policy returned {type(text).__name__}, not str")
            except Exception as e:  # a bug in a test's policy: fail loudly, do not retry
                self._record(key, "error", 500)
                return _json_response(
                    _error_body(f"stub policy raised {type(e).__name__}: {e}", "server_error", "stub_policy_error"),
                    500,
                    {"x-should-retry": "false"},
                )
            status = 200
        else:
            status = {
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
            }[fault]
        attempt = self._record(key, fault or "ok", status)

        if fault is None:
            await self._sleep(faults.delay)
            return _json_response(self._completion(body, key, text))
        if fault == "timeout":
            await self._sleep(faults.timeout_sleep + faults.delay)
            return _json_response(self._completion(body, key, text))
        await self._sleep(faults.delay)
        if fault in ("content_parts", "content_number"):
            reply = json.loads(self._completion(body, key, text))
            for choice in reply["choices"]:
                content = choice["message"]["content"]
                half = len(content) // 2
                choice["message"]["content"] = (
                    [{"type": "text", "text": content[:half]}, {"type": "text", "text": content[half:]}] if fault == "content_parts" else 42
                )
            return _json_response(_dumps(reply))
        if fault == "no_logprobs":
            reply = json.loads(self._completion(body, key, text))
            for choice in reply["choices"]:
                choice["logprobs"] = None
            return _json_response(_dumps(reply))
        if fault == "echo_key":
            auth = request.headers.get("Authorization", "")
            return _json_response(self._completion(body, key, auth[len("Bearer ") :] if auth.startswith("Bearer ") else auth))
        if fault == "drip":
            return await self._drip(request, self._completion(body, key, text))
        if fault == "permanent":
            return _json_response(
                _error_body("stub permanent fault: this request is rejected every time", "invalid_request_error", "stub_permanent_fault"),
                400,
            )
        if fault in ("null_content", "null_message"):
            reply = json.loads(self._completion(body, key, ""))
            for choice in reply["choices"]:
                if fault == "null_message":
                    choice["message"] = None
                else:
                    choice["message"]["content"] = None
            return _json_response(_dumps(reply))
        if fault == "429_long":
            return _json_response(
                _error_body("Rate limit reached; come back later (stub fault)", "requests", "rate_limit_exceeded"),
                429,
                {"Retry-After": _fmt_seconds(faults.retry_after_long)},
            )
        if fault == "401":
            auth = request.headers.get("Authorization", "")
            sent = auth[len("Bearer ") :] if auth.startswith("Bearer ") else auth
            return _json_response(
                _error_body(
                    f"Incorrect API key provided: {sent}. You can find your API key in your account settings (stub fault).",
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
        if fault in ("500", "503"):
            headers = {"Retry-After": _fmt_seconds(faults.retry_after_5xx)} if faults.retry_after_5xx is not None else None
            msg = "The server had an error while processing your request (stub fault)" if fault == "500" else "The server is overloaded (stub fault)"
            return _json_response(_error_body(msg, "server_error", None), int(fault), headers)
        # malformed
        kind = faults.malformed_kind
        if kind == "alternate":
            kind = "invalid_json" if (digest[8] + attempt) % 2 == 0 else "no_choices"
        if kind == "invalid_json":
            return _json_response(b'{"id": "chatcmpl-stub-malformed", "object": "chat.completion", "choices": [{"index": 0, "mess')
        return _json_response(
            _dumps({"id": f"chatcmpl-stub-{key[:16]}", "object": "chat.completion", "created": int(time.time()), "model": body.get("model") or self.model})
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

    def _completion(self, body: dict[str, Any], key: str, text: str) -> bytes:
        messages = body["messages"]
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
        choices = [{"index": i, "message": message, "logprobs": logprobs, "finish_reason": finish} for i in range(n)]
        prompt_tokens = sum(_words(message_text(m)) for m in messages if isinstance(m, dict))
        completion_tokens = _words(text) * n
        out = {
            "id": f"chatcmpl-stub-{key[:20]}-{self._seq}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": "medres-stub",
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
        }
        return _dumps(out)


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock


class StubServer:
    """The stub server, in-process.

    `with StubServer(...) as srv:` serves from a background thread with its own event loop
    (usable from sync and async code alike); `async with StubServer(...) as srv:` serves on the
    running loop instead. `srv.base_url` is "http://127.0.0.1:PORT/v1"."""

    def __init__(
        self,
        policy: str | Policy = "hash",
        faults: Faults | None = None,
        log_path: str | os.PathLike[str] | None = None,
        *,
        json_text: str = "{}",
        model: str = "stub-model",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._app = _StubApp(policy, faults, log_path, json_text=json_text, model=model)
        self.host = host
        self._requested_port = port
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._own_loop = False

    # ---- addresses and counters
    @property
    def faults(self) -> Faults:
        return self._app.faults

    @property
    def root_url(self) -> str:
        if self.port is None:
            raise RuntimeError("stub server is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    @property
    def stats(self) -> StubStats:
        return self._app.stats()

    def reset_stats(self) -> None:
        """Forget all counters, attempts included (transient faults hit again)."""
        self._app.reset()

    # ---- async lifecycle (current loop)
    async def astart(self) -> StubServer:
        if self._runner is not None:
            raise RuntimeError("stub server already running")
        self._app.open()
        runner = web.AppRunner(self._app.build(), access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        try:
            sock = _bind(self.host, self._requested_port)
            site = web.SockSite(runner, sock, backlog=1024)
            await site.start()
        except BaseException:
            await runner.cleanup()
            self._app.close()
            raise
        self.port = sock.getsockname()[1]
        self._runner = runner
        return self

    async def astop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._app.begin_closing()
        try:
            await runner.cleanup()
        finally:
            self._app.close()
            self.port = None

    async def __aenter__(self) -> StubServer:
        return await self.astart()

    async def __aexit__(self, *exc: Any) -> None:
        await self.astop()

    # ---- thread lifecycle
    def start(self, timeout: float = 10.0) -> StubServer:
        if self._thread is not None:
            raise RuntimeError("stub server already running")
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="medres-stub-server", daemon=True)
        thread.start()
        ready.wait(timeout)
        self._loop, self._thread, self._own_loop = loop, thread, True
        try:
            asyncio.run_coroutine_threadsafe(self.astart(), loop).result(timeout)
        except BaseException:
            self._shutdown_thread(timeout)
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is None or self._loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.astop(), self._loop).result(timeout)
        finally:
            self._shutdown_thread(timeout)

    def _shutdown_thread(self, timeout: float) -> None:
        loop, thread = self._loop, self._thread
        self._loop, self._thread = None, None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# --------------------------------------------------------------------------- subprocess mode


def _cli_args(
    policy: str,
    faults: Faults,
    log_path: str | os.PathLike[str] | None,
    json_text: str,
    model: str,
    host: str,
    port: int,
) -> list[str]:
    args = ["--host", host, "--port", str(port), "--policy", policy, "--model", model, "--json-text", json_text]
    f = faults
    args += ["--seed", str(f.seed), "--delay", repr(f.delay)]
    args += ["--rate-429", repr(f.rate_429), "--retry-after", repr(f.retry_after)]
    args += ["--rate-500", repr(f.rate_500), "--rate-503", repr(f.rate_503)]
    if f.retry_after_5xx is not None:
        args += ["--retry-after-5xx", repr(f.retry_after_5xx)]
    args += ["--rate-timeout", repr(f.rate_timeout), "--timeout-sleep", repr(f.timeout_sleep)]
    args += ["--rate-malformed", repr(f.rate_malformed), "--malformed-kind", f.malformed_kind]
    args += ["--rate-permanent", repr(f.rate_permanent), "--transient-attempts", str(f.transient_attempts)]
    args += ["--rate-null-content", repr(f.rate_null_content), "--rate-null-message", repr(f.rate_null_message)]
    args += ["--rate-429-long", repr(f.rate_429_long), "--retry-after-long", repr(f.retry_after_long)]
    args += ["--rate-401", repr(f.rate_401), "--rate-404", repr(f.rate_404)]
    args += ["--rate-content-parts", repr(f.rate_content_parts), "--rate-content-number", repr(f.rate_content_number)]
    args += ["--rate-echo-key", repr(f.rate_echo_key), "--rate-drip", repr(f.rate_drip), "--drip-interval", repr(f.drip_interval)]
    args += ["--rate-no-logprobs", repr(f.rate_no_logprobs)]
    if log_path is not None:
        args += ["--log", str(log_path)]
    return args


class StubProcess:
    """The stub server as a child process (`python -m medresilience.testing.stub_server`): no
    GIL shared with the client, so use it for throughput benchmarks and kill/resume tests.
    Only named policies. `with StubProcess(...) as p: p.base_url`; stop() sends SIGTERM."""

    def __init__(
        self,
        policy: str = "hash",
        faults: Faults | None = None,
        log_path: str | os.PathLike[str] | None = None,
        *,
        json_text: str = "{}",
        model: str = "stub-model",
        host: str = "127.0.0.1",
        port: int = 0,
        python: str | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"StubProcess needs a named policy ({', '.join(POLICIES)}), got {policy!r}")
        self.argv = [python or sys.executable, "-m", "medresilience.testing.stub_server"]
        self.argv += _cli_args(policy, faults or Faults(), log_path, json_text, model, host, port)
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.base_url: str = ""

    @property
    def root_url(self) -> str:
        return self.base_url[: -len("/v1")]

    def start(self) -> StubProcess:
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.startup_timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"stub server process did not start (first line: {line!r})")
        self.base_url = line.split(None, 1)[1].strip()
        return self

    def stop(self, timeout: float = 10.0) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        return proc.returncode

    def __enter__(self) -> StubProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _serve_policy(factory: Callable[..., Policy], kwargs: dict[str, Any], faults: Faults, conn: Any, stop: Any) -> None:
    with StubServer(policy=factory(**kwargs), faults=faults) as srv:  # in the spawned child
        conn.send(srv.base_url)
        stop.wait()


@contextlib.contextmanager
def policy_server(
    factory: Callable[..., Policy], kwargs: dict[str, Any] | None = None, faults: Faults | None = None, process: bool = True, startup_timeout: float = 60.0
) -> Iterator[str]:
    """A stub server whose policy is `factory(**kwargs)` (a policy object, such as a builder's scripted
    fake generator, that StubProcess's named policies cannot express); yields its base URL. With
    `process` it runs in a spawned child process (no GIL shared with the client: for benchmarks),
    else in a thread. The factory must be importable by name (a module-level class or function)."""
    kwargs, faults = dict(kwargs or {}), faults or Faults()
    if not process:
        with StubServer(policy=factory(**kwargs), faults=faults) as srv:
            yield srv.base_url
        return
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    stop = ctx.Event()
    proc = ctx.Process(target=_serve_policy, args=(factory, kwargs, faults, child, stop), daemon=True)
    proc.start()
    try:
        if not parent.poll(startup_timeout):
            raise RuntimeError("the stub server process did not start")
        yield parent.recv()
    finally:
        stop.set()
        proc.join(10)
        if proc.is_alive():
            proc.terminate()
            proc.join()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m medresilience.testing.stub_server", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    p.add_argument("--policy", default="hash", choices=POLICIES)
    p.add_argument("--json-text", default="{}", help="the text the json_fixed policy returns")
    p.add_argument("--model", default="stub-model", help="the id listed by /v1/models")
    p.add_argument("--seed", type=int, default=0, help="seed of the fault assignment")
    p.add_argument("--delay", type=float, default=0.0, help="seconds added to every chat response")
    p.add_argument("--rate-429", type=float, default=0.0)
    p.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on 429s")
    p.add_argument("--rate-500", type=float, default=0.0)
    p.add_argument("--rate-503", type=float, default=0.0)
    p.add_argument("--retry-after-5xx", type=float, default=None, help="Retry-After seconds on 500/503 (default: none)")
    p.add_argument("--rate-timeout", type=float, default=0.0)
    p.add_argument("--timeout-sleep", type=float, default=10.0)
    p.add_argument("--rate-malformed", type=float, default=0.0)
    p.add_argument("--malformed-kind", default="alternate", choices=("alternate", "invalid_json", "no_choices"))
    p.add_argument("--rate-permanent", type=float, default=0.0)
    p.add_argument("--transient-attempts", type=int, default=1)
    p.add_argument("--rate-null-content", type=float, default=0.0, help="a 200 whose message content is null")
    p.add_argument("--rate-null-message", type=float, default=0.0, help="a 200 whose message is null")
    p.add_argument("--rate-429-long", type=float, default=0.0, help="a 429 with the long Retry-After")
    p.add_argument("--retry-after-long", type=float, default=3600.0, help="Retry-After seconds of the long 429s")
    p.add_argument("--rate-401", type=float, default=0.0, help="a 401 echoing the bearer key, every attempt")
    p.add_argument("--rate-404", type=float, default=0.0, help="a 404 model not found, every attempt")
    p.add_argument("--rate-content-parts", type=float, default=0.0, help="a 200 whose content is a list of text parts, every attempt")
    p.add_argument("--rate-content-number", type=float, default=0.0, help="a 200 whose content is a number")
    p.add_argument("--rate-echo-key", type=float, default=0.0, help="a 200 whose answer is the bearer key, every attempt")
    p.add_argument("--rate-drip", type=float, default=0.0, help="a 200 dripped one byte every --drip-interval seconds")
    p.add_argument("--drip-interval", type=float, default=1.0)
    p.add_argument("--rate-no-logprobs", type=float, default=0.0, help="a 200 without log-probabilities though asked, every attempt")
    p.add_argument("--log", default=None, help="append one JSON line per chat request to this file")
    return p


def _faults_from_args(args: argparse.Namespace) -> Faults:
    return Faults(
        seed=args.seed,
        delay=args.delay,
        rate_429=args.rate_429,
        retry_after=args.retry_after,
        rate_500=args.rate_500,
        rate_503=args.rate_503,
        retry_after_5xx=args.retry_after_5xx,
        rate_timeout=args.rate_timeout,
        timeout_sleep=args.timeout_sleep,
        rate_malformed=args.rate_malformed,
        malformed_kind=args.malformed_kind,
        rate_permanent=args.rate_permanent,
        transient_attempts=args.transient_attempts,
        rate_null_content=args.rate_null_content,
        rate_null_message=args.rate_null_message,
        rate_429_long=args.rate_429_long,
        retry_after_long=args.retry_after_long,
        rate_401=args.rate_401,
        rate_404=args.rate_404,
        rate_content_parts=args.rate_content_parts,
        rate_content_number=args.rate_content_number,
        rate_echo_key=args.rate_echo_key,
        rate_drip=args.rate_drip,
        drip_interval=args.drip_interval,
        rate_no_logprobs=args.rate_no_logprobs,
    )


async def _serve(args: argparse.Namespace, faults: Faults) -> None:
    server = StubServer(args.policy, faults, args.log, json_text=args.json_text, model=args.model, host=args.host, port=args.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.astart()
    try:
        sys.stdout.write(f"LISTENING {server.base_url}\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        await server.astop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        faults = _faults_from_args(args)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        parser.error(str(e))
    try:
        import uvloop  # type: ignore[import-not-found]

        factory: Any = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(_serve(args, faults))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
