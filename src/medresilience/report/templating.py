"""The report's Jinja2 templates: one environment per package that ships a `templates` folder (the
report's own, a family's report; the report's macros are found from every one), autoescaping on. Every value is escaped as `html.esc` escapes
(quotes too, None as empty) unless it is already HTML, which comes in as markupsafe.Markup (a
table, a figure, a section's body). A template's lines are joined without the line breaks and the
indentation between them, so a template is laid out for reading and the page has no whitespace the
layout did not ask for: a space that matters is written inside a line."""

from __future__ import annotations

import html
from collections.abc import Callable
from functools import cache
from typing import Any

from jinja2 import BaseLoader, ChoiceLoader, Environment, FileSystemBytecodeCache, PackageLoader, StrictUndefined
from jinja2.bccache import Bucket
from markupsafe import Markup


class _JoinedLines(BaseLoader):
    """A package's templates with each line stripped and the lines joined."""

    def __init__(self, package: str):
        self.inner = PackageLoader(package, "templates")

    def get_source(self, environment: Environment, template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
        source, filename, uptodate = self.inner.get_source(environment, template)
        return "".join(line.strip() for line in source.splitlines()), filename, uptodate


def _escaped(value: object) -> Markup:
    if hasattr(value, "__html__"):
        return Markup(value)
    return Markup(html.escape("" if value is None else str(value), quote=True))


class _CompiledTemplates(FileSystemBytecodeCache):
    """Jinja's cache of compiled templates, kept between processes in the user's own temporary
    directory (a template whose source changed, or another Jinja or Python, is compiled again):
    compiling the report's templates is about 0.03 s of every report. A cache file that cannot be
    written is left unwritten: the template is rendered all the same."""

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


@cache
def _compiled() -> FileSystemBytecodeCache | None:
    """The cache of compiled templates; None where no private temporary directory can be made."""
    try:
        return _CompiledTemplates()
    except (OSError, RuntimeError):
        return None


@cache
def environment(package: str) -> Environment:
    """`package`'s templates, then the report's own (its macros: a family's template imports them)."""
    loaders = [_JoinedLines(package)] + ([_JoinedLines(__package__)] if package != __package__ else [])
    return Environment(loader=ChoiceLoader(loaders), autoescape=True, finalize=_escaped, undefined=StrictUndefined, bytecode_cache=_compiled())


def render(package: str, template: str, **context: object) -> str:
    """The template `template` of `package`'s templates folder, rendered with `context`."""
    return environment(package).get_template(template).render(**context)


def macros(package: str, template: str) -> Any:
    """The macros of `package`'s template `template`, each called like a function returning HTML."""
    return environment(package).get_template(template).module
