"""Build hooks of the documentation site (mkdocs.yml `hooks:`): pages made at build time, so the
site never holds a copy that can drift.

- reference/cli.md: the command reference, read from the command line itself
  (medresilience.cli.reference);
- results.md and benchmarks.md: RESULTS.md and BENCHMARKS.md of the repository, as they are."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
COPIED = {"results.md": "RESULTS.md", "benchmarks.md": "BENCHMARKS.md"}


def cli_reference() -> str:
    from medresilience.cli import app
    from medresilience.cli.reference import markdown

    return markdown(app)


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    for page, source in COPIED.items():
        files.append(File.generated(config, page, content=(ROOT / source).read_text(encoding="utf-8")))
    return files
