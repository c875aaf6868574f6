"""`medres report` and `medres compare` (thin: parse, call the library, print)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the report commands to the main app."""
