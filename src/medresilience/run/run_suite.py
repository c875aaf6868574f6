"""The suite a run directory was made from, found as the report, the export and the viewer need it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..runtime.errors import MedresError
from ..suite import Suite
from .bundled_suite import SAMPLE_NAME, sample_suite


def find_run_suite(run_dir: Path, config: dict[str, Any]) -> tuple[Suite | None, str | None]:
    """The suite named in run.json: its recorded path, else a `suite/` folder in the run directory,
    else the bundled sample when the names match. Returns (suite, reason it is missing)."""
    meta = config.get("suite") or {}
    candidates: list[Path] = []
    if meta.get("path"):
        p = Path(meta["path"])
        candidates.append(p if p.is_absolute() else (run_dir / p))
        if not p.is_absolute():
            candidates.append(Path.cwd() / p)
    candidates.append(run_dir / "suite")
    problems = []
    for c in candidates:
        if (c / "suite.json").exists():
            try:
                return Suite.load(c, lazy=True).check(), None  # checked now, its records streamed by the frame
            except MedresError as e:
                problems.append(str(e))
    if meta.get("name") == SAMPLE_NAME:
        try:
            return sample_suite(), None
        except MedresError as e:  # pragma: no cover - the shipped suite is checked by its own test
            problems.append(str(e))
    reason = "; ".join(problems) or f"suite not found (looked in: {', '.join(str(c) for c in candidates)})"
    return None, reason
