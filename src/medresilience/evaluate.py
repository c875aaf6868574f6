"""One evaluation, end to end, as a library call: suite + models + options -> run directory.

A run directory holds `store.sqlite` (every request, call, score), `run.json` (models without
secrets, options, prompt texts and hash, suite manifest), `results.json` and `results.md`.
Calling it again on the same directory resumes: finished calls are reused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .errors import ConfigError
from .frame import results_frame
from .metrics import misleading_metrics
from .models import embedded
from .models.spec import ModelSpec
from .records import Suite, atomic_write
from .report.summary import results_markdown
from .runner import EvalOptions, ProgressFn, RunStats, execute, plan
from .store import Store


@dataclass
class RunResult:
    out_dir: Path
    results: dict[str, Any]
    stats: RunStats


@contextlib.contextmanager
def serving(specs: Sequence[ModelSpec]) -> Iterator[list[ModelSpec]]:
    """Start the embedded server for embedded specs (one per embedded model); yield specs whose
    base_urls point at live endpoints; stop the servers on exit."""
    with contextlib.ExitStack() as stack:
        live: list[ModelSpec] = []
        started: dict[str, str] = {}
        for s in specs:
            if s.kind == "embedded":
                if s.model not in started:
                    started[s.model] = stack.enter_context(embedded.serve(s.model, n_parallel=s.concurrency))
                s = s.model_copy(update={"base_urls": [started[s.model]]})
            live.append(s)
        yield live


def run_config(suite: Suite, specs: Sequence[ModelSpec], opts: EvalOptions) -> dict[str, Any]:
    return {
        "medresilience": __version__,
        "python": platform.python_version(),
        "suite": {"path": str(suite.path) if suite.path else None, **suite.manifest.model_dump(mode="json")},
        "models": [s.public() | {"base_urls": [] if s.kind == "embedded" else s.base_urls} for s in specs],
        "options": {
            "type1": opts.type1,
            "scoring": opts.scoring,
            "defense": list(opts.defense),
            "limit": opts.limit,
            "conditions": list(opts.conditions),
        },
        "prompts": {"hash": opts.prompts.hash, "texts": opts.prompts.as_dict()},
    }


def evaluate(
    suite: Suite,
    specs: Sequence[ModelSpec],
    out_dir: Path | str,
    opts: EvalOptions = EvalOptions(),
    progress: ProgressFn | None = None,
) -> RunResult:
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise ConfigError("--model", f"two models share the label {sorted(labels)}; give each a distinct label=")
    for s in specs:
        s.api_key()  # a missing key variable fails before anything is written or called
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = run_config(suite, specs, opts)
    with atomic_write(out / "run.json") as fh:
        json.dump(config, fh, indent=2)
    with Store(out / "store.sqlite") as store:
        store.record_run(time.strftime("%Y%m%dT%H%M%S"), config)
        with serving(specs) as live:
            planned = plan(suite, live, opts)
            stats = asyncio.run(execute(planned, live, store, progress))
        results = summarise(store, suite, config, stats)
    write_results(out, results)
    return RunResult(out, results, stats)


def summarise(store: Store, suite: Suite, config: dict[str, Any], stats: RunStats | None = None) -> dict[str, Any]:
    df = results_frame(store, suite)
    res = misleading_metrics(df)
    res["usage"] = store.usage()
    res["run"] = {
        "suite": config["suite"].get("name"),
        "models": [m["label"] for m in config["models"]],
        "options": config["options"],
        "prompt_hash": config["prompts"]["hash"],
    }
    if stats is not None:
        res["last_execution"] = asdict(stats)
    return res


def write_results(out: Path, results: dict[str, Any]) -> None:
    with atomic_write(out / "results.json") as fh:
        json.dump(results, fh, indent=2, default=float)
    with atomic_write(out / "results.md") as fh:
        fh.write(results_markdown(results))
