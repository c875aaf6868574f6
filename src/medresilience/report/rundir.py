"""A run directory, read for reporting: run.json (models without secrets, options, prompts, suite
manifest), the store, the suite it was run on, and the numbers recomputed from them.

The report always recomputes from the store when it can (store.sqlite + the suite named in
run.json), so it shows what the store holds now, also for a run that was interrupted before it
wrote results.json. When the suite cannot be found (moved, or changed since the run: its checksums
no longer match), the run's own results.json is used and the report says so."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple, TypedDict, TypeVar

import pandas as pd

from ..family import get
from ..models.names import ModelNames, RunModels, model_names, recorded_models
from ..models.providers import batch_rates
from ..models.urls import redact_url  # noqa: F401  (the report shows endpoints through it)
from ..run.frame import metrics_with_loop, results_frame
from ..run.reading import family_sets_budget, reading_summary, truncation_warnings
from ..run.results import READINGS, ReadingSummary, ResultsBlock, typed_blocks
from ..run.run_suite import find_run_suite
from ..runtime.errors import InputError
from ..runtime.jsontypes import JSONObject
from ..scoring.extract import SYSTEM as EXTRACT_SYSTEM
from ..store import Store


@dataclass
class RunData:
    """One run directory as the report sees it."""

    path: Path
    name: str
    config: dict[str, Any]
    results: dict[str, Any]
    frame: pd.DataFrame | None = None
    source: str = ""  # "store" (recomputed) or "results.json"
    notes: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)  # store-level counts (unscored, ...)
    last_execution: dict[str, Any] | None = None
    sent: list[SentParams] = field(default_factory=list)  # the parameters each kind of call was sent with (sent_params)
    timings: dict[str, float] = field(default_factory=dict)
    #: the names of the models of every run shown with this one (`name_models`; None: its labels)
    names: ModelNames | None = None

    @cached_property
    def blocks(self) -> dict[str, dict[str, ResultsBlock]]:
        """model -> setting -> its results block as the run's family declares it (`typed_blocks`:
        each validated once into the family's block model); the typed view every report reader
        outside the misleading report's own tables reads."""
        try:
            return typed_blocks(self.family, self.results.get("models") or {})
        except ValueError as e:  # a block out of its family's shape: the file it came from, and the field
            raise InputError(self.path / "results.json" if self.source == "results.json" else self.path, None, None, str(e)) from None

    @cached_property
    def readings(self) -> dict[str, dict[str, ReadingSummary]]:
        """model -> setting -> how its replies were read (the results' `reading`), typed."""
        return READINGS.validate_python(self.results.get("reading") or {})

    def model_name(self, label: str) -> str:
        """A model label of this run as the views over it and its companions name it."""
        return label if self.names is None else self.names.name(self.name, label)

    @property
    def family(self) -> str:
        """The run's test family (run.json, else results.json, else the suite's manifest)."""
        return str(self.config.get("family") or self.results.get("family") or (self.config.get("suite") or {}).get("family") or "")

    @property
    def families(self) -> list[str]:
        """Test families with data in this run."""
        return [self.family] if self.blocks and self.family else []


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg})") from None


class SentParams(TypedDict):
    """The parameters one kind of call of one model was sent with, and how many calls (`sent_params`)."""

    kind: str  # answer, a linked call's role, judge or extraction
    model: str
    params: JSONObject
    calls: int


def sent_params(store: Store) -> list[SentParams]:
    """The store's sent parameters (Store.sent_params) with each scorer call named for what it is:
    `extraction` when it carries the extraction model's system prompt, else `judge`."""
    out: list[SentParams] = []
    for r in store.sent_params():
        kind = r["kind"]
        if kind == "scorer":
            kind = "extraction" if r["system"] == EXTRACT_SYSTEM else "judge"
        out.append({"kind": kind, "model": r["model"], "params": r["params"], "calls": r["calls"]})
    return out


def load_run(run_dir: Path | str, recompute: bool = True, keep_frame: bool = True, frame: pd.DataFrame | None = None) -> RunData:
    """Read one run directory. Raises InputError when it is not a run directory. `frame`: the
    results frame of the store's latest run when the caller has just computed it (`medres eval`
    after `evaluate`), so the suite is not read and the frame not built a second time."""
    d = Path(run_dir)
    if not d.is_dir():
        raise InputError(d, None, None, "not a directory")
    cfg_path, res_path, db_path = d / "run.json", d / "results.json", d / "store.sqlite"
    if not cfg_path.exists() and not res_path.exists():
        raise InputError(d, None, None, "not a run directory (neither run.json nor results.json)")
    config = _read_json(cfg_path) if cfg_path.exists() else {}
    saved = _read_json(res_path) if res_path.exists() else None
    run = RunData(path=d, name=d.resolve().name, config=config, results=saved or {})
    if saved is not None:
        run.last_execution = saved.get("last_execution")
    missing: str | None = None
    if recompute and db_path.exists():
        t0 = time.perf_counter()
        suite, missing = (None, None) if frame is not None else find_run_suite(d, config)
        run.timings["suite"] = time.perf_counter() - t0
        if suite is not None or frame is not None:
            suite_family = run.family if suite is None else suite.manifest.family
            with Store.read_only(db_path) as store:
                t0 = time.perf_counter()
                df = frame if suite is None else results_frame(store, suite)
                assert df is not None  # a suite was found, or the caller's frame was given
                del suite  # the frame holds what the report needs
                run.timings["frame"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                family = get(suite_family)
                res = metrics_with_loop(family, df, store)  # the metrics computed once when the results came from this frame
                res["family"] = family.name
                run.timings["metrics"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                run.counts, res["usage"] = store.facts(batch_rates(config.get("models", [])))
                run.sent = sent_params(store)
                res["reading"] = reading_summary(store)
                res["warnings"] = truncation_warnings(res["reading"], family_sets_budget(family, (config.get("options") or {}).get("family")))
                run.timings["store_facts"] = time.perf_counter() - t0
            res["run"] = {
                "suite": (config.get("suite") or {}).get("name"),
                "family": family.name,
                "models": [m.get("label") for m in config.get("models", [])],
                "options": config.get("options", {}),
                "prompt_hash": (config.get("prompts") or {}).get("hash"),
            }
            res["audit"] = (saved or {}).get("audit")  # the label audit's findings (medres audit): kept in results.json
            run.results, run.source = res, "store"
            run.frame = df if keep_frame else None
    if run.source == "store":
        pass
    elif saved is not None:
        run.source = "results.json"
        if recompute and db_path.exists():
            run.notes.append(f"numbers from results.json, not recomputed from the store: {missing}")
        elif recompute:
            run.notes.append("numbers from results.json (no store.sqlite in the run directory)")
    else:
        raise InputError(d, None, None, f"cannot report: no results.json and the store cannot be read ({missing or 'no store.sqlite'})")
    return run


def run_models(run: RunData) -> RunModels:
    """What the naming rule reads of a run: its name, family, and the labels of its results and
    of its run.json with the model each records."""
    labels = dict.fromkeys([*run.blocks, *(str(m["label"]) for m in (run.config or {}).get("models") or [] if m.get("label") is not None)])
    return RunModels(run.name, run.family, recorded_models(run.config, labels))


def name_models(runs: Sequence[RunData]) -> ModelNames:
    """Name the models of runs shown together (`model_names`: the one rule for a model in several
    runs) and give each run the names; the runs' names must already be distinct."""
    names = model_names(run_models(r) for r in runs)
    for r in runs:
        r.names = names
    return names


def names_of(runs: Sequence[RunData]) -> ModelNames:
    """The model names the runs were given together (`name_models`), else those of these runs alone."""
    given = {id(r.names) for r in runs if r.names is not None}
    if len(given) == 1 and all(r.names is not None for r in runs):
        return runs[0].names  # type: ignore[return-value]
    return model_names(run_models(r) for r in runs)


B = TypeVar("B", bound=ResultsBlock)


class ModelBlock(NamedTuple):
    """One model and setting's results block of a run, the model by its name among the runs shown together."""

    run: str
    model: str
    setting: str
    block: ResultsBlock


def model_blocks(runs: Sequence[RunData]) -> list[ModelBlock]:
    """(run, model, setting, results block) of every run's results, each model by its name among
    the runs shown together (`name_models`), each block as its family's model (`RunData.blocks`)."""
    names = names_of(runs)
    return [ModelBlock(r.name, names.name(r.name, m), s, block) for r in runs for m, settings in r.blocks.items() for s, block in settings.items()]


def family_blocks(runs: Sequence[RunData], shape: type[B]) -> list[tuple[str, str, str, B]]:
    """`model_blocks` of runs of one family whose block model is `shape` (a family's report reads
    its own blocks as its own type); a block of another shape is a TypeError naming its run."""
    out: list[tuple[str, str, str, B]] = []
    for run, model, setting, block in model_blocks(runs):
        if not isinstance(block, shape):
            raise TypeError(f"run {run}: the block of {model} under {setting} is a {type(block).__name__}, not a {shape.__name__}")
        out.append((run, model, setting, block))
    return out


def secrets_of(runs: list[RunData]) -> list[str]:
    """Values of the API-key variables the runs name (scrubbed from every output as a last guard)."""
    vals = set()
    for r in runs:
        for m in (r.config or {}).get("models", []):
            var = m.get("api_key_env")
            v = os.environ.get(var) if var else None
            if v and len(v) >= 4:
                vals.add(v)
    return sorted(vals, key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    for s in secrets:
        text = text.replace(s, "[redacted]")
    return text
