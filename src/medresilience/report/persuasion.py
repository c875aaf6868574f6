"""The report parts of adaptive attacks (`stats.persuasion`): the flip curve as a figure (the share
of right answers flipped within t turns, a step line per model with its 95% band), the curve's values
as a table (a column per turn), and the summary table (model, items attacked, flipped within the
budget, median turns to flip, flips to the attacker's target, candidates rejected), each number with
its interval and n. Parts are data; the renderers write them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..run.results import ResampledFlip
from ..stats.persuasion import ModelComparison, PersuasionSummary
from ..stats.rates import Rate
from .parts import Block, Cell, Column, DrawnFigure, Paragraph, Table, count, dash, p_value, rate, text

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


def curve_figure(
    summaries: Sequence[PersuasionSummary],
    name: str = "persuasion-curve",
    title: str = "Right answers flipped within t turns",
    standing: Sequence[PersuasionSummary | None] = (),
) -> DrawnFigure:
    """The flip curves as one figure: per summary a step line of the share flipped within t turns
    (0 at turn 0, ending half a turn past its largest budget) and its 95% band; `standing` (one per
    summary, None for none): the curve of its flips that stand after resampling, dashed beside it."""
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
            kept = standing[j] if j < len(standing) else None
            if kept is not None:
                ys = [0.0, *(100 * pt.p for pt in kept.curve.points), 100 * kept.curve.points[-1].p]
                ax.step(xs, ys, where="post", color=colour, linewidth=1.4, ls="--", label=short(f"{_label(s)}, flips that stand", 40), zorder=3)
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
        + (
            " A dashed line counts only the flips that stand after resampling (a flip that does not stand counts as held: a lower bound)."
            if any(x is not None for x in standing)
            else ""
        )
    )
    return DrawnFigure(name, title, caption, svg)


def persuasion_parts(
    summaries: Sequence[PersuasionSummary], link: Linker | None = None, standing: Sequence[PersuasionSummary | None] = ()
) -> tuple[Block, ...]:
    """The blocks of the adaptive measures: the curve figure (with the curves of flips that stand,
    `standing`, one per summary or None), the summary table and the curve's values."""
    if not summaries:
        return (Paragraph("No attacked item: no model had an item right at clean to attack."),)
    return (curve_figure(summaries, standing=standing), summary_table(summaries, link), curve_table(summaries))


def rate_cell(r: Rate) -> Cell:
    """A `stats.Rate` as a rate cell (its k the units behind it)."""
    return rate(r.p, r.lo, r.hi, r.n, None, r.k)


# ------------------------------------------------------------------------------ resampled flips

#: one flip's test as the table shows it (a model's `ResampledFlip`)
TEST_COLUMNS = (
    Column("model", "Model"),
    Column("item", "Item"),
    Column("flipped_at", "Flipped at turn", numeric=True),
    Column("original", "Original: right / read", numeric=True, note="resampled answers to the item as first asked"),
    Column("attacked", "Attacked: right / read", numeric=True, note="resampled answers to the item as attacked at the flip"),
    Column("p", "p (one-sided Fisher)", numeric=True),
    Column("p_adjusted", "p adjusted", numeric=True),
    Column("stands", "Stands"),
)


@dataclass(frozen=True)
class StandingRow:
    """One model's resampling: flips, those resampled, draws per side, the correction, the smallest
    p its draws allow, those standing, the target's temperature, and the flip rates raw and standing."""

    model: str
    flipped: int
    tested: int
    r: int
    correction: str
    min_p: float | None
    standing: int
    temperature: float | None
    raw: PersuasionSummary
    kept: PersuasionSummary


STANDING_COLUMNS = (
    Column("model", "Model"),
    Column("flips", "Flips", numeric=True, note="flips resampled of the flips seen"),
    Column("r", "Draws per side", numeric=True),
    Column("standing", "Stand", numeric=True, note="flips whose test holds after the correction"),
    Column("raw", "Flipped within budget", numeric=True),
    Column("kept", "Flipped, standing flips only", numeric=True, note="a flip that does not stand counts as held"),
    Column("min_p", "Smallest possible p", numeric=True, note="r right of r against none: below the level or nothing can stand"),
)

CORRECTION = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (false discovery rate)"}


def standing_table(rows: Sequence[StandingRow]) -> Table:
    """Per model: its flips resampled, those that stand after the correction, and the share of right
    answers flipped within the budget counting every flip and only those that stand."""
    cells = []
    for r in rows:
        raw, kept = r.raw.flipped, r.kept.flipped
        cells.append(
            (
                text(r.model, strong=True),
                count(r.tested, tail=f" of {r.flipped}"),
                count(r.r),
                count(r.standing, tail=f" after {CORRECTION.get(r.correction, r.correction)}"),
                rate(raw.p, raw.lo, raw.hi, raw.n, None, raw.k),
                rate(kept.p, kept.lo, kept.hi, kept.n, None, kept.k),
                p_value(r.min_p),
            )
        )
    temps = sorted({r.temperature for r in rows if r.temperature is not None})
    note = (
        "Each flip's target was asked the original and the attacked item again, r times each; a flip stands when the "
        "one-sided Fisher exact test of right answers (original against attacked, unread draws left out) holds after "
        "the correction across the model's flips."
    )
    if 0 in temps or 0.0 in temps:
        note += " At temperature 0 a draw repeats the answer where the server is deterministic: the test then says the flip is reproducible, not that it beats sampling noise."
    return Table("resampled_flips", STANDING_COLUMNS, tuple(cells), note=note)


def tests_table(rows: Sequence[tuple[str, ResampledFlip]]) -> Table:
    """One row per resampled flip (the model it flipped, its test): its counts, p, adjusted p and
    whether it stands (folded)."""
    cells = tuple(
        (
            text(model, strong=True),
            text(r.item_id),
            count(r.flipped_at),
            Cell(f"{r.orig_right} / {r.orig_read}", r.orig_right, data={"read": r.orig_read}),
            Cell(f"{r.att_right} / {r.att_read}", r.att_right, data={"read": r.att_read}),
            p_value(r.p),
            p_value(r.p_adjusted),
            text("yes" if r.stands else "no", strong=r.stands),
        )
        for model, r in rows
    )
    return Table("attack_tests", TEST_COLUMNS, cells, fold="Each flip's test", open_up_to=12)


# ------------------------------------------------------------------------------ two models

COMPARE_COLUMNS = (
    Column("a", "Model A"),
    Column("b", "Model B"),
    Column("n", "Items", numeric=True, note="attacked in both (right at clean in both), each judged within the smaller budget"),
    Column("a_flipped", "A flipped", numeric=True),
    Column("b_flipped", "B flipped", numeric=True),
    Column("mcnemar", "Only A / only B, exact McNemar p", numeric=True),
    Column("first", "A first / B first / ties, sign test p", numeric=True),
    Column("harder", "Harder to move"),
)


def comparison_table(comparisons: Sequence[ModelComparison]) -> Table:
    """Two models attacked on the same items: each model's share flipped within the common budget
    (Wilson), the discordant items with the exact McNemar p, who flipped first with the sign test p,
    and the model fewer items moved (only when the test says so at 0.05: else 'no difference shown')."""
    rows = []
    for c in comparisons:
        harder = c.harder_to_move if c.p_flipped <= 0.05 else None
        rows.append(
            (
                text(c.a, strong=True),
                text(c.b, strong=True),
                count(c.n),
                rate_cell(c.a_flipped),
                rate_cell(c.b_flipped),
                Cell(f"{c.only_a} / {c.only_b}", c.p_flipped, note=(f"p {p_value(c.p_flipped).text}",), data={"only_a": c.only_a, "only_b": c.only_b}),
                Cell(
                    f"{c.a_first} / {c.b_first} / {c.ties}",
                    c.p_first,
                    note=(f"p {p_value(c.p_first).text}",),
                    data={"a_first": c.a_first, "b_first": c.b_first, "ties": c.ties},
                ),
                text(harder or "no difference shown"),
            )
        )
    return Table(
        "persuasion_models",
        COMPARE_COLUMNS,
        tuple(rows),
        note=(
            "Paired on the items both models were attacked on: exact McNemar test on flipped within the smaller budget, "
            "and a two-sided sign test on which model flipped on an earlier turn (held counts as after the budget; ties dropped)."
        ),
    )
