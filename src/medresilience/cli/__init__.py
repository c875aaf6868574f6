"""`medres`: the thin command line. Each command parses, calls the library, prints. Family-specific
behaviour (options, import and export formats, construction commands) comes from the family
registry; this module names no family.

May import: anything in the library (it is the outermost layer; the families' commands use cli.kit)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..runtime import devices
from .batch import BatchFallbackOpt, BatchOpt, BatchResultsOpt
from .kit import console, err_console, fail, help_wraps_at_spaces, parse_pairs, progress, progress_callback, user_errors

if TYPE_CHECKING:  # pragma: no cover
    from ..family import Family
    from ..models.spec import ModelSpec
    from ..run.evaluation import RunResult
    from ..run.resolved import AuditRequest
    from ..run.stopping import StopRule
    from .batch import BatchRequest

# plain help (click's layout): option names are never cut and wrap at words at any width; an
# on/off flag shows as --x / --no-x
help_wraps_at_spaces()
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Measure whether models keep correct medical judgments under misleading or messy input.",
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        console.print(f"medres {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    pass


def _run_options(
    family: Family, family_options: list[str] | None, judge: str | None, cfg, attacker: str | None = None
) -> tuple[dict[str, str], ModelSpec | None, str]:
    """The family's -O pairs with --judge and --attacker folded in, the run's extraction model (-O
    extract=SPEC) and its answer format (-O answer_format=prompt|schema)."""
    from ..models.spec import parse_model_spec
    from ..runtime.errors import ConfigError

    pairs = parse_pairs(family_options)
    answer_format = pairs.pop("answer_format", "prompt")  # the run's, not the family's: how answers are asked for
    extract = None
    if "extract" in pairs:  # -O extract=SPEC is the run's, not the family's: an extraction model for unread replies
        text = pairs.pop("extract")
        if not text:
            raise ConfigError("-O extract", "name the extraction model, e.g. -O extract=openai/gpt-4o-mini")
        extract = parse_model_spec(text, cfg.spec_defaults() if cfg else None)  # its key is checked with the run's (resolve_run)
    # --judge SPEC and --attacker SPEC are the family's judge and attacker options
    for flag, key, value in (("--judge", "judge", judge), ("--attacker", "attacker", attacker)):
        if value is None:
            continue
        if key not in family.evaluation.options.model_fields:
            raise ConfigError(flag, f"family {family.name} takes no {key} model")
        if key in pairs:
            raise ConfigError(flag, f"give the {key} once: {flag} or -O {key}=, not both")
        parse_model_spec(value, flag=flag)  # a bad spec is blamed on the flag that gave it
        pairs[key] = value
    return pairs, extract, answer_format


def _print_outcome(result: RunResult, family: Family | None = None) -> None:
    """The results table, the warnings, the call counts, the error samples and the stopped models."""
    from ..run.summary import results_rows
    from .tables import fitted

    console.print(fitted(*results_rows(result.results, family), console.width))
    for w in result.warnings:
        err_console.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=True)
    s = result.stats
    console.print(
        f"calls: {s.called} made, {s.cached} reused from the store, {s.errors} errors"
        f" ({s.permanent_errors} permanent); tokens: {s.prompt_tokens} in / {s.completion_tokens} out" + (f"; cost ${s.cost:.4f}" if s.cost else "")
    )
    from .batch import cost_line

    if (line := cost_line(result.results.usage)) is not None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    for e in s.error_samples:
        err_console.print(f"  error sample: {e}", highlight=False, markup=False, soft_wrap=True)  # as stored: [redacted] and [brackets] kept
    for line in s.fallbacks:
        err_console.print(f"warning: {line}", highlight=False, markup=False, soft_wrap=True)
    for line in s.stopped:
        err_console.print(line, highlight=False, soft_wrap=True, markup=False)
    from ..run.stopping import stopping_lines

    for line in stopping_lines(result.results.stopping):  # why a run with a stopping rule stopped, and its intervals
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    if s.agent_short:
        console.print(
            f"agent: {s.agent_short} units used their steps or token budget without a final answer (recorded as such, never scored; "
            "a team's: over its call or token limit, or its triage or recruitment unread)",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


def _fail_unless_measured(result: RunResult) -> None:
    """Exit 1 when calls failed permanently, were not run (a stopped model), or all failed, or the
    run measured nothing (no unit planned, every judgment unscored)."""
    s = result.stats
    if s.called and not s.ok:
        fail(f"every call failed ({s.errors} errors, {s.permanent_errors} permanent); nothing was answered", 1)
    if result.shortfall:
        fail(result.shortfall, 1)
    if s.permanent_errors or s.not_run:
        fail(
            f"{s.permanent_errors} calls failed permanently"
            + (f" and {s.not_run} were not run" if s.not_run else "")
            + "; fix the cause (see the error samples) and rerun to retry them",
            1,
        )


def _run_eval(
    suite_dir: Optional[Path],
    models: list[str],
    out: Path,
    limit,
    seed,
    settings: list[str],
    scoring: str | None,
    family_options: list[str] | None,
    defense: Optional[str],
    cfg=None,
    wait: bool = False,
    judge: str | None = None,
    epochs: int = 1,
    sample_seed: int | None = None,
    audit: int | None = None,
    reader: str | None = None,
    until: StopRule | None = None,
    batch: BatchRequest | None = None,
    attacker: str | None = None,
) -> None:
    """Run, print the table and summary, audit its labels (`audit` units, with the `reader` model),
    write the report (`batch`: the calls go through a batch, see cli.batch); then exit 1 when calls failed
    permanently, were not run (a stopped model), or all failed, or the run measured nothing (no
    unit planned, every judgment unscored); the summary is written first."""
    from ..calls import BatchWaiting as Waiting
    from ..family import family_of
    from ..models.spec import parse_model_spec
    from ..run.bundled_suite import sample_suite
    from ..run.evaluation import check_new_run_suite, evaluate
    from ..run.resolved import EvalOptions, resolve_run
    from ..suite import Suite
    from .batch import batch_mode_of, batch_totals, dry_run, loop_refusal, print_batch_lines, print_waiting, provider_refusal, waiting_summarise
    from .results_worker import ResultsWorker

    suite = Suite.load(suite_dir, lazy=True) if suite_dir else sample_suite()  # records read when the run needs them
    specs = [parse_model_spec(m, cfg.spec_defaults() if cfg else None) for m in models]
    if seed is not None:
        specs = [s.model_copy(update={"seed": seed}) for s in specs]
    if defense is not None:  # the former flag: --defense on = the caution setting
        settings = {"off": ["none"], "on": ["caution"], "both": ["none", "caution"]}[defense]
    family = family_of([suite.manifest.family])
    pairs, extract, answer_format = _run_options(family, family_options, judge, cfg, attacker)
    fam_opts = cfg.family_options(pairs, family) if cfg else pairs
    # the family's first scoring is the default (letters for MCQ families, the judge for free text)
    opts = EvalOptions(
        settings=tuple(settings or ["none"]),
        scoring=scoring or family.evaluation.scorings[0],
        limit=limit,
        family=fam_opts,
        epochs=epochs,
        sample_seed=sample_seed,
        extract=extract,
        answer_format=answer_format,
        until=until,
    )
    # the run resolved once: its family, options, settings and their models, keys; errors before any progress output
    run = resolve_run(suite, specs, opts, family=family, audit=_audit_request(audit, reader, cfg))
    check_new_run_suite(suite, Path(out))  # as `evaluate` would first: before the fork, the worker shares the check
    if batch is not None and (why := loop_refusal(run, batch.provider) or provider_refusal(run, batch.provider)) is not None:
        fail(f"--batch {batch.provider}: {why}", 2)
    if batch is not None and batch.dry_run:
        return dry_run(run, Path(out), batch.provider)
    lead = _preview_lines(run, Path(out))  # read before the run writes run.json
    # the results and the report are computed by a worker that loads their libraries during the calls
    with ResultsWorker(run) as worker:
        with progress(lazy=True) as prog, batch_mode_of(batch, Path(out)):  # shown from the first call: an error before it is one line alone
            waiting: Waiting | None = None
            try:
                result = evaluate(
                    run,
                    out_dir=out,
                    progress=progress_callback(prog, "calls", lead=lead),
                    wait=wait,
                    on_wait=lambda msg: err_console.print(msg, highlight=False, soft_wrap=True, markup=False),
                    summarise=worker.summarise if batch is None else waiting_summarise(worker.summarise),
                )
            except Waiting as w:  # a batch is in progress: no results yet
                waiting = w
            if not prog.live.is_started:  # nothing was called (the same run, settled): said all the same
                for line in lead:
                    err_console.print(line, highlight=False, markup=False, soft_wrap=True)
        if waiting is not None and batch is not None:
            print_waiting(waiting, batch)
        print_batch_lines(result.stats)
        if batch is not None and (took := batch_totals(Path(out))) is not None:
            console.print(took, highlight=False, markup=False, soft_wrap=True)
        _print_outcome(result, run.family)
        audited = _audit_after(out, run.audit, suite) if run.audit is not None else None
        html = worker.report(Path(out), result.frame)
    console.print(f"run directory: {out}  (results.json, results.md, store.sqlite)")
    console.print(f"report: {html}")
    _fail_unless_measured(result)
    if audited is not None:
        from .audit import fail_unless_read

        fail_unless_read(audited)


def _preview_lines(run, out: Path) -> list[str]:
    """What will run (run_preview), printed on stderr just before the progress bar: once the run
    holds its folder, so an error before it is still one line alone."""
    from ..run.evaluation import run_config
    from ..run.run_preview import preview

    return preview(run, out, run_config(run)).lines()


def _audit_request(audit: int | None, reader: str | None, cfg) -> AuditRequest | None:
    """The audit `--audit N --reader SPEC` asks for (its reader's key is checked with the run's)."""
    from ..models.spec import parse_model_spec
    from ..runtime.errors import ConfigError

    if reader is not None and not audit:
        raise ConfigError("--reader", "the reader model reads the audit's sample: give --audit N too")
    if audit is None:
        return None
    if audit < 1:
        raise ConfigError("--audit", f"the audit's sample size must be at least 1, not {audit}")
    if reader is None:
        raise ConfigError("--audit", "name the audit's reader model: --reader SPEC (people's readings: medres audit RUN --review-out DIR)")
    from ..run.resolved import AuditRequest

    return AuditRequest(audit, parse_model_spec(reader, cfg.spec_defaults() if cfg else None, flag="--reader"))


def _audit_after(out: Path, request: AuditRequest, suite):
    """The label audit of the run just made, printed."""
    from ..audit import audit_run
    from .audit import print_audit

    with progress(lazy=True) as prog:
        audited = audit_run(out, request.n, reader=request.reader, suite=suite, progress=progress_callback(prog, "reader calls"))
    print_audit(audited)
    return audited


ModelOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--model", "-m", help="model spec, e.g. openai/gpt-4o-mini (medres models lists providers); repeat for several models (default: models in medres.toml)"
    ),
]
SettingOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--setting",
        help="mitigation setting: none, caution, monitor[:SPEC], retrieval:INDEX[,k=3], agent:INDEX|URL[,steps=8,k=3], team[:SPEC][,KEY=VALUE...] (rounds=2, experts=3, mode=adaptive, monitor=self), optimised:FILE.json; repeat to compare on the same items",
    ),
]
ScoringOpt = Annotated[
    Optional[str],
    typer.Option(
        "--scoring", help="letter: generate and extract; logprob: read option-letter log-probabilities; judge: an LLM judge (default: the family's first)"
    ),
]
JudgeOpt = Annotated[Optional[str], typer.Option("--judge", help="judge model spec for a family whose answers are judged (= -O judge=SPEC)")]
AttackerOpt = Annotated[
    Optional[str], typer.Option("--attacker", help="attacker model spec for a family that attacks each item over turns (adaptive; = -O attacker=SPEC)")
]
FamilyOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--option",
        "-O",
        help="an option of the suite's family, KEY=VALUE (each family's page of the documentation lists them), "
        "or extract=SPEC: a model that reads the replies the rules leave unread, "
        "or answer_format=schema: a JSON answer through response_format where the model takes it; repeatable",
    ),
]
DefenseOpt = Annotated[Optional[str], typer.Option("--defense", hidden=True, help="former flag: off | on | both (= --setting caution)")]
WaitOpt = Annotated[bool, typer.Option("--wait", help="if another process holds the run directory, wait for it instead of stopping")]


@app.command()
@user_errors
def run(
    model: Annotated[
        Optional[list[str]], typer.Option("--model", "-m", help="model spec (default: models in medres.toml, else the embedded Qwen2.5-Coder-1.5B)")
    ] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="run directory (default: out in medres.toml, else runs/sample)")] = None,
    limit: Annotated[Optional[int], typer.Option(help="first N items only")] = None,
    setting: SettingOpt = None,
    scoring: ScoringOpt = None,
    option: FamilyOpt = None,
    defense: DefenseOpt = None,
    wait: WaitOpt = False,
) -> None:
    """The main job: the bundled sample suite on the embedded default model."""
    from .config import load_config

    cfg = load_config()
    _run_eval(None, cfg.models(model, ["embedded"]), cfg.out(out, Path("runs/sample")), limit, None, setting or [], scoring, option, defense, cfg, wait=wait)


@app.command("eval")
@user_errors
def eval_(
    model: ModelOpt = None,
    suite: Annotated[Optional[Path], typer.Option("--suite", help="suite directory (default: the bundled sample)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="run directory, rerun to resume (default: out in medres.toml, else runs/eval)")] = None,
    limit: Annotated[Optional[int], typer.Option(help="first N items only")] = None,
    sample_seed: Annotated[
        Optional[int],
        typer.Option(
            "--sample-seed", help="take the items in this seed's random order, so that --limit N is a simple random sample and a larger N keeps a smaller one"
        ),
    ] = None,
    seed: Annotated[Optional[int], typer.Option(help="decoding seed passed to every model")] = None,
    epochs: Annotated[
        int,
        typer.Option(
            "--epochs",
            help="answer every unit N times, epoch e with decoding seed + e (needs a "
            "sampling temperature; only families whose metrics read repeats take more than one)",
        ),
    ] = 1,
    setting: SettingOpt = None,
    scoring: ScoringOpt = None,
    option: FamilyOpt = None,
    judge: JudgeOpt = None,
    attacker: AttackerOpt = None,
    defense: DefenseOpt = None,
    wait: WaitOpt = False,
    audit: Annotated[Optional[int], typer.Option("--audit", help="after the run, audit the labels of N sampled units (medres audit)")] = None,
    reader: Annotated[Optional[str], typer.Option("--reader", help="the audit's reader model spec (with --audit)")] = None,
    until: Annotated[
        Optional[float],
        typer.Option(
            "--until",
            help="stop early once the anytime-valid 95% interval of the family's headline rate (or --until-rate) is narrower "
            "than WIDTH (0.1 = 10 points); needs --sample-seed",
        ),
    ] = None,
    until_decided: Annotated[
        bool,
        typer.Option(
            "--until-decided",
            help="stop early once the anytime-valid 95% interval of the paired difference (two models, else two settings, "
            "else the family's two rates) excludes 0; needs --sample-seed",
        ),
    ] = False,
    until_rate: Annotated[Optional[str], typer.Option("--until-rate", help="the family's rate the rule reads (a headline key; default: the family's)")] = None,
    until_versus: Annotated[
        Optional[str], typer.Option("--until-versus", help="with --until-decided in a run of one model and one setting: the rate compared against")
    ] = None,
    batch: BatchOpt = None,
    batch_results: BatchResultsOpt = None,
    batch_fallback: BatchFallbackOpt = "batch",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="with --batch: print calls, tokens and cost live vs batch; send nothing")] = False,
) -> None:
    """Run one or many models on a suite's paired clean and stressed probes."""
    from ..run.stopping import StopRule
    from ..runtime.errors import ConfigError
    from .batch import batch_request
    from .config import load_config

    if until is None and not until_decided and (until_rate or until_versus):
        raise ConfigError("--until-rate" if until_rate else "--until-versus", "a rate to stop on goes with --until WIDTH or --until-decided")
    rule = StopRule(until, until_decided, until_rate, until_versus) if until is not None or until_decided else None

    cfg = load_config()
    _run_eval(
        suite,
        cfg.models(model),
        cfg.out(out, Path("runs/eval")),
        limit,
        seed,
        setting or [],
        scoring,
        option,
        defense,
        cfg,
        wait=wait,
        judge=judge,
        epochs=epochs,
        sample_seed=sample_seed,
        audit=audit,
        reader=reader,
        until=rule,
        batch=batch_request(batch, batch_results, batch_fallback, dry_run),
        attacker=attacker,
    )


@app.command("import")
@user_errors
def import_(
    path: Annotated[
        Optional[str],
        typer.Argument(
            help="source file (MedQA/MedMCQA JSON lines, MMLU CSV, a family's release layout, "
            "an abbreviation inventory), or a hub name hf:OWNER/NAME\\[:CONFIG]\\[@REVISION] "
            "(medres datasets lists them)"
        ),
    ] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="items .jsonl file, or a suite directory for a release")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto, or a format name (medres import --format help lists them)")] = "auto",
    seed: Annotated[int, typer.Option(help="suite seed (release files: the seeded choices of its probes)")] = 0,
    config: Annotated[Optional[str], typer.Option("--config", help="the release config a single file holds, when its name does not say")] = None,
    myths: Annotated[Optional[Path], typer.Option("--myths", help="the myth file a release's rows point into (Cancer-Myth NFP: source_row)")] = None,
) -> None:
    """Turn real source files, or a dataset by hub name, into items (or a release into a suite)."""
    from ..build.importing import import_data
    from ..runtime.errors import ConfigError

    if fmt == "help":
        from .. import sources
        from ..family import families

        suite_formats = [name for fam in families() for name in fam.suites.readers]
        console.print(
            "item formats: "
            + ", ".join(sources.formats())
            + "; suite formats: "
            + ", ".join(suite_formats)
            + "; abbreviations (an inventory, copied into the --out folder)"
        )
        return
    if path is None:
        raise ConfigError("PATH", "name a file or a hub name, e.g. medres import hf:AI4HealthResearch/MedMisBench --out suites/medmisbench")
    if out is None:
        raise ConfigError("--out", "give the items file or suite directory to write, e.g. --out items.jsonl")
    done = import_data(path, out, fmt=fmt, seed=seed, config=config, myths=myths)
    for w in done.warnings:
        err_console.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=True)
    console.print(done.summary, highlight=False, markup=False, soft_wrap=True)


def _build_group() -> typer.Typer:
    """`medres build ...`: every family's construction commands in one group."""
    from ..family import families

    group = typer.Typer(no_args_is_help=True, help="Build stress-test suites with a generator model.")
    for fam in families():
        if fam.suites.commands is not None:
            sub = fam.suites.commands()
            group.registered_commands.extend(sub.registered_commands)
            group.registered_groups.extend(sub.registered_groups)
    return group


from .agreement import register as _register_agreement  # noqa: E402
from .analyses import register as _register_analyses  # noqa: E402
from .audit import register as _register_audit  # noqa: E402
from .corpus import register as _register_corpus  # noqa: E402
from .datasets import register as _register_datasets  # noqa: E402
from .export import register as _register_export  # noqa: E402
from .mitigate import register as _register_mitigate  # noqa: E402
from .models import register as _register_models  # noqa: E402
from .plan import register as _register_plan  # noqa: E402
from .report import register as _register_report  # noqa: E402
from .review import register as _register_review  # noqa: E402
from .view import register as _register_view  # noqa: E402

app.add_typer(_build_group(), name="build")
_register_report(app)
_register_review(app)
_register_models(app)
_register_agreement(app)
_register_corpus(app)
_register_mitigate(app)
_register_datasets(app)
_register_export(app)
_register_view(app)
_register_analyses(app)
_register_audit(app)
_register_plan(app)

__all__ = ["app", "fail", "main"]


def main() -> None:
    """The `medres` command: the app, then the objects it made frozen out of the garbage
    collector's passes at exit (gc.freeze), which would otherwise walk every object of pandas,
    scipy and matplotlib once more (about 0.2 s a command); nothing else of the exit changes."""
    try:
        app()
    finally:
        if devices.on("exit_freeze"):
            gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
