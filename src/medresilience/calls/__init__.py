"""The one execution path for model calls (`execution`): a call's request key (the cache and
resume point), dedupe by key, bounded concurrency per model, one writer, every outcome stored with
its score, and the counts of a batch of calls (`RunStats`). Everything that calls a model goes
through `run_calls`: the evaluation (run/), suite building (build/), the judge, the extraction model
and the audit reader (scoring/, audit/) and the settings that make calls of their own
(mitigations/); so this package sits below all of them and imports none of them.

Submodules import from each other, never from this module; this module states the public API.

May import: models, runtime, score, store."""

from __future__ import annotations

from .execution import (
    BatchWaiting,
    CallRequest,
    CallSink,
    Dispatcher,
    ProgressFn,
    RunStats,
    add_stats,
    batch_mode,
    batching,
    request_key,
    run_calls,
    takes_waits,
)

__all__ = [
    "BatchWaiting",
    "CallRequest",
    "CallSink",
    "Dispatcher",
    "ProgressFn",
    "RunStats",
    "add_stats",
    "batch_mode",
    "batching",
    "request_key",
    "run_calls",
    "takes_waits",
]
