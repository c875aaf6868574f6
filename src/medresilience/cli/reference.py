"""The command reference as Markdown, read from the command line itself (every command, argument
and option with its help, as `medres COMMAND --help` shows them), so the documentation site and
the help never disagree. The site's build hook writes it as a page; hidden options stay hidden.

May import: cli (the app), typer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeGuard

if TYPE_CHECKING:  # pragma: no cover
    import typer


class Param(Protocol):
    """What the reference reads of a command's argument or option (click's `Parameter`)."""

    @property
    def name(self) -> str | None: ...
    @property
    def opts(self) -> list[str]: ...
    @property
    def nargs(self) -> int: ...
    @property
    def required(self) -> bool: ...
    @property
    def default(self) -> object: ...


class Command(Protocol):
    """What the reference reads of a command (click's `Command`, as typer builds it)."""

    @property
    def help(self) -> str | None: ...
    @property
    def params(self) -> Sequence[Param]: ...


class Group(Command, Protocol):
    """A command with subcommands (click's `Group`)."""

    @property
    def commands(self) -> Mapping[str, Command]: ...


def _cell(text: object) -> str:
    """A Markdown table cell: pipes escaped, lines joined."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _is_group(command: Command) -> TypeGuard[Group]:
    return hasattr(command, "commands")


def commands(root: Command, path: tuple[str, ...] = ("medres",)) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every command under `root` with its full name, depth first in the order registered (groups too)."""
    yield path, root
    if _is_group(root):
        for name, sub in root.commands.items():
            if not getattr(sub, "hidden", False):
                yield from commands(sub, (*path, name))


def _is_argument(param: Param) -> bool:
    return not getattr(param, "opts", None) or not param.opts[0].startswith("-")


def _usage(path: tuple[str, ...], command: Command) -> str:
    args = []
    for p in command.params:
        if _is_argument(p):
            name = (p.name or "").upper() + ("..." if p.nargs == -1 else "")
            args.append(name if p.required else f"[{name}]")
    tail = " COMMAND [ARGS]..." if _is_group(command) else ""
    return " ".join([*path, "[OPTIONS]", *args]) + tail


def _default(param: Param) -> str:
    if param.required:
        return "required"
    d = param.default
    if d is None or d == () or d == [] or callable(d) or (getattr(param, "is_flag", False) and d is False):
        return ""
    return f"`{d}`"


def _option_rows(command: Command) -> Iterator[str]:
    for p in command.params:
        if getattr(p, "hidden", False) or p.name == "help":
            continue
        names = ", ".join(f"`{o}`" for o in [*p.opts, *getattr(p, "secondary_opts", [])])
        if _is_argument(p):
            names = f"`{(p.name or '').upper()}`"
        repeat = " (repeatable)" if getattr(p, "multiple", False) and "repeat" not in (getattr(p, "help", None) or "") else ""
        yield f"| {names} | {_cell(getattr(p, 'help', None) or '')}{repeat} | {_default(p)} |"


def markdown(app: typer.Typer) -> str:
    """The whole reference page for a typer app (`medresilience.cli.app`)."""
    import typer

    root = typer.main.get_command(app)
    out = [
        "# Command reference",
        "",
        "Generated from the command line itself when the site is built (`medres COMMAND --help` shows the same text).",
        "",
    ]
    for path, command in commands(root):
        out += [f"## {' '.join(path)}", ""]
        if command.help:
            out += [" ".join(command.help.split()), ""]
        out += ["```text", _usage(path, command), "```", ""]
        if _is_group(command):
            subs = [f"- [`{' '.join((*path, n))}`](#{'-'.join((*path, n))})" for n, c in command.commands.items() if not getattr(c, "hidden", False)]
            out += [*subs, ""]
        rows = list(_option_rows(command))
        if rows:
            out += ["| argument or option | what it does | default |", "|---|---|---|", *rows, ""]
    return "\n".join(out)
