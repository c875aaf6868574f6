"""`medres`: the thin command line. Each command parses, calls the library, prints."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .clikit import console, err_console, fail, progress, progress_callback, user_errors

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Measure whether models keep correct medical judgments under misleading or messy input.")


def _run_eval(suite_dir: Optional[Path], models: list[str], out: Path, limit, seed, type1, scoring, defense) -> None:
    from .evaluate import evaluate
    from .models.spec import parse_model_spec
    from .records import Suite
    from .report.summary import results_table
    from .runner import EvalOptions
    from .samples import sample_suite

    suite = Suite.load(suite_dir) if suite_dir else sample_suite()
    specs = [parse_model_spec(m) for m in models]
    if seed is not None:
        specs = [s.model_copy(update={"seed": seed}) for s in specs]
    for s in specs:
        s.api_key()  # settings errors before any progress output
    defense_modes = {"off": (False,), "on": (True,), "both": (False, True)}[Defense(defense).value]
    opts = EvalOptions(type1=Type1(type1).value, scoring=Scoring(scoring).value, defense=defense_modes, limit=limit)
    with progress() as prog:
        result = evaluate(suite, specs, out, opts, progress=progress_callback(prog, "calls"))
    console.print(results_table(result.results))
    s = result.stats
    console.print(
        f"calls: {s.called} made, {s.cached} reused from the store, {s.errors} errors"
        f" ({s.permanent_errors} permanent); tokens: {s.prompt_tokens} in / {s.completion_tokens} out"
        + (f"; cost ${s.cost:.4f}" if s.cost else "")
    )
    for e in s.error_samples:
        err_console.print(f"  error sample: {e}", highlight=False)
    from .report import build_report

    rep = build_report([out])
    console.print(f"run directory: {out}  (results.json, results.md, store.sqlite)")
    console.print(f"report: {rep.html}")


class Type1(str, Enum):
    all = "all"
    sample = "sample"


class Scoring(str, Enum):
    letter = "letter"
    logprob = "logprob"


class Defense(str, Enum):
    off = "off"
    on = "on"
    both = "both"


Type1Opt = Annotated[Type1, typer.Option("--type1", help="all: one probe per wrong option; sample: the item's one seeded target")]
ScoringOpt = Annotated[Scoring, typer.Option("--scoring", help="letter: generate and extract; logprob: read option-letter log-probabilities")]
DefenseOpt = Annotated[Defense, typer.Option("--defense", help="add the defensive instruction: off, on, or both (compare)")]


@app.command()
@user_errors
def run(
    model: Annotated[list[str], typer.Option("--model", "-m", help="model spec (default: the embedded Qwen2.5-Coder-1.5B)")] = ["embedded"],
    out: Annotated[Path, typer.Option("--out", help="run directory")] = Path("runs/sample"),
    limit: Annotated[Optional[int], typer.Option(help="first N items only")] = None,
    type1: Type1Opt = Type1.all,
    scoring: ScoringOpt = Scoring.letter,
    defense: DefenseOpt = Defense.off,
) -> None:
    """The main job: the bundled sample suite on the embedded default model."""
    _run_eval(None, model, out, limit, None, type1, scoring, defense)


@app.command("eval")
@user_errors
def eval_(
    model: Annotated[list[str], typer.Option("--model", "-m", help="model spec; repeat for several models")],
    suite: Annotated[Optional[Path], typer.Option("--suite", help="suite directory (default: the bundled sample)")] = None,
    out: Annotated[Path, typer.Option("--out", help="run directory (rerun to resume)")] = Path("runs/eval"),
    limit: Annotated[Optional[int], typer.Option(help="first N items only")] = None,
    seed: Annotated[Optional[int], typer.Option(help="decoding seed passed to every model")] = None,
    type1: Type1Opt = Type1.all,
    scoring: ScoringOpt = Scoring.letter,
    defense: DefenseOpt = Defense.off,
) -> None:
    """Run one or many models on a suite's paired clean / Type 1 / Type 2 probes."""
    _run_eval(suite, model, out, limit, seed, type1, scoring, defense)


@app.command("import")
@user_errors
def import_(
    path: Annotated[Path, typer.Argument(help="source file: MedQA/MedMCQA JSON lines, MMLU CSV, or a MedMisBench-style release")],
    out: Annotated[Path, typer.Option("--out", help="items .jsonl file, or a suite directory for a release file")],
    fmt: Annotated[str, typer.Option("--format", help="auto, medqa, medmcqa, mmlu, medmisbench")] = "auto",
    seed: Annotated[int, typer.Option(help="suite seed (release files: Type 1 sample and bundle order)")] = 0,
) -> None:
    """Turn real source files into items (or a release file into a suite)."""
    from . import sources
    from .records import write_jsonl

    if fmt == "medmisbench" or (fmt == "auto" and sources.detect_format(path) == "medmisbench"):
        suite = sources.read_release(path, seed=seed)
        suite.save(out)
        console.print(f"suite {out}: {len(suite.items)} items, {len(suite.probes)} probes")
        return
    n = write_jsonl(out, sources.load_items(path, fmt=fmt))
    console.print(f"{out}: {n} items")


@app.command()
@user_errors
def export(
    suite: Annotated[Path, typer.Option("--suite", help="suite directory")],
    out: Annotated[Path, typer.Option("--out", help="output file")],
    fmt: Annotated[str, typer.Option("--format", help="release (MedMisBench layout, JSON lines) or parquet (Hugging Face datasets)")] = "release",
) -> None:
    """Write a suite in another layout."""
    from .build.export import export_suite
    from .records import Suite

    n = export_suite(Suite.load(suite), out, fmt)
    console.print(f"{out}: {n} rows")


from .build.cli import build_app  # noqa: E402
from .report.cli import register as _register_report  # noqa: E402

app.add_typer(build_app, name="build")
_register_report(app)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
