"""Rebuilding the bundled sample suite (see `medresilience.run.bundled_suite`) from its release-layout
source file, with the same importer users run:
`python -m medresilience.families.misleading.rebuild_bundled` rewrites the shipped suite directory."""

from __future__ import annotations

from ...run.bundled_suite import SAMPLE_NAME, SAMPLE_SEED, sample_release_path, sample_suite_dir
from ...suite import Suite


def build_sample_suite() -> Suite:
    """The sample suite as the importer builds it from the release file."""
    from .formats.release import read_release

    suite = read_release(sample_release_path(), seed=SAMPLE_SEED, name=SAMPLE_NAME)
    source = dict(getattr(suite.manifest, "source", None) or {})
    source["path"] = sample_release_path().name  # relative: the shipped suite is machine-independent
    suite.manifest = suite.manifest.model_copy(
        update={
            "source": source,
            "created": "2026-11-22T00:00:00+00:00",
            "description": "Bundled sample: 48 basic medical MCQs written by the medresilience project, each with an option-aligned misleading-context bundle.",
        }
    )
    return suite


if __name__ == "__main__":  # rewrite the shipped suite
    print(build_sample_suite().save(sample_suite_dir()))
