"""What a family's report hook returns: its part of the key numbers as blocks (`key_parts`), its
sections as parts (`parts`), which the report renders to HTML and Markdown, its tables (named
without collisions across families by the page skeleton) and its headline."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .parts import Block, Section


@dataclass
class FamilySection:
    family: str
    title: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    headline: pd.DataFrame = field(default_factory=pd.DataFrame)
    summary_columns: list[tuple[str, str]] = field(default_factory=list)  # (headline key, title) for the CLI table
    key_parts: tuple[Block, ...] = ()
    parts: list[Section] = field(default_factory=list)
