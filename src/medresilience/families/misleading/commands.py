"""`medres build ...` commands (thin: parse, call the library, print).

medres build misleading --items ITEMS --generator SPEC --out SUITE_DIR [--design crossed]
                        [--verify SPEC] [--limit N] [--seed S] [--dry-run]
medres build regenerate --suite SUITE_DIR --generator SPEC --out OUT [--n 600] [--reference-out REF]
medres build reassign-provenance --suite SUITE_DIR --cycle forward|reverse --out OUT
                        [--mode regenerate|render] [--generator SPEC] [--reference-out REF]
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ...cli.batch import BatchFallbackOpt, BatchOpt, BatchResultsOpt, batch_command, batch_request
from ...cli.kit import StageProgress, build_outcome, console, err_console
from ...cli.kit import user_errors as _user_errors

build_app = typer.Typer(no_args_is_help=True, help="Build stress-test suites with a generator model.")


def commands() -> typer.Typer:
    """The family's construction commands (its `commands` hook)."""
    return build_app


class DesignOpt(str, Enum):
    standard = "standard"
    crossed = "crossed"


class CycleOpt(str, Enum):
    forward = "forward"
    reverse = "reverse"


class ModeOpt(str, Enum):
    regenerate = "regenerate"
    render = "render"


def _limits(min_words: int, max_words: int, max_chars: int):
    from .construct.checks import Limits

    try:
        return Limits(min_words=min_words, max_words=max_words, max_chars=max_chars)
    except ValueError as e:
        from ...runtime.errors import ConfigError

        raise ConfigError("--min-words/--max-words/--max-chars", str(e)) from None


def _print_summary(report: dict[str, Any]) -> None:
    it = report["items"]
    console.print(
        f"kept {it['kept']} of {it['considered']} items ({it['bundles']} bundles, {it['probes']} probes); "
        f"skipped {it.get('skipped', 0)}, rejected {it['rejected']}, failed {it['failed']}"
    )
    for key in ("skipped", "rejected", "failed"):
        if report.get(key):
            console.print(f"  {key}: " + ", ".join(f"{k} {v}" for k, v in report[key].items()), highlight=False)
    t = report["totals"]
    cost = "" if t.get("cost") is None else f"; cost ${t['cost']:.4f}"
    console.print(
        f"calls: {t['calls_made']} made, {t['reused']} reused from the store, {t['call_errors']} errors, "
        f"{t['retries']} parse retries; tokens {t['prompt_tokens']} in / {t['completion_tokens']} out{cost}"
    )
    if report.get("note"):
        err_console.print(f"[yellow]note:[/] {report['note']}", highlight=False)
    for c in report.get("cautions", ()):
        err_console.print(f"[yellow]caution:[/] {c}", highlight=False)


SPEC_HELP = "model spec: embedded, embedded:smollm2, PROVIDER/MODEL (medres models), openai:MODEL,base_url=URL (then ,api_key_env=VAR ...) or @model.json"


SchemaLengthsOpt = Annotated[
    str, typer.Option("--schema-lengths", help="minLength/maxLength in the response schemas: auto (only for the embedded server), on, off")
]


@build_app.command("misleading")
@_user_errors
def misleading(
    items: Annotated[Path, typer.Option("--items", help="items .jsonl (from `medres import`) or a MedQA / MedMCQA / MMLU / release source file")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write (rerun to resume)")],
    generator: Annotated[str, typer.Option("--generator", "-g", help=SPEC_HELP)] = "embedded",
    verify: Annotated[
        Optional[str], typer.Option("--verify", help="checker model spec: drops bundles whose false sentence is not false or changes the gold answer")
    ] = None,
    design: Annotated[
        DesignOpt, typer.Option("--design", help="standard: one bundle per item in a seeded framing; crossed: one claim in all three framings")
    ] = DesignOpt.standard,
    fmt: Annotated[str, typer.Option("--format", help="input format: auto, items, csv, medqa, medmcqa, mmlu, medmisbench")] = "auto",
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="first N usable items only")] = None,
    seed: Annotated[int, typer.Option("--seed", help="suite seed (provenance draw, Type 1 sample, Type 2 order)")] = 0,
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
    work_dir: Annotated[Optional[Path], typer.Option("--work-dir", help="where the call store lives (default: SUITE_DIR.build/)")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, help="re-asks after a reply that does not parse")] = 2,
    min_words: Annotated[int, typer.Option("--min-words")] = 5,
    max_words: Annotated[int, typer.Option("--max-words")] = 60,
    max_chars: Annotated[int, typer.Option("--max-chars")] = 400,
    schema_lengths: SchemaLengthsOpt = "auto",
    template_framing: Annotated[
        bool,
        typer.Option(
            "--template-framing/--no-template-framing",
            help="put a patient or authority sentence written outside its framing in it by a fixed lead-in (recorded), instead of rejecting the bundle",
        ),
    ] = True,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="estimate calls and tokens; call nothing, write nothing")] = False,
    export_release: Annotated[
        Optional[Path],
        typer.Option(
            "--export-release",
            help="also write the suite in this project's bundle layout (JSON lines; `medres export --format release` gives the study's flat layout)",
        ),
    ] = None,
    export_parquet: Annotated[
        Optional[Path], typer.Option("--export-parquet", help="also write the suite's bundles as Parquet (Hugging Face datasets)")
    ] = None,
    batch: BatchOpt = None,
    batch_results: BatchResultsOpt = None,
    batch_fallback: BatchFallbackOpt = "batch",
) -> None:
    """Build a misleading-context suite from answer-grounded MCQs with a generator model. With
    --batch each stage's calls go out as a batch (request files under the work directory's
    batches/): exit 3 while one is in progress; rerun the same command to collect it and go on
    to the next stage (the applicability filter, then the generation, then the checks)."""
    from ...models.spec import parse_model_spec
    from .construct.inputs import load_build_items
    from .construct.pipeline import BuildOptions, build_misleading, estimate_build
    from .formats.export import export_suite

    gen = parse_model_spec(generator)
    ver = parse_model_spec(verify) if verify else None
    opts = BuildOptions(
        seed=seed,
        design=design.value,
        retries=retries,
        limits=_limits(min_words, max_words, max_chars),
        name=name,
        schema_lengths=schema_lengths,
        template_framing=template_framing,
    )
    loaded = load_build_items(items, fmt, limit)
    if dry_run:
        est = estimate_build(loaded, gen, opts, ver, work_dir=work_dir, out=out)
        console.print_json(json.dumps(est, default=str))
        return
    from ...build.construction import default_work_dir

    with batch_command(batch_request(batch, batch_results, batch_fallback, False), work_dir or default_work_dir(out)), StageProgress() as prog:
        res = build_misleading(loaded, gen, out, opts, ver, work_dir, progress=prog)
    _print_summary(res.report)
    console.print(f"suite: {out}  (suite.json, items.jsonl, probes.jsonl, build_report.md, decisions.jsonl)")
    if export_release:
        console.print(f"{export_release}: {export_suite(res.suite, export_release, 'bundles')} release rows")
    if export_parquet:
        console.print(f"{export_parquet}: {export_suite(res.suite, export_parquet, 'bundles-parquet')} Parquet rows")
    build_outcome(res.report, res.report["items"]["kept"], res.report["items"]["considered"], "items", out)


def _strata(by: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in by.split(",") if x.strip())


@build_app.command("regenerate")
@_user_errors
def regenerate(
    suite: Annotated[Path, typer.Option("--suite", help="the original suite directory")],
    generator: Annotated[str, typer.Option("--generator", "-g", help="the second generator: " + SPEC_HELP)],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write")],
    n: Annotated[Optional[int], typer.Option("--n", min=1, help="stratified subset size (default: every item)")] = None,
    by: Annotated[str, typer.Option("--by", help="strata, comma separated: source, subject, content_type, provenance")] = "source",
    reference_out: Annotated[Optional[Path], typer.Option("--reference-out", help="also write the original bundles of the same items")] = None,
    verify: Annotated[Optional[str], typer.Option("--verify", help="checker model spec")] = None,
    work_dir: Annotated[Optional[Path], typer.Option("--work-dir", help="call store (default: OUT.build/)")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0)] = 2,
    name: Annotated[Optional[str], typer.Option("--name")] = None,
    schema_lengths: SchemaLengthsOpt = "auto",
) -> None:
    """Generator sensitivity: rewrite a stratified subset with another generator, holding item,
    target, content type and provenance fixed."""
    from ...models.spec import parse_model_spec
    from ...suite import Suite
    from .construct.sensitivity import regenerate_subset

    s = Suite.load(suite)
    with StageProgress() as prog:
        res = regenerate_subset(
            s,
            parse_model_spec(generator),
            out,
            n,
            _strata(by),
            parse_model_spec(verify) if verify else None,
            retries,
            work_dir=work_dir,
            reference_out=reference_out,
            name=name,
            progress=prog,
            schema_lengths=schema_lengths,
        )
    _print_summary(res.report)
    console.print(f"suite: {out}" + (f"; matched reference: {reference_out}" if reference_out else ""))
    build_outcome(res.report, res.report["items"]["kept"], res.report["items"]["considered"], "items", out)


@build_app.command("reassign-provenance")
@_user_errors
def reassign(
    suite: Annotated[Path, typer.Option("--suite", help="the original suite directory")],
    cycle: Annotated[CycleOpt, typer.Option("--cycle", help="forward: neutral->patient->authority->neutral; reverse: the other way")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write")],
    generator: Annotated[Optional[str], typer.Option("--generator", "-g", help="default: the generator the suite records; " + SPEC_HELP)] = None,
    mode: Annotated[
        ModeOpt, typer.Option("--mode", help="regenerate: new sentences in the new framing (the study); render: the same claims restated")
    ] = ModeOpt.regenerate,
    n: Annotated[Optional[int], typer.Option("--n", min=1, help="stratified subset size (default: every item)")] = None,
    by: Annotated[str, typer.Option("--by", help="strata, comma separated")] = "source",
    reference_out: Annotated[Optional[Path], typer.Option("--reference-out", help="also write the original bundles of the same items")] = None,
    verify: Annotated[Optional[str], typer.Option("--verify", help="checker model spec")] = None,
    work_dir: Annotated[Optional[Path], typer.Option("--work-dir")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0)] = 2,
    name: Annotated[Optional[str], typer.Option("--name")] = None,
    schema_lengths: SchemaLengthsOpt = "auto",
) -> None:
    """Provenance sensitivity: move every bundle one step around a provenance cycle."""
    from ...models.spec import parse_model_spec
    from ...suite import Suite
    from .construct.sensitivity import reassign_provenance

    s = Suite.load(suite)
    with StageProgress() as prog:
        res = reassign_provenance(
            s,
            cycle.value,
            out,
            parse_model_spec(generator) if generator else None,
            mode.value,
            n,
            _strata(by),
            parse_model_spec(verify) if verify else None,
            retries,
            work_dir=work_dir,
            reference_out=reference_out,
            name=name,
            progress=prog,
            schema_lengths=schema_lengths,
        )
    _print_summary(res.report)
    console.print(f"suite: {out}" + (f"; matched reference: {reference_out}" if reference_out else ""))
    build_outcome(res.report, res.report["items"]["kept"], res.report["items"]["considered"], "items", out)
