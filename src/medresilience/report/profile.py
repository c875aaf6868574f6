"""The resilience profile across families: for each model and setting, one number per declared
dimension of every family in the report (a family declares `Family.measures.profile`: headline keys, their
labels, and whether higher is better), each oriented so that higher is better (a rate where lower
is better is shown as 1 - rate, its interval flipped). A model is matched across runs by its name
(model_names: its label, which meets one model's runs of different families in one row; run-qualified,
`label [run]`, where two runs of one family hold the label, so that no row mixes two runs). Only rates are profiled (a mean score such as one on -1..1 is not a share and is left out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..family import get
from ..run.results import RateValue, headline_rates
from .html import rate_units, setting_name
from .parts import (
    Block,
    Cell,
    Column,
    DifferenceFigure,
    DifferencePanel,
    DifferencePoint,
    Paragraph,
    RadarFigure,
    Section,
    Table,
    dash,
    num,
    rate,
    text,
    whole,
)
from .plots import radar
from .rundir import RunData, names_of

COLUMNS = ["model", "setting", "family", "dimension", "label", "value", "lo", "hi", "n", "run"]


def _oriented(rate: RateValue, higher_is_better: bool) -> tuple[float, float | None, float | None] | None:
    p = rate.p
    if p is None or (rate.model_extra or {}).get("unit") == "score":
        return None
    lo, hi = rate.lo, rate.hi
    if higher_is_better:
        return float(p), lo, hi
    return 1 - float(p), None if hi is None else 1 - float(hi), None if lo is None else 1 - float(lo)


def profile_frame(runs: Sequence[RunData]) -> pd.DataFrame:
    """One row per (model, setting, family dimension) over the runs' results, each model by its
    name among the runs (`names_of`)."""
    names = names_of(runs)
    rows = []
    for r in runs:
        if not r.family:
            continue
        fam = get(r.family)
        for model, settings in r.blocks.items():
            for setting, block in settings.items():
                head = headline_rates(fam.measures.headline, block)
                for key, label, higher in fam.measures.profile:
                    rate = head.get(key)
                    val = None if rate is None else _oriented(rate, higher)
                    if rate is None or val is None:
                        continue
                    rows.append(
                        {
                            "model": names.name(r.name, model),
                            "setting": setting,
                            "family": fam.name,
                            "dimension": f"{fam.name}:{key}",
                            "label": f"{fam.title}: {label}",
                            "value": val[0],
                            "lo": val[1],
                            "hi": val[2],
                            "n": rate.n,
                            "run": r.name,
                        }
                    )
    return pd.DataFrame(rows, columns=COLUMNS)


def _row_name(model: object, setting: object) -> str:
    return str(model) if setting == "none" else f"{model} ({setting})"


def profile_figure(df: pd.DataFrame) -> DifferenceFigure:
    """Per model and setting, each dimension as a dot with its 95% interval (higher is better)."""
    points = tuple(
        DifferencePoint(str(r["label"]), _row_name(r["model"], r["setting"]), num(r["value"]), num(r["lo"]), num(r["hi"]))
        for r in df.drop_duplicates(["model", "setting", "dimension"]).to_dict("records")
    )
    return DifferenceFigure(
        "profile-all",
        "Resilience profile across test families",
        "Resilience profile: one dot per family dimension, 95% intervals.",
        (DifferencePanel("%, higher is better (95% intervals)", points),),
        reference=None,
        limits=(0, 100),
    )


RADAR_MIN_AXES = 3  # a radar of fewer spokes is a line: the dot figure shows those


def radar_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The data the radar draws (a resilience radar, as the studies draw one): one row per model and setting, per
    dimension its value and interval (higher is better), the dimensions in the profile's order."""
    dims = list(dict.fromkeys(df["dimension"]))
    rows = []
    for (model, setting), g in df.groupby(["model", "setting"], sort=False):
        row: dict[str, Any] = {"model": model, "setting": setting}
        by = g.drop_duplicates("dimension").set_index("dimension")
        for d in dims:
            for k in ("value", "lo", "hi", "n"):
                row[f"{d}:{k}"] = by.loc[d, k] if d in by.index else None
        rows.append(row)
    return pd.DataFrame(rows)


def radar_figure(df: pd.DataFrame) -> RadarFigure | None:
    """The resilience profile as a radar: one spoke per dimension, one polygon per model and
    setting, each value with its 95% interval along its spoke; None below three dimensions."""
    dims = list(dict.fromkeys(df["dimension"])) if not df.empty else []
    if len(dims) < RADAR_MIN_AXES:
        return None
    labels = dict(zip(df["dimension"], df["label"]))
    series: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for r in radar_frame(df).to_dict("records"):
        p, lo, hi = ([100 * float(np.nan if r[f"{d}:{k}"] is None else r[f"{d}:{k}"]) for d in dims] for k in ("value", "lo", "hi"))
        series[_row_name(r["model"], r["setting"])] = (p, lo, hi)
    return RadarFigure("profile-radar", "Resilience profile (radar)", RADAR_CAPTION, tuple(str(labels[d]) for d in dims), series)


RADAR_CAPTION = "One spoke per family dimension, higher is better; each value's 95% interval along its spoke."


def profile_radar(df: pd.DataFrame) -> str | None:
    """The radar drawn (SVG), or None below three dimensions."""
    fig = radar_figure(df)
    return None if fig is None else radar(fig.axes, fig.series, fig.name, fig.title)


NOTE = (
    "Each stress family's headline, oriented so that higher is better (a rate where lower is better is shown as 100% "
    "minus it). Models are matched across runs by their label; a dash is a model not run on that family."
)


def radar_section(df: pd.DataFrame) -> Section | None:
    """The radar alone, for a report the cross-family section leaves out (one family that declares
    three dimensions or more); its data is tables/profile_radar."""
    fig = radar_figure(df)
    if fig is None:
        return None
    return Section(
        "profile-radar",
        "Resilience radar",  # a family's own section may be called "Resilience profile": one name per link
        (
            Paragraph(NOTE),
            fig,
            Paragraph("The radar's data: `tables/profile_radar.csv` (per model and setting, each dimension's value, interval and n; higher is better)."),
        ),
    )


def _units(c: Mapping[str, object]) -> tuple[str | None, int | None]:
    """The viewer's URL of the units behind a profile cell, as its family's `Outcomes.filters`
    names them (a rate shown as 1 - rate links to the units of the rate: the flips), and how
    many units that is: the rate's k (n - k of a rate shown as 1 - rate) where an outcome or a
    score names them, else its n."""
    fam = get(str(c["family"]))
    key = str(c["dimension"]).split(":", 1)[1]
    flt = fam.outcomes.filters(key)
    if flt is None:
        return None, None
    n = whole(c["n"])
    p = num(c["value"])
    if n is None or p is None or not ({"outcome", "score"} & set(flt)):
        return rate_units(str(c["run"]), str(c["model"]), str(c["setting"]), **flt), n
    higher = next(h for k, _label, h in fam.measures.profile if k == key)
    shown = round(p * n)
    return rate_units(str(c["run"]), str(c["model"]), str(c["setting"]), **flt), shown if higher else n - shown


def profile_section(df: pd.DataFrame) -> Section | None:
    """The cross-family profile (its figures and its table), or None when fewer than two families have data."""
    if df.empty or df["family"].nunique() < 2:
        return None
    dims = list(dict.fromkeys(df["dimension"]))
    labels = dict(zip(df["dimension"], df["label"]))
    keys = list(dict.fromkeys(zip(df["model"], df["setting"])))
    cells: dict[tuple[object, ...], dict[str, object]] = {
        (r["model"], r["setting"], r["dimension"]): {str(k): v for k, v in r.items()} for r in df.to_dict("records")
    }
    rows = []
    for model, setting in keys:
        row = [text(model), Cell(setting_name(setting), setting)]
        for dim in dims:
            c = cells.get((model, setting, dim))
            row.append(rate(c["value"], c["lo"], c["hi"], c["n"], *_units(c)) if c else dash())
        rows.append(tuple(row))
    columns = (Column("model", "Model"), Column("setting", "Setting"), *(Column(d, str(labels[d]), numeric=True) for d in dims))
    blocks: list[Block] = [Paragraph(NOTE), profile_figure(df)]
    spider = radar_figure(df)
    if spider is not None:
        blocks.append(spider)
    blocks.append(Table("profile_shown", columns, tuple(rows)))
    return Section("profile-all", "Resilience profile (all families)", tuple(blocks))
