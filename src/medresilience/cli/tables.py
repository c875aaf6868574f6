"""Terminal tables that fit the console: a table whose cells need more columns than the terminal
has is printed as blocks instead, one per row (or group of rows sharing their key cells), one
'header: value' pair per value, as many to a line as fit. A number is never cut (no `…`) and a
cell never folds in the middle of a value."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text


def table_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The columns a rich table with the default box needs to show every cell whole: each column
    its widest cell plus one space either side, and a rule before, between and after columns."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return sum(widths) + 3 * len(widths) + 1


def fitted(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, keys: int = 1, label: bool = False) -> RenderableType:
    """`rows` as a table when it fits `width` columns, else as blocks: the first `keys` cells head a
    block (consecutive rows with the same key cells share it), each other cell a pair
    'header: value', side by side while they fit; with `label`, the cell after the keys names its row instead (a line of its
    own, the row's values indented beneath it)."""
    if table_width(headers, rows) <= width:
        t = Table(title=title)
        for i, h in enumerate(headers):
            t.add_column(h, justify="left" if i < keys or not any(_numeric(r[i]) for r in rows) else "right", no_wrap=True, overflow="ignore")
        for r in rows:
            t.add_row(*(Text(c) for c in r))  # as text: a run-qualified model name holds brackets, not markup
        return t
    out: list[RenderableType] = [Text(title, style="italic")]
    last: tuple[str, ...] | None = None
    for r in rows:
        head = tuple(r[:keys])
        if head != last:
            out.append(Text(" · ".join(f"{h} {v}" for h, v in zip(headers[:keys], head)), style="bold"))
            last = head
        rest = list(zip(headers[keys:], r[keys:]))
        indent = "  "
        if label and rest:
            out.append(Text(f"  {rest[0][1]}"))
            rest, indent = rest[1:], "    "
        line = ""
        for h, v in rest:  # 'header: value' pairs side by side while they fit, never split
            pair = f"{h}: {v}"
            if line and len(indent) + len(line) + 3 + len(pair) > width:
                out.append(Text(indent + line))
                line = ""
            line = f"{line}   {pair}" if line else pair
            if len(indent) + len(line) > width:  # a pair longer than a line: wrapped between words, indented beneath
                out += [Text(x) for x in _wrap(line, width, indent)]
                line = ""
        if line:
            out.append(Text(indent + line))
    return Group(*out)


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """`text` in lines of at most `width` columns, broken only at spaces (a word or number longer
    than a line stays whole on its own line), the lines after the first indented two more."""
    import textwrap

    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=False, break_on_hyphens=False) or [indent]


def _numeric(cell: str) -> bool:
    return any(ch.isdigit() for ch in cell)
