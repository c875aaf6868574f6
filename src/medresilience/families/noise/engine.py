"""The generator calls of the clinical-noise builder: stages of structured-output calls through the
one execution path, as every builder runs them (the spine's `stages` module holds the runner)."""

from __future__ import annotations

from ...stages import (
    RETRY_NOTE,
    Outcome,
    Rejected,
    StageProgress,
    StageStats,
    Task,
    parse_object,
    request_for,
    response_format,
    run_stage,
    with_retry,
)

__all__ = [
    "RETRY_NOTE",
    "Outcome",
    "Rejected",
    "StageProgress",
    "StageStats",
    "Task",
    "parse_object",
    "request_for",
    "response_format",
    "run_stage",
    "with_retry",
]
