"""One evaluation, end to end, as a library call: a resolved run (`resolved.ResolvedRun`), or suite +
models + options (resolved here by `resolve_run`) -> run directory. Nothing here looks a family,
an option or a setting up by name, nor checks a key: the resolved run holds them.

A run directory holds `store.sqlite` (every request, call, score), `run.json` (models without
secrets, options, settings, prompt texts and hash, suite manifest), `results.json` (see
`results.Results`) and `results.md`. Calling it again on the same directory resumes: finished
calls are reused; the results describe the units this call planned. Run again exactly as before on
a store where that run left nothing to do (every unit answered and scored), nothing is planned,
served, called or computed: the previous run's units become this run's, and so do its results
(results.json, under the new run id; computed again when the file is not that run's). One process at a time holds a
run directory (lock.RunLock: a second one stops, naming the holder, or waits with `wait=True`);
run.json and the store hold each model's endpoint without its credentials.

The models a setting calls besides the answering ones (a `monitor:SPEC`'s monitor) are checked,
served (an embedded one gets its server for the run) and recorded in run.json
(`setting_models`) with the answering models; a setting that calls the answering model itself
starts nothing more. Their identity is among the setting's texts, so it enters the prompts hash."""

from __future__ import annotations

import json
import platform
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__, mitigations
from ..family import Family, family_of
from ..models.openai_compatible import redact_url
from ..models.providers import batch_rates
from ..models.serving import serving
from ..models.spec import ModelSpec
from ..runtime import devices, event_loop
from ..runtime.errors import MedresError
from ..runtime.fileio import atomic_write
from ..runtime.heap import cheap_gc
from ..runtime.lock import RunLock
from ..runtime.seeding import stable_hash
from ..scoring.schema_answer import answer_response_format
from ..store import RunConfig, Store
from ..suite import Suite
from .answer_format import PROMPT, declared_warnings
from .resolved import EvalOptions, ResolvedRun, models_of, resolve_run
from .results import BLOCK, Results
from .runner import ProgressFn, RunStats, chunk_size, epoch_decoding, execute_run
from .selection import run_items
from .stopping import Stopping
from .summary import results_markdown

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass
class RunResult:
    out_dir: Path
    results: Results
    stats: RunStats
    warnings: list[str] = field(default_factory=list)  # also in run.json under `warnings`
    shortfall: str | None = None  # what the run was asked and did not do, in one line (see `shortfall`)
    #: the results frame the results were computed from (for the report built next); None when
    #: the results were a settled rerun's
    frame: pd.DataFrame | None = field(default=None, repr=False)


def shortfall(store: Store, stats: RunStats) -> str | None:
    """What a run was asked to do and did not, in one line with how to go on, or None. A run that
    planned no unit evaluated nothing; a run where answers came back but not one was scored
    (every judgment unscored: the judge's calls all failed, or none of its replies could be read)
    measured nothing. Failed and unsent answer calls are said by their own lines."""
    if stats.planned_units == 0:
        return "nothing was evaluated: the suite has no units to run with these options (check --suite, --limit, --setting and -O); its results are empty"
    tally = store.unit_statuses()
    if tally.get("valid", 0) or tally.get("invalid", 0):
        return None
    waiting = tally.get("unscored", 0) + tally.get("not_scored", 0)  # answered, no score
    if not waiting:
        return None
    reasons = store.score_reasons("unscored")
    failed = tally.get("not_scored", 0) + sum(n for *_, reason, n in reasons if reason.startswith("judge call failed"))
    if failed == waiting:
        return (
            f"no answer was judged: the judge's calls failed or were not sent for all {waiting} answers (the answers are "
            "stored); fix the judge endpoint and rerun the same command to judge them"
        )
    top = " ".join(reasons[0][3].split())[:160]
    return (
        f"no answer was scored: none of the {waiting} judged answers got a verdict ({tally.get('unscored', 0)} unscored, most "
        f"often: {top}); the answers are stored: rerun with a judge that can read them (--judge SPEC) to score them"
    )


def run_config(run: ResolvedRun) -> dict[str, Any]:
    """What run.json records of a resolved run (and what a rerun is compared by)."""
    suite, specs, opts, family, fopts = run.suite, run.specs, run.options, run.family, run.family_options
    texts = dict(family.evaluation.prompts(fopts))
    for setting in run.settings:
        texts.update({f"setting.{setting.name}.{k}": v for k, v in setting.texts.items()})
    if opts.answer_format != PROMPT:  # the schema is sent with every answer: it enters the prompts hash
        shape = json.dumps(answer_response_format("ABCD"), sort_keys=True)
        texts["answer_format"] = f"{opts.answer_format}: {shape} (the enum: each item's option labels)"
    helpers = models_of(run.settings)  # every model a setting calls (one an answering model is too)
    # a setting may warn about the suite it is run on (an optimised prompt tuned on these items)
    warnings = [w for setting in run.settings for w in setting.warnings_about(suite)]
    warnings += declared_warnings(specs, opts.answer_format)  # a model the provider table declares without response_format
    return {
        "medresilience": __version__,
        "python": platform.python_version(),
        "family": family.name,
        "suite": {"path": str(suite.path) if suite.path else None, **suite.manifest.model_dump(mode="json")},
        "models": [_public(s) for s in specs],
        "options": {
            "settings": list(opts.settings),
            "scoring": opts.scoring,
            "limit": opts.limit,
            "sample_seed": opts.sample_seed,
            "conditions": None if opts.conditions is None else list(opts.conditions),
            "family": fopts.model_dump(mode="json"),
            "epochs": opts.epochs,
            # the extraction model of replies the rules leave unread (only when there is one)
            **({"extract": _public(opts.extract)} if opts.extract is not None else {}),
            # how the answers were asked for (only when not the prompt format, so earlier runs' configs stand)
            **({"answer_format": opts.answer_format} if opts.answer_format != PROMPT else {}),
            # the stopping rule (only when there is one)
            **({"until": opts.until.as_dict()} if opts.until is not None else {}),
        },
        # each epoch's decoding seed and temperature (one entry per model with one epoch)
        "decoding": epoch_decoding(specs, opts.epochs),
        "prompts": {"hash": stable_hash(texts)[:16], "texts": texts},
        **({"setting_models": [_public(s) for s in helpers]} if helpers else {}),
        **({"warnings": warnings} if warnings else {}),
    }


def _public(spec: ModelSpec) -> dict[str, Any]:
    return spec.public() | {"base_urls": [] if spec.kind == "embedded" else [redact_url(u) for u in spec.base_urls]}


def evaluate(
    suite: Suite | ResolvedRun,
    specs: Sequence[ModelSpec] = (),
    out_dir: Path | str | None = None,
    opts: EvalOptions = EvalOptions(),
    progress: ProgressFn | None = None,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
    summarise: Callable[[Store, ResolvedRun, dict[str, Any], RunStats | None], tuple[Results, pd.DataFrame | None]] | None = None,
) -> RunResult:
    """Run (or resume) a resolved run (`resolved.resolve_run`; then `specs` and `opts` are not
    given), or `suite` on `specs` with `opts` (resolved here), into `out_dir` and return what it
    measured. `summarise`: computes the results and the frame they come from (default
    `summarise_with_frame`; `medres eval` passes a worker process's, see results_worker)."""
    if out_dir is None:
        raise TypeError("evaluate() needs out_dir, the run directory")
    if isinstance(suite, ResolvedRun):
        if specs or opts != EvalOptions():
            raise TypeError("evaluate() of a resolved run takes its models and options from it")
        run = suite
    else:
        run = resolve_run(suite, specs, opts)  # bad options, models or keys fail before anything is written
    suite, specs = run.suite, run.specs
    helpers = run.setting_models
    config = run_config(run)
    chunk_units = chunk_size()  # a bad MEDRES_CHUNK_UNITS fails before anything is written
    new_loop = event_loop.loop_factory()  # and a bad MEDRES_EVENT_LOOP
    devices.check()  # and a bad MEDRES_DEVICES_OFF
    out = Path(out_dir)
    check_new_run_suite(suite, out)
    with RunLock(out, wait=wait, on_wait=on_wait):  # creates `out`; one process per run directory
        with Store(out / "store.sqlite") as store:
            previous = store.latest_run()
            settled = previous is not None and _same_run(store.run_config(previous), config) and store.run_settled(previous)
            if not settled:
                suite.check()  # a lazily loaded suite's records checked (not held), before this run writes anything
            with atomic_write(out / "run.json") as fh:
                json.dump(config, fh, indent=2)
            run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
            store.record_run(run_id, {**config, "run_id": run_id})
            if settled and previous is not None:
                # the same run again (same suite, models, options, prompts, version) on a store where
                # it left nothing to do: its units are this run's, and nothing is planned or called
                n = store.retag_units(previous, run_id)
                unique = store.run_keys(run_id)  # answers and the calls before them (a monitor's notes)
                stats = RunStats(planned_units=n, unique_calls=unique, cached=unique, settled_from=previous)
            else:
                # the objects alive before the calls (imported modules, the suite) stay out of the
                # collector's passes while they run
                stopping = stopping_of(run)
                with serving([*specs, *helpers]) as live, cheap_gc("calls_gc"):
                    # planned and run in chunks: memory stays flat as the suite grows
                    stats = event_loop.run(execute_run(run.served(live), store, progress, chunk_units=chunk_units, stopping=stopping), new_loop)
                if stopping is not None:  # the rule's outcome is kept with the run: run.json and the store's run record
                    config["stopping"] = stopping.record()
                    with atomic_write(out / "run.json") as fh:
                        json.dump(config, fh, indent=2)
                    store.record_run(run_id, {**config, "run_id": run_id})
            config["run_id"] = run_id
            reused = _settled_results(out, previous, run_id, stats) if settled else None
            results, frame = (reused, None) if reused is not None else (summarise or summarise_with_frame)(store, run, config, stats)
            short = shortfall(store, stats)
        write_results(out, results, run.family)
    return RunResult(out, results, stats, list(config.get("warnings", [])) + list(results.warnings), short, frame)


def stopping_of(run: ResolvedRun) -> Stopping | None:
    """The looks of a run with a stopping rule (`EvalOptions.until`), None without one."""
    opts = run.options
    if opts.until is None:
        return None
    return Stopping.of(opts.until, run.family, [s.label for s in run.specs], opts.settings, len(run_items(run.suite, opts)))


def check_new_run_suite(suite: Suite, out: Path) -> None:
    """Check a lazily read suite now when `out` holds no earlier run to settle, so that a bad suite
    fails before anything is written (a rerun checks it only when it has calls to make)."""
    if not (out / "store.sqlite").exists():
        suite.check()


def _same_run(stored: RunConfig | None, config: Mapping[str, object]) -> bool:
    """Whether a stored run's config is this config (its run id aside), compared as stored JSON."""
    if stored is None:
        return False
    return {k: v for k, v in stored.data.items() if k != "run_id"} == json.loads(json.dumps(config, default=str))


def _settled_results(out: Path, previous: str | None, run_id: str, stats: RunStats) -> Results | None:
    """A settled rerun's results: the previous run's results.json under the new run id (the same
    units, calls and scores give the same numbers), or None when that file is not the previous
    run's (missing, unreadable or another run's): then they are computed again."""
    try:
        old = Results.load(out / "results.json")
    except MedresError:
        return None
    if old.run.run_id != previous:
        return None
    run = old.run.model_copy(update={"run_id": run_id})
    return old.model_copy(update={"run": run, "last_execution": asdict(stats)})


def summarise_with_frame(store: Store, suite: Suite | ResolvedRun, config: dict[str, Any], stats: RunStats | None = None) -> tuple[Results, pd.DataFrame]:
    """The results of the store's latest run and the results frame they come from: of a resolved
    run (its family and options as resolved), or of a suite (its family looked up here)."""
    from .frame import frame_metrics, results_frame, with_loop_measures  # pandas, scipy and statsmodels: imported when results are computed
    from .reading import family_sets_budget, reading_summary, truncation_warnings

    if isinstance(suite, ResolvedRun):
        run = suite
        family, suite, fopts = run.family, run.suite, run.family_options
    else:
        family, fopts = family_of([suite.manifest.family]), None
    df = results_frame(store, suite, family=family)
    loop = None if family.evaluation.loop is None else family.evaluation.loop.record(store)
    res = with_loop_measures(family, frame_metrics(family, df), loop)
    opts = config.get("options", {})
    from .teams import team_results

    reading = reading_summary(store)
    return Results.model_validate(
        dict(
            family=family.name,
            run={
                "run_id": config.get("run_id") or store.latest_run(),
                "suite": config["suite"].get("name"),
                "family": family.name,
                "models": [m["label"] for m in config["models"]],
                "settings": opts.get("settings", [mitigations.NONE]),
                "scoring": opts.get("scoring", "letter"),
                "options": opts,
                "prompt_hash": config["prompts"]["hash"],
            },
            models=res["models"],
            mean_across_models=res.get("mean_across_models", {}),
            mean_by_stratum=res.get("mean_by_stratum", {}),
            usage=store.usage(batch_rates(config["models"])),
            reading=reading,
            warnings=truncation_warnings(reading, family_sets_budget(family, opts.get("family") if fopts is None else fopts)),
            last_execution=None if stats is None else asdict(stats),
            loop=loop,
            stopping=config.get("stopping"),
            teams=team_results(store),
        ),
        context={BLOCK: family.measures.results_block},
    ), df


def write_results(out: Path, results: Results, family: Family | None = None) -> None:
    """results.json and results.md (`family`: the results' family as resolved; else looked up by name)."""
    text = results.json_text(
        None if family is None else family.measures.results_block
    )  # checked to load back (every block in its declared shape) before anything is written
    with atomic_write(out / "results.json") as fh:
        fh.write(text)
    with atomic_write(out / "results.md") as fh:
        fh.write(results_markdown(results, family))
