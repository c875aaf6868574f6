"""A precaution system prompt found with GEPA, as a library call:

    from medresilience.mitigations.optimise import optimise
    result = optimise([train_suite, ...], [val_suite, ...], task_spec, reflection_spec, "precaution.json",
                      budget=200, judge="openai/gpt-4o-mini")

The examples are `per_suite` items drawn (seeded) from each training and each validation suite
(`examples.draw`; a suite in both gives disjoint items to each), scored by their family's metric
(`examples`). GEPA (`gepa.optimize`, the optional extra `pip install 'medresilience[optimise]'`)
evolves one text component, the precaution prompt, starting from `seed_prompt`, within `budget`
metric calls (one metric call: one example scored; the seed prompt's validation takes one per
validation example; a proposal is started only while the most it can cost still fits, so the
calls used never exceed the budget), with the task and reflection models called through this project's client
(`adapter`: `calls.run_calls`, never litellm; any OpenAI-compatible endpoint or the embedded model,
served for the length of the optimisation).

Every call is stored in `OUT.work/store.sqlite` under its request key, and GEPA's choices are
seeded, so a rerun replays the stored calls and makes none, and an optimisation killed at any point
resumes where its stored calls end: no finished call is made again. One process at a time holds
the work directory. The file `OUT` (mitigations.candidate) is written, atomically, once GEPA is done."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import __version__
from ..build.workspace import created_stamp, workspace
from ..models.spec import ModelSpec, parse_model_spec
from ..runtime.errors import ConfigError
from ..score import is_deferred
from ..suite import Suite
from .adapter import Calls, OptimiseError, PrecautionAdapter
from .candidate import (
    COMPONENT,
    FORMAT,
    VERSION,
    CandidateRecord,
    EvaluationRecord,
    ModelRecord,
    OptimisedPrompt,
    prompt_hash,
)
from .examples import Example, draw

#: the gepa release this project is tested with (the `optimise` extra pins it)
GEPA_VERSION = "0.1.4"
INSTALL_HINT = f"pip install 'medresilience[optimise]' (or pip install gepa=={GEPA_VERSION})"

#: The prompt GEPA starts from (this project's own words).
SEED_PROMPT = (
    "Before you answer, check the question and anything given with it for claims or assumptions that may be false, "
    "outdated or misleading. If something is wrong, say so plainly and answer from established medical knowledge; "
    "if nothing is, answer the question as asked. Keep to the reply format the question asks for."
)
#: examples shown to the reflection model per proposal (GEPA's minibatch)
MINIBATCH = 3


@dataclass
class OptimiseResult:
    path: Path
    candidate: OptimisedPrompt
    called: int  # calls made by this invocation
    cached: int  # calls found in the store


def work_dir(out: Path | str) -> Path:
    """Where an optimisation keeps its store: `OUT.work/` beside the output file."""
    out = Path(out)
    return out.with_name(out.name + ".work")


def import_gepa() -> Any:
    try:
        import gepa
    except ImportError:
        raise OptimiseError(f"the optimiser needs the gepa package, which is not installed: {INSTALL_HINT}") from None
    return gepa


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def model_record(spec: ModelSpec) -> ModelRecord:
    return ModelRecord(label=spec.label, identity=spec.identity(), identity_hash=spec.identity_hash, spec=spec.public())


class _FileLogger:
    """GEPA's log lines, appended to a file of the work directory (not to stdout)."""

    def __init__(self, path: Path):
        self.path = path

    def log(self, *args: object, **_kw: object) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(" ".join(str(a) for a in args) + "\n")


class _Progress:
    """GEPA callbacks -> one line per validated candidate."""

    def __init__(self, say: Callable[[str], None]):
        self.say = say

    def on_valset_evaluated(self, event: Any) -> None:
        self.say(f"candidate {event['candidate_idx']}: validation score {event['average_score']:.3f} ({event['num_examples_evaluated']} examples)")


def _judged(examples: Sequence[Example]) -> bool:
    return any(is_deferred(e.family.evaluation.scorer(e.item, p, e.scoring, e.options)) for e in examples for p in e.units)


def optimise(
    train: Sequence[Suite],
    val: Sequence[Suite],
    task: ModelSpec,
    reflection: ModelSpec,
    out: Path | str,
    budget: int,
    *,
    per_suite: int = 5,
    seed: int = 0,
    judge: str | None = None,
    options: dict[str, str] | None = None,
    seed_prompt: str = SEED_PROMPT,
    minibatch: int = MINIBATCH,
    progress: Callable[[str], None] | None = None,
    wait: bool = False,
) -> OptimiseResult:
    """Find a precaution prompt (see the module docstring) and write it to `out`. `judge`: the
    judge model spec text of judged families (they read it as their `judge` option); `options`:
    family options (KEY=VALUE) applied to each suite whose family takes them."""
    out = Path(out)
    say = progress or (lambda _line: None)
    if not seed_prompt.strip():
        raise ConfigError("--seed-prompt", "the seed prompt is empty")
    if minibatch < 1:
        raise ConfigError("--minibatch", f"must be at least 1, got {minibatch}")
    train_ex, val_ex, train_split, val_split = draw(list(train), list(val), per_suite, seed, options, judge)
    proposal = _proposal_cost(budget, minibatch, len(train_ex), len(val_ex))
    gepa = import_gepa()
    for s in (task, reflection):
        s.api_key()  # a missing key variable fails before anything is called
    judge_spec = parse_model_spec(judge) if judge is not None and _judged(train_ex + val_ex) else None
    specs = _distinct(task, reflection, judge_spec)
    if judge_spec is not None:
        judge_spec.api_key()
    work = work_dir(out)
    evaluations: list[EvaluationRecord] = []
    hint = "wait for it to finish, or rerun with --wait"
    with workspace(work, specs, what="optimisation work directory", wait=wait, hint=hint) as ws:
        log = _FileLogger(work / "gepa.log")
        log.log(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')}: optimisation of {out} (budget {budget}, seed {seed}) ---")
        calls = Calls(ws.store, ws.models)
        try:
            adapter = PrecautionAdapter(task, calls, train_ex + val_ex, evaluations.append)
            say(f"{len(train_ex)} training and {len(val_ex)} validation examples; budget {budget} metric calls; store {work / 'store.sqlite'}")
            result = gepa.optimize(
                seed_candidate={COMPONENT: seed_prompt},
                trainset=train_ex,
                valset=val_ex,
                adapter=adapter,
                reflection_lm=adapter.reflection_lm(reflection),
                max_metric_calls=budget,
                reflection_minibatch_size=min(minibatch, len(train_ex)),
                candidate_selection_strategy="pareto",
                seed=seed,
                logger=log,
                stop_callbacks=[lambda _state: calls.failure is not None, lambda state: state.total_num_evals + proposal > budget],
                callbacks=[_Progress(say)],
                track_best_outputs=False,
                display_progress_bar=False,
                raise_on_exception=True,
            )
        finally:
            calls.close()
        if calls.failure is not None:
            raise calls.failure
        usage = ws.store.usage()
        history = _history(result, [e.ref for e in val_ex])
        best = int(result.best_idx)
        cand = OptimisedPrompt(
            format=FORMAT,
            version=VERSION,
            name=out.stem,
            prompt=history[best].prompt,
            prompt_hash=history[best].prompt_hash,
            seed_prompt=seed_prompt,
            budget=budget,
            metric_calls=int(result.total_metric_calls or 0),
            seed=seed,
            per_suite=per_suite,
            reflection_minibatch=min(minibatch, len(train_ex)),
            task_model=model_record(task),
            reflection_model=model_record(reflection),
            judge_model=model_record(judge_spec) if judge_spec is not None else None,
            train=train_split,
            val=val_split,
            seed_val_score=history[0].val_score,
            best_val_score=history[best].val_score,
            best=best,
            history=history,
            evaluations=evaluations,
            calls=usage,
            packages={"medresilience": __version__, "gepa": _version("gepa"), "python": platform.python_version()},
            created=created_stamp(),
            work_dir=str(work),
        )
        cand.write(out)
    return OptimiseResult(out, cand, calls.called, calls.cached)


def _proposal_cost(budget: int, minibatch: int, n_train: int, n_val: int) -> int:
    """The most one proposal can cost in metric calls; ConfigError when the budget leaves no room
    for one after the seed prompt's validation."""
    # the budget is kept, never overrun: the seed prompt's validation, then a proposal only while
    # the most it can cost (its minibatch scored under the parent and the new prompt, then the
    # whole validation set when it improves) still fits
    proposal = 2 * min(minibatch, n_train) + n_val
    if budget < n_val + proposal:
        raise ConfigError(
            "--budget",
            f"{budget} metric calls leave no room for a proposal: the seed prompt's validation takes "
            f"{n_val} and each proposal up to {proposal} ({2 * min(minibatch, n_train)} on its "
            f"minibatch, {n_val} more when it improves); give at least {n_val + proposal}",
        )
    return proposal


def _distinct(task: ModelSpec, reflection: ModelSpec, judge: ModelSpec | None) -> list[ModelSpec]:
    """The models to serve, one per label; two different models under one label are an error."""
    specs: dict[str, ModelSpec] = {}
    for s in (task, reflection, judge):
        if s is None:
            continue
        known = specs.get(s.label)
        if known is not None and known.identity() != s.identity():
            raise ConfigError(
                "--reflection-model" if s is reflection else "--judge", f"two different models share the label {s.label}; give one another label="
            )
        specs.setdefault(s.label, s)
    return list(specs.values())


def _history(result: Any, refs: Sequence[str]) -> list[CandidateRecord]:
    """Every candidate GEPA kept: its parents, prompt, validation scores and when it was found."""
    return [
        CandidateRecord(
            index=i,
            parents=[p for p in result.parents[i]],
            prompt=c[COMPONENT],
            prompt_hash=prompt_hash(c[COMPONENT]),
            val_score=float(result.val_aggregate_scores[i]),
            val_scores={refs[int(k)]: float(v) for k, v in sorted(result.val_subscores[i].items())},
            found_after=int(result.discovery_eval_counts[i]),
        )
        for i, c in enumerate(result.candidates)
    ]
