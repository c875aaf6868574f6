"""What a family's report hook returns: its part of the key numbers, its sections, its Markdown,
its tables (named without collisions across families by the page skeleton) and its headline. A
family moved to the report's parts gives its key numbers as blocks (`key_parts`) and its sections
as parts (`parts`), which the report renders to HTML and Markdown; the others still give HTML
(`key_html`, `sections`) and Markdown (`markdown`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .parts import Block, Section


@dataclass
class FamilySection:
    family: str
    title: str
    key_html: str = ""
    sections: list[tuple[str, str, str]] = field(default_factory=list)  # (anchor id, title, html)
    markdown: str = ""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    headline: pd.DataFrame = field(default_factory=pd.DataFrame)
    summary_columns: list[tuple[str, str]] = field(default_factory=list)  # (headline key, title) for the CLI table
    key_parts: tuple[Block, ...] = ()
    parts: list[Section] = field(default_factory=list)
