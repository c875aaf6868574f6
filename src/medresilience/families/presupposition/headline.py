"""The false-presupposition family's headline numbers of one block: pure dict reading, no pandas."""

from __future__ import annotations

from typing import Any

HEADLINE_KEYS = ("pcs", "pcr", "overcaution", "unscored")


def headline(block: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The headline numbers of an overall (or stratum) block: PCS (a mean score), PCR,
    over-caution on the control and the unscored share."""
    return {k: block.get(k) for k in HEADLINE_KEYS}
