"""The stub's fault model: which fault (429, 500, timeout, a hostile reply shape, ...) a request
body gets, fixed by a stable hash of (seed, canonical body), never by call order; and the banded
draws a scripted policy uses the same way."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .bodies import canonical_body

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
    "surrogate",
    "bad_request",
    "error",
    "batch",  # a line of a batch answered (batches.BatchEndpoints)
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
    "surrogate",
)
TRANSIENT_FAULTS = frozenset({"429", "500", "503", "timeout", "malformed", "null_content", "null_message", "429_long", "content_number", "drip"})
#: Faults on every attempt of a body: the permanent errors and the persistent reply shapes.
PERMANENT_FAULTS = frozenset({"permanent", "401", "404", "content_parts", "echo_key", "no_logprobs", "surrogate"})


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
    rate_surrogate: float = Field(
        0.0, ge=0.0, le=1.0, description="a 200 whose answer ends in a lone UTF-16 surrogate, escaped in valid JSON as \\ud800 (every attempt)"
    )
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
            ("surrogate", self.rate_surrogate),
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


def fault_digest(seed: int, canonical: bytes) -> bytes:
    return hashlib.sha256(b"medres-stub-fault:%d:" % seed + canonical).digest()


def fault_from_digest(faults: Faults, digest: bytes) -> str | None:
    return band_of(int.from_bytes(digest[:8], "big") / 2.0**64, faults.bands())


def assign_fault(faults: Faults, body: object, attempt: int | None = None) -> str | None:
    """The fault the stub assigns to a request body (one of FAULT_OUTCOMES) or None.

    With `attempt` (1-based) given, the outcome that attempt actually gets: transient faults
    apply only while attempt <= transient_attempts; the permanent ones ("permanent", "401",
    "404") apply to every attempt."""
    if not faults.has_faults:
        return None
    fault = fault_from_digest(faults, fault_digest(faults.seed, canonical_body(body)))
    if fault is None or attempt is None or fault in PERMANENT_FAULTS:
        return fault
    return fault if attempt <= faults.transient_attempts else None
