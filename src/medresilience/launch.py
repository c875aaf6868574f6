"""The `medres` console script: the command's modules imported under `heap.frozen_imports`, then
the command (cli.main).

May import: cli, runtime."""

from __future__ import annotations

#: what a Ctrl-C outside a command's own handling prints (while the command's modules load, or as it ends)
INTERRUPTED = "error: interrupted: what was finished is kept; rerun the same command to resume"


def main() -> None:
    """The command; a Ctrl-C anywhere is one line on stderr and exit status 130, never a traceback."""
    import sys

    try:
        from .runtime.heap import frozen_imports

        with frozen_imports():
            from .cli import main as command
        command()
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
