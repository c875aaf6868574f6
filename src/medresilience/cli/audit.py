"""`medres audit RUN` (a label audit of a finished run; `medres eval --audit N` runs it after the
eval): thin. It prints the audit's table per second reader, its disagreements with their viewer
links and the label-corrected rates; it exits 1 when reader calls failed (rerun to retry them)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .batch import BatchFallbackOpt, BatchOpt, BatchResultsOpt, batch_command, batch_request
from .kit import console, err_console, fail, progress, progress_callback, user_errors

if TYPE_CHECKING:  # pragma: no cover
    from ..audit import AuditResult

ReaderOpt = Annotated[Optional[str], typer.Option("--reader", help="the audit's reader model spec: a second reading of each sampled reply")]


def print_audit(result: AuditResult) -> None:
    from ..run.audit_text import CORRECTED_HEADERS, corrected_rows, headers, heading, reader_rows
    from .tables import fitted

    b = result.block
    console.print(f"label audit: {b['n_sampled']} of {b['population']} read units sampled (seed {b['seed']})", highlight=False, markup=False, soft_wrap=True)
    for note in b.get("notes", []):
        err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    for name, found in b["readers"].items():
        console.print(heading(name, found), highlight=False, markup=False, soft_wrap=True)
        rows = reader_rows(found)
        console.print(fitted("", ["Metric", *[" / ".join(x for x in r[:3] if x) for r in rows]], _columns(rows, headers(found)), console.width))
        for reason, k in found.get("unscored_reasons", {}).items():
            err_console.print(f"  unscored ({k}): {reason}", highlight=False, markup=False, soft_wrap=True)
        for d in found["disagreements"]:
            console.print(
                f"  {d['model']} / {d['condition']} {d['unit_id']}: run read {d['run_reading']}, second reading {d['second_reading']} "
                f"(key {d['key']}) {d['viewer_url'] or d['viewer_path']}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
        if found.get("corrected"):
            console.print(fitted("label-corrected rates", CORRECTED_HEADERS, corrected_rows(found), console.width, keys=2))
    if result.review_tasks:
        console.print(f"{result.review_rubric} review written: {result.review_tasks} tasks (serve it with medres review serve)", highlight=False, markup=False)


def _columns(rows: list[list[str]], headers: list[str]) -> list[list[str]]:
    """The table turned: one row per measure, one column per (model, setting, condition)."""
    return [[h, *[r[i] for r in rows]] for i, h in enumerate(headers) if i >= 3]


def fail_unless_read(result: AuditResult) -> None:
    if result.failed_calls:
        fail(f"{result.failed_calls} reader calls failed or were not sent; their units are unscored: rerun the audit to retry them", 1)


def run_audit(
    run: Path, n: int, seed: int, reader: str | None, people: Path | None, review_out: Path | None, reviewers: str, raters: int, viewer_url: str
) -> AuditResult:
    from ..audit import audit_run
    from ..models.spec import parse_model_spec

    spec = parse_model_spec(reader, flag="--reader") if reader else None
    names = tuple(r.strip() for r in reviewers.split(",") if r.strip())
    viewer = None if viewer_url == "none" else viewer_url
    with progress(lazy=True) as prog:
        return audit_run(
            run,
            n,
            seed=seed,
            reader=spec,
            people=people,
            review_out=review_out,
            reviewers=names,
            raters=raters,
            viewer=viewer,
            progress=progress_callback(prog, "reader calls"),
        )


def audit_cmd(
    run: Annotated[Path, typer.Argument(help="run directory")],
    n: Annotated[int, typer.Option("--n", "-n", help="units to audit")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="the sample's seed")] = 0,
    reader: ReaderOpt = None,
    people: Annotated[Optional[Path], typer.Option("--people", help="a rated reading review (from --review-out): people's readings")] = None,
    review_out: Annotated[Optional[Path], typer.Option("--review-out", help="write the sample as a new reading review here")] = None,
    reviewers: Annotated[str, typer.Option("--reviewers", help="the review's reviewers, comma-separated")] = "",
    raters: Annotated[int, typer.Option("--raters", help="reviewers per unit")] = 1,
    viewer_url: Annotated[str, typer.Option("--viewer-url", help="the evidence viewer's address for the disagreements' links (none: no links)")] = "",
    batch: BatchOpt = None,
    batch_results: BatchResultsOpt = None,
    batch_fallback: BatchFallbackOpt = "batch",
) -> None:
    """A label audit: a second reading of a seeded, stratified sample of the run's read units.
    With --batch the reader's calls go out as a batch (request files under RUN/batches): exit 3
    while it is in progress, rerun the same command to collect and finish."""
    from ..view.address import VIEWER_URL

    with batch_command(batch_request(batch, batch_results, batch_fallback, False), run):
        result = run_audit(run, n, seed, reader, people, review_out, reviewers, raters, viewer_url or VIEWER_URL)
    print_audit(result)
    fail_unless_read(result)


def register(app: typer.Typer) -> None:
    app.command("audit")(user_errors(audit_cmd))
