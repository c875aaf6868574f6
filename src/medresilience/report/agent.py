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
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..corpus.query import query_terms
from ..mitigations.roles import role_names
from ..mitigations.team_summary import is_team_summary
from .html import setting_name, units_url
from .parts import Cell, Column, Paragraph, Section, Table, count, dash, num, rate, text

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


def _first_user(messages: list[dict[str, Any]] | None) -> str:
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


def _run_units(run: Any) -> list[dict[str, Any]]:
    from ..store import Store

    db = run.path / "store.sqlite"
    if not db.exists():
        return []
    with Store.read_only(db) as store:
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


def _mean_over_items(df: pd.DataFrame, col: str) -> dict[str, Any]:
    """The mean per unit, with a bootstrap interval over items (each item's units averaged first)."""
    per_item = df.groupby("item_id", sort=False)[col].mean().to_numpy(dtype=np.float64)
    b = stats.bootstrap_mean(per_item)
    return {"mean": None if not len(df) else float(df[col].mean()), "lo": b["lo"], "hi": b["hi"], "items": int(len(per_item))}


def _rate(flags: Sequence[bool], items: Sequence[str]) -> dict[str, Any]:
    r = stats.clustered_rate(list(flags), list(items))
    return {"k": r.k, "n": r.n, "p": r.p, "lo": r.lo, "hi": r.hi}


def agent_tables(runs: Sequence[Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per run, model and agent setting; one row per agent unit)."""
    units = [u for r in runs for u in _run_units(r)]
    if not units:
        return pd.DataFrame(), pd.DataFrame(columns=UNIT_COLUMNS)
    per_unit = pd.DataFrame(units)
    rows = []
    for (run, model, setting), g in per_unit.groupby(["run", "model", "setting"], sort=False):
        short = _rate((g["outcome"] != "answered").tolist(), g["item_id"].tolist())
        aimed = g[g["searched_injected"].notna()]
        searched = _rate(aimed["searched_injected"].astype(bool).tolist(), aimed["item_id"].tolist())
        cites = [(c, u["item_id"]) for u in units if (u["run"], u["model"], u["setting"]) == (run, model, setting) for c in u["_cited"]]
        exist = _rate([bool(c.get("exists")) for c, _ in cites], [i for _, i in cites])
        worded = [(c, i) for c, i in cites if c.get("exists") and c.get("words")]
        contain = _rate([bool(c.get("contains")) for c, _ in worded], [i for _, i in worded])
        row: dict[str, Any] = {"run": run, "model": model, "setting": setting, "units": len(g), "items": int(g["item_id"].nunique())}
        for col in ("steps", "tool_calls", "tokens"):
            m = _mean_over_items(g, col)
            row.update({f"{col}_mean": m["mean"], f"{col}_lo": m["lo"], f"{col}_hi": m["hi"]})
        row["malformed"] = int(g["malformed"].sum())
        for name, r in (("short", short), ("searched_injected", searched), ("cited_exist", exist), ("cited_contain", contain)):
            row.update({f"{name}_k": r["k"], f"{name}_n": r["n"], f"{name}_p": r["p"], f"{name}_lo": r["lo"], f"{name}_hi": r["hi"]})
        rows.append(row)
    return pd.DataFrame(rows), per_unit[UNIT_COLUMNS]


def _mean_cell(r: Mapping[Hashable, object], col: str, tail: str = "") -> Cell:
    """A mean per unit with its interval beside it."""
    m, lo, hi = num(r[f"{col}_mean"]), num(r[f"{col}_lo"]), num(r[f"{col}_hi"])
    if m is None:
        return dash()
    note = () if lo is None or hi is None else (f"[{lo:.1f}, {hi:.1f}]",)
    return Cell(f"{m:.1f}", m, tail=tail, note=note, stacked=False, data={"lo": lo, "hi": hi})


NOTE = (
    "How each agent worked, from its stored trajectories. Steps, tool calls and tokens are means per unit with a "
    "bootstrap interval over items; the rates carry item-clustered intervals and their n. Units out of steps (or over "
    "their token budget) are errors: they enter no rate of the family's tables. 'Searched for the injected text': a "
    f"stressed unit's search query shares {INJECTED_TERMS} or more words with what its question adds to the clean one. "
    "'Cited passage exists': the backend has the passage id cited; 'holds the cited words': its text holds the quoted "
    "words. The agent's effect paired with none, and its tokens and money per item, are in the trade-off section."
)


def _rate_cell(r: Mapping[Hashable, object], name: str) -> Cell:
    return rate(r[f"{name}_p"], r[f"{name}_lo"], r[f"{name}_hi"], r[f"{name}_n"])


def section(runs: Sequence[Any]) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data tables (tables/agent: per run, model and setting; agent_units: per
    unit), or None when no run has an agent setting's trajectories."""
    table, per_unit = agent_tables(runs)
    if table.empty:
        return None
    several = table["run"].nunique() > 1
    rows = []
    for r in table.to_dict("records"):
        rows.append(
            (
                text(r["run"]),
                text(r["model"], strong=True),
                Cell(setting_name(r["setting"]), r["setting"]),
                count(r["units"], units_url(r["run"], r["model"], r["setting"]), tail=f" ({r['items']} items)"),
                _mean_cell(r, "steps"),
                _mean_cell(r, "tool_calls", f" ({r['malformed']} malformed)" if r["malformed"] else ""),
                _mean_cell(r, "tokens"),
                _rate_cell(r, "short"),
                _rate_cell(r, "searched_injected"),
                _rate_cell(r, "cited_exist"),
                _rate_cell(r, "cited_contain"),
            )
        )
    columns = (
        Column("run", "Run", shown=several),
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("units", "Units", numeric=True),
        Column("steps", "Steps per unit", numeric=True),
        Column("tool_calls", "Tool calls per unit", numeric=True),
        Column("tokens", "Tokens per unit", numeric=True),
        Column("out_of_steps", "Out of steps", numeric=True),
        Column("searched_injected", "Searched for the injected text", numeric=True),
        Column("cited_exist", "Cited passage exists", numeric=True),
        Column("cited_contain", "Holds the cited words", numeric=True),
    )
    shown = Table("agent_shown", columns, tuple(rows))
    return Section(ANCHOR, TITLE, (Paragraph(NOTE, "plain"), shown)), {"agent": table, "agent_units": per_unit}
