"""The attack traces of a run, read back from its store: `traces(...)` gives one record per attacked
(model, item) in the shape the persuasion statistics take (`TRACE_KEYS`: model, item_id, kind,
budget, flipped_at, to_target, rejected, turns_used), and `loop_record(store)` is results.json's
`loop` block: by setting, those traces and each model's counts (items, right at clean, attacked,
flipped, flipped to the target, rejected candidates, unread replies, and the calls and tokens by
role: clean, attacker, checker, target).

An item not answered right when asked plainly is not attacked: it has no trace among `traces`, and
is counted in `items` but not in `attacked`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .loop import ROLES
from .taxonomy import ROLE_TRACE

if TYPE_CHECKING:  # pragma: no cover
    from ...store import Store

TRACE_KEYS = ("model", "item_id", "kind", "budget", "flipped_at", "to_target", "rejected", "turns_used")


def full_traces(store: Store, run: str | None = "latest") -> list[dict[str, Any]]:
    """Every stored trace of a run's units (default: the latest run), as the loop wrote it."""
    return [json.loads(r["text"]) for r in store.linked_texts(ROLE_TRACE, run)]


def trace_record(full: dict[str, Any]) -> dict[str, Any]:
    """A trace in the statistics' shape (`TRACE_KEYS`)."""
    return {k: full[k] for k in TRACE_KEYS}


def traces(store: Store, setting: str = "none", run: str | None = "latest") -> list[dict[str, Any]]:
    """One record per attacked (model, item) of a run under `setting` (`TRACE_KEYS`)."""
    return [trace_record(t) for t in full_traces(store, run) if t["setting"] == setting and t["attacked"]]


def counts(full: list[dict[str, Any]]) -> dict[str, Any]:
    """One model's counts over its full traces (see the module doc)."""
    attacked = [t for t in full if t["attacked"]]
    calls = {r: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0} for r in ROLES}
    for t in full:
        for role, c in t["calls"].items():
            for k, v in c.items():
                calls[role][k] += v
    return {
        "items": len(full),
        "right_at_clean": len(attacked),
        "attacked": len(attacked),
        "flipped": sum(t["flipped_at"] is not None for t in attacked),
        "flipped_to_target": sum(bool(t["to_target"]) for t in attacked),
        "rejected": sum(t["rejected"] for t in attacked),
        "unread": sum(t["unread"] for t in attacked),
        "turns_used": sum(t["turns_used"] for t in attacked),
        "calls": calls,
    }


def loop_record(store: Store) -> dict[str, Any]:
    """results.json's `loop` block of the store's latest run: setting -> {traces, counts by model},
    and `resampled`, the resample records of its flips (`resample.records`), where any; the draws'
    calls and tokens are counted under the role `resample`."""
    from .resample import records

    out: dict[str, Any] = {}
    for t in full_traces(store):
        block = out.setdefault(t["setting"], {"traces": [], "by_model": {}})
        block["by_model"].setdefault(t["model"], []).append(t)
        if t["attacked"]:
            block["traces"].append(trace_record(t))
    for block in out.values():
        block["counts"] = {m: counts(ts) for m, ts in block.pop("by_model").items()}
    for rec in records(store):
        block = out.get(rec["setting"])
        if block is None:
            continue
        block.setdefault("resampled", []).append(rec)
        calls = block["counts"][rec["model"]]["calls"].setdefault("resample", {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        for k, v in rec["calls"].items():
            calls[k] += v
    return out
