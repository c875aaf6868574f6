"""`export_run`: a run directory written in one of the export formats."""

from __future__ import annotations

from pathlib import Path

from ..runtime.errors import ConfigError
from .flat import write_jsonl_rows, write_parquet_rows
from .inspect_log import write_inspect_log
from .units import open_run

#: format name -> writer of an opened run to a file (returns how many units it wrote)
WRITERS = {"inspect": write_inspect_log, "jsonl": write_jsonl_rows, "parquet": write_parquet_rows}
FORMATS = tuple(WRITERS)


def export_run(run_dir: Path | str, fmt: str, out: Path | str) -> int:
    """Write the units of the run in `run_dir` to `out` in format `fmt` (see FORMATS); returns
    how many units were written. Bad input is a MedresError naming it; nothing is left at `out`
    when the export fails."""
    if fmt not in WRITERS:
        raise ConfigError("--format", f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    with open_run(run_dir) as run:
        return WRITERS[fmt](run, out)
