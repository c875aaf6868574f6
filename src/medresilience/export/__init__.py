"""Exports of a run's units for other tools: flat rows (JSON Lines, Parquet) for pandas or the
Hugging Face datasets library, and an inspect_ai eval log that `inspect view` shows.

Holds: `units` (a run directory's units as flat rows, streamed from the store), `flat` (the JSONL
and Parquet writers), `inspect_log` (the inspect_ai log writer), `formats` (`export_run`: a run in
a named format). May import the store and its readers, the suite, the family registry, the results
frame's status rule, fileio and the report's run reader (report.rundir: the run's suite and its
headline numbers); only the CLI imports it.

May import: family, report, run, runtime, store, suite."""

from .formats import FORMATS, export_run
from .units import RunUnits, open_run

__all__ = ["FORMATS", "RunUnits", "export_run", "open_run"]
