"""`medres view RUN [RUN ...]`: the read-only evidence viewer (thin: parse, call medresilience.view, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..view.address import VIEWER_HOST, VIEWER_PORT
from .kit import console, err_console, user_errors


def view(
    runs: Annotated[list[Path], typer.Argument(help="run directories (each is addressed by its place in this list: run=0, 1, ...)")],
    host: Annotated[str, typer.Option("--host", help="address to bind (loopback unless told otherwise; any other needs --public)")] = VIEWER_HOST,
    port: Annotated[int, typer.Option("--port", help="port to serve on")] = VIEWER_PORT,
    export: Annotated[Optional[Path], typer.Option("--export", help="write the pages as static files into this new directory instead of serving")] = None,
    max_units: Annotated[int, typer.Option("--max-units", help="with --export: unit pages per list of a run (the size cap)")] = 1000,
    public: Annotated[
        bool, typer.Option("--public", help="allow a non-loopback --host: serves the runs, without authentication, to whoever can reach it")
    ] = False,
    allow_host: Annotated[
        Optional[list[str]], typer.Option("--allow-host", help="another Host name to answer (repeatable; the machine's own names are answered with --public)")
    ] = None,
) -> None:
    """Browse every unit of one or more runs: the messages sent (the stressed part marked), the reply, how it was read, the judge, the call."""
    from ..view.query import close_all, open_runs

    if export is not None:
        from ..view.export import export_site

        opened = open_runs(runs)
        try:
            res = export_site(opened, export, max_units=max_units)
        finally:
            close_all(opened)
        console.print(f"static viewer: {res.out / 'index.html'} ({res.files} files, {res.units} unit pages)", highlight=False, markup=False, soft_wrap=True)
        for c in res.capped:
            console.print(f"capped (--max-units {max_units}): {c}", highlight=False, markup=False, soft_wrap=True)
        return
    from ..view.app import serve

    serve(
        runs,
        host=host,
        port=port,
        on_ready=lambda url: console.print(f"viewer: {url}  (read-only; Ctrl+C stops it)", highlight=False, markup=False),
        public=public,
        allow_hosts=allow_host or (),
        say=lambda text: err_console.print(text, highlight=False, markup=False, soft_wrap=True),
    )


def register(app: typer.Typer) -> None:
    """Add the `view` command to the main app."""
    app.command("view")(user_errors(view))
