"""medresilience: does a model keep a correct medical judgment when the words around the question
mislead? Library first; the `medres` command is a thin layer on top.

    from medresilience import EvalOptions, Suite, evaluate, parse_model_spec

    res = evaluate(Suite.load("SUITE"), [parse_model_spec("embedded")], "runs/x", EvalOptions())
    res.results.headline("embedded-qwen")["clean_acc"].p

The public names are imported lazily (the package root stays light to import)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    "evaluate": "run.evaluation",
    "RunResult": "run.evaluation",
    "EvalOptions": "run.resolved",
    "ResolvedRun": "run.resolved",
    "resolve_run": "run.resolved",
    "Suite": "suite",
    "Item": "records",
    "Probe": "records",
    "ModelSpec": "models.spec",
    "parse_model_spec": "models.spec",
    "Results": "run.results",
    "build_report": "report",
    "compare_runs": "report",
    "Family": "family",
    "register_family": ("family", "register"),
    "get_family": ("family", "get"),
}

__all__ = [
    "EvalOptions",
    "Family",
    "Item",
    "ModelSpec",
    "Probe",
    "ResolvedRun",
    "Results",
    "RunResult",
    "Suite",
    "__version__",
    "build_report",
    "compare_runs",
    "evaluate",
    "get_family",
    "parse_model_spec",
    "register_family",
    "resolve_run",
]

if TYPE_CHECKING:  # pragma: no cover
    from .family import Family
    from .family import get as get_family
    from .family import register as register_family
    from .models.spec import ModelSpec, parse_model_spec
    from .records import Item, Probe
    from .report import build_report, compare_runs
    from .run.evaluation import RunResult, evaluate
    from .run.resolved import EvalOptions, ResolvedRun, resolve_run
    from .run.results import Results
    from .suite import Suite


def __getattr__(name: str) -> Any:
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = (where, name) if isinstance(where, str) else where
    return getattr(import_module(f".{module}", __name__), attr)
