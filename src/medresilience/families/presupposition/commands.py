"""`medres build presupposition ...` (thin: parse, call the library, print).

medres build presupposition --myths FILE --out SUITE_DIR [--generator SPEC ...] [--responder same|SPEC]
    [--verifier SPEC] [--categoriser SPEC] [--verify SPEC] [--questions 3] [--hard 6] [--easy 2] [--invalid 4]
    [--round-size 1] [--seed S] [--limit N] [--valid-seeds FILE] [--invalid-seeds FILE]
    [--per-generator N] [--per-category N] [--work-dir DIR] [--retries R]
    [--batch openai|files [--dry-run]]  (one round only: --round-size at least the myths)
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ...cli.batch import BatchFallbackOpt, BatchOpt, BatchResultsOpt, batch_command, batch_request
from ...cli.kit import StageProgress, build_outcome, console, err_console, fail
from ...cli.kit import user_errors as _user_errors

build_app = typer.Typer(no_args_is_help=True, help="Build false-presupposition suites.")


def commands() -> typer.Typer:
    """The family's construction commands (its `commands` hook)."""
    return build_app


SPEC_HELP = "model spec: embedded, openai:MODEL,base_url=URL[,api_key_env=VAR,...], PROVIDER/MODEL or @model.json"


@build_app.command("presupposition")
@_user_errors
def presupposition(
    myths: Annotated[
        Path, typer.Option("--myths", help="myth records (cancer, myth, fact, source): the study's myth_treatment.jsonl, JSON lines or a JSON array")
    ],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write (rerun to resume)")],
    generator: Annotated[
        Optional[list[str]], typer.Option("--generator", "-g", help=f"generator {SPEC_HELP}; repeat for several runs (each with its own pools)")
    ] = None,
    responder: Annotated[
        str, typer.Option("--responder", help="who answers the questions: 'same' (each generator its own, as the study) or a model spec")
    ] = "same",
    verifier: Annotated[str, typer.Option("--verifier", help=f"verifier {SPEC_HELP}: scores each answer -1/0/1 with the premise rubric")] = "embedded",
    categoriser: Annotated[Optional[str], typer.Option("--categoriser", help="categoriser model spec (default: the verifier)")] = None,
    verify: Annotated[
        Optional[str], typer.Option("--verify", help="checker model spec: reads each selected question's correction; unsound ones are dropped")
    ] = None,
    questions: Annotated[int, typer.Option("--questions", min=1, help="questions per myth (M)")] = 3,
    hard: Annotated[int, typer.Option("--hard", min=0, help="hard examples per prompt, from the generator's valid pool (K_h)")] = 6,
    easy: Annotated[int, typer.Option("--easy", min=0, help="easy examples per prompt, from the questions a responder corrected (K_e)")] = 2,
    invalid: Annotated[int, typer.Option("--invalid", min=0, help="seed invalid examples per prompt (K_i)")] = 4,
    round_size: Annotated[
        int, typer.Option("--round-size", min=1, help="myths per round; the pools change between rounds (1: the study's sequential loop)")
    ] = 1,
    seed: Annotated[int, typer.Option("--seed", help="suite seed (example draws, balancing)")] = 0,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="the first N myths only")] = None,
    valid_seeds: Annotated[
        Optional[Path], typer.Option("--valid-seeds", help="valid seed examples (layout of the study's init_examples.json) instead of the built-in ones")
    ] = None,
    invalid_seeds: Annotated[
        Optional[Path], typer.Option("--invalid-seeds", help="invalid seed examples (layout of init_neg_examples.json) instead of the built-in ones")
    ] = None,
    per_generator: Annotated[Optional[int], typer.Option("--per-generator", min=1, help="balancing: questions per generator (Algorithm 1's fill)")] = None,
    per_category: Annotated[
        Optional[int], typer.Option("--per-category", min=1, help="balancing: questions per category and generator (Algorithm 1's quota)")
    ] = None,
    answer_tokens: Annotated[int, typer.Option("--answer-tokens", min=1, help="the responder's reply budget")] = 1024,
    judge_tokens: Annotated[Optional[int], typer.Option("--judge-tokens", min=1, help="the verifier's reply budget (default: the judge's)")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
    work_dir: Annotated[Optional[Path], typer.Option("--work-dir", help="where the call store lives (default: SUITE_DIR.build/)")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, help="re-asks after a reply that cannot be read")] = 2,
    batch: BatchOpt = None,
    batch_results: BatchResultsOpt = None,
    batch_fallback: BatchFallbackOpt = "batch",
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="with --batch: the calls, tokens and cost, live and as a batch, of the generators' questions; send and write nothing"),
    ] = False,
) -> None:
    """Build a false-presupposition suite with the adversarial loop: generators write patient questions
    that hide a myth, a responder answers them, a verifier keeps the ones it went along with.

    --batch only for a loop of one round (--round-size at least the number of myths: every prompt
    shows the seed examples): the rounds are sequential by nature (each round's prompts show
    examples the last round's verdicts picked), so a batch would take three round trips a round.
    In one round each stage goes out as a batch (generate, respond, verify, categorise, check;
    request files under the work directory's batches/): exit 3 while one is in progress; rerun the
    same command to collect it and go on."""
    from ...build.construction import default_work_dir
    from ...models.spec import parse_model_spec
    from .construct.build import PresuppositionBuildOptions, build_presupposition
    from .construct.seeds import load_seeds

    opts = PresuppositionBuildOptions(
        seed=seed,
        questions=questions,
        hard=hard,
        easy=easy,
        invalid=invalid,
        round_size=round_size,
        limit=limit,
        retries=retries,
        per_generator=per_generator,
        per_category=per_category,
        answer_tokens=answer_tokens,
        judge_tokens=judge_tokens,
        name=name,
    )
    gens = [parse_model_spec(g) for g in (generator or ["embedded"])]
    resp = None if responder.strip().lower() == "same" else parse_model_spec(responder)
    ver = parse_model_spec(verifier)
    cat = parse_model_spec(categoriser) if categoriser else None
    chk = parse_model_spec(verify) if verify else None
    seeds = load_seeds(valid_seeds, invalid_seeds)
    request = batch_request(batch, batch_results, batch_fallback, dry_run)
    if request is not None:
        _one_round(myths, limit, round_size)
    if request is not None and request.dry_run:
        from ...cli.batch import print_estimate
        from .construct.build import first_requests

        db = (work_dir or default_work_dir(out)) / "store.sqlite"
        print_estimate(first_requests(myths, gens, opts, seeds), gens, db, request.provider, "answers, verdicts, categories, checks, re-asks")
        return
    with batch_command(request, work_dir or default_work_dir(out)), StageProgress() as prog:
        res = build_presupposition(myths, out, gens, ver, resp, opts, categoriser=cat, checker=chk, seeds=seeds, work_dir=work_dir, progress=prog)
    r = res.report
    _print_report(r, out)
    build_outcome(r, r["items"]["kept"], r["items"]["candidates"], "candidates", out)


def _one_round(myths: Path, limit: int | None, round_size: int) -> None:
    """A batch build's loop must be one round: stop in one line saying why otherwise."""
    from .construct.loop import rounds_of
    from .formats.myths import read_myths

    records = read_myths(myths)[:limit]
    rounds = len(rounds_of(records, round_size))
    if rounds > 1:
        fail(
            f"--batch: the adversarial loop's {rounds} rounds are sequential (each round's prompts show examples the last round's verdicts picked), "
            f"so a batch would take three round trips a round; run it live (without --batch), or in one round (--round-size {len(records)})"
        )


def _print_report(r: dict[str, Any], out: Path) -> None:
    """The build report in a few lines: what was kept, per generator, the checks' reasons, the checker, the calls and the notes."""
    it = r["items"]
    console.print(
        f"kept {it['kept']} of {it['candidates']} candidates ({it['questions']} questions from {r['myths']} myths; "
        f"{it['rejected']} rejected by the checks; scores -1/0/1 {it['scores']['-1']}/{it['scores']['0']}/{it['scores']['1']}; "
        f"{it['unscored']} unscored)",
        highlight=False,
    )
    for g, b in r["by_generator"].items():
        pools = r["pools"][g]["final"]
        console.print(
            f"  {g}: {b['questions']} questions, {b['candidates']} candidates, {b['kept']} kept; pools valid {pools['valid']}, "
            f"easy {pools['easy']}" + (f"; stopped after round {b['stopped_after_round']}" if b["stopped_after_round"] else ""),
            highlight=False,
        )
    for status, reasons in r.get("reasons", {}).items():
        console.print(f"  {status}: " + ", ".join(f"{k} {v}" for k, v in reasons.items()), highlight=False)
    c = r.get("checker_counts")
    if c:
        console.print(
            f"checker {r['checker']}: {c['sound']} of {c['checked']} corrections sound ({c['unsound']} unsound, {c['unchecked']} not read)", highlight=False
        )
    t = r["totals"]
    console.print(
        f"calls: {t['calls_made']} made, {t['reused']} reused from the store, {t['call_errors']} errors, {t['retries']} retries; "
        f"{r['requests_per_kept_question'] or '—'} requests per kept question",
        highlight=False,
    )
    for n in (*r.get("cautions", ()), *r.get("notes", ())):
        err_console.print(f"[yellow]note:[/] {n}", highlight=False)
    console.print(f"suite: {out}  (suite.json, items.jsonl, probes.jsonl, build_report.md, decisions.jsonl)")
