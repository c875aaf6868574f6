"""`medres build ...` commands (thin: parse, call the library, print)."""

from __future__ import annotations

import typer

build_app = typer.Typer(no_args_is_help=True, help="Build stress-test suites with a generator model.")
