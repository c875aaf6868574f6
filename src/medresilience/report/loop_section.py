"""A report section on an answer loop's settings (search agents, clinical teams), built one way:
each run's units read from its store (one row per unit with a stored loop summary), one row per
run, model and setting summing them, and the shown table: run, model, setting and units (linked to
them in the viewer) first, then the loop's own cells. The data tables are `<anchor>` (per run,
model and setting) and `<anchor>_units` (per unit)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ..store import Store
from .html import setting_name, units_url
from .parts import Cell, Column, Paragraph, Section, Table, count, dash, num, rate, text
from .rundir import RunData

#: one unit's row as a section reads it from a store (column -> value)
SectionUnit = dict[str, object]
#: one row of the shown table, as the data frame gives it
Record = Mapping[Hashable, object]

#: the columns every loop section's shown table starts with
LEAD_COLUMNS = ("run", "model", "setting", "units")


@dataclass(frozen=True)
class LoopSection:
    """What one loop's section declares: its anchor, title and note; `read(run, store)`, the rows of
    a run's units (each with run, model, setting, item_id and the `unit_columns`); `summarise(g)`,
    the figures of one run, model and setting's units (after run, model and setting: units and
    items first); `columns` and `cells(record)`, the shown table's columns and cells after
    `LEAD_COLUMNS`."""

    anchor: str
    title: str
    note: str
    unit_columns: Sequence[str]
    read: Callable[[RunData, Store], list[SectionUnit]]
    summarise: Callable[[pd.DataFrame], dict[str, object]]
    columns: tuple[Column, ...]
    cells: Callable[[Record], tuple[Cell, ...]]


def run_units(run: RunData, read: Callable[[RunData, Store], list[SectionUnit]]) -> list[SectionUnit]:
    """`read(run, store)` on the run's store, opened read-only; none when the run has no store."""
    db = run.path / "store.sqlite"
    if not db.exists():
        return []
    with Store.read_only(db) as store:
        return read(run, store)


def loop_tables(runs: Sequence[RunData], spec: LoopSection) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per run, model and setting; one row per unit)."""
    units = [u for r in runs for u in run_units(r, spec.read)]
    if not units:
        return pd.DataFrame(), pd.DataFrame(columns=list(spec.unit_columns))
    per_unit = pd.DataFrame(units)
    rows = [
        {"run": run, "model": model, "setting": setting, **spec.summarise(g)}
        for (run, model, setting), g in per_unit.groupby(["run", "model", "setting"], sort=False)
    ]
    return pd.DataFrame(rows), per_unit[list(spec.unit_columns)]


def mean_cell(r: Record, col: str, tail: str = "") -> Cell:
    """A mean per unit (`<col>_mean`) with its interval (`<col>_lo`, `<col>_hi`) beside it."""
    m, lo, hi = num(r[f"{col}_mean"]), num(r[f"{col}_lo"]), num(r[f"{col}_hi"])
    if m is None:
        return dash()
    note = () if lo is None or hi is None else (f"[{lo:.1f}, {hi:.1f}]",)
    return Cell(f"{m:.1f}", m, tail=tail, note=note, stacked=False, data={"lo": lo, "hi": hi})


def rate_cell(r: Record, name: str) -> Cell:
    """A rate (`<name>_p`) with its interval and n."""
    return rate(r[f"{name}_p"], r[f"{name}_lo"], r[f"{name}_hi"], r[f"{name}_n"])


def loop_section(runs: Sequence[RunData], spec: LoopSection) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data tables (`<anchor>`: per run, model and setting; `<anchor>_units`:
    per unit), or None when no run has units of the loop."""
    table, per_unit = loop_tables(runs, spec)
    if table.empty:
        return None
    several = table["run"].nunique() > 1
    rows = [
        (
            text(r["run"]),
            text(r["model"], strong=True),
            Cell(setting_name(str(r["setting"])), str(r["setting"])),
            count(r["units"], units_url(str(r["run"]), str(r["model"]), str(r["setting"])), tail=f" ({r['items']} items)"),
            *spec.cells(r),
        )
        for r in table.to_dict("records")
    ]
    columns = (
        Column("run", "Run", shown=several),
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("units", "Units", numeric=True),
        *spec.columns,
    )
    shown = Table(f"{spec.anchor}_shown", columns, tuple(rows))
    return Section(spec.anchor, spec.title, (Paragraph(spec.note, "plain"), shown)), {spec.anchor: table, f"{spec.anchor}_units": per_unit}
