"""The results' and the report's libraries load in a background thread while a run's calls are in
flight, not before them: checked in fresh interpreters, where nothing is imported yet."""

from __future__ import annotations

import json
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


def test_preload_imports_the_spine_and_the_familys_modules():
    code = (
        "import sys, json\n"
        "from medresilience import preload\n"
        "from medresilience.family import family_of\n"
        "p = preload.Preload(family_of(['misleading'])).start()\n"
        "p.finish()\n"
        "print(json.dumps({'modules': p.modules, 'loaded': [m for m in p.modules if m in sys.modules]}))"
    )
    out = json.loads(_fresh(code))
    assert out["loaded"] == out["modules"]
    assert "pandas" in out["modules"] and "matplotlib.pyplot" in out["modules"]
    assert "medresilience.families.misleading.metrics" in out["modules"]
    assert "medresilience.families.misleading.report.section" in out["modules"]


def test_a_module_that_fails_to_import_does_not_stop_the_rest():
    code = (
        "import sys\n"
        "from medresilience import preload\n"
        "from medresilience.family import family_of\n"
        "p = preload.Preload(family_of(['misleading']), modules=('no_such_module_here', 'json', 'medresilience.frame')).start()\n"
        "p.finish()\n"
        "print('medresilience.frame' in sys.modules and 'no_such_module_here' not in sys.modules)"
    )
    assert _fresh(code) == "True"
