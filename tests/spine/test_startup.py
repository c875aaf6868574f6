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
