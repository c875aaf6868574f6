"""`medres export` (thin: parse, call the library, print): a suite in another layout of its family
(`--suite DIR`), or a run's units for other tools (`RUN --format inspect|jsonl|parquet`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def _format_help() -> str:
    """The --format help: every family's suite formats as the registry declares them (its first is
    the default), and the run formats."""
    from ..family import families

    suites = "; ".join(f"{f.name}: {', '.join(f.suites.export_formats)}" for f in families() if f.suites.export is not None and f.suites.export_formats)
    return f"a suite: a format of its family ({suites}; default: the family's first); a run: inspect (an inspect_ai eval log, FILE.eval or FILE.json), jsonl or parquet (one flat row per unit)"


def register(app: typer.Typer) -> None:
    """Add the export command to the main app."""
    from .kit import console, user_errors

    @app.command()
    @user_errors
    def export(
        run_dir: Annotated[Optional[Path], typer.Argument(help="a run directory: write its units (--format inspect, jsonl or parquet)")] = None,
        suite: Annotated[Optional[Path], typer.Option("--suite", help="a suite directory: write it in a layout of its family")] = None,
        out: Annotated[Path, typer.Option("--out", help="output file")] = ...,  # type: ignore[assignment]  # typer's mark of a required option
        fmt: Annotated[
            Optional[str],
            typer.Option(
                "--format",
                help=_format_help(),
            ),
        ] = None,
    ) -> None:
        """Write a suite in another layout, or every unit of a run for other tools (an inspect_ai eval log, flat rows)."""
        from ..runtime.errors import ConfigError

        if (suite is None) == (run_dir is None):
            raise ConfigError("RUN", "give a run directory (medres export RUN --format inspect --out FILE) or --suite DIR, not both")
        if run_dir is not None:
            from ..export import FORMATS, export_run

            if fmt is None:
                raise ConfigError("--format", f"name the format of the run's units: one of {', '.join(FORMATS)}")
            n = export_run(run_dir, fmt, out)
            console.print(f"{n} units written to {out}", highlight=False, soft_wrap=True)
            return
        from ..family import get
        from ..suite import Suite

        assert suite is not None  # one of the two is given, checked above
        s = Suite.load(suite)
        fam = get(s.manifest.family)
        if fam.suites.export is None:
            raise ConfigError("--format", f"family {fam.name} has no export formats")
        n = fam.suites.export(s, out, fmt or (fam.suites.export_formats[0] if fam.suites.export_formats else "release"))
        console.print(f"{out}: {n} rows")
