"""results.json's `teams` block: per model and `team` setting, how its units worked (from their
stored summaries, `mitigations.team_summary`): units and items; the complexity levels chosen
(basic, intermediate, advanced, and triages left unread); units not answered, by why (an unread
triage or recruitment, over the call limit or the token budget) with their share (k of n and an
item-clustered interval); experts recruited, rounds of discussion, calls and tokens per unit (means
with a bootstrap interval over items, each item's units averaged first); and the share of units
whose experts ended in agreement (of those where experts spoke)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..mitigations.team_summary import TeamUnit, unit_rows
from ..runtime.jsontypes import JSONObject
from ..store import Store

LEVELS = ("basic", "intermediate", "advanced")
MEANS = ("experts", "rounds", "calls", "tokens")


def _rate(flags: Sequence[bool], items: Sequence[str]) -> JSONObject:
    r = stats.clustered_rate(list(flags), list(items))
    return {"k": r.k, "n": r.n, "p": r.p, "lo": r.lo, "hi": r.hi}


def _mean(g: pd.DataFrame, col: str) -> JSONObject:
    per_item = g.groupby("item_id", sort=False)[col].mean().to_numpy(dtype=np.float64)
    b = stats.bootstrap_mean(per_item)
    return {"mean": float(g[col].mean()), "lo": b["lo"], "hi": b["hi"], "items": int(len(per_item))}


def block(g: pd.DataFrame) -> dict[str, Any]:  # read by report.team by computed keys ({measure}_per_unit)
    """One model and setting's block from its units' rows."""
    levels = g["complexity"].fillna("unread").value_counts().to_dict()
    spoke = g[g["agreed"].notna()]
    return {
        "units": int(len(g)),
        "items": int(g["item_id"].nunique()),
        "complexity": {k: int(levels.get(k, 0)) for k in (*LEVELS, "unread")},
        "outcomes": {str(k): int(v) for k, v in g["outcome"].value_counts().sort_index().items()},
        "not_answered": _rate((g["outcome"] != "answered").tolist(), g["item_id"].tolist()),
        "agreed": _rate(spoke["agreed"].astype(bool).tolist(), spoke["item_id"].tolist()),
        **{f"{col}_per_unit": _mean(g, col) for col in MEANS},
        "calls": int(g["calls"].sum()),
        "tokens": int(g["tokens"].sum()),
    }


def team_blocks(rows: Sequence[TeamUnit]) -> dict[str, dict[str, JSONObject]]:
    """model -> team setting -> its block (see the module doc); empty when no unit has a team summary."""
    if not rows:
        return {}
    df = pd.DataFrame(list(rows))
    out: dict[str, dict[str, JSONObject]] = {}
    for (model, setting), g in df.groupby(["model", "setting"], sort=True):
        out.setdefault(str(model), {})[str(setting)] = block(g)
    return out


def team_results(store: Store, run: str | None = "latest") -> dict[str, dict[str, JSONObject]]:
    """The `teams` block of a run's results (see the module doc)."""
    return team_blocks(unit_rows(store, run))
