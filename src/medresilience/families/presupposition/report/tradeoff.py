"""The false-presupposition family's mitigation trade-off (`Family.tradeoff`): for each model and
setting against `none`, paired on the questions both sides had scored, with this family's own
comparison (`compare.compare_sides`: one probe per question, so pairs are independent; paired
bootstrap intervals, exact McNemar for the rates, the exact paired permutation test for PCS):

- gains: PCR up (the share of answers that fully correct the false premise; the study's
  Cancer-Myth column) and PCS up (the mean judge score, -1..1; exact paired permutation test);
- cost: over-caution on the control questions without a false presupposition up (shown as the
  study's NFP column, 1 - over-caution, in the value-per-method layout)."""

from __future__ import annotations

import pandas as pd

from ....report.tradeoff import TradeoffRow, effect_row
from ..taxonomy import FAMILY
from .compare import Side, compare_sides

VALUES_REF = "Cancer-Myth Table 1"


def tradeoff(frame: pd.DataFrame) -> list[TradeoffRow]:
    rows: list[TradeoffRow] = []
    present = frame.groupby(["model", "setting"], observed=True, sort=False).size()
    have = [(str(m), str(s)) for m, s in present.index]
    for model, setting in [(m, s) for m, s in have if s != "none" and (m, "none") in have]:
        m = (frame["model"].astype(str) == model).to_numpy()
        s = frame["setting"].astype(str).to_numpy()
        table = compare_sides(Side("", model, "none", frame[m & (s == "none")]), Side("", model, setting, frame[m & (s == setting)])).table
        recs = {r["metric"]: r for r in table.to_dict("records")}
        if "pcr" in recs:
            rows.append(
                effect_row(
                    model,
                    setting,
                    FAMILY,
                    "pcr",
                    "PCR (false premise fully corrected)",
                    "gain",
                    True,
                    recs["pcr"],
                    primary=True,
                    layout="values",
                    column="PCR (premise corrected)",
                    ref=VALUES_REF,
                )
            )
        if "pcs" in recs:
            rows.append(effect_row(model, setting, FAMILY, "pcs", "PCS (mean judge score, -1..1)", "gain", True, recs["pcs"], unit="score"))
        if "overcaution" in recs:
            rows.append(
                effect_row(
                    model,
                    setting,
                    FAMILY,
                    "overcaution",
                    "Over-caution on the control questions (NFP)",
                    "cost",
                    False,
                    recs["overcaution"],
                    primary=True,
                    layout="values",
                    column="NFP (1 - over-caution)",
                    ref=VALUES_REF,
                )
            )
    return rows
