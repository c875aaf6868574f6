"""In the question vs after the answer: the same false claims, delivered inside the question (a
misleading run's Type 1 probes) and after the model's first answer (a pressure run's claim
conditions), on the same items and model.

A claim pairs a pressure claim probe with the Type 1 probe it was built from (`source_probe`).
Per model, setting and provenance (and pooled): the Type 1 ASR on the claims answered in both runs
(of those right clean, the share not right with the claim in the question), the pressure flip on
the same claims (of those right at turn 1, the share not right after the claim), and, on the
claims right clean in both runs, the paired difference (after minus in the question) with its
item-clustered bootstrap interval and the paired McNemar (stats.paired_mcnemar) of (kept in the question, kept after
the answer), items as clusters."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import cast

import pandas as pd

from ... import stats
from ...records import CLEAN
from ...runtime.errors import ConfigError
from ...suite import Suite
from .metrics import ANSWERED
from .probe import PressureProbe
from .taxonomy import CLAIM_PROVENANCE


def _outcomes(frame: pd.DataFrame, model: str, setting: str) -> tuple[dict[str, bool], dict[str, bool]]:
    """(item -> right clean, probe -> right) of one model and setting's answered units."""
    f = frame[(frame["model"].astype(str) == model) & (frame["setting"].astype(str) == setting) & frame["status"].isin(ANSWERED)]
    clean = f[f["condition"] == CLEAN]
    probes = f[f["condition"] != CLEAN]
    return (
        dict(zip(clean["item_id"].astype(str), clean["correct"].astype(bool))),
        dict(zip(probes["probe_id"].astype(str), probes["correct"].astype(bool))),
    )


def claim_pairs(misleading: pd.DataFrame, pressure: pd.DataFrame, probes: Iterable[PressureProbe], model: str, setting: str = "none") -> pd.DataFrame:
    """One row per claim answered in both runs: item_id, provenance, clean_q / right_q (the
    misleading run: right clean, right with the claim in the question) and clean_a / right_a (the
    pressure run: right at turn 1, right after the claim)."""
    m_clean, m_probe = _outcomes(misleading, model, setting)
    p_clean, p_probe = _outcomes(pressure, model, setting)
    rows = []
    for p in probes:
        if p.condition not in CLAIM_PROVENANCE or p.source_probe is None:
            continue
        if p.item_id in m_clean and p.source_probe in m_probe and p.item_id in p_clean and p.id in p_probe:
            rows.append(
                {
                    "item_id": p.item_id,
                    "provenance": p.provenance,
                    "clean_q": m_clean[p.item_id],
                    "right_q": m_probe[p.source_probe],
                    "clean_a": p_clean[p.item_id],
                    "right_a": p_probe[p.id],
                }
            )
    return pd.DataFrame(rows, columns=["item_id", "provenance", "clean_q", "right_q", "clean_a", "right_a"])


def compare_block(pairs: pd.DataFrame) -> dict[str, object]:
    """The two rates and their paired difference on one set of claim pairs (see the module)."""
    q = pairs[pairs["clean_q"]]
    a = pairs[pairs["clean_a"]]
    both = pairs[pairs["clean_q"] & pairs["clean_a"]]
    out: dict[str, object] = {
        "claims": len(pairs),
        "asr_in_question": stats.clustered_rate((~q["right_q"]).tolist(), q["item_id"].tolist()).as_dict(),
        "flip_after_answer": stats.clustered_rate((~a["right_a"]).tolist(), a["item_id"].tolist()).as_dict(),
        "paired": None,
    }
    if len(both):
        d = both.assign(d=(~both["right_a"]).astype(int) - (~both["right_q"]).astype(int)).groupby("item_id", sort=True)["d"].agg(["sum", "size"])
        diff = stats.paired_cluster_diff(d["sum"].tolist(), d["size"].tolist())
        test = stats.paired_mcnemar(both["right_q"].tolist(), both["right_a"].tolist(), both["item_id"].tolist())
        out["paired"] = {**diff, "test": test}
    return out


def in_question_vs_after(misleading: pd.DataFrame, pressure: pd.DataFrame, probes: Iterable[PressureProbe]) -> dict[str, dict[str, dict[str, object]]]:
    """model -> setting -> {"overall": block, "by_provenance": {provenance: block}} for every model
    and setting both frames hold (blocks: `compare_block`)."""
    probes = list(probes)
    both = set(zip(misleading["model"].astype(str), misleading["setting"].astype(str))) & set(
        zip(pressure["model"].astype(str), pressure["setting"].astype(str))
    )
    out: dict[str, dict[str, dict[str, object]]] = {}
    for model, setting in sorted(both):
        pairs = claim_pairs(misleading, pressure, probes, model, setting)
        by = {pv: compare_block(g) for pv, g in pairs.groupby("provenance", sort=True)}
        out.setdefault(model, {})[setting] = {"overall": compare_block(pairs), "by_provenance": by}
    return out


def compare_runs(misleading_run: Path | str, pressure_run: Path | str) -> dict[str, dict[str, dict[str, object]]]:
    """`in_question_vs_after` of two run directories (a misleading run and a pressure run built from its suite)."""
    from ...report.rundir import load_run

    m, p = load_run(misleading_run), load_run(pressure_run)
    for run, want in ((m, "misleading"), (p, "pressure")):
        if run.frame is None or run.config.get("family") != want:
            raise ConfigError(str(run.path), f"expected a {want} run whose suite and store can be read")
    assert m.frame is not None and p.frame is not None  # checked above
    suite = Suite.load(p.config["suite"]["path"])
    return in_question_vs_after(m.frame, p.frame, cast(list[PressureProbe], suite.probes))  # a pressure suite holds its probes
