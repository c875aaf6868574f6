"""Errors the user can act on. Each names where the problem is (file, line, field, or setting)."""

from __future__ import annotations

from collections.abc import Iterable


class MedresError(Exception):
    """Base for errors shown to the user as one line, with a non-zero exit."""


class InputError(MedresError):
    """Bad input data: a file, a line and a field."""

    def __init__(self, path: object, line: int | None, field: str | None, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        where = self.path if line is None else f"{self.path}:{line}"
        what = f" field '{field}'" if field else ""
        super().__init__(f"{where}:{what} {message}")


class ConfigError(MedresError):
    """A bad setting (model spec, environment variable, flag)."""

    def __init__(self, setting: str, message: str):
        self.setting = setting
        super().__init__(f"setting '{setting}': {message}")


def did_you_mean(word: object, choices: object) -> str:
    """ " (did you mean 'x'?)" naming the choice closest to a misspelt `word` (an iterable of str
    `choices`), or "" when none is close: one rule for every name the user types (settings,
    model specs, families, formats, options), as the command line's own options have."""
    import difflib

    names = [str(c) for c in choices] if choices is not None else []  # type: ignore[attr-defined]
    text = str(word)
    close = difflib.get_close_matches(text, names, n=1, cutoff=0.8) or difflib.get_close_matches(text.lower(), [n.lower() for n in names], n=1, cutoff=0.8)
    if not close:
        return ""
    hit = next((n for n in names if n.lower() == close[0].lower()), close[0])
    return f" (did you mean '{hit}'?)"


def _shown(v: object) -> str:
    return f"'{v}'" if isinstance(v, str) else repr(v) if v is not None else "nothing"


def validation_problem(err: object, known: Iterable[object] | None = None) -> tuple[str | None, str]:
    """(field, message) of the first problem of a pydantic ValidationError, said in this project's
    words: the value given and what is allowed (the choices, the bound, the type), never the
    validation library's phrasing. `known`: the names a mapping may hold, listed for a name it may
    not (an iterable of str)."""
    first = err.errors()[0]  # type: ignore[attr-defined]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__") or None
    kind, ctx, given = first.get("type", ""), first.get("ctx") or {}, first.get("input")
    msg = str(first.get("msg", err))
    if kind == "extra_forbidden":
        names = ", ".join(str(k) for k in known) if known is not None else ""
        hint = did_you_mean(str(loc).rsplit(".", 1)[-1], known) if known is not None and loc else ""
        return loc, "unknown name" + hint + (f" (known: {names})" if names else "")
    if kind == "missing":
        return loc, "is required"
    if kind in ("literal_error", "enum"):
        return loc, f"{_shown(given)} is not allowed (allowed: {ctx.get('expected', '?')})"
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        word, key = bounds[kind]
        return loc, f"must be {word} {ctx.get(key)}, got {_shown(given)}"
    types = {
        "int_parsing": "a whole number",
        "int_type": "a whole number",
        "int_from_float": "a whole number",
        "float_parsing": "a number",
        "float_type": "a number",
        "bool_parsing": "true or false",
        "bool_type": "true or false",
        "string_type": "text",
        "dict_type": "a table (key = value pairs)",
        "list_type": "a list",
        "model_type": "a table (key = value pairs)",
    }
    if kind in types:
        return loc, f"{_shown(given)} is not {types[kind]}"
    if kind in ("string_too_short", "too_short"):
        n = ctx.get("min_length", 1)
        return loc, "must not be empty" if n == 1 else f"must have at least {n} {'characters' if kind == 'string_too_short' else 'entries'}"
    if kind in ("string_too_long", "too_long"):
        return loc, f"must have at most {ctx.get('max_length')} {'characters' if kind == 'string_too_long' else 'entries'}"
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return loc, msg.replace("Input should be", "must be")
