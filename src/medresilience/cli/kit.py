"""What every `medres` command shares: the consoles, the one-line error exit, the progress bar,
the KEY=VALUE pairs of a repeatable flag.

A command wrapped in `user_errors` ends with one line on stderr, never a traceback, for the
library's errors (exit 2), an operating-system error such as an unwritable path (exit 2), and an
interruption: Ctrl-C or SIGTERM, handled alike, stops the command cleanly, keeping what it
finished (exit 130)."""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..runtime.errors import MedresError

console = Console()
err_console = Console(stderr=True)


def command_group(app: typer.Typer, name: str, help: str) -> typer.Typer:
    """A `medres NAME ...` group of commands, added to `app`."""
    group = typer.Typer(no_args_is_help=True, help=help)
    app.add_typer(group, name=name)
    return group


def help_wraps_at_spaces() -> None:
    """Command help breaks lines only at spaces: the help formatter (click's, as typer ships it)
    otherwise breaks a word at a hyphen and cuts one longer than the space left. Kept to help
    text: a word longer than a line stays whole on its own line. Nothing else changes if the
    formatter is not where this expects it."""
    import importlib
    import textwrap

    # the formatter's wrapper class has no public hook: typer's bundled click (or click itself)
    wrapping = None
    for name in ("typer._click._textwrap", "click._textwrap"):
        try:
            wrapping = importlib.import_module(name)
            break
        except ImportError:
            continue
    cls = getattr(wrapping, "TextWrapper", None)
    if cls is None or not issubclass(cls, textwrap.TextWrapper):  # pragma: no cover
        return
    if getattr(cls, "_medres_spaces", False):
        return
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.break_on_hyphens = False
        self.break_long_words = False

    cls.__init__ = __init__
    cls._handle_long_word = textwrap.TextWrapper._handle_long_word  # a longer word whole, on a line of its own
    cls._medres_spaces = True


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)  # the message as written, [brackets] included
    raise typer.Exit(code)


def parse_pairs(values: list[str] | None, flag: str = "-O") -> dict[str, str]:
    """KEY=VALUE pairs of a repeatable flag; a key given twice is an error, not the last one winning."""
    from ..runtime.errors import ConfigError

    out: dict[str, str] = {}
    for v in values or []:
        key, eq, value = v.partition("=")
        if not eq or not key.strip():
            raise ConfigError(flag, f"'{v}' is not KEY=VALUE")
        if key.strip() in out:
            raise ConfigError(f"{flag} {key.strip()}", "given twice (give each option once)")
        out[key.strip()] = value.strip()
    return out


def build_outcome(report: dict, kept: int, considered: int, what: str, out: Path) -> None:
    """A build's exit after its summary: 1 when calls failed (incomplete: a rerun retries them) or
    when it kept nothing (one line saying so and where the reasons are)."""
    if report.get("incomplete"):
        raise typer.Exit(1)
    if kept == 0:
        fail(
            f"nothing was built: 0 of {considered} {what} kept (why: {out / 'build_report.md'}); fix the cause and rerun the "
            "same command: every stored call is reused",
            1,
        )


def _terminate_as_interrupt(signum, frame) -> None:
    """SIGTERM does what Ctrl-C does (inside asyncio.run: cancel the main task, which keeps what
    it received; elsewhere: KeyboardInterrupt)."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_interrupts():
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def user_errors(fn):
    """Turn the library's user-facing errors, OS errors and interruptions (Ctrl-C, SIGTERM) into
    one line on stderr: exit code 2, or 130 for an interruption."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with _sigterm_interrupts():
                return fn(*args, **kwargs)
        except MedresError as e:
            fail(str(e))
        except ValueError as e:  # pydantic and option errors that reached the top
            fail(str(e).splitlines()[0])
        except KeyboardInterrupt:
            fail("interrupted: what was finished is kept (every answer received is in the store); rerun the same command to resume", 130)
        except OSError as e:  # an unwritable or vanished path, a full disk, ...
            fail(f"{e.strerror or e}" + (f": {e.filename}" if e.filename else ""))

    return wrapper


class _LazyProgress(Progress):
    """A Progress shown from its first update, so that a command failing before it prints its one
    error line alone."""

    def __enter__(self) -> _LazyProgress:
        return self


class RemainingColumn(ProgressColumn):
    """Time left, from the rate of the completions seen since the first one: hidden ("-:--:--")
    until `after` more have completed, so neither calls reused from the store (counted done at once)
    nor a first burst make an estimate; then (left) x (seconds since the first) / (done since it)."""

    def __init__(self, after: int = 5):
        super().__init__()
        self.after = after
        self._first: dict[Any, tuple[float, float]] = {}  # task id -> (time, completed) at the first completion seen

    def estimate(self, task_id: object, now: float, completed: float, total: float | None) -> float | None:
        """Seconds left, or None while there is no estimate."""
        if total is None or completed <= 0:
            return None
        t0, c0 = self._first.setdefault(task_id, (now, completed))
        done = completed - c0
        if done < self.after or now <= t0:
            return None
        return max(0.0, total - completed) * (now - t0) / done

    def render(self, task) -> Text:
        left = self.estimate(task.id, task.get_time(), task.completed, task.total)
        if left is None:
            return Text("-:--:--", style="progress.remaining")
        m, sec = divmod(int(left + 0.5), 60)
        h, m = divmod(m, 60)
        return Text(f"{h}:{m:02d}:{sec:02d}", style="progress.remaining")


def progress(lazy: bool = False) -> Progress:
    cls = _LazyProgress if lazy else Progress
    return cls(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        RemainingColumn(),
        console=err_console,
        transient=False,
    )


class StageProgress:
    """One bar per stage label, fed by a builder's (label, done, total) callback."""

    def __init__(self) -> None:
        self.bar = progress()
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> StageProgress:
        self.bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.bar.__exit__(kind, exc, tb)

    def __call__(self, label: str, done: int, total: int) -> None:
        if label not in self.tasks:
            self.tasks[label] = self.bar.add_task(label, total=total)
        self.bar.update(self.tasks[label], completed=done, total=total)


def progress_callback(prog: Progress, description: str, lead: Sequence[str] = ()):
    """A (done, total) callback driving one task of a Progress; `waits=` (the retry waits so far,
    as `calls.run_calls` passes them) is shown next to the description; `lead`: lines printed on
    stderr just before the bar first shows."""
    task = prog.add_task(description, total=None)

    def update(done: int, total: int, waits: int = 0) -> None:
        if not prog.live.is_started:
            for line in lead:
                err_console.print(line, highlight=False, markup=False, soft_wrap=True)
            prog.start()
        desc = f"{description} ({waits} retry wait{'s' if waits != 1 else ''})" if waits else description
        prog.update(task, completed=done, total=total, description=desc)

    return update
