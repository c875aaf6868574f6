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

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..mitigations.team_summary import unit_rows
from ..run.teams import LEVELS, block
from .html import setting_name, units_url
from .parts import Cell, Column, Paragraph, Section, Table, count, dash, num, rate, text

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


def _run_units(run: Any) -> list[dict[str, Any]]:
    from ..store import Store

    db = run.path / "store.sqlite"
    if not db.exists():
        return []
    with Store.read_only(db) as store:
        rows = unit_rows(store)
    return [{**r, "run": run.name, "model": run.model_name(r["model"]), "roles": "; ".join(r["roles"])} for r in rows]


def team_tables(runs: Sequence[Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per run, model and team setting; one row per team unit)."""
    units = [u for r in runs for u in _run_units(r)]
    if not units:
        return pd.DataFrame(), pd.DataFrame(columns=UNIT_COLUMNS)
    per_unit = pd.DataFrame(units)
    rows = []
    for (run, model, setting), g in per_unit.groupby(["run", "model", "setting"], sort=False):
        b = block(g)
        row: dict[str, Any] = {"run": run, "model": model, "setting": setting, "units": b["units"], "items": b["items"]}
        row.update({f"complexity_{k}": v for k, v in b["complexity"].items()})
        for col in ("experts", "rounds", "calls", "tokens"):
            m = b[f"{col}_per_unit"]
            row.update({f"{col}_mean": m["mean"], f"{col}_lo": m["lo"], f"{col}_hi": m["hi"]})
        for name in ("agreed", "not_answered"):
            row.update({f"{name}_{k}": v for k, v in b[name].items()})
        rows.append(row)
    return pd.DataFrame(rows), per_unit[UNIT_COLUMNS]


def _mean_cell(r: Mapping[Hashable, object], col: str) -> Cell:
    m, lo, hi = num(r[f"{col}_mean"]), num(r[f"{col}_lo"]), num(r[f"{col}_hi"])
    if m is None:
        return dash()
    note = () if lo is None or hi is None else (f"[{lo:.1f}, {hi:.1f}]",)
    return Cell(f"{m:.1f}", m, note=note, stacked=False, data={"lo": lo, "hi": hi})


def _levels(r: Mapping[Hashable, object]) -> Cell:
    shown = [f"{k} {r[f'complexity_{k}']}" for k in (*LEVELS, "unread") if r[f"complexity_{k}"]]
    return Cell(", ".join(shown) or "—", None)


def _rate_cell(r: Mapping[Hashable, object], name: str) -> Cell:
    return rate(r[f"{name}_p"], r[f"{name}_lo"], r[f"{name}_hi"], r[f"{name}_n"])


def section(runs: Sequence[Any]) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data tables (tables/team: per run, model and setting; team_units: per
    unit), or None when no run has a team setting's units."""
    table, per_unit = team_tables(runs)
    if table.empty:
        return None
    several = table["run"].nunique() > 1
    rows = [
        (
            text(r["run"]),
            text(r["model"], strong=True),
            Cell(setting_name(r["setting"]), r["setting"]),
            count(r["units"], units_url(r["run"], r["model"], r["setting"]), tail=f" ({r['items']} items)"),
            _levels(r),
            _mean_cell(r, "experts"),
            _mean_cell(r, "rounds"),
            _rate_cell(r, "agreed"),
            _mean_cell(r, "calls"),
            _mean_cell(r, "tokens"),
            _rate_cell(r, "not_answered"),
        )
        for r in table.to_dict("records")
    ]
    columns = (
        Column("run", "Run", shown=several),
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("units", "Units", numeric=True),
        Column("complexity", "Complexity chosen"),
        Column("experts", "Experts per unit", numeric=True),
        Column("rounds", "Rounds per unit", numeric=True),
        Column("agreed", "Ended in agreement", numeric=True),
        Column("calls", "Calls per unit", numeric=True),
        Column("tokens", "Tokens per unit", numeric=True),
        Column("not_answered", "Not answered", numeric=True),
    )
    shown = Table("team_shown", columns, tuple(rows))
    return Section(ANCHOR, TITLE, (Paragraph(NOTE, "plain"), shown)), {"team": table, "team_units": per_unit}
