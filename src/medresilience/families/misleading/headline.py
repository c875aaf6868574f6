"""The misleading family's headline rates of one overall block: pure dict reading, no pandas (the
command writes results.md and prints its table with these without loading the metrics' libraries)."""

from __future__ import annotations

from typing import Any

_HEADLINE = [
    ("clean_acc", None),
    ("type1_acc", None),
    ("type2_acc", None),
    ("type1", "asr"),
    ("type1", "tasr"),
    ("type2", "asr"),
    ("type1", "asr_read"),
    ("type2", "asr_read"),
]


def headline(block: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The headline rates of one overall block, keyed clean_acc .. type2_asr, then the two ASRs with
    unread replies left out (type1_asr_read, type2_asr_read)."""
    out: dict[str, dict[str, Any] | None] = {}
    for a, b in _HEADLINE:
        name = a if b is None else f"{a}_{b}"
        v = block.get(a)
        out[name] = (v if b is None else (v or {}).get(b)) if v else None
    return out
