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

    width = console.width

    def say(text: str, indent: str = "") -> None:  # wrapped at spaces to the terminal: no word, number or hash is cut
        for line in _wrap(text, width, indent):
            console.print(line, highlight=False, markup=False, soft_wrap=True)

    say(
        f"Datasets, checked {CHECKED} against their own pages (see each note); hf: names download through "
        "huggingface_hub (HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE, its cache)"
    )
    for d in CATALOG:
        console.print()
        say(f"{d.name} ({d.kind}): {d.what}", "  ")
        for label, value in (("where", d.where), ("licence", d.licence), ("size", d.size), ("format", d.fmt), ("get", d.command), ("checked", d.checked)):
            line = f"  {label + ':':9}{value}"
            if label == "get" and len(line) > width:  # a command on lines of its own, continued as a shell reads it
                console.print("  get:", highlight=False, markup=False)
                parts = _wrap("    " + value, width - 2, "      ")  # room for the " \\" that continues it
                for i, part in enumerate(parts):
                    console.print(part + (" \\" if i < len(parts) - 1 else ""), highlight=False, markup=False, soft_wrap=True)
                continue
            say(line, " " * 11)
        for fname, digest in d.files.items():
            if digest:
                say(f"  sha256:  {digest}  {fname}", " " * 11)


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """`text` in lines of at most `width` columns, broken only at spaces (a longer word stays whole),
    the lines after the first starting with `indent`."""
    import textwrap

    return textwrap.wrap(text, max(width, 20), subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [""]


def register(app: typer.Typer) -> None:
    app.command("datasets")(user_errors(datasets))
