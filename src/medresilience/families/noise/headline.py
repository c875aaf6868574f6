"""The clinical-noise family's headline rates of one overall block: pure dict reading, no pandas."""

from __future__ import annotations

from typing import Any

from .taxonomy import HEADLINE_COLUMNS

HEADLINE_KEYS = tuple(k for k, _ in HEADLINE_COLUMNS)


def headline(block: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The headline rates of one overall block (None where the suite has no such variant)."""
    return {k: block.get(k) for k in HEADLINE_KEYS}
