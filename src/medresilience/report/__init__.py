"""Reports: tables, plots and one self-contained HTML file per set of runs, and paired comparisons
of two runs. Every section is report parts (`parts`: tables of cells, figures, prose); one renderer
writes them as HTML through the Jinja2 templates (templates/, rendered by `templating`) and as
Markdown and CSV. Heavy imports (matplotlib) happen only when a report is built.
Its modules import each other by module, never through this package.

    from medresilience.report import build_report, compare_runs
    result = build_report(["runs/sample"])          # -> ReportResult (.html, .markdown, .tables)
    cmp = compare_runs("runs/base", "runs/defended")  # -> CompareResult (.table, .html, .csv)

May import: corpus, family, mitigations, models, registry, run, runtime, score, scoring, stats, store, suite, view."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["CompareResult", "ReportResult", "build_report", "compare_runs"]

if TYPE_CHECKING:  # pragma: no cover
    from .build import ReportResult, build_report
    from .compare import CompareResult, compare_runs


def __getattr__(name: str) -> Any:
    if name in ("build_report", "ReportResult"):
        from . import build

        return getattr(build, name)
    if name in ("compare_runs", "CompareResult"):
        from . import compare

        return getattr(compare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
