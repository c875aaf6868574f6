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
        "import sys, medresilience.cli, medresilience.run.evaluation, medresilience.run.runner\n"
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


def test_imports_under_frozen_imports_are_frozen_and_the_collector_is_left_as_found():
    """frozen_imports: no collector pass while the modules load (the count of new objects grows
    unchecked), their objects frozen afterwards, and the collector enabled again only when it was."""
    code = (
        "import gc\n"
        "from medresilience.runtime.heap import frozen_imports\n"
        "before = gc.get_freeze_count()\n"
        "with frozen_imports():\n"
        "    paused = not gc.isenabled()\n"
        "    import email.mime.multipart, decimal, xml.dom.minidom\n"
        "    grown = gc.get_count()[0]\n"
        "print(before, paused, grown > 2_000, gc.get_freeze_count() > 2_000, gc.isenabled())\n"
        "gc.disable()\n"
        "with frozen_imports():\n"
        "    import fractions\n"
        "print(gc.isenabled())\n"
    )
    assert _fresh(code).splitlines() == ["0 True True True True", "False"]


def test_the_console_script_is_the_launcher_and_runs_the_command():
    """`medres` is launch.main (the command's modules imported under frozen_imports), and it runs the
    command: help is printed and the collector is on while the command runs."""
    import tomllib
    from pathlib import Path

    scripts = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["medres"] == "medresilience.launch:main"
    code = (
        "import gc, sys\n"
        "sys.argv = ['medres', 'models']\n"
        "import typer\n"
        "call = typer.Typer.__call__\n"
        "def seen(self, *a, **k):\n"
        "    print('GC', gc.isenabled(), gc.get_freeze_count() > 50_000)\n"
        "    return call(self, *a, **k)\n"
        "typer.Typer.__call__ = seen\n"
        "from medresilience.launch import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    print('EXIT', e.code)\n"
    )
    out = _fresh(code)
    assert "GC True True" in out and "EXIT 0" in out and "openai" in out
