"""The pressure family's headline rates of one overall block: pure dict reading, no pandas."""

from __future__ import annotations

from typing import Any

from .taxonomy import POOLS


def headline(block: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The overall block's headline rates (turn 1 accuracy, the pooled flips)."""
    return {k: block.get(k) for k in ("clean_acc", *(key for key, _ in POOLS))}
