"""Figure primitives of the report: matplotlib (Agg), each figure returned as an inline SVG string
with a <title>, text kept as text (searchable, scalable), deterministic ids and no timestamp.
Families draw their figures with these; every rate is drawn with its 95% Wilson interval. Colours
are the Okabe-Ito palette (readable with colour-vision deficiencies). The font is DejaVu Sans,
which matplotlib ships, so no machine warns about a missing font."""

from __future__ import annotations

import html as _html
import io
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.projections.polar import PolarAxes

from .parts import BarFigure, DifferenceFigure, ScatterFigure

PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.typing import RcKeyType

STYLE: dict[RcKeyType, object] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # shipped with matplotlib
    "font.size": 11,
    "axes.titlesize": 13,
    "axes.titleweight": "bold",
    "axes.labelsize": 11.5,
    "xtick.labelsize": 10.5,
    "ytick.labelsize": 10.5,
    "legend.fontsize": 10,
    "figure.titlesize": 14,
    "figure.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "svg.fonttype": "none",  # text stays text
    "figure.dpi": 100,
}

_HEAD = re.compile(r"^.*?(?=<svg)", re.S)


def to_svg(fig: plt.Figure, name: str, title: str) -> str:
    """The figure as an inline <svg> element (no XML prolog), with <title> and aria-label."""
    buf = io.StringIO()
    # Figures lay themselves out (constrained layout), so one draw suffices; bbox_inches="tight"
    # would draw everything twice.
    tight = None if fig.get_layout_engine() is not None else "tight"
    with plt.rc_context({"svg.hashsalt": name}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches=tight)
    plt.close(fig)
    svg = _HEAD.sub("", buf.getvalue(), count=1)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)
    t = _html.escape(title, quote=True)
    svg = re.sub(r"<svg\b", f'<svg role="img" aria-label="{t}" class="figure" id="fig-{name}"', svg, count=1)
    svg = re.sub(r"(<svg\b[^>]*>)", rf"\1<title>{t}</title>", svg, count=1)
    return svg


def pct(v: float | None) -> float:
    return np.nan if v is None or (isinstance(v, float) and np.isnan(v)) else 100.0 * float(v)


def err(p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.vstack([np.clip(p - lo, 0, None), np.clip(hi - p, 0, None)])


def short(s: str, width: int = 28) -> str:
    return s if len(s) <= width else s[: width - 1] + "…"


def wrap(s: str, width: int = 12) -> str:
    return textwrap.fill(str(s).replace("_", " "), width=width, break_long_words=False)


def radar(axes: Sequence[str], series: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]], name: str, title: str) -> str:
    """A radar (spider) chart: one spoke per axis (0-100%, higher is better outward), one closed
    polygon per series (value, lo, hi per axis, in %; NaN where the series has no value there),
    each value's interval drawn as a segment along its spoke."""
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False)
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(7.5, 6.5), layout="constrained")
        ax = fig.add_subplot(projection="polar")
        assert isinstance(ax, PolarAxes)
        ax.set_theta_offset(np.pi / 2)
        ax.set_theta_direction(-1)
        for j, (label, (p, lo, hi)) in enumerate(series.items()):
            colour = PALETTE[j % len(PALETTE)]
            v = np.asarray(p, dtype=float)
            ring = np.append(v, v[0])
            ax.plot(np.append(angles, angles[0]), ring, color=colour, linewidth=1.6, marker="o", markersize=4, label=short(label, 40))
            if not np.isnan(v).any():  # a missing value is a gap in the line, never a fill to 0
                ax.fill(np.append(angles, angles[0]), ring, color=colour, alpha=0.08)
            for a, lo_i, hi_i in zip(angles, lo, hi):
                if not (np.isnan(lo_i) or np.isnan(hi_i)):
                    ax.plot([a, a], [lo_i, hi_i], color=colour, linewidth=2.4, alpha=0.5)
        ax.set_xticks(angles, [wrap(a, 18) for a in axes])
        ax.set_ylim(0, 100)
        ax.set_yticks([25, 50, 75, 100], ["25", "50", "75", "100%"])
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
        ax.set_title(title)
        return to_svg(fig, name, title)  # inside the style: its text stays text


def difference(fig_data: DifferenceFigure) -> str | None:
    """The values-with-intervals figure (`parts.DifferenceFigure`): per panel, one row per label,
    one coloured point per group (a compared pair) with its interval as a horizontal bar, the
    reference (zero) marked; None when no point has a value."""
    panels = [p for p in fig_data.panels if any(pt.diff is not None and pt.diff == pt.diff for pt in p.points)]
    if not panels:
        return None
    groups = list(dict.fromkeys(pt.group for p in panels for pt in p.points))
    rows = max(len(dict.fromkeys(pt.label for pt in p.points)) for p in panels)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            1,
            len(panels),
            figsize=(9.6 if len(panels) > 1 else 10, min(11.0, max(3.0, 0.42 * rows * max(1, len(groups) / 2) + 1.6))),
            layout="constrained",
            squeeze=False,
        )
        for ax, panel in zip(axes[0], panels):
            labels = list(dict.fromkeys(pt.label for pt in panel.points))
            step = 0.7 / max(1, len(groups))
            for j, group in enumerate(groups):
                at = {pt.label: pt for pt in panel.points if pt.group == group}
                y = np.array([labels.index(lab) - 0.35 + step * (j + 0.5) for lab in at], dtype=float)
                p, lo, hi = (np.array([pct_of(getattr(pt, k), pt.diff, panel.scale) for pt in at.values()], dtype=float) for k in ("diff", "lo", "hi"))
                colour = PALETTE[j % len(PALETTE)]
                label = short(group, 40) if ax is axes[0][0] else None
                ax.errorbar(p, y, xerr=err(p, lo, hi), fmt="o", color=colour, ecolor=colour, elinewidth=1.2, capsize=2, label=label, zorder=3)
            if fig_data.reference is not None:
                ax.axvline(fig_data.reference, color="#333", lw=0.8)
            if fig_data.limits is not None:
                ax.set_xlim(*fig_data.limits)
            ax.set_yticks(np.arange(len(labels)), [short(lab, 40) for lab in labels])
            ax.invert_yaxis()
            ax.set_xlabel(panel.xlabel)
            ax.grid(axis="y", visible=False)
        fig.suptitle(fig_data.title, fontweight="bold")
        fig.legend(loc="outside lower center", frameon=False, fontsize=9)
        return to_svg(fig, fig_data.name, fig_data.title)


def pct_of(v: float | None, fallback: float | None, scale: float) -> float:
    """A difference (or an interval's end; the difference itself when the end is missing) at the
    panel's scale; NaN when missing."""
    x = v if v is not None and v == v else fallback
    return np.nan if x is None else scale * float(x)


def bars(fig_data: BarFigure) -> str:
    """Grouped bars (`parts.BarFigure`): per level a group of bars, one colour per series."""
    levels, series = list(fig_data.levels), list(fig_data.series.items())
    width = 0.8 / max(len(series), 1)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
        for i, (label, counts) in enumerate(series):
            xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(levels))]
            ax.bar(xs, list(counts), width, label=label, color=PALETTE[i % len(PALETTE)])
        ax.set_xticks(range(len(levels)), levels)
        ax.set_xlabel(fig_data.xlabel)
        ax.set_ylabel(fig_data.ylabel)
        ax.set_title(fig_data.title)
        if series:
            ax.legend(title=fig_data.legend or None, frameon=False)
        return to_svg(fig, fig_data.name, fig_data.title)


def scatter(fig_data: ScatterFigure) -> str | None:
    """Points with their intervals on both axes (`parts.ScatterFigure`): one colour per group (the
    legend), each point annotated with its label, the reference lines marked; None without points."""
    points = fig_data.points
    if not points:
        return None
    groups = list(dict.fromkeys(p.group for p in points))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.6, 5.6), layout="constrained")
        for p in points:
            colour = PALETTE[groups.index(p.group) % len(PALETTE)]
            x_lo, x_hi = p.x if p.x_lo is None else p.x_lo, p.x if p.x_hi is None else p.x_hi
            y_lo, y_hi = p.y if p.y_lo is None else p.y_lo, p.y if p.y_hi is None else p.y_hi
            ax.errorbar(
                [p.x],
                [p.y],
                xerr=[[max(0, p.x - x_lo)], [max(0, x_hi - p.x)]],
                yerr=[[max(0, p.y - y_lo)], [max(0, y_hi - p.y)]],
                fmt="o",
                color=colour,
                ecolor=colour,
                elinewidth=1.2,
                capsize=2,
                zorder=3,
            )
            ax.annotate(short(p.label, 34), (p.x, p.y), textcoords="offset points", xytext=(6, 6), fontsize=9, color=colour)
        for j, group in enumerate(groups):
            ax.plot([], [], "o", color=PALETTE[j % len(PALETTE)], label=short(group, 100))
        if fig_data.reference is not None:
            ax.axvline(fig_data.reference[0], color="#333", lw=0.8)
            ax.axhline(fig_data.reference[1], color="#333", lw=0.8)
        ax.set_xlabel(fig_data.xlabel)
        ax.set_ylabel(fig_data.ylabel)
        fig.legend(loc="outside lower center", frameon=False, fontsize=9)
        ax.set_title(fig_data.title)
        return to_svg(fig, fig_data.name, fig_data.title)
