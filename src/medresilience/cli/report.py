"""`medres report` and `medres compare` (thin: parse, call the library, print)."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..runtime.errors import MedresError
from ..view.address import VIEWER_URL

if TYPE_CHECKING:  # pragma: no cover
    from ..report.parts import Table


@contextlib.contextmanager
def _default_out(out: Optional[Path], where: str) -> Iterator[None]:
    """Without --out the outputs go into a run directory (`where`); a run on read-only storage is
    still read, and then the one line says to give --out instead."""
    try:
        yield
    except OSError as e:
        if out is not None or e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        raise MedresError(
            f"cannot write into the run directory ({where}, the default place): {e.strerror or e}; give --out DIR to write elsewhere (the run itself is only read)"
        ) from None


def _shown(t: Table) -> tuple[list[str], list[list[str]]]:
    """A report table's shown headers and its rows as text, for the terminal."""
    cols = [i for i, c in enumerate(t.columns) if c.shown]
    return [t.columns[i].header for i in cols], [[row[i].shown for i in cols] for row in t.rows]


def register(app: typer.Typer) -> None:
    """Add the report commands to the main app."""
    from .kit import console, err_console, user_errors

    @app.command()
    @user_errors
    def report(
        run_dirs: Annotated[list[Path], typer.Argument(help="one or more run directories (one report for all)")],
        out: Annotated[Optional[Path], typer.Option("--out", help="output directory (default: RUN_DIR/report)")] = None,
        title: Annotated[Optional[str], typer.Option(help="report title")] = None,
        viewer_url: Annotated[
            Optional[str],
            typer.Option("--viewer-url", help=f"the evidence viewer (medres view) each rate links to (default {VIEWER_URL}); none: no links"),
        ] = None,
    ) -> None:
        """Write a self-contained HTML report (plus Markdown, CSV and Parquet tables) for runs."""
        from ..report.build import build_report, summary_rows
        from .tables import fitted

        with _default_out(out, f"{run_dirs[0]}/report" if run_dirs else "RUN_DIR/report"):
            if viewer_url is None:  # the report's own default viewer address
                result = build_report(run_dirs, out, title=title)
            else:
                result = build_report(run_dirs, out, title=title, viewer_url=None if viewer_url.strip().lower() == "none" else viewer_url)
        for head, headers, rows in summary_rows(result):
            console.print(fitted(head, headers, rows, console.width, keys=2))
        from rich.markup import escape

        for note in result.notes:
            err_console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)  # a run-qualified name holds brackets
        console.print(f"families: {', '.join(result.families) or 'none'}; tables: {result.out_dir / 'tables'}")
        console.print(f"report: {result.html}", highlight=False, soft_wrap=True)

    @app.command()
    @user_errors
    def compare(
        run_a: Annotated[Path, typer.Argument(help="baseline run directory (A)")],
        run_b: Annotated[Path, typer.Argument(help="run to compare with it (B), e.g. a mitigation")],
        out: Annotated[Optional[Path], typer.Option("--out", help="output directory (default: RUN_B/compare-<A>, with the --pair values when given)")] = None,
        pair: Annotated[Optional[list[str]], typer.Option("--pair", help="MODEL_A=MODEL_B (optionally MODEL:SETTING); repeatable")] = None,
        force: Annotated[bool, typer.Option("--force", help="overwrite a folder holding a comparison of other runs or pairs")] = False,
        viewer_url: Annotated[
            Optional[str],
            typer.Option("--viewer-url", help=f"the evidence viewer (medres view A B) each side's counts link to (default {VIEWER_URL}); none: no links"),
        ] = None,
    ) -> None:
        """Per-metric differences B - A on shared items, with paired bootstrap intervals and exact or clustered tests."""
        from ..report.compare import SUMMARY_HEADERS, compare_runs, summary_rows
        from .tables import fitted

        links = {} if viewer_url is None else {"viewer_url": None if viewer_url.strip().lower() == "none" else viewer_url}
        with _default_out(out, f"{run_b}/compare-..."):
            res = compare_runs(run_a, run_b, out, pairs=pair or (), force=force, **links)
        for line in res.compared:
            console.print(f"compared: {line}", highlight=False, markup=False)
        for line in res.left_out:
            err_console.print(f"not compared: {line}", style="yellow", highlight=False, markup=False)
        rows = summary_rows(res.table)
        console.print(
            fitted(
                "B - A on shared items (paired, item-clustered bootstrap 95% CI)",
                SUMMARY_HEADERS,
                rows,
                console.width,
                keys=2,
                label=True,
            )
        )
        tests = ", ".join(dict.fromkeys(str(x) for x in res.table["test"] if isinstance(x, str) and x))
        console.print(f"p: the exact or clustered paired test of each row ({tests or 'none'}); the bootstrap gives the interval", highlight=False)
        console.print(f"comparison: {res.html}  (table: {res.csv})", highlight=False, soft_wrap=True)

    @app.command("table1")
    @user_errors
    def table1(
        run_dirs: Annotated[list[Path], typer.Argument(help="run directories: any families, models and settings (one table for all)")],
        versus: Annotated[
            Optional[list[str]],
            typer.Option("--versus", help="SETTING_A=SETTING_B: each measure under both and the paired change B - A (Table 6's check); repeatable"),
        ] = None,
        out: Annotated[Optional[Path], typer.Option("--out", help="output directory (default: RUN_DIR/table1 of the first run)")] = None,
    ) -> None:
        """Cancer-Myth's Table 1 layout: one row per model and setting, the share of false premises corrected and accuracy per benchmark, with intervals."""
        from ..models.names import distinct_run_names
        from ..report.rundir import load_run
        from ..report.study_table import parse_versus, study_table, write
        from .tables import fitted

        pairs = [parse_versus(v) for v in versus or ()]
        runs = [load_run(d) for d in run_dirs]
        for r, name in zip(runs, distinct_run_names(r.name for r in runs)):
            r.name = name
        result = study_table(runs, pairs)
        target = out if out is not None else Path(run_dirs[0]) / "table1"
        with _default_out(out, str(target)):
            paths = write(result, target)
        for t in [result.table, *result.versus]:
            console.print(fitted(t.name, *_shown(t), console.width, keys=2))
        for note in result.notes:
            err_console.print(f"note: {note}", style="yellow", highlight=False, markup=False)
        if not result.table.rows:
            raise MedresError("no run holds a measure of this layout (runs of a family with a trade-off, read from their stores)")
        console.print(f"tables: {', '.join(str(p) for p in paths.values())}", highlight=False, soft_wrap=True)
