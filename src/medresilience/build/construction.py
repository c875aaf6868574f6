"""What every family's suite builder shares: where a build keeps its call store, and what a build
returns. The builders themselves (their stages, checks and reports) are the families' own."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runtime.fileio import atomic_write, write_jsonl
from ..runtime.jsontypes import JSONObject
from ..suite import Suite

REPORT_JSON = "build_report.json"
REPORT_MD = "build_report.md"
DECISIONS = "decisions.jsonl"


@dataclass
class BuildResult:
    out: Path
    suite: Suite
    report: dict[str, Any]
    decisions: Sequence[object]  # the family's decision records, one per input item


def default_work_dir(out: Path | str) -> Path:
    """The work directory of a build writing suite `out`: `<out>.build/` beside it."""
    out = Path(out)
    return out.with_name(out.name + ".build")


def write_build_files(out: Path, report: Mapping[str, object], markdown: str, decisions: Iterable[JSONObject]) -> None:
    """build_report.json / .md and decisions.jsonl, written into the suite directory after the
    suite (they are not part of its checksums)."""
    with atomic_write(out / REPORT_JSON) as fh:
        json.dump(report, fh, indent=2, default=str)
        fh.write("\n")
    with atomic_write(out / REPORT_MD) as fh:
        fh.write(markdown)
    write_jsonl(out / DECISIONS, decisions)
