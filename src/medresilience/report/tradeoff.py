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
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import SupportsFloat, TypedDict

import numpy as np
import pandas as pd

from .. import stats
from ..family import Family, get
from ..mitigations import NONE
from ..mitigations.roles import not_model_callers, role_names
from ..registry import Registry
from ..run.frame import epochs_of
from ..score import ANSWERED
from .html import pair_url, rate_units, setting_name, units_url
from .parts import (
    Block,
    Cell,
    Column,
    Heading,
    LinkKind,
    Paragraph,
    ScatterFigure,
    ScatterPoint,
    Section,
    SideBySide,
    Table,
    change,
    count,
    dash,
    num,
    p_value,
    paired_test,
    rate,
    text,
    whole,
)
from .render_data import table_frame
from .rundir import RunData
from .tables import fmt_p

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
#: a paired comparison record as a family's comparison table's records give it (`effect_row`'s input)
Row = Mapping[Hashable, object]


class TradeoffRow(TypedDict):
    """One row of a mitigation's trade-off (`effect_row`): one measure of one model under a setting
    against `none` on the same units, a gain or a cost, with its paired difference and test."""

    model: str
    setting: str
    family: str
    role: str  # gain | cost
    metric: str
    label: str
    stratum: str
    unit: str  # rate | score | tokens | usd | calls
    higher_is_better: bool
    none: float | None
    none_lo: float | None
    none_hi: float | None
    value: float | None
    value_lo: float | None
    value_hi: float | None
    diff: float | None
    lo: float | None
    hi: float | None
    benefit: float | None
    p: float | None
    test: str
    b: int | None
    c: int | None
    n: int | None
    items: int | None
    primary: bool
    layout: str | None
    column: str | None
    ref: str | None


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


def store_linked_usage(run: RunData) -> pd.DataFrame | None:
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


LinkedUsage = Callable[[RunData], pd.DataFrame | None]

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


def _num(v: object) -> float | None:
    if v is None or v is pd.NA or not isinstance(v, (SupportsFloat, str)):
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
    rec: Row,
    *,
    stratum: str = "all",
    unit: str = "rate",
    primary: bool = False,
    layout: str | None = None,
    column: str | None = None,
    ref: str | None = None,
) -> TradeoffRow:
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
    run: RunData  # the setting's units
    base: RunData  # the none units (the same run when it has them)


@dataclass
class Tradeoff:
    """The section's data: every row, the pairing counts, notes (warnings first) and the layouts."""

    table: pd.DataFrame
    pairing: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    values_shown: Table | None = None
    residual_shown: Table | None = None

    @property
    def values(self) -> pd.DataFrame:
        """The value-per-method layout's data (tables/tradeoff_values), empty when it has no column."""
        return pd.DataFrame() if self.values_shown is None else table_frame(self.values_shown)

    @property
    def residual(self) -> pd.DataFrame:
        """The before-and-after layout's data (tables/tradeoff_residual), empty when it has no column."""
        return pd.DataFrame() if self.residual_shown is None else table_frame(self.residual_shown)


def _models_settings(frame: pd.DataFrame) -> list[tuple[str, str]]:
    present = frame.groupby(["model", "setting"], observed=True, sort=False).size()
    return [(str(m), str(s)) for m, s in present.index]


def _suite_name(run: RunData) -> str | None:
    return ((run.config or {}).get("suite") or {}).get("name")


def pairings(runs: Sequence[RunData]) -> tuple[list[Pairing], list[str]]:
    """Each (family, model, setting other than none) once, with the run holding its `none`."""
    out: list[Pairing] = []
    notes: list[str] = []
    seen: dict[tuple[str, str, str], str] = {}
    present = {id(r): list(dict.fromkeys(_models_settings(r.frame))) for r in runs if r.frame is not None}
    for run in runs:
        if not run.family or run.frame is None:
            if run.family and any(s != NONE for v in run.blocks.values() for s in v):
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
            base: RunData | None
            if (model, NONE) in present[id(run)]:
                base = run
            else:
                others = [r for r in runs if r is not run and r.frame is not None and r.family == run.family and (model, NONE) in present[id(r)]]
                same = [r for r in others if _suite_name(r) == _suite_name(run)]
                base = next(iter(same or others), None)
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


def _pairing_counts(p: Pairing, none: pd.DataFrame, sett: pd.DataFrame) -> dict[str, int | str]:
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


def _linked(run: RunData, cache: dict[int, pd.DataFrame | None]) -> pd.DataFrame | None:
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


def _usage_rows(p: Pairing, none: pd.DataFrame, sett: pd.DataFrame, cache: dict[int, pd.DataFrame | None]) -> list[TradeoffRow]:
    a = _per_item(none, _linked(p.base, cache), p.model, NONE)
    b = _per_item(sett, _linked(p.run, cache), p.model, p.setting)
    items = a.index.intersection(b.index)
    if not len(items):
        return []
    a, b = a.loc[items], b.loc[items]
    rows: list[TradeoffRow] = []
    measures = [("tokens_per_item", "Tokens per item (prompt + completion)", "tokens", "tokens")]
    if a["cost"].notna().any() and b["cost"].notna().any():
        measures.append(("cost_per_item", "Money per item (USD)", "cost", "usd"))
    if not np.allclose(a["calls"].to_numpy(), b["calls"].to_numpy()):
        measures.append(("calls_per_item", "Calls per item", "calls", "calls"))
    for metric, label, col, unit in measures:
        xa, xb = a[col].fillna(0.0).to_numpy(), b[col].fillna(0.0).to_numpy()
        boot = stats.paired_bootstrap_diff(xa.tolist(), xb.tolist())
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


def tradeoff(runs: Sequence[RunData]) -> Tradeoff | None:
    """Every gain and cost row of the runs' mitigations against none, or None when no run has a
    setting other than none."""
    if not any(s != NONE for r in runs if r.family for v in r.blocks.values() for s in v):
        return None
    pairs, notes = pairings(runs)
    rows: list[dict[str, object]] = []
    counts: list[dict[str, object]] = []
    warnings: list[str] = []
    linked: dict[int, pd.DataFrame | None] = {}
    for p in pairs:
        base_frame, run_frame = p.base.frame, p.run.frame
        if base_frame is None or run_frame is None:  # pairings pairs runs with a frame only
            continue
        none = _side(base_frame, p.model, NONE)
        sett = _side(run_frame, p.model, p.setting)
        frame = (
            pd.concat([none, sett], ignore_index=True)
            if p.base is not p.run
            else run_frame[(run_frame["model"].astype(str) == p.model).to_numpy() & run_frame["setting"].astype(str).isin([NONE, p.setting]).to_numpy()]
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
        hook = p.family.report.tradeoff  # a pairing is made only for a family that states its trade-off
        got = [] if hook is None else [r for r in hook(frame) if r["model"] == p.model and r["setting"] == p.setting]
        for r in [*got, *_usage_rows(p, none, sett, linked)]:
            # the model by its name in the report (model_names), that of the setting's run
            rows.append({**r, "model": p.run.model_name(p.model), "family": p.family.name, "run": p.run.name, "none_run": p.base.name})
    table = pd.DataFrame(rows, columns=COLUMNS)
    if len(table):
        table["p_holm"] = np.nan
        for _, idx in table.groupby(["model", "setting"], sort=False).groups.items():
            ps = table.loc[idx, "p"].astype(float)
            table.loc[idx, "p_holm"] = stats.holm(ps.tolist())
    return Tradeoff(table, pd.DataFrame(counts, columns=PAIRING_COLUMNS), warnings, notes, values_shown(table), residual_shown(table))


def _oriented(v: object, higher: bool, unit: str) -> float | None:
    v = _num(v)
    if v is None:
        return None
    return v if higher or unit != "rate" else 1.0 - v


def _columns(table: pd.DataFrame, layout: str) -> list[tuple[str, str, str]]:
    """(family, column, header) of a layout, in the order the rows give them; a header that two
    families use gets the family's title."""
    sub = table[table["layout"] == layout]
    cols = list(dict.fromkeys(zip(sub["family"], sub["column"].astype(str))))
    uses: dict[str, int] = {}
    for _, c in cols:
        uses[c] = uses.get(c, 0) + 1
    return [(str(f), c, c if uses[c] == 1 else f"{c} ({get(str(f)).title})") for f, c in cols]


def _order(table: pd.DataFrame) -> list[tuple[str, list[str]]]:
    models = list(dict.fromkeys(table["model"]))
    return [(m, list(dict.fromkeys(table.loc[table["model"] == m, "setting"]))) for m in models]


def _layout_cells(table: pd.DataFrame, layout: str) -> tuple[list[tuple[str, str, str]], dict[tuple[str, str, str, str], Row]]:
    """The measures shown in `layout` (family, column, header) and its rows keyed by
    (model, setting, family, column)."""
    sub = table[table["layout"] == layout]
    return _columns(table, layout), {(str(r["model"]), str(r["setting"]), str(r["family"]), str(r["column"])): r for r in sub.to_dict("records")}


def units_of(r: Row, none_side: bool) -> str | None:
    """The viewer's URL of the units behind one side of a trade-off row (`none_side`: the `none`
    units it is paired with), as its family's `Outcomes.filters` names them; None for a measure no
    one filter selects (tokens, money, a pooled rate)."""
    flt = get(str(r["family"])).outcomes.filters(str(r["metric"]))
    if flt is None:
        return None
    if r["stratum"] != "all":
        flt = {**flt, "source": str(r["stratum"])}
    run, setting = (str(r["none_run"]), NONE) if none_side else (str(r["run"]), str(r["setting"]))
    return rate_units(run, str(r["model"]), setting, **flt)


def versus_units(r: Row, part: str) -> str | None:
    """The viewer's URL of the units behind a row's paired test (`part`: its pairs, b or c): the
    units under its setting read against the same units under none (in the same run, or in the
    run its none comes from: `versus=`), as its family's `Outcomes.versus` names them; None when
    no outcome selects them (tokens, money)."""
    flt = (get(str(r["family"])).outcomes.versus(str(r["metric"])) or {}).get(part)
    if flt is None:
        return None
    if r["stratum"] != "all":
        flt = {**flt, "source": str(r["stratum"])}
    model = str(r["model"])
    return pair_url(str(r["run"]), model, str(r["setting"]), (str(r["none_run"]), model, NONE), **flt)


def _values_cells(table: pd.DataFrame) -> Iterator[tuple[str, str, str, Row | None]]:
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


# ------------------------------------------------------------------------------------ the section


def _amount(v: object, unit: str) -> str:
    """A measure's value in its unit's numbers: '71.2%' for a rate, '0.31' for a score, dollars to
    the millionth, any other unit (tokens, calls) with one decimal; '—' when missing."""
    f = _num(v)
    if f is None:
        return "—"
    if unit == "rate":
        return f"{100 * f:.1f}%"
    return {"usd": f"{f:.6f}", "score": f"{f:.2f}"}.get(unit, f"{f:.1f}")


def _refs(table: pd.DataFrame, layout: str) -> str:
    refs = [str(x) for x in dict.fromkeys(table.loc[table["layout"] == layout, "ref"]) if x is not None and x == x]
    return f" (as in {', '.join(refs)})" if refs else ""


def _side_units(r: Row, none_side: bool) -> tuple[str | None, int | None]:
    """The viewer's URL of the units behind one side of a row (`units_of`) and how many units that
    is: the side's k where an outcome or a score names them (its rate times its pairs), else its
    pairs."""
    flt = get(str(r["family"])).outcomes.filters(str(r["metric"]))
    href = units_of(r, none_side)
    if flt is None or href is None:
        return None, None
    n, v = whole(r["n"]), num(r["none" if none_side else "value"])
    if n is None or v is None or not ({"outcome", "score"} & set(flt)):
        return href, n
    return href, round(v * n)


def _side_cell(r: Row | None, none_side: bool) -> Cell:
    """One side's value of a row in its unit's numbers, linked to its units."""
    if r is None:
        return dash()
    v = num(r["none" if none_side else "value"])
    if v is None:
        return dash()
    href, units = _side_units(r, none_side)
    kind: LinkKind = "rate" if r["unit"] == "rate" else "number"
    return Cell(_amount(v, str(r["unit"])), v, href, units if href else None, kind)


VALUES_NOTE = (
    "Higher is better in every column (a rate where lower is better is shown as 100% minus it). The none row shows "
    "none on the units paired with the first setting. A dash: no run of that model and method has the measure."
)
RESIDUAL_NOTE = (
    "Without: under none; with: under the setting, on the same units; change: with minus without (95% item-clustered "
    "bootstrap interval, Holm-adjusted p); share left: with / without."
)


def values_shown(table: pd.DataFrame) -> Table | None:
    """The value-per-method layout: one row per model and method (none, then each setting), one
    column per `values` measure: its value oriented so that higher is better (a rate where lower is
    better as 1 - rate) with its interval and n (data: `<header> lo` / `hi` / `n`), linked to the
    units of its side (a rate shown as 1 - rate: the units of the rate); a dash where a run is
    missing. None when no row is shown in it."""
    heads = [head for _f, _c, head in _columns(table, "values")]
    if not heads:
        return None
    rows: dict[tuple[str, str], list[Cell]] = {}
    for model, method, _head, r in _values_cells(table):
        cells = rows.setdefault((model, method), [text(model), Cell(setting_name(method), method)])
        if r is None:
            cells.append(dash())
            continue
        v, lo, hi = ("none", "none_lo", "none_hi") if method == NONE else ("value", "value_lo", "value_hi")
        hb, unit = bool(r["higher_is_better"]), str(r["unit"])
        a, b = _oriented(r[lo], hb, unit), _oriented(r[hi], hb, unit)
        if a is not None and b is not None and a > b:
            a, b = b, a
        href, units = _side_units(r, method == NONE)
        cells.append(rate(_oriented(r[v], hb, unit), a, b, r["n"], href, units))
    columns = (
        Column("model", "Model", fields={}),
        Column("method", "Method", fields={}),
        *(Column(h, h, numeric=True, fields={"lo": f"{h} lo", "hi": f"{h} hi", "n": f"{h} n"}) for h in heads),
    )
    return Table("tradeoff_values", columns, tuple(tuple(c) for c in rows.values()))


def _change_cell(r: Row | None) -> Cell:
    """A residual measure's change with its interval and Holm p beneath it."""
    if r is None:
        return dash()
    cell = change(r["diff"], r["lo"], r["hi"])
    p_holm = num(r["p_holm"])
    data = {"lo": num(r["lo"]), "hi": num(r["hi"]), "p_holm": p_holm}
    return replace(cell, note=(*cell.note, f"Holm p {fmt_p(p_holm)}"), data=data) if cell.value is not None else replace(cell, data=data)


def _share_cell(r: Row | None) -> Cell:
    """With / without: the share of the measure left under the setting."""
    none, val = (None, None) if r is None else (num(r["none"]), num(r["value"]))
    if none is None or val is None or none == 0:
        return dash()
    return Cell(f"{100 * val / none:.0f}%", val / none)


def residual_shown(table: pd.DataFrame) -> Table | None:
    """The before-and-after layout: one row per model and setting, for each `residual` measure:
    without (none) and with (the setting), each linked to its units, the change (with its interval
    and Holm p) and the share left (with / without); its n is data only. None when no row is shown
    in it."""
    cols, by_key = _layout_cells(table, "residual")
    if not cols:
        return None
    rows = []
    for model, settings in _order(table):
        for s in settings:
            cells = [text(model), Cell(setting_name(s), s)]
            for fam, col, _head in cols:
                r = by_key.get((model, s, fam, col))
                n = None if r is None else whole(r["n"])
                cells += [_side_cell(r, True), _side_cell(r, False), _change_cell(r), _share_cell(r), Cell("" if n is None else str(n), n)]
            rows.append(tuple(cells))
    columns = [Column("model", "Model", fields={}), Column("setting", "Setting", fields={})]
    for _f, _c, h in cols:
        columns += [
            Column(f"{h}: without", f"{h}: without", numeric=True, fields={}),
            Column(f"{h}: with", "with", numeric=True, fields={}),
            Column(f"{h}: change", "change", numeric=True, fields={"lo": f"{h}: change lo", "hi": f"{h}: change hi", "p_holm": f"{h}: p (Holm)"}),
            Column(f"{h}: share left", "share left", numeric=True, fields={}),
            Column(f"{h}: n", "n", shown=False, fields={}),
        ]
    return Table("tradeoff_residual", tuple(columns), tuple(rows))


def _layout(title: str, note: str, shown: Table | None) -> tuple[Block, ...]:
    return () if shown is None else (Heading(title), Paragraph(note), shown)


def _measure(r: Row) -> Cell:
    label = str(r["label"])
    return Cell(label, label, note=() if r["stratum"] == "all" else (f"({r['stratum']})",), stacked=False)


def _direction(r: Row) -> Cell:
    b = num(r["benefit"]) or 0.0
    return text("better" if b > 0 else ("worse" if b < 0 else "same"))


def _test_cells(r: Row) -> tuple[Cell, Cell, Cell]:
    """The paired test (its name and p) and its discordant counts b and c, each linked to its units."""
    p = num(r["p"])
    if not r["test"] or p is None:
        return dash(), dash(), dash()
    return (
        replace(paired_test(r["test"], p), data={"test": str(r["test"])}),
        count(r["b"], versus_units(r, "b")),
        count(r["c"], versus_units(r, "c")),
    )


#: the full table's columns: its paired test's b and c are the discordant pairs
FULL_COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("family", "Family"),
    Column("role", "Role"),
    Column("measure", "Measure"),
    Column("none", "None", numeric=True),
    Column("value", "Setting", numeric=True),
    Column("change", "Change [95% CI]", numeric=True),
    Column("direction", "Direction", numeric=True),
    Column("test", "Paired test", numeric=True),
    Column("b", "b (none only)", numeric=True, note="pairs with the event under none and not under the setting"),
    Column("c", "c (setting only)", numeric=True, note="pairs with the event under the setting and not under none"),
    Column("p_holm", "Holm p", numeric=True),
    Column("pairs", "Pairs", numeric=True),
)


def full_table(table: pd.DataFrame) -> Table:
    """Every gain and cost, paired against none (a row whose Holm p is below 0.05 marked)."""
    rows, classes = [], []
    for r in table.to_dict("records"):
        p_holm = num(r["p_holm"])
        rows.append(
            (
                text(r["model"]),
                text(r["setting"]),
                text(get(str(r["family"])).title),
                text(r["role"]),
                _measure(r),
                _side_cell(r, True),
                _side_cell(r, False),
                change(r["diff"], r["lo"], r["hi"], str(r["unit"])),
                _direction(r),
                *_test_cells(r),
                p_value(p_holm),
                count(r["n"], versus_units(r, "pairs")),
            )
        )
        classes.append("sig" if p_holm is not None and p_holm < 0.05 else "")
    return Table("tradeoff_shown", FULL_COLUMNS, tuple(rows), tuple(classes), fold="Every gain and cost, paired against none")


def _point(r: Row, sign: float) -> tuple[float, float, float]:
    """A row's change in percentage points, turned by sign, and its interval's ends (the point
    itself where the interval is missing)."""
    diff = r["diff"]
    if not isinstance(diff, (SupportsFloat, str)):
        raise TypeError(f"a trade-off row without a difference: {dict(r)}")
    d = float(diff)
    lo, hi = _num(r["lo"]), _num(r["hi"])
    ends = sorted(100 * sign * (d if v is None else v) for v in (lo, hi))
    return 100 * sign * d, ends[0], ends[1]


def tradeoff_figure(table: pd.DataFrame) -> ScatterFigure | None:
    """Per model, setting and family: the primary gain (x, positive = more resilient) against the
    primary cost (y, positive = worse), in percentage points, with the 95% intervals."""
    sub = table[table["primary"].astype(bool) & (table["unit"] == "rate")]
    points: list[ScatterPoint] = []
    legend: dict[str, str] = {}
    for (model, setting, fam), g in sub.groupby(["model", "setting", "family"], sort=False):
        gains = [r for r in g.to_dict("records") if r["role"] == "gain"]
        costs = [r for r in g.to_dict("records") if r["role"] == "cost"]
        if not gains or not costs or _num(gains[0]["diff"]) is None or _num(costs[0]["diff"]) is None:
            continue
        gr, cr = gains[0], costs[0]
        x, x_lo, x_hi = _point(gr, 1.0 if gr["higher_is_better"] else -1.0)
        y, y_lo, y_hi = _point(cr, -1.0 if cr["higher_is_better"] else 1.0)  # harm: positive = the measure got worse
        # one colour per family, named with the measures of its first point
        group = legend.setdefault(str(fam), f"{get(str(fam)).title}: {gr['label']} vs {cr['label']}")
        points.append(ScatterPoint(group, f"{model} ({setting})", x, y, x_lo, x_hi, y_lo, y_hi))
    if not points:
        return None
    return ScatterFigure(
        "tradeoff",
        "What each mitigation buys against what it costs",
        "Per model, setting and family: the primary gain (x: resilience won, percentage points) against the primary cost "
        "(y: accuracy lost or over-caution added), with 95% paired bootstrap intervals. Bottom right: it buys resilience "
        "for free; top right: a trade-off; left: it does not help.",
        "Gain: stress-test resilience, setting - none (pp, right is better)",
        "Cost: setting - none (pp, up is worse)",
        tuple(points),
    )


PAIRING_SHOWN = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("family", "Family"),
    Column("run", "Run"),
    Column("none_run", "None from"),
    Column("units_none", "Units (none)", numeric=True),
    Column("units_setting", "Units (setting)", numeric=True),
    Column("only_none", "Unpaired (none)", numeric=True),
    Column("only_setting", "Unpaired (setting)", numeric=True),
    Column("items_paired", "Items paired", numeric=True),
    Column("answered_one_side", "Answered one side only", numeric=True),
)


def pairing_table(pairing: pd.DataFrame) -> Table:
    """What was paired per model, setting and family: units each side (linked to them; the
    unpaired and the items have no one filter), the unpaired and the items paired."""
    rows = [
        (
            text(r["model"]),
            text(r["setting"]),
            text(get(str(r["family"])).title),
            text(r["run"]),
            text(r["none_run"]),
            count(r["units_none"], units_url(str(r["none_run"]), str(r["model"]), NONE)),
            count(r["units_setting"], units_url(str(r["run"]), str(r["model"]), str(r["setting"]))),
            count(r["only_none"]),
            count(r["only_setting"]),
            count(r["items_paired"]),
            count(r["answered_one_side"]),
        )
        for r in pairing.to_dict("records")
    ]
    return Table("tradeoff_pairing_shown", PAIRING_SHOWN, tuple(rows))


INTRO = (
    "Each mitigation setting against none for the same model, paired on the same units (item, probe, condition). Gains: "
    "what the setting is for (resilience on each stress test); costs: what it may break (accuracy on ordinary "
    "questions, over-caution on control questions) and what it spends (tokens and money per item, every answering call "
    "of the setting's units). Change = setting minus none with a 95% bootstrap interval resampling items; paired tests: "
    "exact McNemar (clustered McNemar where an item gives several pairs; the exact paired permutation test for a mean "
    "score or a difference of drops), with their discordant pairs b and c; Holm's correction across every tested row "
    "of one model and setting. p-values come only from these exact or clustered tests; the bootstrap gives intervals."
)


def section_of(t: Tradeoff) -> Section:
    """The section's parts: what it measures, its warnings and notes, then (when a setting was
    paired) the figure, both layouts side by side, every gain and cost, and the pairing."""
    blocks: list[Block] = [Paragraph(INTRO), *(Paragraph(w, "warn") for w in t.warnings), *(Paragraph(n) for n in t.notes)]
    if t.table.empty:
        return Section(ANCHOR, TITLE, (*blocks, Paragraph("No setting could be paired with none.", "plain")))
    fig = tradeoff_figure(t.table)
    if fig is not None:
        blocks.append(fig)
    values = _layout("Each measure per method" + _refs(t.table, "values"), VALUES_NOTE, t.values_shown)
    residual = _layout("Before and after each setting" + _refs(t.table, "residual"), RESIDUAL_NOTE, t.residual_shown)
    layouts = tuple(x for x in (values, residual) if x)
    if layouts:
        blocks.append(SideBySide(layouts, "tradeoff-layouts"))
    blocks += [Heading("Every gain and cost"), full_table(t.table), Heading("Pairing"), pairing_table(t.pairing)]
    return Section(ANCHOR, TITLE, tuple(blocks))


def section(runs: Sequence[RunData]) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data tables (tables/tradeoff: every row; tradeoff_pairing; the layouts'
    tradeoff_values and tradeoff_residual), or None when no run has a setting other than none."""
    t = tradeoff(runs)
    if t is None:
        return None
    tables = {"tradeoff": t.table, "tradeoff_pairing": t.pairing}
    for shown in (t.values_shown, t.residual_shown):
        if shown is not None:
            tables[shown.name] = table_frame(shown)  # the layout as shown, its values and their intervals
    return section_of(t), tables
