"""The results frame: the store's units, calls and scores joined with the suite's item and probe
facts, one row per unit, as a pandas DataFrame. Every later number is computed from this frame.

`status` is one of: valid (a readable answer), invalid (a reply with no readable answer),
error (the call failed after retries; excluded from every rate and counted), missing (not run)."""

from __future__ import annotations

import pandas as pd

from .records import Suite
from .store import RESULT_COLUMNS, Store

FRAME_COLUMNS = [
    "model", "defense", "scoring", "item_id", "probe_id", "condition", "source", "subject",
    "content_type", "provenance", "target", "gold", "label", "status", "correct",
    "prompt_tokens", "completion_tokens", "cost",
]


def results_frame(store: Store, suite: Suite) -> pd.DataFrame:
    chunks = [pd.DataFrame.from_records(rows, columns=RESULT_COLUMNS) for rows in store.iter_results()]
    raw = pd.concat(chunks, ignore_index=True) if chunks else pd.DataFrame(columns=RESULT_COLUMNS)
    items = pd.DataFrame(
        [(it.id, it.source, it.subject, it.answer) for it in suite.items.values()],
        columns=["item_id", "source", "subject", "gold"],
    )
    probes = pd.DataFrame(
        [(p.id, p.content_type, p.provenance, p.target) for p in suite.probes],
        columns=["probe_id", "content_type", "provenance", "target"],
    )
    df = raw.merge(items, on="item_id", how="left").merge(probes, on="probe_id", how="left")
    status = pd.Series("missing", index=df.index, dtype=object)
    status[df["call_status"] == "error"] = "error"
    ok = df["call_status"] == "ok"
    status[ok & (df["score_status"] == "valid")] = "valid"
    status[ok & (df["score_status"] != "valid")] = "invalid"
    df["status"] = status
    df["defense"] = df["defense"].astype(bool)
    df["correct"] = (df["status"] == "valid") & (df["label"] == df["gold"])
    return df[FRAME_COLUMNS]
