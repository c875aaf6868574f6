"""Mitigations: what they buy and what they cost. For each model and setting (a named mitigation)
against `none` on the same units, every family in the report states its gains (resilience on its
stress test) and its costs (accuracy on ordinary questions, over-caution on controls), each a
paired difference with its interval and test; this module adds the tokens and money per item,
Holm's correction within each model x setting, a plot of gain against cost, and two compact
layouts (one row per model and method with each measure's value; one row per model and setting
with a measure before, after, the change and the share left). It names no family: the measures,
their labels and which layout shows them are the families' rows.

A family states its rows with `Family.tradeoff(frame) -> list[dict]`: the frame holds one model's
units under `none` and under one or more other settings (from one run, or the setting's run plus
the `none` units of another run of the same family); `effect_row` builds a row from a paired
comparison. Row fields:

- model, setting, family; metric (a key: the family's `Outcomes.filters` names the viewer's filter
  of its units, `Outcomes.versus` those of its paired test's pairs, b and c), label (for people), stratum (an items' source dataset, `all` when pooled); role: `gain` (what the setting is for) or `cost` (what it may break);
- unit: `rate` (a share, 0..1) or `score` (a mean score); higher_is_better;
- none, none_lo, none_hi: the measure under `none` on the paired units, with its 95% interval;
  value, value_lo, value_hi: the same under the setting;
- diff = value - none, in the measure's own units and direction (a fall in a rate where lower is
  better is negative), with lo, hi: its paired 95% interval (bootstrap resampling items, so
  several units of one item move together);
- benefit: diff turned so that positive means better (diff where higher is better, -diff
  otherwise): a realised gain or a cost avoided is positive, a cost paid is negative;
- p, test: the paired test (exact McNemar for a share with one pair per item, the clustered McNemar
  of Durkalski et al. with several; the exact paired permutation test for a mean score, clustered
  when an item gives several pairs: p-values come from exact or clustered tests only, the bootstrap
  gives the interval), b / c: its discordant
  pairs (the event under `none` and not under the setting, and the reverse), n: pairs, items;
- primary: the one gain and the one cost of the family the plot draws; layout: `values` (the
  value per method layout), `residual` (before / after / change / share left) or None; column: its
  header there; ref: the published table the layout mirrors.

The spine adds run and none_run, p_holm (Holm over every row with a p of one model x setting,
across families), and per family the usage rows: tokens (prompt + completion) and money per item
(money where both sides are priced; calls per item where the two sides differ), described with a
paired bootstrap interval over items (no test; not in Holm). They sum every call the setting's
units made: each unit's own call, read from the frame (once per unit: a call two units of one
setting share counts for both), plus extra linked calls. A judge's scoring calls are the
evaluation's cost, alike under every setting, and are not counted. A setting that makes extra
calls for a unit (a monitor model's note before the answer) stores them under keys of their own,
linked to the unit in the store (`unit_calls`); `store_linked_usage` reads them
(`Store.linked_usage`) and they count for their items beside the units' own calls. Other
sources of extra calls plug in with `register_linked_usage(fn)`: `fn(run)` returns rows
(model, setting, item_id, prompt_tokens, completion_tokens, cost, calls) of those calls.

Pairing: a setting is paired with `none` of the same model in the same run, else in another run
of the same family (the same suite preferred). Units pair by (item, probe, condition); a unit
planned on one side only is left out, counted, and the section warns."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from .. import stats
from ..family import Family, get
from ..frame import epochs_of
from ..mitigations import NONE
from ..mitigations.roles import not_model_callers, role_names
from ..registry import Registry
from ..scoring.types import ANSWERED
from .html import collapsible, count_cell, diff_cell, esc, linked, pair_url, rate_cell, rate_units, setting_name, sig_class, test_cell, units_url
from .html import signed as signed_change
from .html import table as html_table
from .tables import fmt_p, markdown_table
from .templating import macros

TITLE = "Mitigations: what they buy and what they cost"
ANCHOR = "tradeoff"
COLUMNS = [
    "model",
    "setting",
    "family",
    "run",
    "none_run",
    "role",
    "metric",
    "label",
    "stratum",
    "unit",
    "higher_is_better",
    "none",
    "none_lo",
    "none_hi",
    "value",
    "value_lo",
    "value_hi",
    "diff",
    "lo",
    "hi",
    "benefit",
    "p",
    "p_holm",
    "test",
    "b",
    "c",
    "n",
    "items",
    "primary",
    "layout",
    "column",
    "ref",
]
PAIRING_COLUMNS = [
    "model",
    "setting",
    "family",
    "run",
    "none_run",
    "units_none",
    "units_setting",
    "only_none",
    "only_setting",
    "items_none",
    "items_setting",
    "items_paired",
    "answered_one_side",
]


def store_linked_usage(run: Any) -> pd.DataFrame | None:
    """The calls the run's store links to its units (`Store.linked_usage`: a monitor's note before
    the answer, ...), for the units of its latest run, as the frame reads them."""
    from ..store import Store

    db = run.path / "store.sqlite"
    if run.frame is None or not db.exists():
        return None
    with Store.read_only(db) as store:
        read = getattr(store, "linked_usage", None)
        rows = read() if read is not None else []
    if not rows:
        return None
    df = pd.DataFrame(rows)
    # tool results and summaries (the roles settings register with a caller that is not a model)
    # are stored, not model calls; a loop's answer call is the one the unit's own row stands for
    # (counted once, from the frame)
    df.loc[df["caller"].isin(not_model_callers()) | df["role"].isin(role_names("answer")), "calls"] = 0
    return df


LinkedUsage = Callable[[Any], pd.DataFrame | None]

#: readers of extra calls linked to units (a monitor's note, ...): fn(run) -> rows, see the module
#: docstring; named by their module and qualified name unless given a name
_LINKED: Registry[LinkedUsage] = Registry("linked-usage reader")


def _reader_name(fn: LinkedUsage, name: str | None) -> str:
    return name or f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"


def register_linked_usage(fn: LinkedUsage, name: str | None = None) -> None:
    """Count extra calls a setting makes for its units: `fn(run)` returns a DataFrame with columns
    model, setting, item_id, prompt_tokens, completion_tokens, cost (NaN: unpriced) and calls, one
    row per extra call or already summed; None or an empty frame when the run has none.
    Registering the same function again changes nothing."""
    _LINKED.register(_reader_name(fn, name), fn)


def unregister_linked_usage(fn: LinkedUsage, name: str | None = None) -> None:
    _LINKED.unregister(_reader_name(fn, name))


register_linked_usage(store_linked_usage)


def _num(v: Any) -> float | None:
    if v is None or v is pd.NA:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def effect_row(
    model: str,
    setting: str,
    family: str,
    metric: str,
    label: str,
    role: str,
    higher_is_better: bool,
    rec: dict[str, Any],
    *,
    stratum: str = "all",
    unit: str = "rate",
    primary: bool = False,
    layout: str | None = None,
    column: str | None = None,
    ref: str | None = None,
) -> dict[str, Any]:
    """One trade-off row from a paired comparison record of `none` (side A) against the setting
    (side B) with the fields every family's paired comparison writes: a_p / a_lo / a_hi, b_p /
    b_lo / b_hi, diff / lo / hi (B - A with its paired interval), test / test_b / test_c / p_test
    (the exact or clustered test that gives the p-value), n and, where pairs cluster, items. A record
    without a test has no p-value: the bootstrap gives intervals only."""
    if role not in ("gain", "cost"):
        raise ValueError(f"role must be gain or cost, not {role!r}")
    test = str(rec.get("test") or "")
    p_test = _num(rec.get("p_test"))
    p, b, c = p_test, _num(rec.get("test_b")), _num(rec.get("test_c"))
    diff = _num(rec.get("diff"))
    sign = 1.0 if higher_is_better else -1.0
    n = _num(rec.get("n"))
    items = _num(rec.get("items"))
    return {
        "model": str(model),
        "setting": str(setting),
        "family": family,
        "role": role,
        "metric": metric,
        "label": label,
        "stratum": stratum,
        "unit": unit,
        "higher_is_better": bool(higher_is_better),
        "none": _num(rec.get("a_p")),
        "none_lo": _num(rec.get("a_lo")),
        "none_hi": _num(rec.get("a_hi")),
        "value": _num(rec.get("b_p")),
        "value_lo": _num(rec.get("b_lo")),
        "value_hi": _num(rec.get("b_hi")),
        "diff": diff,
        "lo": _num(rec.get("lo")),
        "hi": _num(rec.get("hi")),
        "benefit": None if diff is None else sign * diff,
        "p": p,
        "test": test,
        "b": None if b is None else int(b),
        "c": None if c is None else int(c),
        "n": None if n is None else int(n),
        "items": int(items) if items is not None else (None if n is None else int(n)),
        "primary": bool(primary),
        "layout": layout,
        "column": column,
        "ref": ref,
    }


# ------------------------------------------------------------------------------------ pairing


@dataclass
class Pairing:
    family: Family
    model: str
    setting: str
    run: Any  # RunData of the setting's units
    base: Any  # RunData of the none units (the same run when it has them)


@dataclass
class Tradeoff:
    """The section's data: every row, the pairing counts, notes (warnings first) and the layouts."""

    table: pd.DataFrame
    pairing: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    values: pd.DataFrame = field(default_factory=pd.DataFrame)
    residual: pd.DataFrame = field(default_factory=pd.DataFrame)


def _models_settings(frame: pd.DataFrame) -> list[tuple[str, str]]:
    present = frame.groupby(["model", "setting"], observed=True, sort=False).size()
    return [(str(m), str(s)) for m, s in present.index]


def _suite_name(run: Any) -> str | None:
    return ((run.config or {}).get("suite") or {}).get("name")


def pairings(runs: Sequence[Any]) -> tuple[list[Pairing], list[str]]:
    """Each (family, model, setting other than none) once, with the run holding its `none`."""
    out: list[Pairing] = []
    notes: list[str] = []
    seen: dict[tuple[str, str, str], str] = {}
    present = {id(r): list(dict.fromkeys(_models_settings(r.frame))) for r in runs if r.frame is not None}
    for run in runs:
        if not run.family or run.frame is None:
            if run.family and run.results.get("models") and any(s != NONE for v in run.results["models"].values() for s in v):
                notes.append(f"{run.name}: numbers from results.json (no store to pair units in): left out of the trade-off")
            continue
        try:
            fam = get(run.family)
        except KeyError:
            continue
        for model, setting in present[id(run)]:
            if setting == NONE:
                continue
            if fam.report.tradeoff is None:
                notes.append(f"{fam.title} states no trade-off: {model} under {setting} ({run.name}) is not in the table")
                continue
            key = (fam.name, run.model_name(model), setting)  # by its name: a label in two runs is two entries
            if key in seen:
                notes.append(f"{model} under {setting} on {fam.title} is in runs {seen[key]} and {run.name}: the table shows {seen[key]}")
                continue
            if (model, NONE) in present[id(run)]:
                base = run
            else:
                others = [r for r in runs if r is not run and r.frame is not None and r.family == run.family and (model, NONE) in present[id(r)]]
                same = [r for r in others if _suite_name(r) == _suite_name(run)]
                base = (same or others or [None])[0]
            if base is None:
                notes.append(f"{model} under {setting} ({run.name}, {fam.title}) has no run under none to pair with: left out")
                continue
            seen[key] = run.name
            out.append(Pairing(fam, model, setting, run, base))
    return out, notes


def _side(frame: pd.DataFrame, model: str, setting: str) -> pd.DataFrame:
    m = (frame["model"].astype(str) == model).to_numpy() & (frame["setting"].astype(str) == setting).to_numpy()
    return frame[m]


def _unit_keys(f: pd.DataFrame) -> pd.DataFrame:
    probe = f["probe_id"].astype(object).where(f["probe_id"].notna(), "")
    return pd.DataFrame(
        {
            "item_id": f["item_id"].astype(str).to_numpy(),
            "probe_id": probe.astype(str).to_numpy(),
            "condition": f["condition"].astype(str).to_numpy(),
            "epoch": epochs_of(f),
            "answered": f["status"].astype(str).isin(ANSWERED).to_numpy(),
        }
    )


def _pairing_counts(p: Pairing, none: pd.DataFrame, sett: pd.DataFrame) -> dict[str, Any]:
    ka, kb = _unit_keys(none), _unit_keys(sett)
    key = ["item_id", "probe_id", "condition", "epoch"]
    ka, kb = ka.drop_duplicates(key), kb.drop_duplicates(key)
    m = ka.merge(kb, on=key, how="outer", indicator=True, suffixes=("_a", "_b"))
    both = m[m["_merge"] == "both"]
    items_a, items_b = set(ka["item_id"]), set(kb["item_id"])
    return {
        "model": p.model,
        "setting": p.setting,
        "family": p.family.name,
        "run": p.run.name,
        "none_run": p.base.name,
        "units_none": int(len(ka)),
        "units_setting": int(len(kb)),
        "only_none": int((m["_merge"] == "left_only").sum()),
        "only_setting": int((m["_merge"] == "right_only").sum()),
        "items_none": len(items_a),
        "items_setting": len(items_b),
        "items_paired": len(items_a & items_b),
        "answered_one_side": int((both["answered_a"] != both["answered_b"]).sum()),
    }


# ------------------------------------------------------------------------------------ usage


def _linked(run: Any, cache: dict[int, pd.DataFrame | None]) -> pd.DataFrame | None:
    if id(run) not in cache:
        parts = []
        for fn in _LINKED.values():
            df = fn(run)
            if df is not None and len(df):
                parts.append(df)
        cache[id(run)] = pd.concat(parts, ignore_index=True) if parts else None
    return cache[id(run)]


def _per_item(f: pd.DataFrame, extra: pd.DataFrame | None, model: str, setting: str) -> pd.DataFrame:
    """Tokens, money and calls per item of one side: its units' calls plus linked extra calls."""
    called = (f["status"].astype(str) != "missing").to_numpy()
    d = pd.DataFrame(
        {
            "item_id": f["item_id"].astype(str).to_numpy(),
            "tokens": (f["prompt_tokens"].to_numpy(dtype=np.float64) + f["completion_tokens"].to_numpy(dtype=np.float64)),
            "cost": f["cost"].to_numpy(dtype=np.float64),
            "calls": called.astype(np.float64),
        }
    )
    if extra is not None:
        e = extra[(extra["model"].astype(str) == model).to_numpy() & (extra["setting"].astype(str) == setting).to_numpy()]
        if len(e):
            d = pd.concat(
                [
                    d,
                    pd.DataFrame(
                        {
                            "item_id": e["item_id"].astype(str).to_numpy(),
                            "tokens": e["prompt_tokens"].to_numpy(dtype=np.float64) + e["completion_tokens"].to_numpy(dtype=np.float64),
                            "cost": e["cost"].to_numpy(dtype=np.float64),
                            "calls": e["calls"].to_numpy(dtype=np.float64) if "calls" in e else np.ones(len(e)),
                        }
                    ),
                ],
                ignore_index=True,
            )
    g = d.groupby("item_id", sort=False)
    return pd.DataFrame({"tokens": g["tokens"].sum(), "cost": g["cost"].sum(min_count=1), "calls": g["calls"].sum()})


def _usage_rows(p: Pairing, none: pd.DataFrame, sett: pd.DataFrame, cache: dict[int, pd.DataFrame | None]) -> list[dict[str, Any]]:
    a = _per_item(none, _linked(p.base, cache), p.model, NONE)
    b = _per_item(sett, _linked(p.run, cache), p.model, p.setting)
    items = a.index.intersection(b.index)
    if not len(items):
        return []
    a, b = a.loc[items], b.loc[items]
    rows = []
    measures = [("tokens_per_item", "Tokens per item (prompt + completion)", "tokens", "tokens")]
    if a["cost"].notna().any() and b["cost"].notna().any():
        measures.append(("cost_per_item", "Money per item (USD)", "cost", "usd"))
    if not np.allclose(a["calls"].to_numpy(), b["calls"].to_numpy()):
        measures.append(("calls_per_item", "Calls per item", "calls", "calls"))
    for metric, label, col, unit in measures:
        xa, xb = a[col].fillna(0.0).to_numpy(), b[col].fillna(0.0).to_numpy()
        boot = stats.paired_bootstrap_diff(xa, xb)
        rows.append(
            {
                "model": p.model,
                "setting": p.setting,
                "family": p.family.name,
                "role": "cost",
                "metric": metric,
                "label": label,
                "stratum": "all",
                "unit": unit,
                "higher_is_better": False,
                "none": float(xa.mean()),
                "none_lo": None,
                "none_hi": None,
                "value": float(xb.mean()),
                "value_lo": None,
                "value_hi": None,
                "diff": boot["diff"],
                "lo": boot["lo"],
                "hi": boot["hi"],
                "benefit": None if boot["diff"] is None else -boot["diff"],
                "p": None,
                "test": "paired_bootstrap (descriptive)",
                "b": None,
                "c": None,
                "n": int(len(items)),
                "items": int(len(items)),
                "primary": False,
                "layout": None,
                "column": None,
                "ref": None,
            }
        )
    return rows


# ------------------------------------------------------------------------------------ the table


def tradeoff(runs: Sequence[Any]) -> Tradeoff | None:
    """Every gain and cost row of the runs' mitigations against none, or None when no run has a
    setting other than none."""
    if not any(s != NONE for r in runs if r.family for v in (r.results.get("models") or {}).values() for s in v):
        return None
    pairs, notes = pairings(runs)
    rows: list[dict[str, Any]] = []
    counts: list[dict[str, Any]] = []
    warnings: list[str] = []
    linked: dict[int, pd.DataFrame | None] = {}
    for p in pairs:
        none = _side(p.base.frame, p.model, NONE)
        sett = _side(p.run.frame, p.model, p.setting)
        frame = (
            pd.concat([none, sett], ignore_index=True)
            if p.base is not p.run
            else p.run.frame[(p.run.frame["model"].astype(str) == p.model).to_numpy() & p.run.frame["setting"].astype(str).isin([NONE, p.setting]).to_numpy()]
        )
        c = _pairing_counts(p, none, sett)
        counts.append({**c, "model": p.run.model_name(p.model)})
        where = p.run.name if p.base is p.run else f"{p.run.name}, none from {p.base.name}"
        if c["only_none"] or c["only_setting"]:
            warnings.append(
                f"{p.run.model_name(p.model)} under {p.setting} and under none are not on the same units ({p.family.title}; {where}): "
                f"{c['only_setting']} of {c['units_setting']} units under {p.setting} and {c['only_none']} of {c['units_none']} "
                f"under none have no partner and are left out ({c['items_paired']} items on both sides)."
            )
        if c["answered_one_side"]:
            notes.append(
                f"{p.run.model_name(p.model)} under {p.setting} ({p.family.title}; {where}): {c['answered_one_side']} units answered on one "
                "side only (an error, missing or unscored on the other) are left out of the paired numbers."
            )
        got = [r for r in p.family.report.tradeoff(frame) if r["model"] == p.model and r["setting"] == p.setting]
        for r in [*got, *_usage_rows(p, none, sett, linked)]:
            # the model by its name in the report (model_names), that of the setting's run
            rows.append({**r, "model": p.run.model_name(p.model), "family": p.family.name, "run": p.run.name, "none_run": p.base.name})
    table = pd.DataFrame(rows, columns=COLUMNS)
    if len(table):
        table["p_holm"] = np.nan
        for _, idx in table.groupby(["model", "setting"], sort=False).groups.items():
            ps = table.loc[idx, "p"].astype(float)
            table.loc[idx, "p_holm"] = stats.holm(ps.tolist())
    out = Tradeoff(table, pd.DataFrame(counts, columns=PAIRING_COLUMNS), warnings, notes)
    out.values = values_layout(table)
    out.residual = residual_layout(table)
    return out


def _oriented(v: Any, higher: bool, unit: str) -> float | None:
    v = _num(v)
    if v is None:
        return None
    return v if higher or unit != "rate" else 1.0 - v


def _columns(table: pd.DataFrame, layout: str) -> list[tuple[str, str, str]]:
    """(family, column, header) of a layout, in the order the rows give them; a header that two
    families use gets the family's title."""
    sub = table[table["layout"] == layout]
    cols = list(dict.fromkeys(zip(sub["family"], sub["column"].astype(str))))
    count: dict[str, int] = {}
    for _, c in cols:
        count[c] = count.get(c, 0) + 1
    return [(f, c, c if count[c] == 1 else f"{c} ({get(f).title})") for f, c in cols]


def _order(table: pd.DataFrame) -> list[tuple[str, list[str]]]:
    models = list(dict.fromkeys(table["model"]))
    return [(m, list(dict.fromkeys(table.loc[table["model"] == m, "setting"]))) for m in models]


def _layout_cells(table: pd.DataFrame, layout: str) -> tuple[list[tuple[str, str, str]], dict[tuple[str, str, str, str], dict[str, Any]]]:
    """The measures shown in `layout` (family, column, header) and its rows keyed by
    (model, setting, family, column)."""
    sub = table[table["layout"] == layout]
    return _columns(table, layout), {(r["model"], r["setting"], r["family"], str(r["column"])): r for r in sub.to_dict("records")}


def units_of(r: dict[str, Any], none_side: bool) -> str | None:
    """The viewer's URL of the units behind one side of a trade-off row (`none_side`: the `none`
    units it is paired with), as its family's `Outcomes.filters` names them; None for a measure no
    one filter selects (tokens, money, a pooled rate)."""
    flt = get(r["family"]).outcomes.filters(str(r["metric"]))
    if flt is None:
        return None
    if r["stratum"] != "all":
        flt = {**flt, "source": r["stratum"]}
    run, setting = (r["none_run"], NONE) if none_side else (r["run"], r["setting"])
    return rate_units(run, r["model"], setting, **flt)


def versus_units(r: dict[str, Any], part: str) -> str | None:
    """The viewer's URL of the units behind a row's paired test (`part`: its pairs, b or c): the
    units under its setting read against the same units under none (in the same run, or in the
    run its none comes from: `versus=`), as its family's `Outcomes.versus` names them; None when
    no outcome selects them (tokens, money)."""
    flt = (get(r["family"]).outcomes.versus(str(r["metric"])) or {}).get(part)
    if flt is None:
        return None
    if r["stratum"] != "all":
        flt = {**flt, "source": r["stratum"]}
    return pair_url(r["run"], r["model"], r["setting"], (r["none_run"], r["model"], NONE), **flt)


def _values_cells(table: pd.DataFrame) -> Iterator[tuple[str, str, str, dict[str, Any] | None]]:
    """(model, method, header, the trade-off row shown) of each cell of the value-per-method layout:
    under `none`, the `none` side of the model's first setting with the measure."""
    cols, cells = _layout_cells(table, "values")
    for model, settings in _order(table):
        for method in [NONE, *settings]:
            for fam, col, head in cols:
                if method == NONE:
                    r = next((cells[(model, s, fam, col)] for s in settings if (model, s, fam, col) in cells), None)
                else:
                    r = cells.get((model, method, fam, col))
                yield model, method, head, r


def values_layout(table: pd.DataFrame) -> pd.DataFrame:
    """One row per model and method (none, then each setting), one column per `values` measure:
    its value oriented so that higher is better (a rate where lower is better as 1 - rate), with
    the interval and n in `<header> lo` / `hi` / `n` columns; None where a run is missing."""
    if not _columns(table, "values"):
        return pd.DataFrame()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for model, method, head, r in _values_cells(table):
        row = rows.setdefault((model, method), {"model": model, "method": method})
        v, lo, hi = ("none", "none_lo", "none_hi") if method == NONE else ("value", "value_lo", "value_hi")
        if r is None:
            row.update({head: None, f"{head} lo": None, f"{head} hi": None, f"{head} n": None})
            continue
        hb, unit = r["higher_is_better"], r["unit"]
        a, b = _oriented(r[lo], hb, unit), _oriented(r[hi], hb, unit)
        if a is not None and b is not None and a > b:
            a, b = b, a
        row.update({head: _oriented(r[v], hb, unit), f"{head} lo": a, f"{head} hi": b, f"{head} n": r["n"]})
    return pd.DataFrame(list(rows.values()))


def residual_layout(table: pd.DataFrame) -> pd.DataFrame:
    """One row per model and setting, for each `residual` measure: without (none), with (the
    setting), the change (with its interval and Holm p) and the share left (with / without)."""
    cols, cells = _layout_cells(table, "residual")
    if not cols:
        return pd.DataFrame()
    rows = []
    for model, settings in _order(table):
        for s in settings:
            row: dict[str, Any] = {"model": model, "setting": s}
            for fam, col, head in cols:
                r = cells.get((model, s, fam, col))
                none, val = (None, None) if r is None else (_num(r["none"]), _num(r["value"]))
                row.update(
                    {
                        f"{head}: without": none,
                        f"{head}: with": val,
                        f"{head}: change": None if r is None else _num(r["diff"]),
                        f"{head}: change lo": None if r is None else _num(r["lo"]),
                        f"{head}: change hi": None if r is None else _num(r["hi"]),
                        f"{head}: p (Holm)": None if r is None else _num(r["p_holm"]),
                        f"{head}: share left": None if none is None or val is None or none == 0 else val / none,
                        f"{head}: n": None if r is None else r["n"],
                    }
                )
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------ the page


def pct(v: Any, signed: bool = False) -> str:
    v = _num(v)
    if v is None:
        return "—"
    return f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}%"


def _amount(v: Any, unit: str, signed: bool = False) -> str:
    v = _num(v)
    if v is None:
        return "—"
    if signed:
        return signed_change(v, unit)
    if unit == "rate":
        return f"{100 * v:.1f}%"
    return {"usd": f"{v:.6f}", "score": f"{v:.2f}"}.get(unit, f"{v:.1f}")


def _refs(table: pd.DataFrame, layout: str) -> str:
    refs = [str(x) for x in dict.fromkeys(table.loc[table["layout"] == layout, "ref"]) if x is not None and x == x]
    return f" (as in {', '.join(refs)})" if refs else ""


def values_html(t: Tradeoff) -> tuple[str, str]:
    df = t.values
    if df.empty:
        return "", ""
    heads = [c for c in df.columns if c not in ("model", "method") and not c.endswith((" lo", " hi", " n"))]
    # each value links to the units of its side (a rate shown as 1 - rate: the units of the rate)
    units = {(m, method, h): units_of(r, method == NONE) for m, method, h, r in _values_cells(t.table) if r is not None}
    rows, md = [], []
    for r in df.to_dict("records"):
        rows.append(
            [
                esc(r["model"]),
                esc(setting_name(r["method"])),
                *[
                    rate_cell(r[h], r[f"{h} lo"], r[f"{h} hi"], r[f"{h} n"], units=units.get((r["model"], r["method"], h))) if r[h] is not None else "—"
                    for h in heads
                ],
            ]
        )
        md.append({"Model": r["model"], "Method": r["method"], **{h: pct(r[h]) for h in heads}})
    title = "Each measure per method" + _refs(t.table, "values")
    html = str(_templates().values(title, Markup(html_table(rows, ["Model", "Method", *[esc(h) for h in heads]], numeric=range(2, 2 + len(heads))))))
    return html, f"### {title}\n\n" + markdown_table(pd.DataFrame(md)) + "\n"


def residual_html(t: Tradeoff) -> tuple[str, str]:
    df = t.residual
    if df.empty:
        return "", ""
    heads = list(dict.fromkeys(c.split(": ")[0] for c in df.columns if ": " in c))
    cols, by_key = _layout_cells(t.table, "residual")
    shown = {(m, s, head): r for (m, s, f, c), r in by_key.items() for f2, c2, head in cols if (f2, c2) == (f, c)}
    rows, md = [], []
    for r in df.to_dict("records"):
        cells = [esc(r["model"]), esc(setting_name(r["setting"]))]
        m = {"Model": r["model"], "Setting": r["setting"]}
        for h in heads:
            ch = _num(r[f"{h}: change"])
            change = (
                "—"
                if ch is None
                else (
                    f"{pct(ch, True)} pp<br><span class='n'>[{pct(r[f'{h}: change lo'], True)}, "
                    f"{pct(r[f'{h}: change hi'], True)}] Holm p {fmt_p(r[f'{h}: p (Holm)'])}</span>"
                )
            )
            share = _num(r[f"{h}: share left"])
            row = shown.get((r["model"], r["setting"], h))
            sides = [
                linked(pct(r[f"{h}: {side}"]), units_of(row, side == "without") if row and _num(r[f"{h}: {side}"]) is not None else None)
                for side in ("without", "with")
            ]
            cells += [*sides, change, "—" if share is None else f"{100 * share:.0f}%"]
            m.update(
                {
                    f"{h} without": pct(r[f"{h}: without"]),
                    f"{h} with": pct(r[f"{h}: with"]),
                    f"{h} change (pp)": pct(ch, True),
                    f"{h} share left": "—" if share is None else f"{100 * share:.0f}%",
                }
            )
        rows.append(cells)
        md.append(m)
    head_cells = [x for h in heads for x in (f"{esc(h)}: without", "with", "change", "share left")]
    title = "Before and after each setting" + _refs(t.table, "residual")
    html = str(_templates().residual(title, Markup(html_table(rows, ["Model", "Setting", *head_cells], numeric=range(2, 2 + 4 * len(heads))))))
    return html, f"### {title}\n\n" + markdown_table(pd.DataFrame(md)) + "\n"


def _full_html(table: pd.DataFrame) -> str:
    rows, classes = [], []
    for r in table.to_dict("records"):
        unit = r["unit"]
        rows.append(
            [
                esc(r["model"]),
                esc(r["setting"]),
                esc(get(r["family"]).title),
                esc(r["role"]),
                esc(r["label"]) + ("" if r["stratum"] == "all" else f" <span class='n'>({esc(r['stratum'])})</span>"),
                linked(_amount(r["none"], unit), units_of(r, True) if _num(r["none"]) is not None else None),
                linked(_amount(r["value"], unit), units_of(r, False) if _num(r["value"]) is not None else None),
                diff_cell(_num(r["diff"]), _num(r["lo"]), _num(r["hi"]), unit),
                "better" if (_num(r["benefit"]) or 0) > 0 else ("worse" if (_num(r["benefit"]) or 0) < 0 else "same"),
                test_cell(r["test"], r["b"], r["c"], _num(r["p"]), versus_units(r, "b"), versus_units(r, "c")),
                fmt_p(r["p_holm"]),
                "—" if r["n"] is None or r["n"] != r["n"] else count_cell(int(r["n"]), versus_units(r, "pairs")),
            ]
        )
        classes.append(sig_class(_num(r["p_holm"])))
    body = html_table(
        rows,
        ["Model", "Setting", "Family", "Role", "Measure", "None", "Setting", "Change [95% CI]", "Direction", "Paired test (b / c)", "Holm p", "Pairs"],
        numeric=range(5, 12),
        row_classes=classes,
    )
    return collapsible(body, "Every gain and cost, paired against none", len(rows), open_up_to=40)


def _point(r: dict[str, Any], sign: float) -> tuple[float, list[float]]:
    """A row's change in percentage points, turned by sign, and its interval (the point without one)."""
    d = float(r["diff"])
    lo, hi = _num(r["lo"]), _num(r["hi"])
    ends = sorted(100 * sign * (d if v is None else v) for v in (lo, hi))
    return 100 * sign * d, ends


def tradeoff_figure(table: pd.DataFrame) -> str | None:
    """Per model, setting and family: the primary gain (x, positive = more resilient) against the
    primary cost (y, positive = worse), in percentage points, with the 95% intervals."""
    from .plots import PALETTE, STYLE, plt, short, to_svg

    sub = table[table["primary"].astype(bool) & (table["unit"] == "rate")]
    points = []
    for (model, setting, fam), g in sub.groupby(["model", "setting", "family"], sort=False):
        gain = g[g["role"] == "gain"]
        cost = g[g["role"] == "cost"]
        if gain.empty or cost.empty:
            continue
        gr, cr = gain.iloc[0], cost.iloc[0]
        sg = 1.0 if gr["higher_is_better"] else -1.0
        sc = -1.0 if cr["higher_is_better"] else 1.0  # harm: positive = the measure got worse
        if _num(gr["diff"]) is None or _num(cr["diff"]) is None:
            continue
        x, xs = _point(gr, sg)
        y, ys = _point(cr, sc)
        points.append((model, setting, fam, gr["label"], cr["label"], x, xs, y, ys))
    if not points:
        return None
    fams = list(dict.fromkeys(p[2] for p in points))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.6, 5.6), layout="constrained")
        for model, setting, fam, _gl, _cl, x, xs, y, ys in points:
            colour = PALETTE[fams.index(fam) % len(PALETTE)]
            ax.errorbar(
                [x],
                [y],
                xerr=[[max(0, x - xs[0])], [max(0, xs[1] - x)]],
                yerr=[[max(0, y - ys[0])], [max(0, ys[1] - y)]],
                fmt="o",
                color=colour,
                ecolor=colour,
                elinewidth=1.2,
                capsize=2,
                zorder=3,
            )
            ax.annotate(short(f"{model} ({setting})", 34), (x, y), textcoords="offset points", xytext=(6, 6), fontsize=9, color=colour)
        for fam in fams:
            gl, cl = next((p[3], p[4]) for p in points if p[2] == fam)
            ax.plot([], [], "o", color=PALETTE[fams.index(fam) % len(PALETTE)], label=short(f"{get(fam).title}: {gl} vs {cl}", 100))
        ax.axvline(0, color="#333", lw=0.8)
        ax.axhline(0, color="#333", lw=0.8)
        ax.set_xlabel("Gain: stress-test resilience, setting - none (pp, right is better)")
        ax.set_ylabel("Cost: setting - none (pp, up is worse)")
        fig.legend(loc="outside lower center", frameon=False, fontsize=9)
        ax.set_title("What each mitigation buys against what it costs")
        return to_svg(fig, "tradeoff", "Mitigation gain against cost")


def _templates() -> Any:
    return macros(__package__, "tradeoff.html.j2")


def _pairing_html(pairing: pd.DataFrame) -> str:
    """What was paired per model, setting and family: units each side, the unpaired and the items paired."""
    return html_table(
        [
            [
                esc(r["model"]),
                esc(r["setting"]),
                esc(get(r["family"]).title),
                esc(r["run"]),
                esc(r["none_run"]),
                # each side's units in the viewer (the unpaired and the items have no one filter)
                count_cell(r["units_none"], units_url(r["none_run"], r["model"], NONE)),
                count_cell(r["units_setting"], units_url(r["run"], r["model"], r["setting"])),
                str(r["only_none"]),
                str(r["only_setting"]),
                str(r["items_paired"]),
                str(r["answered_one_side"]),
            ]
            for r in pairing.to_dict("records")
        ],
        [
            "Model",
            "Setting",
            "Family",
            "Run",
            "None from",
            "Units (none)",
            "Units (setting)",
            "Unpaired (none)",
            "Unpaired (setting)",
            "Items paired",
            "Answered one side only",
        ],
        numeric=range(5, 11),
    )


def _markdown(t: Tradeoff, vm: str, rm: str) -> str:
    """The section's Markdown: warnings, the value and residual layouts, then every gain and cost."""
    full = t.table.assign(
        change=[
            _amount(d, u, True) + ("" if _num(lo) is None else f" [{_amount(lo, u, True)}, {_amount(hi, u, True)}]")
            for d, lo, hi, u in zip(t.table["diff"], t.table["lo"], t.table["hi"], t.table["unit"])
        ],
        none_shown=[_amount(v, u) for v, u in zip(t.table["none"], t.table["unit"])],
        setting_shown=[_amount(v, u) for v, u in zip(t.table["value"], t.table["unit"])],
    )
    return "\n".join(
        [
            f"## {TITLE}",
            "",
            *[f"> {w}" for w in t.warnings],
            *([""] if t.warnings else []),
            vm,
            rm,
            "### Every gain and cost",
            "",
            markdown_table(
                full, ["model", "setting", "family", "role", "label", "stratum", "none_shown", "setting_shown", "change", "test", "b", "c", "p", "p_holm", "n"]
            ),
            "",
        ]
    )


def section(runs: Sequence[Any]) -> tuple[str, str, dict[str, pd.DataFrame], Tradeoff] | None:
    """(html, markdown, tables, data) of the section, or None when no run has a setting other than none."""
    t = tradeoff(runs)
    if t is None:
        return None
    body = _templates().section
    if t.table.empty:
        html = str(body(t.warnings, t.notes, None, [], None, None))
        md = f"## {TITLE}\n\n" + "".join(f"> {w}\n" for w in t.warnings) + "\nNo setting could be paired with none.\n"
        return html, md, {"tradeoff": t.table, "tradeoff_pairing": t.pairing}, t
    vh, vm = values_html(t)
    rh, rm = residual_html(t)
    fig = tradeoff_figure(t.table)
    layouts = [Markup(x) for x in (vh, rh) if x]
    html = str(body(t.warnings, t.notes, None if fig is None else Markup(fig), layouts, Markup(_full_html(t.table)), Markup(_pairing_html(t.pairing))))
    md = _markdown(t, vm, rm)
    tables = {"tradeoff": t.table, "tradeoff_pairing": t.pairing}
    if not t.values.empty:
        tables["tradeoff_values"] = t.values
    if not t.residual.empty:
        tables["tradeoff_residual"] = t.residual
    return html, md, tables, t
