"""The project's own bundled sample suite, the one `medres run` evaluates: 48 basic medical MCQs
written by the project, each with a complete misleading-context bundle. The shipped suite
directory is loaded like any other; the family that built it rebuilds it from its source file
(`python -m medresilience.families.misleading.rebuild_bundled`), and a test checks the two agree."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..suite import Suite

SAMPLE_NAME = "basic_medicine"
SAMPLE_SEED = 20261122


def _data() -> Path:
    return Path(str(resources.files("medresilience") / "data"))


def sample_release_path() -> Path:
    return _data() / "basic_medicine_release.jsonl"


def sample_suite_dir() -> Path:
    return _data() / "suites" / SAMPLE_NAME


def sample_suite() -> Suite:
    return Suite.load(sample_suite_dir())
