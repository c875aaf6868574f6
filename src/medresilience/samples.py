"""The project's own bundled sample suite: 48 basic medical MCQs written by the project, each with
a complete option-aligned bundle (all 5 content types and 3 provenances). The suite directory is
built from the release-layout source file by the same importer users run; a test checks that the
shipped suite equals a fresh rebuild."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .records import Suite

SAMPLE_NAME = "basic_medicine"
SAMPLE_SEED = 20261122


def _data() -> Path:
    return Path(str(resources.files("medresilience") / "data"))


def sample_release_path() -> Path:
    return _data() / "basic_medicine_release.jsonl"


def sample_suite_dir() -> Path:
    return _data() / "suites" / SAMPLE_NAME


def build_sample_suite() -> Suite:
    """The sample suite as the importer builds it from the release file."""
    from .families.misleading.release import read_release

    suite = read_release(sample_release_path(), seed=SAMPLE_SEED, name=SAMPLE_NAME)
    source = dict(getattr(suite.manifest, "source", None) or {})
    source["path"] = sample_release_path().name  # relative: the shipped suite is machine-independent
    suite.manifest = suite.manifest.model_copy(
        update={
            "source": source,
            "created": "2026-11-22T00:00:00+00:00",
            "description": "Bundled sample: 48 basic medical MCQs written by the medresilience project, "
            "each with an option-aligned misleading-context bundle.",
        }
    )
    return suite


def sample_suite() -> Suite:
    return Suite.load(sample_suite_dir())


if __name__ == "__main__":  # python -m medresilience.samples: rebuild the shipped suite
    out = build_sample_suite().save(sample_suite_dir())
    print(out)
