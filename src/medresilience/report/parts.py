"""The report's parts as data: a section is an ordered list of blocks (paragraphs, headings, lists,
tables, figures); a table is rows of cells under columns; a cell holds its value, the text shown,
the small print beneath it (an interval, an n), and the viewer's link to the units it counts with
how many units that link names. Every output (HTML through the templates, Markdown, CSV / Parquet)
is written from these values by one renderer each (`render_html`, `render_markdown`, `render_data`);
nothing else writes a table or a figure.

Numbers are written by the constructors here (`rate`, `count`, `change`, `score`), so a number reads
the same in every output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from .tables import fmt_p

#: a value a data output (CSV, Parquet) holds
Scalar = str | int | float | bool | None
#: what a link stands for, in its title ("the units behind this rate, in the viewer"; a unit: "this unit")
LinkKind = Literal["rate", "count", "number", "unit", "mean"]
#: how a paragraph is shown: a note (small, muted), a lead, a warning, or plain
ParagraphStyle = Literal["note", "lead", "warn", "plain"]


def missing(v: object) -> bool:
    """None, NA or NaN: a value that is not there."""
    return v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and bool(np.isnan(v)))


@dataclass(frozen=True)
class Cell:
    """One table cell. `text` is shown (linked to `href` when given: the viewer's URL of the units
    behind it, `units` of them); `tail` follows the linked text unlinked; `note` is the small print
    beneath it (each piece kept unbroken; `stacked=False`: beside it). `value` is the cell's number
    for data outputs (None: the text), `data` further fields written as `<column>_<key>` (a rate's
    lo, hi, n). `after`: further cells shown on the same line after its tail (each with its own
    link: a paired test's discordant counts b and c)."""

    text: str
    value: Scalar = None
    href: str | None = None
    units: int | None = None
    link_kind: LinkKind = "number"
    tail: str = ""
    note: tuple[str, ...] = ()
    stacked: bool = True
    strong: bool = False
    data: Mapping[str, Scalar] = field(default_factory=dict)
    after: tuple[Cell, ...] = ()

    @property
    def shown(self) -> str:
        """The cell as one line of text (Markdown, a terminal): text, tail, the cells after it and
        the small print."""
        line = self.text + self.tail + "".join(a.text + a.tail for a in self.after)
        return " ".join(s for s in (line, *self.note, *(n for a in self.after for n in a.note)) if s)


@dataclass(frozen=True)
class Column:
    """A column: its key in data outputs, its header, an optional note on it (the header's title),
    whether its cells are numbers (right-aligned), and whether it is shown (False: data only).
    `fields`: the data columns its cells' further fields are written to, by field (None: every
    field, as `<key>_<field>`)."""

    key: str
    header: str
    numeric: bool = False
    note: str | None = None
    shown: bool = True
    fields: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Table:
    """Rows of cells under columns; `name` names its data file (tables/NAME.csv). `row_classes`: a
    class per row (`sig`: a significant row); `fold`: the summary of a table folded when longer than
    `open_up_to` rows (shown open up to it; 0: always folded); `note`: the small print under it
    (inside the fold)."""

    name: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    row_classes: tuple[str, ...] = ()
    fold: str | None = None
    open_up_to: int = 12
    note: str = ""

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.name}: row {i} has {len(row)} cells for {len(self.columns)} columns")

    def linked(self) -> list[tuple[Column, Cell]]:
        """Every cell with a link to units (a cell shown after another's too), with its column."""
        return [(c, one) for row in self.rows for c, cell in zip(self.columns, row) for one in (cell, *cell.after) if one.href]


@dataclass(frozen=True)
class DifferencePoint:
    """One difference with its interval (in the panel's units), drawn in `group`'s colour on the
    row `label`."""

    group: str
    label: str
    diff: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class DifferencePanel:
    """One panel of a difference figure: its x label, and the scale its points are drawn at (100
    for a share drawn in percentage points)."""

    xlabel: str
    points: tuple[DifferencePoint, ...]
    scale: float = 100.0


@dataclass(frozen=True)
class DifferenceFigure:
    """Values with their intervals: one row per label, one colour per group (a compared pair), one
    panel per scale; a difference is drawn against its `reference` line (0), a rate on its
    `limits` (0-100%, no reference line)."""

    name: str
    title: str
    caption: str
    panels: tuple[DifferencePanel, ...]
    reference: float | None = 0.0
    limits: tuple[float, float] | None = None


@dataclass(frozen=True)
class RadarFigure:
    """A radar chart: one spoke per axis (0-100%), one polygon per series (value, lo, hi per axis in
    %, NaN where the series has none)."""

    name: str
    title: str
    caption: str
    axes: tuple[str, ...]
    series: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float]]]


@dataclass(frozen=True)
class BarFigure:
    """Grouped bars of counts: one group of bars per level on the x axis, one colour per series
    (its counts per level, in the order of `levels`)."""

    name: str
    title: str
    caption: str
    xlabel: str
    ylabel: str
    levels: tuple[str, ...]
    series: Mapping[str, tuple[float, ...]]
    legend: str = ""


@dataclass(frozen=True)
class DrawnFigure:
    """A figure of a kind no other part shares (a family's heatmap, stacked shares, a scatter),
    drawn by its family from its values with report/plots.py's primitives: its name (the SVG's id,
    `fig-NAME`), title, caption and the drawn SVG; Markdown writes its title and caption."""

    name: str
    title: str
    caption: str
    svg: str


@dataclass(frozen=True)
class ScatterPoint:
    """One point of a scatter figure at (x, y), each with its interval's ends (None: no interval),
    drawn in `group`'s colour and annotated with `label`."""

    group: str
    label: str
    x: float
    y: float
    x_lo: float | None = None
    x_hi: float | None = None
    y_lo: float | None = None
    y_hi: float | None = None


@dataclass(frozen=True)
class ScatterFigure:
    """Points with their intervals on two axes (one colour per group, named in the legend), with
    reference lines at `reference` (x, y; None: none)."""

    name: str
    title: str
    caption: str
    xlabel: str
    ylabel: str
    points: tuple[ScatterPoint, ...]
    reference: tuple[float, float] | None = (0.0, 0.0)


Figure = DifferenceFigure | RadarFigure | BarFigure | DrawnFigure | ScatterFigure


@dataclass(frozen=True)
class Card:
    """One key number shown large: its label, its value and the small print under it (an interval
    and n, or a mean's range); `alert`: a number of harm (an attack's success), shown in the warning colour."""

    label: str
    value: str
    sub: str = ""
    alert: bool = False


@dataclass(frozen=True)
class Cards:
    """Key numbers as a row of cards."""

    cards: tuple[Card, ...]


@dataclass(frozen=True)
class Paragraph:
    """Prose; `code` spans written between backticks, **strong** ones between double asterisks (as
    Markdown writes both)."""

    text: str
    style: ParagraphStyle = "note"


@dataclass(frozen=True)
class Heading:
    """A heading inside a section; `anchor`: its id in the page (a link target), when given."""

    text: str
    anchor: str = ""


@dataclass(frozen=True)
class ItemList:
    """A bulleted list of cells (each may link to its units); `name` names the list in the page
    (its HTML class), for styles and for what reads the page."""

    items: tuple[Cell, ...]
    lead: str = ""
    name: str = ""


@dataclass(frozen=True)
class SideBySide:
    """Columns of blocks laid out side by side where the page is wide enough (one under another
    when narrow, and in Markdown); `name` names the row in the page (its HTML class)."""

    columns: tuple[tuple[Block, ...], ...]
    name: str = ""


Block = Paragraph | Heading | ItemList | Cards | Table | DifferenceFigure | RadarFigure | BarFigure | DrawnFigure | ScatterFigure | SideBySide


@dataclass(frozen=True)
class Section:
    """A section of the report: its anchor, its title and its blocks in order."""

    anchor: str
    title: str
    blocks: tuple[Block, ...]

    def tables(self) -> list[Table]:
        """Its tables, those laid out side by side among them, in order."""
        return _tables(self.blocks)


def _tables(blocks: Sequence[Block]) -> list[Table]:
    out: list[Table] = []
    for b in blocks:
        if isinstance(b, Table):
            out.append(b)
        elif isinstance(b, SideBySide):
            out += [t for col in b.columns for t in _tables(col)]
    return out


# ------------------------------------------------------------------------------ cells

#: a number as the metrics hand it over (None, NaN or NA: missing)
Num = float | int | None


def num(v: object) -> float | None:
    """A number as a float; None when missing."""
    if missing(v):
        return None
    return float(v)  # type: ignore[arg-type]  # a number from the metrics: int, float or a numpy number


def whole(v: object) -> int | None:
    """A count as an int; None when missing."""
    f = num(v)
    return None if f is None else int(f)


def text(s: object, strong: bool = False) -> Cell:
    """A cell of text ('' for a missing value)."""
    shown = "" if missing(s) else str(s)
    return Cell(shown, shown, strong=strong)


def dash() -> Cell:
    return Cell("—")


def count(k: object, href: str | None = None, tail: str = "", shown: str | None = None) -> Cell:
    """A count ('12'; `shown` instead of the number when given), followed by `tail`; with `href`
    and a count above 0, linked to the units it counts."""
    n = whole(k)
    if n is None:
        return dash()
    linked = href if n else None
    return Cell(str(n) if shown is None else shown, n, linked, n if linked else None, "count", tail)


def rate(p: object, lo: object, hi: object, n: object, href: str | None = None, units: object = None, stacked: bool = True) -> Cell:
    """'71.2%' with '[65.4, 76.4]' and 'n=250' beneath it (beside it when not stacked); with `href`,
    the rate links to the `units` units behind it (the rate's k or its n)."""
    fp, flo, fhi, nn = num(p), num(lo), num(hi), whole(n)
    data: dict[str, Scalar] = {"lo": flo, "hi": fhi, "n": nn}
    if fp is None:
        return Cell("—", None, note=() if nn is None else (f"n={nn}",), stacked=False, data=data)
    note = [] if flo is None or fhi is None else [f"[{100 * flo:.1f}, {100 * fhi:.1f}]"]
    if nn is not None:
        note.append(f"n={nn}")
    return Cell(f"{100 * fp:.1f}%", fp, href, whole(units) if href else None, "rate", note=tuple(note), stacked=stacked, data=data)


#: how a signed change is written per unit (its scale, digits and suffix); any other unit (tokens,
#: calls, ...) as a plain number with one decimal
CHANGE_FORMATS = {"rate": (100, 1, " pp"), "score": (1, 2, ""), "usd": (1, 6, "")}


def signed(v: object, unit: str = "rate", with_unit: bool = True) -> str:
    """A signed change in its unit's numbers: '+1.2 pp' for a rate, '+0.12' for a score; '—' when missing."""
    f = num(v)
    if f is None:
        return "—"
    scale, digits, suffix = CHANGE_FORMATS.get(unit, (1, 1, ""))
    return f"{scale * f:+.{digits}f}" + (suffix if with_unit else "")


def change(diff: object, lo: object, hi: object, unit: str = "rate", strong: bool = False) -> Cell:
    """A change with its interval beneath it in the same numbers without the unit: '+1.2 pp' over '[+0.4, +2.0]'."""
    d, flo, fhi = num(diff), num(lo), num(hi)
    if d is None:
        return dash()
    note = () if flo is None or fhi is None else (f"[{signed(flo, unit, False)}, {signed(fhi, unit, False)}]",)
    return Cell(signed(d, unit), d, note=note, strong=strong, data={"lo": flo, "hi": fhi})


def score(p: object, lo: object, hi: object, n: object = None, href: str | None = None) -> Cell:
    """A mean score (not a share), signed, with its interval and n beneath it: '+0.31' over '[+0.12, +0.48] n=40'."""
    fp, flo, fhi, nn = num(p), num(lo), num(hi), whole(n)
    if fp is None:
        return dash()
    note = [] if flo is None or fhi is None else [f"[{flo:+.2f}, {fhi:+.2f}]"]
    if nn is not None:
        note.append(f"n={nn}")
    return Cell(f"{fp:+.2f}", fp, href, nn if href else None, "number", note=tuple(note), data={"lo": flo, "hi": fhi, "n": nn})


def p_value(p: object) -> Cell:
    """A p-value as the report writes every one: '0.046', '0.0031', '2.0e-05'; '—' when missing."""
    f = num(p)
    return Cell(fmt_p(f), f)


def paired_test(name: object, p: object, b: object = None, c: object = None, b_href: str | None = None, c_href: str | None = None) -> Cell:
    """A paired test: 'mcnemar_exact: 12 / 4, p 0.046', its discordant counts b / c when given (each
    linked to its units with `b_href` / `c_href`), else 'mcnemar_exact, p 0.046'; '—' without a test."""
    f = num(p)
    if not name or f is None:
        return dash()
    nb, nc = whole(b), whole(c)
    if nb is None or nc is None:
        return Cell(f"{name}, p {fmt_p(f)}", f)
    return Cell(f"{name}: ", f, after=(count(nb, b_href, " / "), count(nc, c_href, f", p {fmt_p(f)}")))
