"""The command line and the run path start without the results' and the report's libraries
(pandas, scipy, statsmodels, matplotlib): checked in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import subprocess
import sys


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_run_path_does_not_import_the_results_libraries():
    """Importing the CLI, the evaluation and the runner loads no pandas, scipy, statsmodels or matplotlib."""
    code = (
        "import sys, medresilience.cli, medresilience.evaluation, medresilience.runner\n"
        "print([m for m in ('pandas', 'scipy', 'statsmodels', 'matplotlib') if m in sys.modules])"
    )
    assert _fresh(code) == "[]"


def test_the_calls_run_with_the_heap_frozen(tmp_path, toy_family):
    """While the calls run, the objects alive before them are frozen out of the collector's passes
    (a full pass otherwise walks every imported module's objects); afterwards a library caller's
    heap is as it was (nothing left frozen)."""
    import gc

    from medresilience import EvalOptions, Suite, evaluate, parse_model_spec
    from medresilience.testing.stub import StubServer
    from toy_family import answerer, make_toy_suite

    make_toy_suite().save(tmp_path / "suite")
    toy = Suite.load(tmp_path / "suite")
    frozen: list[int] = []
    assert gc.get_freeze_count() == 0
    with StubServer(policy=answerer) as srv:
        spec = parse_model_spec(f"openai:toy-model,base_url={srv.base_url}")
        evaluate(toy, [spec], tmp_path / "run", EvalOptions(), progress=lambda *a, **k: frozen.append(gc.get_freeze_count()))
    assert frozen and min(frozen) > 10_000
    assert gc.get_freeze_count() == 0
