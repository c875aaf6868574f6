"""The report's section on clinical teams (`team` settings, mitigations.team): per run, model and
team setting, how its units worked, read from each unit's stored summary (mitigations.team_summary)
and summed as results.json's `teams` block (run.teams):

- the complexity the moderator chose (basic, intermediate, advanced; triages left unread);
- experts recruited, rounds of discussion, calls and tokens per unit (means with a bootstrap
  interval over items: each item's units averaged first);
- the share of units whose experts ended in agreement (of those where experts spoke), and the share
  not answered (an unread triage or recruitment, over the call limit or the token budget: errors,
  never in a rate of the family's tables), each with an item-clustered interval.

Its effect paired with `none` (each family's own measures, with intervals and exact or clustered
tests) and its calls, tokens and money per item are rows of the trade-off section, like any setting's."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..mitigations.team_summary import unit_rows
from ..run.teams import LEVELS, block
from ..store import Store
from .loop_section import LoopSection, Record, SectionUnit, loop_section, loop_tables, mean_cell, rate_cell
from .parts import Cell, Column, Section
from .rundir import RunData

TITLE = "Clinical teams: complexity, recruitment, discussion and cost"
ANCHOR = "team"
UNIT_COLUMNS = [
    "run",
    "model",
    "setting",
    "unit_id",
    "item_id",
    "condition",
    "outcome",
    "complexity",
    "experts",
    "roles",
    "rounds",
    "agreed",
    "calls",
    "tokens",
]

NOTE = (
    "How each team worked, from its units' stored summaries. The moderator's triage picks one clinician (basic), a "
    "team of specialists who discuss over rounds (intermediate) or several teams whose reports are combined "
    "(advanced); a forced mode skips the triage. Experts, rounds, calls and tokens are means per unit with a "
    "bootstrap interval over items; the rates carry item-clustered intervals and their n. Units not answered (an "
    "unread triage or recruitment, or over their call or token limit) are errors: they enter no rate of the family's "
    "tables. The team's effect paired with none, and its calls, tokens and money per item, are in the trade-off section."
)


def _run_units(run: RunData, store: Store) -> list[SectionUnit]:
    return [{**r, "run": run.name, "model": run.model_name(r["model"]), "roles": "; ".join(r["roles"])} for r in unit_rows(store)]


def _summarise(g: pd.DataFrame) -> dict[str, object]:
    b = block(g)
    row: dict[str, object] = {"units": b["units"], "items": b["items"]}
    row.update({f"complexity_{k}": v for k, v in b["complexity"].items()})
    for col in ("experts", "rounds", "calls", "tokens"):
        m = b[f"{col}_per_unit"]
        row.update({f"{col}_mean": m["mean"], f"{col}_lo": m["lo"], f"{col}_hi": m["hi"]})
    for name in ("agreed", "not_answered"):
        row.update({f"{name}_{k}": v for k, v in b[name].items()})
    return row


def _levels(r: Record) -> Cell:
    shown = [f"{k} {r[f'complexity_{k}']}" for k in (*LEVELS, "unread") if r[f"complexity_{k}"]]
    return Cell(", ".join(shown) or "—", None)


def _cells(r: Record) -> tuple[Cell, ...]:
    return (
        _levels(r),
        mean_cell(r, "experts"),
        mean_cell(r, "rounds"),
        rate_cell(r, "agreed"),
        mean_cell(r, "calls"),
        mean_cell(r, "tokens"),
        rate_cell(r, "not_answered"),
    )


SECTION = LoopSection(
    ANCHOR,
    TITLE,
    NOTE,
    UNIT_COLUMNS,
    _run_units,
    _summarise,
    (
        Column("complexity", "Complexity chosen"),
        Column("experts", "Experts per unit", numeric=True),
        Column("rounds", "Rounds per unit", numeric=True),
        Column("agreed", "Ended in agreement", numeric=True),
        Column("calls", "Calls per unit", numeric=True),
        Column("tokens", "Tokens per unit", numeric=True),
        Column("not_answered", "Not answered", numeric=True),
    ),
    _cells,
)


def team_tables(runs: Sequence[RunData]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per run, model and team setting; one row per team unit)."""
    return loop_tables(runs, SECTION)


def section(runs: Sequence[RunData]) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data tables (tables/team: per run, model and setting; team_units: per
    unit), or None when no run has a team setting's units."""
    return loop_section(runs, SECTION)
