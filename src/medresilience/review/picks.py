"""The statistics of a rubric where raters pick the true one of two (the realism check,
Cancer-Myth §3.3: which of a generated and a real patient question a patient wrote), written by
`medres review stats` when the rubric declares `extra["pick"] = (dimension, hidden fact)`.

- Per unit (pair): the raters who picked the true one, k of n, and the exact one-sided binomial
  test of k against chance (1/2; H1: raters pick it more often), so a pair is told apart at
  p < 0.05.
- The share of picks that were right, clustered by pair; the pairs told apart; the pairs at least
  40% of raters could not tell (at most 60% picked the true one)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import stats
from .db import ReviewDB, opened

ALPHA = 0.05
UNSURE_SHARE = 0.6  # at most this share picking the true one: at least 40% could not tell


@dataclass
class PickStats:
    per_unit: pd.DataFrame  # unit_id, item_id, k, n, share, p_value, told_apart
    summary: dict[str, Any]


def compute_picks(review: Path | str | ReviewDB, *, confidence: float = 0.95, seed: int = 0) -> PickStats:
    with opened(review) as db:
        rubric = db.rubric
        pick = rubric.extra.get("pick")
        if not pick:
            raise ValueError(f"rubric {rubric.key} does not ask raters to pick the true one")
        dim, fact = pick
        units = db.units()
        picks = [
            (r["unit_id"], r["values"].get(dim) == units[r["unit_id"]].hidden.get(fact))
            for r in db.ratings()
            if r["status"] == "rated" and r["values"].get(dim)
        ]
    rows = []
    for uid, u in units.items():
        got = [ok for v, ok in picks if v == uid]
        k, n = sum(got), len(got)
        p = stats.binomial_test(k, n, 0.5, "greater")
        rows.append(
            {"unit_id": uid, "item_id": u.item_id, "k": k, "n": n, "share": k / n if n else None, "p_value": p, "told_apart": None if p is None else p < ALPHA}
        )
    per_unit = pd.DataFrame(rows)
    rated = per_unit[per_unit["n"] > 0]
    overall = stats.clustered_rate([ok for _, ok in picks], [u for u, _ in picks], confidence, seed=seed)
    told = int(rated["told_apart"].astype(bool).sum())
    unsure = int((rated["share"] <= UNSURE_SHARE).sum())
    summary = {
        "picked_true": {"k": overall.k, "n": overall.n, "p": overall.p, "lo": overall.lo, "hi": overall.hi, "clusters": "units"},
        "units": len(rated),
        "told_apart": told,
        "not_told_apart": len(rated) - told,
        "at_least_40pct_unsure": unsure,
        "test": "exact one-sided binomial test against 1/2 per unit (H1: raters pick the true one more often), alpha 0.05",
    }
    return PickStats(per_unit, summary)


def write(res: PickStats, out_dir: Path | str) -> dict[str, Path]:
    from ..runtime.fileio import atomic_write, write_csv_frame

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_csv_frame(out / "picks.csv", res.per_unit)
    with atomic_write(out / "picks_summary.json") as fh:
        json.dump(res.summary, fh, indent=2, default=str)
    return {"picks": out / "picks.csv", "picks_summary": out / "picks_summary.json"}
