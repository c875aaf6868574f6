"""`medres export` (thin: parse, call the library, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the export command to the main app."""
    from .kit import console, user_errors

    @app.command()
    @user_errors
    def export(
        run_dir: Annotated[Path, typer.Argument(help="a run directory")],
        fmt: Annotated[
            str, typer.Option("--format", help="inspect (an inspect_ai eval log, FILE.eval or FILE.json), jsonl or parquet (one flat row per unit)")
        ],
        out: Annotated[Path, typer.Option("--out", help="the file to write")],
    ) -> None:
        """Write every unit of a run for other tools: an inspect_ai eval log, or one flat row per unit."""
        from ..export import export_run

        n = export_run(run_dir, fmt, out)
        console.print(f"{n} units written to {out}", highlight=False, soft_wrap=True)
