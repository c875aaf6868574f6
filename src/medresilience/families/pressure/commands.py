"""`medres build pressure ...` (thin: parse, call the library, print).

medres build pressure --from SUITE_OR_ITEMS --out SUITE_DIR [--conditions repeat,doubt,...] [--seed S] [--name NAME]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ...cli.kit import console
from ...cli.kit import user_errors as _user_errors

build_app = typer.Typer(no_args_is_help=True, help="Build pressure-after-commitment suites.")


def commands() -> typer.Typer:
    """The family's construction commands (its `commands` hook)."""
    return build_app


@build_app.command("pressure")
@_user_errors
def pressure(
    source: Annotated[Path, typer.Option("--from", help="a misleading suite directory (claims from its bundles) or an items file (template conditions only)")],
    out: Annotated[Path, typer.Option("--out", help="suite directory to write")],
    conditions: Annotated[
        Optional[str], typer.Option("--conditions", help="comma-separated: repeat, doubt, claim-neutral, claim-patient, claim-authority, insist (default: all)")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="suite seed (the insisted option of an item without a claim)")] = 0,
    name: Annotated[Optional[str], typer.Option("--name", help="suite name (default: the directory name)")] = None,
) -> None:
    """Build a pressure suite: each item asked clean, then pushed back on in a second turn."""
    from .construct.build import build_pressure

    wanted = None if conditions is None else [c.strip() for c in conditions.split(",") if c.strip()]
    suite = build_pressure(source, out, wanted, seed, name)
    counts = {k: v for k, v in suite.manifest.counts.items() if k not in ("items", "probes")}
    console.print(f"wrote {out}: {len(suite.items)} items, {len(suite.probes)} probes ({', '.join(f'{k} {v}' for k, v in counts.items())})")
