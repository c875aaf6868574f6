"""What every family's suite builder shares: where a build keeps its call store, and what a build
returns. The builders themselves (their stages, checks and reports) are the families' own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import Suite


@dataclass
class BuildResult:
    out: Path
    suite: Suite
    report: dict[str, Any]
    decisions: list[Any]  # the family's decision records, one per input item


def default_work_dir(out: Path | str) -> Path:
    """The work directory of a build writing suite `out`: `<out>.build/` beside it."""
    out = Path(out)
    return out.with_name(out.name + ".build")
