"""What every `medres` command shares: the consoles, the one-line error exit, the progress bar."""

from __future__ import annotations

import functools

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import MedresError

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def user_errors(fn):
    """Turn the library's user-facing errors into one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MedresError as e:
            fail(str(e))
        except ValueError as e:  # pydantic and option errors that reached the top
            fail(str(e).splitlines()[0])

    return wrapper


def progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    )


def progress_callback(prog: Progress, description: str):
    """A (done, total) callback driving one task of a Progress."""
    task = prog.add_task(description, total=None)

    def update(done: int, total: int) -> None:
        prog.update(task, completed=done, total=total)

    return update
