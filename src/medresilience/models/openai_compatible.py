"""One client for every model: the OpenAI chat-completions protocol through the `openai` SDK
(async, aiohttp transport). Retries transient faults (429, 5xx, timeouts, connection errors,
malformed bodies) with exponential backoff that honours Retry-After; permanent faults (4xx other
than 408/409/429) fail at once. A failure is raised as ModelCallError, never turned into text."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Any

import openai
from aiolimiter import AsyncLimiter
from openai.types.chat import ChatCompletion

from .spec import ModelSpec

TRANSIENT_STATUS = {408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529}


class ModelCallError(Exception):
    def __init__(self, message: str, *, permanent: bool, attempts: int, status: int | None = None):
        super().__init__(message)
        self.permanent = permanent
        self.attempts = attempts
        self.status = status


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
    extra: dict[str, Any] = field(default_factory=dict)


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


class OpenAICompatibleModel:
    """Async chat client over one or more base URLs of the same model."""

    def __init__(self, spec: ModelSpec, backoff_base: float = 0.5, backoff_max: float = 30.0):
        self.spec = spec
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        key = spec.api_key()
        self._clients = [
            openai.AsyncOpenAI(
                base_url=url,
                api_key=key,
                max_retries=0,
                timeout=spec.timeout,
                http_client=openai.DefaultAioHttpClient(timeout=spec.timeout),
            )
            for url in spec.base_urls
        ]
        self._next = itertools.cycle(range(len(self._clients)))
        self._limiter = _limiter(spec.rpm) if spec.rpm else None

    async def close(self) -> None:
        for c in self._clients:
            await c.close()

    async def __aenter__(self) -> OpenAICompatibleModel:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def complete(self, messages: list[dict[str, str]], params: dict[str, Any]) -> Completion:
        attempts = 0
        while True:
            attempts += 1
            client = self._clients[next(self._next)]
            if self._limiter is not None:
                await self._limiter.acquire()
            t0 = time.perf_counter()
            try:
                # The SDK's public low-level `post`: same client, retries off, typed response; the
                # body is already plain JSON, so the per-call TypedDict transform of
                # `chat.completions.create` (a third of the client's CPU here) is skipped.
                resp = await client.post(
                    "/chat/completions",
                    body={"model": self.spec.model, "messages": messages, **params, **self.spec.extra_body},
                    cast_to=ChatCompletion,
                )
                if not getattr(resp, "choices", None):
                    raise _Malformed("response has no choices")
                return self._completion(resp, time.perf_counter() - t0, attempts)
            except openai.APIStatusError as e:
                transient = e.status_code in TRANSIENT_STATUS
                err, status, wait_hint = e, e.status_code, _retry_after(e)
            except (openai.APITimeoutError, openai.APIConnectionError) as e:
                transient, err, status, wait_hint = True, e, None, None
            except (openai.APIResponseValidationError, _Malformed, ValueError, KeyError, TypeError, AttributeError) as e:
                transient, err, status, wait_hint = True, e, None, None
            if not transient or attempts > self.spec.max_retries:
                kind = "permanent" if not transient else f"gave up after {attempts} attempts"
                raise ModelCallError(f"{type(err).__name__} ({kind}): {str(err)[:300]}", permanent=not transient, attempts=attempts, status=status)
            delay = min(self.backoff_max, self.backoff_base * (2 ** (attempts - 1))) * (0.5 + random.random() / 2)
            if wait_hint is not None:
                delay = max(wait_hint, 0.0)
            await asyncio.sleep(delay)

    def _completion(self, resp: Any, latency: float, attempts: int) -> Completion:
        choice = resp.choices[0]
        text = choice.message.content if choice.message is not None else None
        if text is None:
            text = ""
        usage = resp.usage
        tops = None
        lp = getattr(choice, "logprobs", None)
        if lp is not None and getattr(lp, "content", None):
            tops = []
            for pos in lp.content:
                d: dict[str, float] = {}
                for t in pos.top_logprobs or []:
                    # keep the best logprob per surface form
                    if t.token not in d or t.logprob > d[t.token]:
                        d[t.token] = t.logprob
                if pos.token not in d:
                    d[pos.token] = pos.logprob
                tops.append(d)
        return Completion(
            text=text,
            finish_reason=choice.finish_reason,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
            attempts=attempts,
            top_logprobs=tops,
            raw_model=getattr(resp, "model", None),
        )


def _limiter(rpm: float) -> AsyncLimiter:
    """A leaky bucket holding at most one second's worth of requests (at least one), so a short
    run cannot burst a whole minute's budget at once."""
    per_second = rpm / 60.0
    capacity = max(1.0, per_second)
    return AsyncLimiter(capacity, capacity / per_second)


class _Malformed(Exception):
    pass
