"""One client for every model: the OpenAI chat-completions protocol, sent through the lean
transport of `transport.py` (aiohttp; the `openai` SDK's exceptions for what fails). Retries transient faults (429, 5xx, timeouts, connection errors,
malformed bodies, a reply whose message or content is null or neither text nor a list of text
parts; text parts are joined into the reply's text) with exponential backoff that honours
Retry-After up to a cap (MEDRES_MAX_RETRY_AFTER seconds, default 60: a longer wait fails the
attempt as a transient error, retried on the usual backoff); permanent faults (4xx other than
408/409/429, and errors the client raises before sending, such as credentials in base_url) fail at
once. A failure is raised as ModelCallError, never turned into text; its message never holds the
API key or a password or token of the base URL. Waits between attempts are counted and timed
(`Completion.waits` / `waited_s`, `ModelCallError.waited_s`, and `on_wait` as they begin).

`timeout` is a deadline for the whole attempt (connect, send and every read of the reply), so a
server that drips its reply cannot hold a call past it. A refused connection is named as such
with its URL and retried at most REFUSED_RETRIES times; the error stops the model (run_calls
stops it after a few in a row, as for a rejected key). A reply without the log-probabilities the
request asked for is a permanent error that stops the model too: such an endpoint cannot be
scored by log-probabilities.

Token counts are read from the reply's usage as the provider reports them: prompt and completion
tokens (0 when absent) and the reasoning tokens of a thinking model (None when not reported)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from aiolimiter import AsyncLimiter

from ..runtime.fileio import env_number, storable_text
from ..runtime.jsontypes import JSONObject
from .spec import ModelSpec
from .transport import ChatTransport, sdk
from .urls import redact_url  # also re-exported: callers import it from here

TRANSIENT_STATUS = {408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529}
#: Statuses every later call of the model would repeat: a rejected key, an unknown model or path.
STOPPING_STATUS = {401: "authentication", 403: "authentication", 404: "not-found"}
#: The default of MEDRES_MAX_RETRY_AFTER: the longest Retry-After (seconds) the client waits.
MAX_RETRY_AFTER = 60.0
#: Retries of a call whose connections are refused (a dead endpoint rarely comes back within seconds).
REFUSED_RETRIES = 2


class ModelCallError(Exception):
    def __init__(
        self, message: str, *, permanent: bool, attempts: int, status: int | None = None, config: bool = False, waited_s: float = 0.0, stops: str | None = None
    ):
        super().__init__(message)
        self.permanent = permanent
        self.attempts = attempts
        self.status = status
        self.config = config  # raised by the client before sending: a configuration error
        self.waited_s = waited_s
        self.stops = stops  # a fault every later call would repeat ("connection-refused", "no-logprobs")

    @property
    def stops_model(self) -> str | None:
        """What makes every later call of this model fail the same way ("authentication",
        "not-found", "configuration", "connection-refused", "no-logprobs"), or None."""
        if self.config:
            return "configuration"
        if self.stops:
            return self.stops
        return STOPPING_STATUS.get(self.status) if self.status is not None else None


def spec_secrets(spec: ModelSpec) -> list[str]:
    """What must never be stored or shown: the API key (the value of `api_key_env`) and the
    passwords and query values of the spec's base URLs."""
    found: set[str] = set()
    if spec.api_key_env:
        try:
            found.add(spec.api_key())
        except Exception:  # a missing key is reported where it is needed
            pass
    for url in spec.base_urls:
        try:
            parts = urlsplit(url)
            if parts.password:
                found.add(parts.password)
            found.update(v for _, v in parse_qsl(parts.query))
        except ValueError:
            continue
    return sorted((s for s in found if len(s) >= 4), key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced by [redacted] (and made storable: see `storable_text`)."""
    text = storable_text(text)
    for s in secrets:
        if s in text:
            text = text.replace(s, "[redacted]")
    return text


@dataclass
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int
    top_logprobs: list[dict[str, float]] | None = None  # per generated position: token -> logprob
    raw_model: str | None = None
    extra: JSONObject = field(default_factory=dict)
    waits: int = 0  # waits before its retries
    waited_s: float = 0.0  # their total seconds
    #: the tools the reply calls, as sent back ({"id", "type", "function": {"name", "arguments"}}), or None
    tool_calls: list[dict[str, Any]] | None = None
    #: the reasoning tokens the provider reports (usage.completion_tokens_details.reasoning_tokens),
    #: or None when it reports none: never estimated (from a reasoning text or otherwise)
    reasoning_tokens: int | None = None


def _retry_after(err: Exception) -> float | None:
    resp = getattr(err, "response", None)
    if resp is None:
        return None
    headers = getattr(resp, "headers", {}) or {}
    for name in ("retry-after-ms", "Retry-After-Ms"):
        if name in headers:
            try:
                return float(headers[name]) / 1000.0
            except ValueError:
                pass
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


@dataclass(frozen=True)
class _Failed:
    """One failed attempt: its error, whether another attempt may succeed, the HTTP status, the
    endpoint's Retry-After (seconds) and what the failure says of the endpoint (`stops`)."""

    error: BaseException
    transient: bool
    status: int | None
    wait_hint: float | None
    stops: str | None


class OpenAICompatibleModel:
    """Async chat client over one or more base URLs of the same model."""

    def __init__(self, spec: ModelSpec, backoff_base: float = 0.5, backoff_max: float = 30.0, max_retry_after: float | None = None):
        self.spec = spec
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = env_number("MEDRES_MAX_RETRY_AFTER", MAX_RETRY_AFTER) if max_retry_after is None else max_retry_after
        self.secrets = spec_secrets(spec)
        #: called with the seconds of each wait before a retry, as it begins (progress display)
        self.on_wait: Callable[[float], None] | None = None
        key = spec.api_key()
        self._clients = [ChatTransport(url, key, spec.timeout) for url in spec.base_urls]
        self._next = itertools.cycle(range(len(self._clients)))
        self._limiter = _limiter(spec.rpm) if spec.rpm else None

    async def close(self) -> None:
        for c in self._clients:
            await c.close()

    async def __aenter__(self) -> OpenAICompatibleModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def complete(self, messages: list[dict[str, str]], params: Mapping[str, object]) -> Completion:
        attempts = waits = refused = 0
        waited = 0.0
        while True:
            attempts += 1
            client = self._clients[next(self._next)]
            if self._limiter is not None:
                await self._limiter.acquire()
            t0 = time.perf_counter()
            stops = None
            try:
                # The deadline covers the whole attempt: the transport's timeout bounds each read only.
                async with asyncio.timeout(self.spec.timeout):
                    resp = await client.post({"model": self.spec.model, "messages": messages, **params, **self.spec.extra_body})
            # an except clause's class is looked up only when something was raised: sdk() imports
            # the SDK at the first failure
            except sdk().APIStatusError as e:
                transient = e.status_code in TRANSIENT_STATUS
                err, status, wait_hint = self._status_error(e, e.status_code, client.base_url), e.status_code, _retry_after(e)
            except TimeoutError:
                transient, status, wait_hint = True, None, None
                err = DeadlineExceeded(f"no complete reply within the timeout of {self.spec.timeout:g} s")
            except (sdk().APITimeoutError, sdk().APIConnectionError) as e:
                transient, err, status, wait_hint = True, e, None, None
                if _refused(e):
                    refused += 1
                    err, stops = ConnectionRefused(f"connection refused at {redact_url(str(client.base_url))}"), "connection-refused"
            except (json.JSONDecodeError, UnicodeDecodeError) as e:  # a malformed body
                transient, err, status, wait_hint = True, e, None, None
            except (ValueError, TypeError) as e:
                # raised by the client before anything was sent (credentials in base_url, a bad
                # header or parameter): every attempt would fail the same way
                raise ModelCallError(
                    f"{type(e).__name__} (client configuration error, not sent): {self._scrub(str(e))[:300]}",
                    permanent=True,
                    attempts=attempts,
                    config=True,
                    waited_s=waited,
                ) from None
            else:
                try:
                    c = self._completion(resp, time.perf_counter() - t0, attempts)
                    c.waits, c.waited_s = waits, waited
                except (_Malformed, ValueError, KeyError, TypeError, AttributeError) as e:
                    transient, err, status, wait_hint = True, e, None, None
                else:
                    if params.get("logprobs") and c.top_logprobs is None:
                        raise ModelCallError(
                            "NoLogprobs (permanent): the endpoint returned no log-probabilities although the request asked "
                            "for them (logprobs=true); score this model with --scoring letter",
                            permanent=True,
                            attempts=attempts,
                            waited_s=waited,
                            stops="no-logprobs",
                        )
                    return c
            delay = self._retry_delay(_Failed(err, transient, status, wait_hint, stops), attempts, refused, waited)
            if delay > 0:
                waits += 1
                waited += delay
                if self.on_wait is not None:
                    self.on_wait(delay)
            await asyncio.sleep(delay)

    def _retry_delay(self, failed: _Failed, attempts: int, refused: int, waited: float) -> float:
        """How long to wait before the next attempt after a failed one: the endpoint's Retry-After
        (under the cap), else the jittered exponential backoff; ModelCallError when the failure is
        permanent or the retries are spent (fewer while every attempt was refused a connection)."""
        over_cap = failed.wait_hint is not None and failed.wait_hint > self.max_retry_after
        retries = min(self.spec.max_retries, REFUSED_RETRIES) if refused == attempts else self.spec.max_retries
        if not failed.transient or attempts > retries:
            kind = "permanent" if not failed.transient else f"gave up after {attempts} attempts"
            note = f"; Retry-After {failed.wait_hint:g} s is over the cap of {self.max_retry_after:g} s (MEDRES_MAX_RETRY_AFTER)" if over_cap else ""
            raise ModelCallError(
                f"{type(failed.error).__name__} ({kind}): {self._scrub(str(failed.error))[:300]}{note}",
                permanent=not failed.transient,
                attempts=attempts,
                status=failed.status,
                waited_s=waited,
                stops=failed.stops,
            )
        if failed.wait_hint is not None and not over_cap:  # a wait over the cap: this attempt failed, retried on the backoff
            return max(failed.wait_hint, 0.0)
        return min(self.backoff_max, self.backoff_base * (2 ** (attempts - 1))) * (0.5 + random.random() / 2)

    def _status_error(self, e: Exception, status: int, base_url: object) -> Exception:
        """The error an HTTP status reply is recorded as: a 404 says where it came from and what
        it means (a base_url without the API's version path, or a model the server does not
        serve); any other is the SDK's own."""
        if status != 404:
            return e
        if not urlsplit(str(base_url)).path.rstrip("/"):
            hint = "the base_url has no path; an OpenAI-compatible server's usually ends in /v1"
        else:
            hint = f"check that the server serves model '{self.spec.model}' and that the base_url is its API root (usually ending in /v1)"
        return NotFound(f"{e} at {redact_url(str(base_url))}: {hint}")

    def _scrub(self, text: str) -> str:
        return scrub(text, self.secrets)

    def _completion(self, resp: object, latency: float, attempts: int) -> Completion:
        return read_completion(resp, latency, attempts)


def read_completion(resp: object, latency: float = 0.0, attempts: int = 1) -> Completion:
    """A chat completion's JSON object (a live reply, or the body of a batch result line) as a
    Completion; one without a readable message is malformed (`_Malformed`, a ValueError)."""
    if not isinstance(resp, dict) or not resp.get("choices"):
        raise _Malformed("response has no choices")
    choice = resp["choices"][0]
    if not isinstance(choice, dict):
        raise _Malformed("the reply's choice is not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise _Malformed("the reply's message is null" if message is None else "the reply's message is not an object")
    text = _content_text(message.get("content"))
    text = None if text is None else storable_text(text)
    calls = _tool_calls(message.get("tool_calls"))
    if text is None and calls:
        text = ""  # a reply that only calls tools
    if text is None:
        refusal = message.get("refusal")
        if not (isinstance(refusal, str) and refusal):
            raise _Malformed("the reply's message content is null")
        text = storable_text(refusal)  # a refusal is an answer (scored as one)
    usage = _fields(resp.get("usage"))
    model = resp.get("model")
    return Completion(
        text=text,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        latency_s=latency,
        attempts=attempts,
        top_logprobs=_top_logprobs(choice.get("logprobs")),
        raw_model=model if isinstance(model, str) else None,
        tool_calls=calls,
        reasoning_tokens=_reasoning_tokens(usage),
    )


def _fields(value: object) -> dict[str, Any]:
    """An optional object of a reply: itself when it is one, else empty (absent, null or malformed)."""
    return value if isinstance(value, dict) else {}


def _top_logprobs(logprobs: object) -> list[dict[str, float]] | None:
    """Per generated position, the best log-probability of each token form offered there (the
    chosen token included); None when the reply carries none."""
    content = _fields(logprobs).get("content")
    if not content:
        return None
    tops = []
    for pos in content:
        d: dict[str, float] = {}
        for t in pos.get("top_logprobs") or []:
            token, logprob = t["token"], float(t["logprob"])
            if token not in d or logprob > d[token]:  # keep the best logprob per surface form
                d[token] = logprob
        if pos["token"] not in d:
            d[pos["token"]] = float(pos["logprob"])
        tops.append(d)
    return tops


def _reasoning_tokens(usage: Mapping[str, object]) -> int | None:
    """The reasoning tokens a reply's usage reports (`completion_tokens_details.reasoning_tokens`,
    a count of at least 0), else None: a missing, null or malformed count is not reported, and
    nothing is inferred from a reasoning text (`message.reasoning_content`) a server sends."""
    n = _fields(usage.get("completion_tokens_details")).get("reasoning_tokens")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _limiter(rpm: float) -> AsyncLimiter:
    """A leaky bucket holding at most one second's worth of requests (at least one), so a short
    run cannot burst a whole minute's budget at once."""
    per_second = rpm / 60.0
    capacity = max(1.0, per_second)
    return AsyncLimiter(capacity, capacity / per_second)


class _Malformed(ValueError):
    pass


class DeadlineExceeded(Exception):
    pass


class ConnectionRefused(Exception):
    pass


class NotFound(Exception):
    """A 404 from the chat endpoint, with the URL it came from and what to check."""


def _refused(err: BaseException) -> bool:
    """Whether a connection error was a refused connection (somewhere in its chain of causes)."""
    seen: set[int] = set()
    e: BaseException | None = err
    while e is not None and id(e) not in seen:
        if isinstance(e, ConnectionRefusedError):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _content_text(content: object) -> str | None:
    """A reply's text: a string as is, a list of text parts (`[{"type": "text", "text": ...}]`)
    joined; None stays None (a refusal may stand in); anything else is malformed."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = [t for p in content if isinstance(p, dict) and isinstance(t := p.get("text"), str)]
        if len(texts) == len(content):
            return "".join(texts)
    raise _Malformed(f"the reply's message content is {type(content).__name__}, not text or a list of text parts")


def _tool_calls(calls: object) -> list[dict[str, Any]] | None:
    """A reply's tool calls as plain dicts (id, type, function name and arguments text), or None
    when it calls none. The arguments are kept as sent: a caller reads them (and names a malformed
    one); a call without a function is malformed."""
    if not calls:
        return None
    if not isinstance(calls, list):
        raise _Malformed("the reply's tool calls are not a list")
    out = []
    for c in calls:
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            raise _Malformed("a tool call without a function")
        name, arguments = storable_text(str(fn.get("name") or "")), storable_text(str(fn.get("arguments") or ""))
        out.append({"id": storable_text(str(c.get("id") or "")), "type": "function", "function": {"name": name, "arguments": arguments}})
    return out
