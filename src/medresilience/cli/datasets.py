"""`medres datasets`: the catalog of benchmarks and sources (sources.catalog), printed."""

from __future__ import annotations

from typing import Annotated

import typer

from .kit import console, user_errors


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def datasets(
    markdown: Annotated[bool, typer.Option("--markdown", help="one Markdown table instead of one block per dataset")] = False,
) -> None:
    """Every benchmark and source the toolkit reads: where it is, its licence, size, format and the command that gets it."""
    from ..sources.catalog import CATALOG, CHECKED

    if markdown:
        console.print(
            f"Checked {CHECKED}.\n\n| dataset | where | licence | size | format | command | checked |\n|---|---|---|---|---|---|---|",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        for d in CATALOG:
            cells = (d.name, d.where, d.licence, d.size, d.fmt, f"`{d.command}`", d.checked)
            console.print("| " + " | ".join(_cell(c) for c in cells) + " |", highlight=False, markup=False, soft_wrap=True)
        return

    console.print(
        f"Datasets, checked {CHECKED} against their own pages (see each note); hf: names download through "
        "huggingface_hub (HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE, its cache)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for d in CATALOG:
        console.print(f"\n{d.name} ({d.kind}): {d.what}", highlight=False, markup=False, soft_wrap=True)
        for label, value in (("where", d.where), ("licence", d.licence), ("size", d.size), ("format", d.fmt), ("get", d.command), ("checked", d.checked)):
            console.print(f"  {label + ':':9}{value}", highlight=False, markup=False, soft_wrap=True)
        for fname, digest in d.files.items():
            if digest:
                console.print(f"  sha256:  {digest}  {fname}", highlight=False, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("datasets")(user_errors(datasets))
