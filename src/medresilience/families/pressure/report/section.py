"""The pressure family's report section: per model and setting, one row per condition with the
flip after commitment, the flips to the pushed option, the recoveries, turn-2 accuracy and the
excess flip over the `repeat` control (paired by item: difference with its item-clustered
interval and the paired McNemar), as report parts and CSV tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ....report.html import rate_units, units_url
from ....report.parts import Cell, Column, Paragraph, Section, Table, change, count, num, paired_test, rate, text, whole
from ....report.rundir import names_of
from ....report.section import FamilySection
from ..taxonomy import CONDITIONS, FAMILY, HEADLINE_COLUMNS, LABELS

TITLE = "Pressure after commitment"
RATES = ("flip", "flip_to_pushed", "recovery", "turn2_acc")
#: the viewer outcome behind each rate's count (its k); turn-2 accuracy links to every unit of the condition
OUTCOMES = {"flip": "flip", "flip_to_pushed": "flip_to_target", "recovery": "recovered", "turn2_acc": None}
INTRO = (
    "Each item is asked clean (turn 1); the model's own reply stays in the conversation and the user pushes back in a "
    "second turn; the model answers again. Flip: right at turn 1, not right at turn 2. Excess: the condition's flip minus "
    "the repeat control's on the same items (item-clustered interval; the exact McNemar with one pair per item, Durkalski's "
    "clustered McNemar where an item gives several)."
)


def conditions_table(runs: Sequence[Any]) -> pd.DataFrame:
    """One row per (run, model, setting, condition) with each rate's p, lo, hi, n and the excess over
    repeat, each model by its name among the runs (`names_of`)."""
    names = names_of(runs)
    rows = []
    for r in runs:
        for model, settings in (r.results.get("models") or {}).items():
            for setting, block in settings.items():
                for cond in CONDITIONS:
                    b = (block.get("by_condition") or {}).get(cond)
                    if b is None:
                        continue
                    row: dict[str, Any] = {
                        "run": r.name,
                        "model": names.name(r.name, model),
                        "setting": setting,
                        "condition": cond,
                        "pairs": b["pairs"],
                        "items": b["items"],
                    }
                    for k in RATES:
                        v = b.get(k) or {}
                        row.update({f"{k}_{x}": v.get(x) for x in ("p", "lo", "hi", "n")})
                    e = b.get("excess_over_repeat") or {}
                    t = e.get("test") or {}
                    row.update(
                        excess=e.get("diff"),
                        excess_lo=e.get("lo"),
                        excess_hi=e.get("hi"),
                        excess_b=t.get("b"),
                        excess_c=t.get("c"),
                        excess_p=t.get("p"),
                        excess_test=t.get("test"),
                    )
                    rows.append(row)
    return pd.DataFrame(rows)


def headline_table(runs: Sequence[Any]) -> pd.DataFrame:
    names = names_of(runs)
    rows = []
    for r in runs:
        for model, settings in (r.results.get("models") or {}).items():
            for setting, block in settings.items():
                o = block.get("overall", {})
                rows.append(
                    {
                        "model": names.name(r.name, model),
                        "setting": setting,
                        **{f"{k}_{x}": (o.get(k) or {}).get(x) for k, _ in HEADLINE_COLUMNS for x in ("p", "lo", "hi", "n")},
                    }
                )
    return pd.DataFrame(rows)


def _units(r: Any, k: str) -> int | None:
    """How many units a rate's link names: its k (the units of its outcome), or its n (every
    answered unit of the condition, a rate with no outcome)."""
    p, n = num(getattr(r, f"{k}_p")), whole(getattr(r, f"{k}_n"))
    if n is None or p is None:
        return None
    return n if OUTCOMES[k] is None else round(p * n)


def _test(r: Any) -> Cell:
    """The paired test of the excess: 'mcnemar_exact: 12 / 4, p 0.046'."""
    return paired_test(r.excess_test, r.excess_p, r.excess_b, r.excess_c)


def _row(r: Any) -> tuple[Cell, ...]:
    # the pairs: the second turns answered after an answered first turn
    cells = [
        text(r.model),
        text(r.setting),
        Cell(LABELS[r.condition], r.condition),
        count(r.pairs, units_url(r.run, r.model, r.setting, r.condition, "paired")),
    ]
    for k in RATES:
        p, lo, hi, n = (getattr(r, f"{k}_{x}") for x in ("p", "lo", "hi", "n"))
        cells.append(rate(p, lo, hi, n, rate_units(r.run, r.model, r.setting, r.condition, OUTCOMES[k]), _units(r, k)))
    return (*cells, change(r.excess, r.excess_lo, r.excess_hi), _test(r))


COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("condition", "Condition"),
    Column("pairs", "Pairs", numeric=True),
    Column("flip", "Flip", numeric=True),
    Column("flip_to_pushed", "Flip to pushed", numeric=True),
    Column("recovery", "Recovery", numeric=True),
    Column("turn2_acc", "Turn 2 acc", numeric=True),
    Column("excess", "Excess over repeat", numeric=True),
    Column("test", "Test", numeric=True),
)


def _section(t: pd.DataFrame) -> Section:
    if t.empty:
        return Section(FAMILY, TITLE, (Paragraph("No scored results.", "plain"),))
    return Section(FAMILY, TITLE, (Paragraph(INTRO, "plain"), Table("pressure_shown", COLUMNS, tuple(_row(r) for r in t.itertuples()))))


def section(runs: Sequence[Any]) -> FamilySection:
    t = conditions_table(runs)
    h = headline_table(runs)
    return FamilySection(
        family=FAMILY,
        title=TITLE,
        key_parts=(Paragraph("No scored results." if h.empty else INTRO, "plain"),),
        parts=[_section(t)],
        tables={"pressure_conditions": t, "pressure_headline": h},
        headline=h,
        summary_columns=list(HEADLINE_COLUMNS),
    )
