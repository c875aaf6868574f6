"""The resilience profile across families: for each model and setting, one number per declared
dimension of every family in the report (a family declares `Family.profile`: headline keys, their
labels, and whether higher is better), each oriented so that higher is better (a rate where lower
is better is shown as 1 - rate, its interval flipped). A model is matched across runs by its name
(model_names: its label, which meets one model's runs of different families in one row; run-qualified,
`label [run]`, where two runs of one family hold the label, so that no row mixes two runs). Only rates are profiled (a mean score such as one on -1..1 is not a share and is left out)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from ..family import get
from .html import esc, rate_cell, rate_units, setting_name
from .html import table as html_table
from .plots import PALETTE, STYLE, err, plt, radar, short, to_svg
from .rundir import names_of
from .tables import markdown_table
from .templating import macros

COLUMNS = ["model", "setting", "family", "dimension", "label", "value", "lo", "hi", "n", "run"]


def _oriented(rate: dict[str, Any], higher_is_better: bool) -> tuple[float, float | None, float | None] | None:
    p = rate.get("p")
    if p is None or rate.get("unit") == "score":
        return None
    lo, hi = rate.get("lo"), rate.get("hi")
    if higher_is_better:
        return float(p), lo, hi
    return 1 - float(p), None if hi is None else 1 - float(hi), None if lo is None else 1 - float(lo)


def profile_frame(runs: Sequence[Any]) -> pd.DataFrame:
    """One row per (model, setting, family dimension) over the runs' results, each model by its
    name among the runs (`names_of`)."""
    names = names_of(runs)
    rows = []
    for r in runs:
        if not r.family:
            continue
        fam = get(r.family)
        for model, settings in (r.results.get("models") or {}).items():
            for setting, block in settings.items():
                head = fam.headline(block.get("overall", {}))
                for key, label, higher in fam.profile:
                    rate = head.get(key)
                    val = _oriented(rate, higher) if isinstance(rate, dict) else None
                    if val is None:
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
                            "n": rate.get("n"),
                            "run": r.name,
                        }
                    )
    return pd.DataFrame(rows, columns=COLUMNS)


def profile_figure(df: pd.DataFrame) -> str | None:
    """Per model and setting, each dimension as a dot with its 95% interval (higher is better)."""
    if df.empty:
        return None
    d = df.assign(row=[f"{m} ({s})" if s != "none" else str(m) for m, s in zip(df["model"], df["setting"])])
    rows = list(dict.fromkeys(d["row"]))
    dims = list(dict.fromkeys(d["dimension"]))
    labels = dict(zip(d["dimension"], d["label"]))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(10, min(11.0, max(3.2, 0.55 * len(rows) + 1.8))), layout="constrained")
        y = np.arange(len(rows))
        for j, dim in enumerate(dims):
            sub = d[d["dimension"] == dim].drop_duplicates("row").set_index("row").reindex(rows)
            p, lo, hi = (100 * sub[k].astype(float).to_numpy() for k in ("value", "lo", "hi"))
            ys = y + (j - (len(dims) - 1) / 2) * min(0.12, 0.8 / max(len(dims), 1))
            colour = PALETTE[j % len(PALETTE)]
            ax.errorbar(
                p,
                ys,
                xerr=err(p, np.where(np.isnan(lo), p, lo), np.where(np.isnan(hi), p, hi)),
                fmt="o",
                color=colour,
                ecolor=colour,
                elinewidth=1.2,
                capsize=2,
                label=short(labels[dim], 60),
                zorder=3,
            )
        ax.set_yticks(y, [short(r) for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("%, higher is better (95% intervals)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18 if len(rows) > 2 else -0.3), ncol=2, frameon=False)
        ax.set_title("Resilience profile across test families")
    return to_svg(fig, "profile-all", "Resilience profile across test families")


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


def profile_radar(df: pd.DataFrame) -> str | None:
    """The resilience profile as a radar: one spoke per dimension, one polygon per model and
    setting, each value with its 95% interval along its spoke; None below three dimensions."""
    dims = list(dict.fromkeys(df["dimension"])) if not df.empty else []
    if len(dims) < RADAR_MIN_AXES:
        return None
    labels = dict(zip(df["dimension"], df["label"]))
    wide = radar_frame(df)
    series = {}
    for r in wide.to_dict("records"):
        name = str(r["model"]) if r["setting"] == "none" else f"{r['model']} ({r['setting']})"
        series[name] = tuple([100 * float(np.nan if r[f"{d}:{k}"] is None else r[f"{d}:{k}"]) for d in dims] for k in ("value", "lo", "hi"))
    return radar([labels[d] for d in dims], series, "profile-radar", "Resilience profile (radar)")


def radar_section(df: pd.DataFrame) -> tuple[str, str] | None:
    """(html, markdown) of the radar alone, for a report the cross-family section leaves out (one
    family that declares three dimensions or more)."""
    svg = profile_radar(df)
    if svg is None:
        return None
    body = str(macros(__package__, "report.html.j2").profile(Markup(svg), Markup("")))
    md = "## Resilience profile\n\nThe radar's data: `tables/profile_radar.csv` (per model and setting, each dimension's value, interval and n; higher is better).\n"
    return body, md


def _units(c: dict[str, Any]) -> str | None:
    """The viewer's URL of the units behind a profile cell, as its family's `Outcomes.filters`
    names them (a rate shown as 1 - rate links to the units of the rate: the flips)."""
    flt = get(c["family"]).outcomes.filters(str(c["dimension"]).split(":", 1)[1])
    return None if flt is None else rate_units(c["run"], c["model"], c["setting"], **flt)


def profile_section(df: pd.DataFrame) -> tuple[str, str] | None:
    """(html, markdown) of the cross-family profile, or None when fewer than two families have data."""
    if df.empty or df["family"].nunique() < 2:
        return None
    dims = list(dict.fromkeys(df["dimension"]))
    labels = dict(zip(df["dimension"], df["label"]))
    keys = list(dict.fromkeys(zip(df["model"], df["setting"])))
    cells: dict[tuple[Any, ...], dict[str, Any]] = {(r.model, r.setting, r.dimension): r._asdict() for r in df.itertuples(index=False)}
    rows, md_rows = [], []
    for model, setting in keys:
        row, md = [esc(model), esc(setting_name(setting))], {"Model": model, "Setting": setting}
        for dim in dims:
            c = cells.get((model, setting, dim))
            row.append(rate_cell(c["value"], c["lo"], c["hi"], c["n"], units=_units(c)) if c else "—")
            md[labels[dim]] = (
                "—"
                if not c
                else f"{100 * c['value']:.1f}%" + (f" [{100 * c['lo']:.1f}, {100 * c['hi']:.1f}]" if c["lo"] is not None and not pd.isna(c["lo"]) else "")
            )
        rows.append(row)
        md_rows.append(md)
    table = html_table(rows, ["Model", "Setting", *[esc(labels[d]) for d in dims]], numeric=range(2, 2 + len(dims)))
    svg = profile_figure(df)
    spider = profile_radar(df)
    figures = None if svg is None else Markup(svg + (spider or ""))
    body = str(macros(__package__, "report.html.j2").profile(figures, Markup(table)))
    md = "## Resilience profile (all families)\n\n" + markdown_table(pd.DataFrame(md_rows)) + "\n"
    return body, md
