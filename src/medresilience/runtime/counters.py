"""The counters of one execution of model calls (`RunStats`), declared once: the call path counts
into it (calls.run_calls and everything that calls models through it), and results.json's
`last_execution` is its fields as a dict, validated by this same class when results are built,
written and loaded (run.results). A new counter is a field here and nowhere else.

May import: nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import ConfigDict

from .jsontypes import JSONObject


@dataclass
class RunStats:
    #: read back from results.json, a key that is no counter is refused (pydantic validates the dataclass)
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    planned_units: int = 0
    unique_calls: int = 0
    cached: int = 0
    called: int = 0
    ok: int = 0
    errors: int = 0
    permanent_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    error_samples: list[str] = field(default_factory=list)
    not_run: int = 0  # calls left unsent: their model was stopped, or the call a setting makes before them failed
    retry_waits: int = 0  # waits before a retry (backoff or Retry-After)
    retry_wait_s: float = 0.0
    stopped: list[str] = field(default_factory=list)  # one line per stopped model
    settled_from: str | None = None  # a rerun of this settled run: nothing was planned or called
    agent_short: int = 0  # agent units that used their steps or tokens without a final answer (not scored)
    fallbacks: list[str] = field(default_factory=list)  # one line per model asked in another format than the run asked (answer_format)
    batch_waiting: int = 0  # calls in a provider batch that has not ended: the run waits for them (batch_mode)
    batch_lines: list[str] = field(default_factory=list)  # one status line per batch looked at or submitted

    def as_dict(self) -> JSONObject:
        return {k: v for k, v in self.__dict__.items()}
