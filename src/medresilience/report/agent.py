"""The report's section on search agents (`agent:` settings, mitigations.agent): per run, model and
agent setting, how the agent worked, read from each unit's stored trajectory summary:

- steps and tool calls per unit (a mean with a bootstrap interval over items: each item's units
  averaged first), tool calls that could not be carried out (malformed), tokens per unit;
- units out of steps or over their token budget (k of n, item-clustered interval): errors, never
  in a rate of the family's tables;
- whether the agent searched for the injected text: for a stressed unit, whether one of its
  search queries shares at least `INJECTED_TERMS` query terms (corpus.query_terms) with what its
  question holds and the clean question of the same item does not (the injected claim, the
  noise); clean units, and units whose question adds no term, are left out;
- its citations: the share of cited passage ids the backend has, and of those citing words, the
  share whose passage holds the cited words as a run of whole words (item-clustered intervals).

Its effect paired with `none` (each family's own measures of resilience and accuracy, with
intervals and exact or clustered tests) and its tokens and money per item are rows of the
trade-off section, like any setting's."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import stats
from ..corpus.query import query_terms
from ..mitigations.roles import role_names
from ..mitigations.team_summary import is_team_summary
from ..store import Store
from .loop_section import LoopSection, Record, SectionUnit, loop_section, loop_tables, mean_cell, rate_cell
from .parts import Cell, Column, Section
from .rundir import RunData

TITLE = "Search agents: steps, searches and citations"
ANCHOR = "agent"
#: the query terms a search shares with the injected text to count as searching for it
INJECTED_TERMS = 2
_ALL_TERMS = 100_000

UNIT_COLUMNS = [
    "run",
    "model",
    "setting",
    "unit_id",
    "item_id",
    "condition",
    "outcome",
    "steps",
    "tool_calls",
    "malformed",
    "searches",
    "searched_injected",
    "cited",
    "cited_exist",
    "cited_contain",
    "tokens",
]


def _first_user(messages: Sequence[Mapping[str, object]] | None) -> str:
    for m in messages or []:
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def _searched_injected(searches: list[str], question: str, clean: str | None) -> bool | None:
    if clean is None:
        return None
    injected = set(query_terms(question, _ALL_TERMS)) - set(query_terms(clean, _ALL_TERMS))
    if not injected:
        return None
    need = min(INJECTED_TERMS, len(injected))
    return any(len(injected & set(query_terms(q, _ALL_TERMS))) >= need for q in searches)


def _loads(text: object) -> object:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _run_units(run: RunData, store: Store) -> list[SectionUnit]:
    rows = [r for role in role_names("summary") for r in store.linked_texts(role)]  # each unit's loop summary
    rows = [r for r in rows if not is_team_summary(_loads(r["text"]))]  # a team's summary is not an agent's trajectory
    if not rows:
        return []
    messages = store.request_messages({r["key"] for r in rows})
    clean_of = {(r["model"], r["setting"], r["item_id"]): _first_user(messages.get(r["key"])) for r in rows if r["probe_id"] is None}
    out = []
    for r in rows:
        s = json.loads(r["text"])
        cited = s.get("cited") or []
        with_words = [c for c in cited if c.get("exists") and c.get("words")]
        question = _first_user(messages.get(r["key"]))
        clean = None if r["probe_id"] is None else clean_of.get((r["model"], r["setting"], r["item_id"]))
        out.append(
            {
                "run": run.name,
                "model": run.model_name(r["model"]),  # its name in the report (model_names)
                "setting": r["setting"],
                "unit_id": r["unit_id"],
                "item_id": r["item_id"],
                "condition": r["condition"],
                "outcome": s.get("outcome"),
                "steps": s.get("steps"),
                "tool_calls": s.get("tool_calls"),
                "malformed": s.get("malformed"),
                "searches": len(s.get("searches") or []),
                "searched_injected": _searched_injected(s.get("searches") or [], question, clean),
                "cited": len(cited),
                "cited_exist": sum(1 for c in cited if c.get("exists")),
                "cited_contain": sum(1 for c in with_words if c.get("contains")),
                "tokens": (s.get("prompt_tokens") or 0) + (s.get("completion_tokens") or 0),
                "_cited": cited,
            }
        )
    return out


def _mean_over_items(df: pd.DataFrame, col: str) -> tuple[float | None, float | None, float | None]:
    """(the mean per unit, the low and high ends of its bootstrap interval over items: each item's
    units averaged first)."""
    per_item = df.groupby("item_id", sort=False)[col].mean().to_numpy(dtype=np.float64)
    b = stats.bootstrap_mean(per_item)
    return (None if not len(df) else float(df[col].mean())), b["lo"], b["hi"]


def _rate(flags: Sequence[bool], items: Sequence[str]) -> stats.Rate:
    return stats.clustered_rate(list(flags), list(items))


def _summarise(g: pd.DataFrame) -> dict[str, object]:
    short = _rate((g["outcome"] != "answered").tolist(), g["item_id"].tolist())
    aimed = g[g["searched_injected"].notna()]
    searched = _rate(aimed["searched_injected"].astype(bool).tolist(), aimed["item_id"].tolist())
    cites = [(c, i) for cited, i in zip(g["_cited"], g["item_id"]) for c in cited]
    exist = _rate([bool(c.get("exists")) for c, _ in cites], [i for _, i in cites])
    worded = [(c, i) for c, i in cites if c.get("exists") and c.get("words")]
    contain = _rate([bool(c.get("contains")) for c, _ in worded], [i for _, i in worded])
    row: dict[str, object] = {"units": len(g), "items": int(g["item_id"].nunique())}
    for col in ("steps", "tool_calls", "tokens"):
        row[f"{col}_mean"], row[f"{col}_lo"], row[f"{col}_hi"] = _mean_over_items(g, col)
    row["malformed"] = int(g["malformed"].sum())
    for name, r in (("short", short), ("searched_injected", searched), ("cited_exist", exist), ("cited_contain", contain)):
        row.update({f"{name}_k": r.k, f"{name}_n": r.n, f"{name}_p": r.p, f"{name}_lo": r.lo, f"{name}_hi": r.hi})
    return row


NOTE = (
    "How each agent worked, from its stored trajectories. Steps, tool calls and tokens are means per unit with a "
    "bootstrap interval over items; the rates carry item-clustered intervals and their n. Units out of steps (or over "
    "their token budget) are errors: they enter no rate of the family's tables. 'Searched for the injected text': a "
    f"stressed unit's search query shares {INJECTED_TERMS} or more words with what its question adds to the clean one. "
    "'Cited passage exists': the backend has the passage id cited; 'holds the cited words': its text holds the quoted "
    "words. The agent's effect paired with none, and its tokens and money per item, are in the trade-off section."
)


def _cells(r: Record) -> tuple[Cell, ...]:
    return (
        mean_cell(r, "steps"),
        mean_cell(r, "tool_calls", f" ({r['malformed']} malformed)" if r["malformed"] else ""),
        mean_cell(r, "tokens"),
        rate_cell(r, "short"),
        rate_cell(r, "searched_injected"),
        rate_cell(r, "cited_exist"),
        rate_cell(r, "cited_contain"),
    )


SECTION = LoopSection(
    ANCHOR,
    TITLE,
    NOTE,
    UNIT_COLUMNS,
    _run_units,
    _summarise,
    (
        Column("steps", "Steps per unit", numeric=True),
        Column("tool_calls", "Tool calls per unit", numeric=True),
        Column("tokens", "Tokens per unit", numeric=True),
        Column("out_of_steps", "Out of steps", numeric=True),
        Column("searched_injected", "Searched for the injected text", numeric=True),
        Column("cited_exist", "Cited passage exists", numeric=True),
        Column("cited_contain", "Holds the cited words", numeric=True),
    ),
    _cells,
)


def agent_tables(runs: Sequence[RunData]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per run, model and agent setting; one row per agent unit)."""
    return loop_tables(runs, SECTION)


def section(runs: Sequence[RunData]) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data tables (tables/agent: per run, model and setting; agent_units: per
    unit), or None when no run has an agent setting's trajectories."""
    return loop_section(runs, SECTION)
