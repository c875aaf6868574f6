"""The `medres` console script: the command's modules imported under `heap.frozen_imports`, then
the command (cli.main).

May import: heap, cli."""

from __future__ import annotations


def main() -> None:
    from .heap import frozen_imports

    with frozen_imports():
        from .cli import main as command
    command()
