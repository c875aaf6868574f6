"""`medres mitigate ...`: mitigations that are found rather than written (thin: parse, call
medresilience.mitigations, print). `optimise` searches for a precaution prompt with GEPA; `show`
prints an optimised-prompt file and, given suites, whether they overlap its train/val split."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .kit import command_group, console, err_console, parse_pairs, user_errors


def optimise_(
    train: Annotated[list[Path], typer.Option("--train", help="a suite directory to draw training examples from; repeat for several")],
    val: Annotated[
        list[Path],
        typer.Option(
            "--val",
            help="a suite directory to draw validation examples from; repeat for several (keep it apart from every suite the prompt will be scored on)",
        ),
    ],
    task_model: Annotated[str, typer.Option("--task-model", help="the model the prompt is for (a model spec)")],
    reflection_model: Annotated[str, typer.Option("--reflection-model", help="the model that reads the feedback and proposes prompts (a model spec)")],
    budget: Annotated[
        int,
        typer.Option(
            "--budget",
            help="GEPA metric calls (examples scored, the seed prompt's validation included), "
            "never exceeded: a proposal starts only while its most (2 x minibatch + the "
            "validation examples) still fits",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="the optimised-prompt file to write, NAME.json (its calls are stored in NAME.json.work/)")],
    per_suite: Annotated[int, typer.Option("--per-suite", help="examples drawn (seeded) from each suite of --train and of --val")] = 5,
    seed: Annotated[int, typer.Option("--seed", help="seed of the draw and of GEPA's choices")] = 0,
    judge: Annotated[Optional[str], typer.Option("--judge", help="judge model spec of judged families (default: the task model)")] = None,
    option: Annotated[Optional[list[str]], typer.Option("--option", "-O", help="a family option KEY=VALUE, given to each suite whose family takes it")] = None,
    seed_prompt: Annotated[Optional[str], typer.Option("--seed-prompt", help="the prompt GEPA starts from (default: a short precaution)")] = None,
    seed_prompt_file: Annotated[Optional[Path], typer.Option("--seed-prompt-file", help="read the seed prompt from this file")] = None,
    minibatch: Annotated[int, typer.Option("--minibatch", help="training examples the reflection model sees per proposal")] = 3,
    wait: Annotated[bool, typer.Option("--wait", help="if another process holds the work directory, wait for it instead of stopping")] = False,
    batch: Annotated[
        Optional[str],
        typer.Option(
            "--batch",
            help="not taken: the optimiser's calls are sequential (each proposal is written from the replies to the last one), "
            "so a batch would be one round trip per step; run it live",
        ),
    ] = None,
) -> None:
    """Find a precaution system prompt with GEPA; rerun the same command to resume (stored calls are reused).
    Its calls are sequential by nature (each proposal needs the replies to the last): it takes no --batch."""
    from ..mitigations.optimise import SEED_PROMPT, optimise
    from ..models.spec import parse_model_spec
    from .batch import refuse_batch

    refuse_batch(batch, "the optimiser's calls are sequential (each proposal is written from the replies to the last one)")
    from ..runtime.errors import ConfigError
    from ..suite import Suite
    from .config import load_config

    if seed_prompt is not None and seed_prompt_file is not None:
        raise ConfigError("--seed-prompt", "give the seed prompt once: --seed-prompt or --seed-prompt-file, not both")
    first = seed_prompt if seed_prompt is not None else (seed_prompt_file.read_text(encoding="utf-8").strip() if seed_prompt_file else SEED_PROMPT)
    cfg = load_config()
    defaults = cfg.spec_defaults()
    task = parse_model_spec(task_model, defaults)
    reflection = parse_model_spec(reflection_model, defaults)
    result = optimise(
        [Suite.load(p) for p in train],
        [Suite.load(p) for p in val],
        task,
        reflection,
        out,
        budget,
        per_suite=per_suite,
        seed=seed,
        judge=judge or task_model,
        options=parse_pairs(option),
        seed_prompt=first,
        minibatch=minibatch,
        progress=lambda line: err_console.print(line, highlight=False, markup=False, soft_wrap=True),
        wait=wait,
    )
    c = result.candidate
    console.print(f"prompt ({c.prompt_hash}):\n{c.prompt}", highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"validation score {c.seed_val_score:.3f} (seed prompt) -> {c.best_val_score:.3f}; {len(c.history)} candidates; "
        f"{c.metric_calls} of {c.budget} metric calls; calls: {result.called} made, {result.cached} reused from the store",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    console.print(f"written: {result.path} (calls stored in {c.work_dir})", highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"use it with: medres eval --setting none --setting optimised:{result.path} --suite SUITE ... (on suites other than its --train and --val ones)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def show(
    path: Annotated[Path, typer.Argument(help="an optimised-prompt file")],
    suite: Annotated[Optional[list[Path]], typer.Option("--suite", help="a suite to check against the file's train/val split; repeatable")] = None,
) -> None:
    """Print an optimised-prompt file and, for each --suite, whether it overlaps the prompt's train/val split."""
    from ..mitigations.candidate import load_candidate
    from ..suite import Suite

    c = load_candidate(path)
    console.print(f"{path}: {c.summary()}", highlight=False, markup=False, soft_wrap=True)
    for split in ("train", "val"):
        parts = ", ".join(f"{s.name} ({len(s.examples)} items, {s.suite_hash})" for s in getattr(c, split))
        console.print(f"{split}: {parts}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"prompt ({c.prompt_hash}):\n{c.prompt}", highlight=False, markup=False, soft_wrap=True)
    for p in suite or []:
        warnings = c.overlap(Suite.load(p), label=str(path))
        for w in warnings:
            err_console.print(f"warning: {w}", highlight=False, markup=False, soft_wrap=True)
        if not warnings:
            console.print(f"suite {p}: held out (no item of it is in the prompt's train/val split)", highlight=False, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the `mitigate` command group to the main app."""
    group = command_group(app, "mitigate", "Find mitigations: a precaution prompt optimised with GEPA (--setting optimised:FILE).")
    group.command("optimise")(user_errors(optimise_))
    group.command("show")(user_errors(show))
