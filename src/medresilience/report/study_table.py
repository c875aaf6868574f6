"""Cancer-Myth's Table 1 layout from runs: one row per model and setting (plain `none`, an optimised
prompt, a team, a team with its monitor: whatever settings the runs hold), one column per measure
the families put in the value-per-method layout of their trade-off (the share of false premises
fully corrected, 1 - over-caution on the controls, accuracy per source dataset: MedQA, PubMedQA,
SymCat, Medbullets, Craft-MD, ...), each with its 95% interval and n. A cell no run holds is a
dash, never a zero.

Each value is the family's own: its trade-off (`Family.report.tradeoff`) is given the setting's
units twice, once as `none`, and its `values` rows read off (the value on all of the setting's
units, the interval its paired comparison gives a side). It names no family.

The Table 6 check (`versus`): two settings of one model (an optimisation on 5 examples per
benchmark against one on more), each measure under A and B on the units both have, the paired
difference B - A with its interval and the family's exact or clustered paired test: A is given
to the family's trade-off as `none`, B as the setting.

Units are the results frames of the runs (the store, recomputed); a run read from results.json
alone has no units and is left out with a note. Several runs of one family are read together (a
run per benchmark or per setting); a model and setting two runs of one family hold on the same
items is read from the first and the note says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..family import Family, families, get
from ..mitigations import NONE
from ..runtime.errors import ConfigError
from .html import setting_name
from .parts import Cell, Column, Table, change, dash, num, p_value, rate, score, text, whole
from .rundir import RunData
from .tradeoff import TradeoffRow

__all__ = ["StudyTable", "Versus", "parse_versus", "study_table"]

#: the setting a side is relabelled to when it is paired with itself or with another setting as `none`
_SIDE = "setting-under-test"


@dataclass(frozen=True)
class Versus:
    """Two settings compared: B - A (`a`, `b`: setting names as the runs hold them)."""

    a: str
    b: str


def parse_versus(text_: str) -> Versus:
    """`A=B` -> Versus(A, B); a ConfigError on --versus otherwise."""
    a, eq, b = str(text_).partition("=")
    if not eq or not a.strip() or not b.strip() or a.strip() == b.strip():
        raise ConfigError("--versus", f"expected SETTING_A=SETTING_B (two different settings, e.g. optimised:gepa5.json=optimised:gepa20.json), got {text_!r}")
    return Versus(a.strip(), b.strip())


@dataclass
class StudyTable:
    """The layout (`table`, its long data `frame`: model, setting, family, column, value, lo, hi, n,
    oriented so that higher is better), the Table 6 checks (`versus`: one table per pair of
    settings, `versus_frame` their rows) and what was left out (`notes`)."""

    table: Table
    frame: pd.DataFrame
    versus: list[Table] = field(default_factory=list)
    versus_frame: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------ units


@dataclass
class _Units:
    """One family's units over the runs: (model, setting) -> frame, in the order first met."""

    family: Family
    sides: dict[tuple[str, str], pd.DataFrame] = field(default_factory=dict)
    runs: dict[tuple[str, str], str] = field(default_factory=dict)


def _gather(runs: Sequence[RunData], notes: list[str]) -> list[_Units]:
    by_family: dict[str, _Units] = {}
    for run in runs:
        if run.frame is None or not run.family:
            notes.append(f"{run.name}: no store to read units from (numbers from results.json only): left out")
            continue
        try:
            fam = get(run.family)
        except KeyError:
            notes.append(f"{run.name}: family {run.family!r} is not installed: left out")
            continue
        if fam.report.tradeoff is None:
            notes.append(f"{run.name}: {fam.title} puts no measure in this layout: left out")
            continue
        units = by_family.setdefault(fam.name, _Units(fam))
        f = run.frame
        for (model, setting), side in f.groupby([f["model"].astype(str), f["setting"].astype(str)], sort=False):
            key = (str(model), str(setting))
            side = side.assign(model=str(model), setting=str(setting))
            if key in units.sides:
                seen = set(units.sides[key]["item_id"].astype(str))
                new = side[~side["item_id"].astype(str).isin(seen)]
                if len(new) < len(side):
                    notes.append(
                        f"{model} under {setting} on {fam.title}: {len(side) - len(new)} units of {run.name} are on items "
                        f"{units.runs[key]} already holds: read from {units.runs[key]}"
                    )
                units.sides[key] = pd.concat([units.sides[key], new], ignore_index=True)
                units.runs[key] += f", {run.name}" if len(new) else ""
            else:
                units.sides[key], units.runs[key] = side, run.name
    order = [f.name for f in families()]
    return sorted(by_family.values(), key=lambda u: order.index(u.family.name) if u.family.name in order else len(order))


def _values_rows(fam: Family, a: pd.DataFrame, b: pd.DataFrame) -> list[TradeoffRow]:
    """The family's trade-off rows in the value-per-method layout of B against A (A as `none`)."""
    assert fam.report.tradeoff is not None  # _gather keeps only families with a trade-off
    frame = pd.concat([a.assign(setting=NONE), b.assign(setting=_SIDE)], ignore_index=True)
    return [r for r in fam.report.tradeoff(frame) if r.get("layout") == "values" and r.get("setting") == _SIDE]


def _oriented(r: Mapping[str, object], keys: tuple[str, str, str]) -> tuple[float | None, float | None, float | None]:
    """(value, lo, hi) of a row's side turned so that higher is better (a rate where lower is
    better as 1 - rate, its interval flipped)."""
    v, lo, hi = (num(r.get(k)) for k in keys)
    if r.get("higher_is_better") or r.get("unit") != "rate":
        return v, lo, hi
    return tuple(None if x is None else 1.0 - x for x in (v, hi, lo))  # type: ignore[return-value]


def _turned(r: Mapping[str, object]) -> tuple[float | None, float | None, float | None]:
    """(diff, lo, hi) of a row's B - A turned so that a positive change is better."""
    d, lo, hi = num(r.get("diff")), num(r.get("lo")), num(r.get("hi"))
    if r.get("higher_is_better") or r.get("unit") != "rate":
        return d, lo, hi
    return (None if d is None else -d), (None if hi is None else -hi), (None if lo is None else -lo)


# ------------------------------------------------------------------------------------ the layout


def _cell(r: Mapping[str, object] | None, keys: tuple[str, str, str] = ("value", "value_lo", "value_hi")) -> Cell:
    if r is None:
        return dash()
    v, lo, hi = _oriented(r, keys)
    if v is None:
        return dash()
    if r.get("unit") == "score":
        return score(v, lo, hi, r.get("n"))
    return rate(v, lo, hi, r.get("n"))


def study_table(runs: Sequence[RunData], versus: Sequence[Versus] = ()) -> StudyTable:
    """The Table 1 layout of `runs` (loaded with frames: `rundir.load_run`) and the Table 6 check of
    each pair in `versus`; see the module docstring."""
    notes: list[str] = []
    gathered = _gather(runs, notes)
    cells: dict[tuple[str, str, str], dict[str, object]] = {}  # (model, setting, column) -> row
    columns: dict[str, str] = {}  # column -> family
    rowkeys: dict[tuple[str, str], None] = {}
    for units in gathered:
        for (model, setting), side in units.sides.items():
            rowkeys.setdefault((model, setting))
            for r in _values_rows(units.family, side, side):
                col = str(r["column"])
                columns.setdefault(col, units.family.name)
                cells[(model, setting, col)] = {**r, "setting": setting, "family": units.family.name, "run": units.runs[(model, setting)]}
    # the columns a family gains on first (the study's Cancer-Myth column), then that family's costs
    # (its NFP column), then the other families' (accuracy per benchmark), each in the order met
    gains = {r["family"] for r in cells.values() if r.get("role") == "gain"}
    roles = {h: r.get("role") for (_m, _s, h), r in cells.items()}
    seen = list(columns)
    heads = sorted(seen, key=lambda h: (columns[h] not in gains, roles.get(h) != "gain", seen.index(h)))
    models = list(dict.fromkeys(m for m, _ in rowkeys))
    ordered = [(m, s) for m in models for s in sorted({s for mm, s in rowkeys if mm == m}, key=lambda s: (s != NONE, list(rowkeys).index((m, s))))]
    rows = tuple((text(m), Cell(setting_name(s), s), *(_cell(cells.get((m, s, h))) for h in heads)) for m, s in ordered)
    table = Table(
        "table1",
        (
            Column("model", "Model", fields={}),
            Column("setting", "Setting", fields={}),
            *(Column(h, h, numeric=True, fields={"lo": f"{h} lo", "hi": f"{h} hi", "n": f"{h} n"}) for h in heads),
        ),
        rows,
        note="Higher is better in every column (a rate where lower is better is shown as 100% minus it); 95% intervals; a dash: no run holds it.",
    )
    long = []
    for (m, s, h), row in cells.items():
        v, lo, hi = _oriented(row, ("value", "value_lo", "value_hi"))
        long.append(
            {"model": m, "setting": s, "family": row["family"], "run": row["run"], "column": h, "value": v, "lo": lo, "hi": hi, "n": whole(row.get("n"))}
        )
    result = StudyTable(table, pd.DataFrame(long, columns=["model", "setting", "family", "run", "column", "value", "lo", "hi", "n"]), notes=notes)
    vrows: list[dict[str, object]] = []
    for pair in versus:
        t, rs = _versus(gathered, pair, notes)
        if t is not None:
            result.versus.append(t)
            vrows += rs
    result.versus_frame = pd.DataFrame(vrows, columns=["a", "b", "model", "family", "column", "a_value", "b_value", "diff", "lo", "hi", "p", "test", "n"])
    return result


def _versus(gathered: list[_Units], pair: Versus, notes: list[str]) -> tuple[Table | None, list[dict[str, object]]]:
    """The Table 6 check of one pair: per model holding both settings in a family, each measure under
    A and B on their shared units and B - A (oriented so that a positive change is better)."""
    out: list[dict[str, object]] = []
    cells: list[tuple[Cell, ...]] = []
    for units in gathered:
        models = list(dict.fromkeys(m for m, _ in units.sides))
        for model in models:
            a, b = units.sides.get((model, pair.a)), units.sides.get((model, pair.b))
            if a is None or b is None:
                if a is not None or b is not None:
                    missing_ = pair.b if a is not None else pair.a
                    notes.append(f"{model} on {units.family.title}: no units under {missing_}: not in the {pair.a} vs {pair.b} check")
                continue
            for r in _values_rows(units.family, a, b):
                av, alo, ahi = _oriented(r, ("none", "none_lo", "none_hi"))
                bv, blo, bhi = _oriented(r, ("value", "value_lo", "value_hi"))
                d, lo, hi = _turned(r)
                out.append(
                    {
                        "a": pair.a,
                        "b": pair.b,
                        "model": model,
                        "family": units.family.name,
                        "column": str(r["column"]),
                        "a_value": av,
                        "b_value": bv,
                        "diff": d,
                        "lo": lo,
                        "hi": hi,
                        "p": num(r.get("p")),
                        "test": r.get("test") or None,
                        "n": whole(r.get("n")),
                    }
                )
                cells.append(
                    (
                        text(model),
                        text(str(r["column"])),
                        rate(av, alo, ahi, r.get("n")) if r.get("unit") == "rate" else score(av, alo, ahi, r.get("n")),
                        rate(bv, blo, bhi, r.get("n")) if r.get("unit") == "rate" else score(bv, blo, bhi, r.get("n")),
                        change(d, lo, hi, str(r.get("unit") or "rate")),
                        p_value(r.get("p")),
                    )
                )
    if not cells:
        notes.append(f"no model holds both {pair.a} and {pair.b}: no check of the two")
        return None, out
    a_name, b_name = setting_name(pair.a), setting_name(pair.b)
    table = Table(
        "table6_" + _slug(f"{pair.a}-vs-{pair.b}"),
        (
            Column("model", "Model", fields={}),
            Column("measure", "Measure", fields={}),
            Column("a", a_name, numeric=True, fields={"lo": "a lo", "hi": "a hi", "n": "n"}),
            Column("b", b_name, numeric=True, fields={"lo": "b lo", "hi": "b hi"}),
            Column("diff", f"{b_name} - {a_name}", numeric=True, fields={"lo": "diff lo", "hi": "diff hi"}),
            Column("p", "p", numeric=True, fields={}),
        ),
        tuple(cells),
        note=(
            "On the units both settings have; higher is better in every row; the change with its paired 95% interval "
            "(bootstrap over items) and the family's exact or clustered paired test."
        ),
    )
    return table, out


def _slug(s: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower()[:80] or "pair"


def write(result: StudyTable, out: Path) -> dict[str, Path]:
    """table1.md / .csv and, per check, table6_*.md / .csv in `out` (created); their paths by name."""
    from ..runtime.fileio import atomic_write, write_csv_frame
    from .render_data import table_frame
    from .render_markdown import table_markdown

    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for t in [result.table, *result.versus]:
        md, csv = out / f"{t.name}.md", out / f"{t.name}.csv"
        with atomic_write(md) as fh:
            fh.write(table_markdown(t) + ("\n\n" + t.note if t.note else "") + "\n")
        write_csv_frame(csv, table_frame(t))
        paths[t.name] = md
    return paths
