"""The Markdown renderer of the report's parts (`parts`): a section as its heading, its prose, its
tables (each cell's text with its small print) and each figure as its caption and values."""

from __future__ import annotations

from collections.abc import Sequence

from .parts import (
    BarFigure,
    Block,
    Cards,
    Cell,
    DifferenceFigure,
    DrawnFigure,
    Heading,
    ItemList,
    Paragraph,
    RadarFigure,
    ScatterFigure,
    Section,
    SideBySide,
    Table,
    signed,
)


def _cell(c: Cell) -> str:
    return c.shown.replace("|", "\\|").replace("\n", " ") or "—"


def table_markdown(table: Table) -> str:
    """A table of its shown columns, one line per row."""
    cols = [i for i, c in enumerate(table.columns) if c.shown]
    lines = ["| " + " | ".join(table.columns[i].header for i in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(row[i]) for i in cols) + " |" for row in table.rows]
    return "\n".join(lines)


def _ends(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f" [{lo:+.1f}, {hi:+.1f}]"


def _figure(fig: DifferenceFigure | RadarFigure | BarFigure | DrawnFigure | ScatterFigure) -> list[str]:
    """A figure as its caption and the values it draws (a drawn figure: its caption; its values are
    its section's tables)."""
    lines = [f"*{fig.title}.* {fig.caption}".rstrip(), ""]
    if isinstance(fig, DrawnFigure):
        return lines[:1]
    if isinstance(fig, BarFigure):
        lines += [f"- {name}: " + ", ".join(f"{lev} {v:g}" for lev, v in zip(fig.levels, counts)) for name, counts in fig.series.items()]
    elif isinstance(fig, DifferenceFigure):
        for panel in fig.panels:
            unit = "rate" if panel.scale == 100 else "score"
            lines += [
                f"- {p.group}, {p.label} ({panel.xlabel}): {signed(p.diff, unit)} [{signed(p.lo, unit, False)}, {signed(p.hi, unit, False)}]"
                for p in panel.points
            ]
    elif isinstance(fig, ScatterFigure):
        lines += [
            f"- {p.label} ({p.group}): {fig.xlabel} {p.x:+.1f}{_ends(p.x_lo, p.x_hi)}; {fig.ylabel} {p.y:+.1f}{_ends(p.y_lo, p.y_hi)}" for p in fig.points
        ]
    else:
        for name, (p, lo, hi) in fig.series.items():
            lines.append(f"- {name}: " + "; ".join(f"{a} {v:.1f}% [{a_lo:.1f}, {a_hi:.1f}]" for a, v, a_lo, a_hi in zip(fig.axes, p, lo, hi) if v == v))
    return lines


def blocks_markdown(blocks: Sequence[Block]) -> str:
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, Table):
            lines += [table_markdown(b), ""] + ([b.note, ""] if b.note else [])
        elif isinstance(b, Cards):
            lines += [f"- {c.label}: **{c.value}**" + (f" ({c.sub})" if c.sub else "") for c in b.cards] + [""]
        elif isinstance(b, Paragraph):
            lines += [f"> {b.text}" if b.style == "warn" else b.text, ""]
        elif isinstance(b, Heading):
            lines += [f"### {b.text}", ""]
        elif isinstance(b, ItemList):
            lines += ([b.lead, ""] if b.lead else []) + [f"- {c.shown}" for c in b.items] + [""]
        elif isinstance(b, SideBySide):
            lines += [blocks_markdown(col) + "\n" for col in b.columns]
        else:
            lines += [*_figure(b), ""]
    return "\n".join(lines).rstrip("\n")


def section_markdown(section: Section) -> str:
    """A section: `## title`, then its blocks."""
    return f"## {section.title}\n\n" + blocks_markdown(section.blocks)
