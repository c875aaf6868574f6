"""`medres build noise ...` (thin: parse, call the library, print).

medres build noise --items FILE --out SUITE_DIR [--generator SPEC] [--verify SPEC] [--seed S] [--limit N]
                   [--variants redherring-10,whitespace,...] [--abbreviations DIR_OR_TSV]
                   [--ask diagnosis,cause] [--work-dir DIR] [--retries R] [--batch openai|files [--dry-run]]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ...cli.batch import BatchFallbackOpt, BatchOpt, BatchResultsOpt, batch_command, batch_request
from ...cli.kit import StageProgress, build_outcome, console, err_console
from ...cli.kit import user_errors as _user_errors
from .taxonomy import CONDITIONS

build_app = typer.Typer(no_args_is_help=True, help="Build clinical-noise suites.")


def commands() -> typer.Typer:
    """The family's construction commands (its `commands` hook)."""
    return build_app


SPEC_HELP = "generator model spec: embedded, openai:MODEL,base_url=URL[,api_key_env=VAR,...] or @model.json"


def _split(values: list[str] | None) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(x.strip() for v in values for x in v.split(",") if x.strip())


@build_app.command("noise")
@_user_errors
def noise(
    items: Annotated[Path, typer.Option("--items", help="items .jsonl (from `medres import`) or a MedQA / MedMCQA / MMLU / ... source file")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write (rerun to resume)")],
    generator: Annotated[str, typer.Option("--generator", "-g", help=SPEC_HELP)] = "embedded",
    verify: Annotated[
        Optional[str],
        typer.Option(
            "--verify",
            help="checker model spec: reads each red herring for clinical information (flagged ones are replaced) and each rewrite for clinical equivalence (dropped otherwise)",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="suite seed (red-herring positions and subsets)")] = 0,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="the first N diagnosis cases only")] = None,
    variants: Annotated[
        Optional[list[str]],
        typer.Option("--variants", help=f"variants to build, comma separated or repeated: {', '.join(CONDITIONS)} (default: all that can be built)"),
    ] = None,
    abbreviations: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--abbreviations", help="abbreviation inventory: a TSV (abbreviation, sense, variation, CUI, frequency) or a directory of them; repeatable"
        ),
    ] = None,
    min_frequency: Annotated[
        float, typer.Option("--min-frequency", help="use an abbreviation only if it means its sense at least this share of the time")
    ] = 0.5,
    abbreviation_rules: Annotated[
        str,
        typer.Option(
            "--abbreviation-rules",
            help="clinical (default: no number words, lab-report column "
            "codes or rare readings) or study (the study's plain string match on the inventory pairs)",
        ),
    ] = "clinical",
    ask: Annotated[
        str, typer.Option("--ask", help="which questions make cases, comma separated: diagnosis (most likely diagnosis), cause (most likely cause)")
    ] = "diagnosis,cause",
    fmt: Annotated[str, typer.Option("--format", help="input format: auto, items, or a source format (medqa, medmcqa, ...)")] = "auto",
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
    work_dir: Annotated[Optional[Path], typer.Option("--work-dir", help="where the call store lives (default: SUITE_DIR.build/)")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, help="re-asks after a reply that fails its checks")] = 2,
    batch: BatchOpt = None,
    batch_results: BatchResultsOpt = None,
    batch_fallback: BatchFallbackOpt = "batch",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="with --batch: the calls, tokens and cost, live and as a batch, of the red herrings and the rewrites; send and write nothing"
        ),
    ] = False,
) -> None:
    """Build a clinical-noise suite: diagnosis cases with red herrings (1, 5, 10, as a block, and the
    whitespace control), abbreviations and an informal rewrite, each paired with the original. With
    --batch the generator's calls go out as batches (request files under the work directory's
    batches/): the red herrings and the rewrites together, then the checker's reads and the re-asks;
    exit 3 while one is in progress; rerun the same command to collect it and go on. Abbreviations
    call no model."""
    from ...build.construction import default_work_dir
    from ...models.spec import parse_model_spec
    from ...runtime.errors import ConfigError
    from .construct.build import NoiseBuildOptions, build_noise
    from .taxonomy import GENERATED, parse_variants

    chosen = parse_variants(list(variants)) if variants else None
    opts = NoiseBuildOptions(
        seed=seed,
        variants=chosen,
        retries=retries,
        limit=limit,
        kinds=_split([ask]) or (),
        name=name,
        abbreviations=tuple(str(p) for p in abbreviations or ()),
        min_frequency=min_frequency,
        abbreviation_rules=abbreviation_rules,
    )
    wanted = chosen or CONDITIONS
    gen = parse_model_spec(generator) if any(v in GENERATED for v in wanted) else None
    ver = parse_model_spec(verify) if verify else None
    request = batch_request(batch, batch_results, batch_fallback, dry_run)
    if request is not None:
        if gen is None:
            raise ConfigError("--batch", "the variants asked for call no model (abbreviations are substituted from the inventory): build them without --batch")
        if request.dry_run:
            from ...cli.batch import print_estimate
            from .construct.build import first_requests

            db = (work_dir or default_work_dir(out)) / "store.sqlite"
            print_estimate(first_requests(items, gen, opts, fmt), [gen], db, request.provider, "re-asks, the checker's reads and replacements")
            return
    with batch_command(request, work_dir or default_work_dir(out)), StageProgress() as prog:
        res = build_noise(items, out, gen, opts, work_dir, progress=prog, source_format=fmt, checker=ver)
    r = res.report
    it = r["items"]
    console.print(
        f"kept {it['kept']} of {it['cases']} cases ({it['probes']} probes; {it['skipped']} items are not diagnosis questions, {it['dropped']} cases dropped)"
    )
    console.print("probes: " + ", ".join(f"{v} {n}" for v, n in r["probes_by_variant"].items()), highlight=False)
    for group, reasons in r.get("variant_drops", {}).items():
        console.print(f"  {group} dropped: " + ", ".join(f"{k} {v}" for k, v in reasons.items()), highlight=False)
    c = r.get("checker")
    if c:
        h, w = c["redherring"], c["rewrite"]
        console.print(
            f"checker {c['model']}: red herrings of {h['passed']} of {h['cases']} cases passed ({h['sentences_flagged']} of "
            f"{h['sentences_checked']} sentences flagged as clinical, {h['sentences_replaced']} written in their place); "
            f"rewrites {w['equivalent']} of {w['checked']} equivalent ({w['not_equivalent']} not, {w['failed']} not judged)",
            highlight=False,
        )
    t = r["totals"]
    if r.get("stages"):
        console.print(
            f"calls: {t['calls_made']} made, {t['reused']} reused from the store, {t['call_errors']} errors, "
            f"{t['retries']} retries; tokens {t['prompt_tokens']} in / {t['completion_tokens']} out"
        )
    for n in r.get("notes", ()):
        err_console.print(f"[yellow]note:[/] {n}", highlight=False)
    console.print(f"suite: {out}  (suite.json, items.jsonl, probes.jsonl, build_report.md, decisions.jsonl)")
    build_outcome(r, it["kept"], it["cases"], "cases", out)
