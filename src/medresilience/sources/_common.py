"""Checks shared by the source loaders: text fields, option maps, duplicate ids, and the final
Item validation. Every failure is an InputError naming file, line and field (as the field is
spelled in the source file)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..records import LETTERS, NUMBERS, Item
from ..runtime.errors import InputError
from ..runtime.fileio import MIN_FIELD_CHARS, check_field_sizes, json_lines, max_field_chars, oversized, parse_record, show, too_long

__all__ = ["IdChecker", "build_item", "read_json_items", "text_field"]


def _kind(value: object) -> str:
    return {bool: "true/false", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def text_field(value: object, path: Path | str, line: int | None, field: str, *, numbers: bool = False) -> str:
    """The stripped text of a required field. Missing, non-text, blank or longer than
    `fileio.max_field_chars()` -> InputError on `field`. `numbers=True` accepts a bare number
    (some option columns hold numbers) as its text."""
    if value is None:
        raise InputError(path, line, field, "is missing")
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise InputError(path, line, field, f"expected text, got {_kind(value)} {show(value)}")
    text = value.strip()
    if not text:
        raise InputError(path, line, field, "is blank")
    if len(text) > MIN_FIELD_CHARS and len(text) > (limit := max_field_chars()):
        raise too_long(path, line, field, len(text), limit)
    return text


def build_item(
    path: Path | str,
    line: int | None,
    *,
    id: str,
    source: str,
    question: str,
    options: Mapping[str, str],
    answer: str,
    subject: str | None = None,
    meta: Mapping[str, object] | None = None,
    option_field: Mapping[str, str] | None = None,
    answer_field: str = "answer",
) -> Item:
    """Validate and build an Item. Options must already be keyed A, B, ... in order; `option_field`
    names each option's field in the source file for error messages (a text over the size limit
    included)."""
    letters = "".join(options)
    if letters not in (LETTERS[: len(options)], NUMBERS[: len(options)]) or len(options) < 2:
        field = next(iter(option_field.values()), "options") if option_field else "options"
        raise InputError(path, line, field, f"expected at least two options lettered A, B, ... (or numbered 1, 2, ...); got {letters or 'none'}")
    if answer not in options:
        raise InputError(path, line, answer_field, f"answer {show(answer)} is not one of the options {', '.join(options)}")
    obj: dict[str, Any] = dict(id=id, source=source, question=question, options=dict(options), answer=answer, subject=subject, meta=meta or {})
    try:
        longest = max(len(question), len(subject or ""), *map(len, obj["options"].values()))
    except TypeError:  # not text: the full check, then the record's own error
        longest = MIN_FIELD_CHARS + 1
    if longest > MIN_FIELD_CHARS or (obj["meta"] and oversized(obj["meta"], MIN_FIELD_CHARS)):
        try:
            check_field_sizes(obj, path, line)
        except InputError as e:
            key = (e.field or "").removeprefix("options.")
            if option_field and e.field != key and key in option_field:
                raise InputError(path, line, option_field[key], e.message) from None
            raise
    return parse_record(Item, obj, path, line, sized=True)  # sized just above


class IdChecker:
    """Remembers the ids met in one file and raises on the second occurrence of one."""

    def __init__(self, path: Path | str, field: str = "id", what: str = "id"):
        self.path, self.field, self.what = path, field, what
        self._seen: dict[str, int | None] = {}

    def check(self, key: str, line: int | None, field: str | None = None) -> None:
        first = self._seen.get(key, -1)
        if first != -1:
            where = f" (first on line {first})" if first is not None else ""
            raise InputError(self.path, line, field or self.field, f"duplicate {self.what} {show(key)}{where}")
        self._seen[key] = line


def read_json_items(path: Path | str, make: Callable[[dict[str, Any], Path | str, int], Item]) -> Iterator[Item]:
    """Stream the Items of a JSON-lines file, each row made by `make(row, path, line)`; a repeated
    id is an error on its second line."""
    ids = IdChecker(path)
    for n, obj in json_lines(path):
        item = make(obj, path, n)
        ids.check(item.id, n)
        yield item
