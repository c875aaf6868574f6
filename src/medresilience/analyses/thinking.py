"""Thinking time per model configuration (Cancer-Myth Table 4: the share fully right beside the
seconds per question): per model, setting and condition of a run (never pooled over settings: a
setting is part of the configuration), the mean latency of an answer call with a bootstrap
interval over items, the mean completion tokens per answer, the mean reasoning tokens per answer
and the share right (a valid score of at least 1, clustered by item).

Latency is the call's wall time as stored with every call (retries not included). Reasoning
tokens are what the provider reported in the call's usage
(`usage.completion_tokens_details.reasoning_tokens`), stored with the call; they are averaged over
the answers whose call reported a count (`reasoning_reported` of `answers`) and are None when no
call did (an older store, or a provider that reports none): never estimated. Providers that report
them count them among the completion tokens too."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from .. import stats
from ..runtime.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ..store import UnitResult


class ThinkingTime(TypedDict):
    """One model, setting and condition's time and tokens per answer (`thinking_time`)."""

    model: str
    setting: str
    condition: str
    answers: int
    seconds_per_answer: float | None
    seconds_lo: float | None
    seconds_hi: float | None
    items: int
    completion_tokens_per_answer: float | None
    reasoning_tokens_per_answer: float | None
    reasoning_reported: int
    right: float | None
    right_lo: float | None
    right_hi: float | None
    right_n: int


def thinking_time(run_dir: Path | str, *, seed: int = 0, n_resamples: int = 2000) -> list[ThinkingTime]:
    from ..store import Store

    db = Path(run_dir) / "store.sqlite"
    if not db.is_file():
        raise InputError(run_dir, None, None, "not a run directory (store.sqlite missing)")
    with Store.read_only(db) as store:
        results = list(store.unit_results(store.latest_run()))
        times = store.call_times({r.key for r in results})
    groups: dict[tuple[str, str, str], list[UnitResult]] = defaultdict(list)
    for r in results:
        groups[(r.model, r.setting, r.condition)].append(r)
    rows: list[ThinkingTime] = []
    for (model, setting, condition), rs in sorted(groups.items()):
        per_item: dict[str, list[float]] = defaultdict(list)
        tokens, thought = [], []
        for r in rs:
            if r.key not in times:  # no answer stored: neither seconds nor tokens
                continue
            lat, ct, rt = times[r.key]
            if lat is not None:
                per_item[str(r.item_id)].append(float(lat))
            tokens.append(ct)
            if rt is not None:
                thought.append(rt)
        item_means = [sum(v) / len(v) for v in per_item.values()]
        b = stats.bootstrap_mean(item_means, n_resamples=n_resamples, seed=seed)
        scored = [r for r in rs if r.status in ("valid", "invalid", "truncated")]
        right = stats.clustered_rate(
            [r.status == "valid" and r.value is not None and float(r.value) >= 1.0 for r in scored], [str(r.item_id) for r in scored], seed=seed
        )
        rows.append(
            {
                "model": model,
                "setting": setting,
                "condition": condition,
                "answers": len(tokens),
                "seconds_per_answer": b["mean"],
                "seconds_lo": b["lo"],
                "seconds_hi": b["hi"],
                "items": b["n"],
                "completion_tokens_per_answer": sum(tokens) / len(tokens) if tokens else None,
                "reasoning_tokens_per_answer": sum(thought) / len(thought) if thought else None,
                "reasoning_reported": len(thought),
                "right": right.p,
                "right_lo": right.lo,
                "right_hi": right.hi,
                "right_n": right.n,
            }
        )
    return rows
