"""The misleading family's mitigation trade-off (`Family.tradeoff`): for each model and setting
against `none`, paired on the same units with this family's own comparison (`compare.compare_sides`:
ASR on the items answered correctly clean on both sides, item-clustered bootstrap intervals, exact
or clustered McNemar):

- gains: Type 1 ASR down (the study's defence-table measure: before, after, change, share left)
  and Type 2 ASR down;
- costs: clean accuracy, pooled and per source dataset (the study's "other benchmarks": MedQA,
  MedMCQA, MMLU, PubMedQA, ... whichever sources the suite has), one column each in the
  value-per-method layout."""

from __future__ import annotations

from collections.abc import Hashable
from functools import partial

import pandas as pd

from ....report.tradeoff import Row, TradeoffRow, effect_row
from .compare import Side, compare_sides

FAMILY = "misleading"
VALUES_REF = "Cancer-Myth Table 1"
RESIDUAL_REF = "MedMisBench Table 20"


def _pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    present = frame.groupby(["model", "setting"], observed=True, sort=False).size()
    have = [(str(m), str(s)) for m, s in present.index]
    return [(m, s) for m, s in have if s != "none" and (m, "none") in have]


def _sides(frame: pd.DataFrame, model: str, setting: str) -> tuple[Side, Side]:
    m = (frame["model"].astype(str) == model).to_numpy()
    s = frame["setting"].astype(str).to_numpy()
    return Side("", model, "none", frame[m & (s == "none")]), Side("", model, setting, frame[m & (s == setting)])


def _records(table: pd.DataFrame) -> dict[tuple[str, str], dict[Hashable, object]]:
    return {(str(r["condition"]), str(r["metric"])): r for r in table.to_dict("records")}


def _add(
    rows: list[TradeoffRow],
    model: str,
    setting: str,
    metric: str,
    label: str,
    role: str,
    higher: bool,
    rec: Row,
    *,
    primary: bool = False,
    stratum: str = "all",
    layout: str | None = None,
    column: str | None = None,
    ref: str | None = None,
) -> None:
    rows.append(effect_row(model, setting, FAMILY, metric, label, role, higher, rec, primary=primary, stratum=stratum, layout=layout, column=column, ref=ref))


def tradeoff(frame: pd.DataFrame) -> list[TradeoffRow]:
    rows: list[TradeoffRow] = []
    sources = sorted(str(s) for s in frame["source"].dropna().unique()) if "source" in frame else []
    for model, setting in _pairs(frame):
        recs = _records(compare_sides(*_sides(frame, model, setting)).table)
        row = partial(_add, rows, model, setting)
        if ("type1", "asr") in recs:
            row("type1_asr", "Type 1 ASR", "gain", False, recs[("type1", "asr")], primary=True, layout="residual", column="Type 1 ASR", ref=RESIDUAL_REF)
        if ("type2", "asr") in recs:
            row("type2_asr", "Type 2 ASR", "gain", False, recs[("type2", "asr")], primary=("type1", "asr") not in recs)
        clean = recs.get(("clean", "accuracy"))
        if clean is None:
            continue
        one = len(sources) == 1
        row(
            "clean_acc",
            "Clean accuracy",
            "cost",
            True,
            clean,
            primary=True,
            stratum=sources[0] if one else "all",
            layout="values" if one else None,
            column=f"{sources[0]} (clean MCQ)" if one else None,
            ref=VALUES_REF if one else None,
        )
        if one:
            continue
        for src in sources:
            sub = frame[(frame["source"].astype(str) == src).to_numpy()]
            rec = _records(compare_sides(*_sides(sub, model, setting)).table).get(("clean", "accuracy"))
            if rec is not None:
                row("clean_acc", "Clean accuracy", "cost", True, rec, stratum=src, layout="values", column=f"{src} (clean MCQ)", ref=VALUES_REF)
    return rows
