"""The report parts of adaptive attacks (`stats.persuasion`): the flip curve as a figure (the share
of right answers flipped within t turns, a step line per model with its 95% band), the curve's values
as a table (a column per turn), and the summary table (model, items attacked, flipped within the
budget, median turns to flip, flips to the attacker's target, candidates rejected), each number with
its interval and n. Parts are data; the renderers write them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..stats.persuasion import PersuasionSummary
from .parts import Block, Cell, Column, DrawnFigure, Paragraph, Table, count, dash, rate, text

#: a summary's viewer link (the units it counts), or None
Linker = Callable[[PersuasionSummary], str | None]

METHOD_NOTE = {
    "wilson": "every attack had the same budget, so a share is flips / items attacked with its Wilson interval",
    "kaplan-meier": (
        "budgets differ, so an answer held through a small budget is censored there: a share is the Kaplan-Meier "
        "cumulative incidence, its interval Wilson's at the Kaplan-Meier effective sample size"
    ),
}


def _label(s: PersuasionSummary) -> str:
    return s.model if s.kind is None else f"{s.model} ({s.kind})"


def _median_cell(s: PersuasionSummary) -> Cell:
    m = s.median
    if m.turns is None:
        return Cell("not reached", None, note=(f"n={m.n}",), data={"lo": m.lo, "hi": m.hi, "n": m.n})
    hi = "not reached" if m.hi is None else str(m.hi)
    return Cell(str(m.turns), m.turns, note=(f"[{m.lo}, {hi}]", f"n={m.n}"), data={"lo": m.lo, "hi": m.hi, "n": m.n})


SUMMARY_COLUMNS = (
    Column("model", "Model"),
    Column("attacked", "Attacked", numeric=True, note="items the model had right at clean, then attacked"),
    Column("flipped", "Flipped within budget", numeric=True, note="share of right answers flipped within the largest budget (95% interval)"),
    Column("median_turns", "Median turns to flip", numeric=True, note="first turn by which half flipped, with its 95% interval"),
    Column("to_target", "To the target", numeric=True, note="share of flips to the attacker's target option (Wilson)"),
    Column("rejected", "Rejected candidates", numeric=True, note="candidate stresses the validity checks refused (never shown to the model)"),
)


def summary_table(summaries: Sequence[PersuasionSummary], link: Linker | None = None, name: str = "persuasion") -> Table:
    """One row per summary (model, or model x kind): attacked, flipped within the budget, median
    turns, to the target, rejected; `link` gives the flipped cell's viewer link."""
    rows = []
    for s in summaries:
        last = s.flipped
        rows.append(
            (
                text(_label(s), strong=True),
                count(s.attacked),
                rate(last.p, last.lo, last.hi, last.n, link(s) if link else None, last.k),
                _median_cell(s),
                rate(s.to_target.p, s.to_target.lo, s.to_target.hi, s.to_target.n),
                count(s.rejected, tail=f" in {s.turns_used} turns"),
            )
        )
    methods = sorted({s.curve.method for s in summaries})
    note = "; ".join(METHOD_NOTE[m] for m in methods)
    return Table(name, SUMMARY_COLUMNS, tuple(rows), note=note[:1].upper() + note[1:] + "." if note else "")


def curve_table(summaries: Sequence[PersuasionSummary], name: str = "persuasion_curve") -> Table:
    """The curves' values: a row per summary, a column per turn (the share flipped within it, with
    its interval and n; a dash past that summary's largest budget)."""
    turns = max((s.curve.max_turns for s in summaries), default=0)
    columns = (Column("model", "Model"), *(Column(f"within_{t}", f"Within {t}", numeric=True) for t in range(1, turns + 1)))
    rows = []
    for s in summaries:
        cells = [rate(pt.p, pt.lo, pt.hi, pt.n) for pt in s.curve.points]
        rows.append((text(_label(s), strong=True), *cells, *(dash() for _ in range(turns - len(cells)))))
    return Table(name, columns, tuple(rows))


def curve_figure(summaries: Sequence[PersuasionSummary], name: str = "persuasion-curve", title: str = "Right answers flipped within t turns") -> DrawnFigure:
    """The flip curves as one figure: per summary a step line of the share flipped within t turns
    (0 at turn 0, ending half a turn past its largest budget) and its 95% band."""
    import matplotlib.pyplot as plt  # matplotlib only when a figure is drawn

    from .plots import PALETTE, STYLE, short, to_svg

    turns = max((s.curve.max_turns for s in summaries), default=1)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.6, 4.8), layout="constrained")
        for j, s in enumerate(summaries):
            colour = PALETTE[j % len(PALETTE)]
            pts = s.curve.points
            # a step holds its turn's share until the next turn; the last is drawn half a turn long
            xs = [0, *(pt.turn for pt in pts), pts[-1].turn + 0.5]
            p = [0.0, *(100 * pt.p for pt in pts), 100 * pts[-1].p]
            lo = [0.0, *(100 * pt.lo for pt in pts), 100 * pts[-1].lo]
            hi = [0.0, *(100 * pt.hi for pt in pts), 100 * pts[-1].hi]
            ax.step(xs, p, where="post", color=colour, linewidth=1.8, label=short(f"{_label(s)} (n={s.attacked})", 40), zorder=3)
            ax.fill_between(xs, lo, hi, step="post", color=colour, alpha=0.15, linewidth=0)
        ax.axhline(50, color="#333", lw=0.8, ls=":")
        ax.set_xticks(range(turns + 1))
        ax.set_xlim(0, turns + 0.5)
        ax.set_ylim(0, 100)
        ax.set_xlabel("Attacker turns")
        ax.set_ylabel("Flipped within t turns (%)")
        ax.set_title(title)
        if summaries:
            ax.legend(frameon=False, loc="upper left")
        svg = to_svg(fig, name, title)
    methods = sorted({s.curve.method for s in summaries})
    caption = (
        "Share of the items each model had right at clean whose answer an adaptive attacker moved to a wrong one within t turns, "
        "with its 95% band (" + "; ".join(METHOD_NOTE[m] for m in methods) + "). The dotted line marks one half: where a curve "
        "crosses it is the median turns to flip."
    )
    return DrawnFigure(name, title, caption, svg)


def persuasion_parts(summaries: Sequence[PersuasionSummary], link: Linker | None = None) -> tuple[Block, ...]:
    """The blocks of the adaptive measures: the curve figure, the summary table and the curve's values."""
    if not summaries:
        return (Paragraph("No attacked item: no model had an item right at clean to attack."),)
    return (curve_figure(summaries), summary_table(summaries, link), curve_table(summaries))
