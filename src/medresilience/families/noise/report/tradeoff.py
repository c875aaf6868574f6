"""The clinical-noise family's mitigation trade-off (`Family.tradeoff`): for each model and setting
against `none`, paired on the same units with this family's own comparison (`compare.compare_sides`:
per condition, accuracy on the units answered on both sides, item-clustered bootstrap, exact
McNemar; every variant pooled with the clustered McNemar):

- gains: accuracy under each perturbation up (the pooled row is the plot's);
- costs: accuracy on the original case, pooled and per source dataset (one column each in the
  value-per-method layout)."""

from __future__ import annotations

from collections.abc import Hashable

import pandas as pd

from ....report.tradeoff import TradeoffRow, effect_row
from ..taxonomy import FAMILY, POOLED, TITLES, WHITESPACE
from .compare import Side, compare_sides

VALUES_REF = "Cancer-Myth Table 1"


def _pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    present = frame.groupby(["model", "setting"], observed=True, sort=False).size()
    have = [(str(m), str(s)) for m, s in present.index]
    return [(m, s) for m, s in have if s != "none" and (m, "none") in have]


def _compare(frame: pd.DataFrame, model: str, setting: str) -> dict[str, dict[Hashable, object]]:
    m = (frame["model"].astype(str) == model).to_numpy()
    s = frame["setting"].astype(str).to_numpy()
    table = compare_sides(Side("", model, "none", frame[m & (s == "none")]), Side("", model, setting, frame[m & (s == setting)])).table
    return {str(r["condition"]): r for r in table.to_dict("records") if r["metric"] == "accuracy"}


def tradeoff(frame: pd.DataFrame) -> list[TradeoffRow]:
    rows: list[TradeoffRow] = []
    sources = sorted(str(s) for s in frame["source"].dropna().unique()) if "source" in frame else []
    for model, setting in _pairs(frame):
        recs = _compare(frame, model, setting)
        variants = [c for c in recs if c not in ("clean", POOLED)]
        for cond in variants:
            label = f"Accuracy, {TITLES.get(cond, cond)}" + (" (a control, not a stress)" if cond == WHITESPACE else "")
            rows.append(effect_row(model, setting, FAMILY, f"{cond}_acc", label, "gain", True, recs[cond], primary=POOLED not in recs and cond == variants[0]))
        if POOLED in recs:
            rows.append(effect_row(model, setting, FAMILY, "perturbed_acc", "Accuracy, every variant pooled", "gain", True, recs[POOLED], primary=True))
        clean = recs.get("clean")
        if clean is None:
            continue
        one = len(sources) == 1
        rows.append(
            effect_row(
                model,
                setting,
                FAMILY,
                "clean_acc",
                "Accuracy on the original case",
                "cost",
                True,
                clean,
                primary=True,
                stratum=sources[0] if one else "all",
                layout="values" if one else None,
                column=f"{sources[0]} (original case)" if one else None,
                ref=VALUES_REF if one else None,
            )
        )
        if one:
            continue
        for src in sources:
            rec = _compare(frame[(frame["source"].astype(str) == src).to_numpy()], model, setting).get("clean")
            if rec is not None:
                rows.append(
                    effect_row(
                        model,
                        setting,
                        FAMILY,
                        "clean_acc",
                        "Accuracy on the original case",
                        "cost",
                        True,
                        rec,
                        stratum=src,
                        layout="values",
                        column=f"{src} (original case)",
                        ref=VALUES_REF,
                    )
                )
    return rows
