"""The HTML renderer of the report's parts (`parts`): each block through its macro in
templates/parts.html.j2 (autoescaped), each figure drawn from its values (`plots`) and inlined as SVG."""

from __future__ import annotations

import re
from collections.abc import Sequence

from markupsafe import Markup

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
)
from .templating import macros

_MARKED = re.compile(r"`([^`]*)`|\*\*([^*]+)\*\*")


def pieces(text: str) -> list[tuple[str, str]]:
    """A paragraph's text as (kind, text) pieces: `code` between backticks, `strong` between double
    asterisks, the rest `text`."""
    out: list[tuple[str, str]] = []
    at = 0
    for m in _MARKED.finditer(text):
        if m.start() > at:
            out.append(("text", text[at : m.start()]))
        out.append(("code", m.group(1)) if m.group(1) is not None else ("strong", m.group(2)))
        at = m.end()
    if at < len(text):
        out.append(("text", text[at:]))
    return out


def _kind(block: Block) -> tuple[str, Block, object]:
    """(the macro's kind, the block, what the macro needs besides: a figure's SVG, a paragraph's pieces)."""
    from .plots import bars, difference, radar, scatter  # matplotlib only when a figure is drawn

    if isinstance(block, Table):
        return "table", block, None
    if isinstance(block, DifferenceFigure):
        return "difference", block, Markup(difference(block) or "")
    if isinstance(block, RadarFigure):
        return "radar", block, Markup(radar(block.axes, block.series, block.name, block.title))
    if isinstance(block, BarFigure):
        return "bars", block, Markup(bars(block))
    if isinstance(block, DrawnFigure):
        return "drawn", block, Markup(block.svg)
    if isinstance(block, Paragraph):
        return "paragraph", block, pieces(block.text)
    if isinstance(block, Heading):
        return "heading", block, None
    if isinstance(block, ItemList):
        return "list", block, None
    if isinstance(block, Cards):
        return "cards", block, None
    if isinstance(block, ScatterFigure):
        return "scatter", block, Markup(scatter(block) or "")
    if isinstance(block, SideBySide):
        return "side_by_side", block, [_shown(col) for col in block.columns]
    raise TypeError(f"not a report part: {block!r}")


def _shown(blocks: Sequence[Block]) -> list[tuple[str, Block, object]]:
    """The blocks as the template's body takes them; a figure with no point to draw is left out."""
    return [k for k in (_kind(b) for b in blocks) if k[0] not in ("difference", "scatter") or k[2]]


def blocks_html(blocks: Sequence[Block]) -> Markup:
    """Blocks as HTML, in order."""
    return Markup(macros(__package__, "parts.html.j2").body(_shown(blocks)))


def section_html(section: Section) -> Markup:
    """A section's body (the page writes its heading and anchor)."""
    return blocks_html(section.blocks)


def table_html(table: Table) -> Markup:
    """One table."""
    return Markup(macros(__package__, "parts.html.j2").table(table))


def cell_html(cell: Cell) -> Markup:
    """One cell's content (its text, link and small print), for a page still laid out by hand."""
    return Markup(str(macros(__package__, "parts.html.j2").cell(cell)).strip())
