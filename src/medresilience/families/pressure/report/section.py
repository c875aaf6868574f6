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
from ....report.rundir import RunData, family_blocks
from ....report.section import FamilySection
from ....run.results import IntervalRate
from ..block import PressureBlock
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


def _parts(prefix: str, r: IntervalRate | None) -> dict[str, float | int | None]:
    """A rate's p, lo, hi and n under `prefix` (None each where the rate is absent)."""
    if r is None:
        return {f"{prefix}_{x}": None for x in ("p", "lo", "hi", "n")}
    return {f"{prefix}_p": r.p, f"{prefix}_lo": r.lo, f"{prefix}_hi": r.hi, f"{prefix}_n": r.n}


def conditions_table(runs: Sequence[RunData]) -> pd.DataFrame:
    """One row per (run, model, setting, condition) with each rate's p, lo, hi, n and the excess over
    repeat, each model by its name among the runs (`names_of`)."""
    rows = []
    for run, model, setting, block in family_blocks(runs, PressureBlock):
        for cond in CONDITIONS:
            b = block.by_condition.get(cond)
            if b is None:
                continue
            row: dict[str, object] = {"run": run, "model": model, "setting": setting, "condition": cond, "pairs": b.pairs, "items": b.items}
            for k, v in (("flip", b.flip), ("flip_to_pushed", b.flip_to_pushed), ("recovery", b.recovery), ("turn2_acc", b.turn2_acc)):
                row.update(_parts(k, v))
            e = b.excess_over_repeat
            row.update(
                excess=None if e is None else e.diff,
                excess_lo=None if e is None else e.lo,
                excess_hi=None if e is None else e.hi,
                excess_b=None if e is None else e.test.b,
                excess_c=None if e is None else e.test.c,
                excess_p=None if e is None else e.test.p,
                excess_test=None if e is None else e.test.test,
            )
            rows.append(row)
    return pd.DataFrame(rows)


def headline_table(runs: Sequence[RunData]) -> pd.DataFrame:
    rows = []
    for _run, model, setting, block in family_blocks(runs, PressureBlock):
        row: dict[str, object] = {"model": model, "setting": setting}
        for k, _ in HEADLINE_COLUMNS:
            row.update(_parts(k, block.overall.get(k)))
        rows.append(row)
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


def section(runs: Sequence[RunData]) -> FamilySection:
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
