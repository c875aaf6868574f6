"""`medres build pressure ...` (thin: parse, call the library, print).

medres build pressure --from SUITE_OR_ITEMS --out SUITE_DIR [--generator SPEC] [--work-dir DIR] [--conditions repeat,doubt,...]
                      [--seed S] [--name NAME] [--batch openai|files [--dry-run]]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ...cli.batch import BatchFallbackOpt, BatchOpt, BatchResultsOpt, batch_command, batch_request
from ...cli.kit import StageProgress, build_outcome, console
from ...cli.kit import user_errors as _user_errors

build_app = typer.Typer(no_args_is_help=True, help="Build pressure-after-commitment suites.")


def commands() -> typer.Typer:
    """The family's construction commands (its `commands` hook)."""
    return build_app


@build_app.command("pressure")
@_user_errors
def pressure(
    source: Annotated[Path, typer.Option("--from", help="a misleading suite directory (claims from its bundles) or an items file (claims need --generator)")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write (rerun to resume the generator's calls)")],
    conditions: Annotated[
        Optional[str],
        typer.Option(
            "--conditions",
            help="comma-separated: repeat, doubt, claim-neutral, claim-patient, claim-authority, insist (default: all; from an items file without --generator: repeat, doubt, insist)",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="suite seed (the claims' seeded targets when a generator writes them, the insisted option of an item without a claim)")
    ] = 0,
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
    generator: Annotated[
        Optional[str],
        typer.Option("--generator", "-g", help="with an items file: the model writing the claims, as `medres build misleading` does (a model spec)"),
    ] = None,
    work_dir: Annotated[Optional[Path], typer.Option("--work-dir", help="the generator's call store and claims suite (default: SUITE_DIR.build/)")] = None,
    batch: BatchOpt = None,
    batch_results: BatchResultsOpt = None,
    batch_fallback: BatchFallbackOpt = "batch",
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="with --batch: the calls, tokens and cost, live and as a batch, of the claims' first stage; send and write nothing"),
    ] = False,
) -> None:
    """Build a pressure suite: each item asked clean, then pushed back on in a second turn. Only
    the claims a --generator writes for an items file call a model; with --batch they go out stage
    by stage as batches, as `medres build misleading --batch` sends them (request files under the
    work directory's batches/): exit 3 while one is in progress; rerun the same command to go on."""
    from ...build.construction import default_work_dir
    from ...models.spec import parse_model_spec
    from ...runtime.errors import ConfigError
    from .construct.build import CLAIMS_SUITE, build_pressure

    wanted = None if conditions is None else [c.strip() for c in conditions.split(",") if c.strip()]
    gen = parse_model_spec(generator) if generator else None
    request = batch_request(batch, batch_results, batch_fallback, dry_run)
    if request is not None:
        if gen is None:
            raise ConfigError(
                "--batch", "without --generator this build calls no model (its turns are templates and a suite's own sentences): build it without --batch"
            )
        if request.dry_run:
            from ...cli.batch import print_estimate
            from .construct.build import claim_requests

            db = (work_dir or default_work_dir(out)) / "store.sqlite"
            print_estimate(claim_requests(source, gen, wanted, seed), [gen], db, request.provider, "the bundles, their restatements, the checks")
            return
    with batch_command(request, work_dir or default_work_dir(out)), StageProgress() as prog:
        suite = build_pressure(source, out, wanted, seed, name, gen, work_dir, prog)
    counts = {k: v for k, v in suite.manifest.counts.items() if k not in ("items", "probes")}
    console.print(f"wrote {out}: {len(suite.items)} items, {len(suite.probes)} probes ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    made = ((suite.manifest.model_extra or {}).get("built_from") or {}).get("claims")
    if made is not None:
        claims_dir = (work_dir or default_work_dir(out)) / CLAIMS_SUITE
        console.print(f"claims: {made['kept']} of {made['considered']} items, rejected {made['rejected']}, failed {made['failed']} (why: {claims_dir})")
        if made["failed"]:
            console.print("some generator calls failed: rerun the same command to retry them (every stored call is reused)")
        build_outcome({"incomplete": made["failed"] > 0}, made["kept"], made["considered"], "items", claims_dir)
