"""`medres build adaptive ...` (thin: parse, call the library, print).

medres build adaptive --from ITEMS_OR_SUITE --out SUITE_DIR [--seed S] [--name NAME] [--limit N]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ...cli.kit import console
from ...cli.kit import user_errors as _user_errors

build_app = typer.Typer(no_args_is_help=True, help="Build adaptive-attack suites.")


def commands() -> typer.Typer:
    """The family's construction commands (its `commands` hook)."""
    return build_app


@build_app.command("adaptive")
@_user_errors
def adaptive(
    source: Annotated[Path, typer.Option("--from", help="an items file (any source format) or a suite directory whose items to attack")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write")],
    seed: Annotated[int, typer.Option("--seed", help="suite seed (each item's target option, kind, content type and provenance)")] = 0,
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="at most this many items, in file order")] = None,
) -> None:
    """Build an adaptive suite: one attack per item (its target and kind drawn from the seed); no model is called."""
    from .construct import build_adaptive

    suite = build_adaptive(source, out, seed, name, limit)
    skipped = sum((suite.manifest.model_extra or {}).get("built_from", {}).get("skipped", {}).values())
    console.print(f"wrote {out}: {len(suite.items)} items, {len(suite.probes)} probes ({skipped} rows skipped)")
