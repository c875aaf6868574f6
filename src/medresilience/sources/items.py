"""The project's own items layout: JSON lines, one Item per line, as `medres import` writes and
every `medres build ... --items` reads.

    {"id": "q1", "source": "mine", "question": "...", "options": {"A": "...", "B": "..."}, "answer": "B"}

Required: `id` (unique in the file), `source` (the dataset it comes from) and `question`. A
multiple-choice item has `options` keyed A, B, ... in order (or 1, 2, ...) and `answer`, one of
their keys; a free-text one a `reference` (a diagnosis, a correction) instead. Optional: `subject`,
and `meta` (an object kept with the item: an explanation, a note). No other field is allowed, so
a misspelt one is an error naming it, never dropped."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import parse_record, show
from ._common import read_json_items

__all__ = ["FIELDS", "REQUIRED", "is_items_row", "read_items"]

FIELDS = frozenset(Item.model_fields)
REQUIRED = frozenset({"id", "source", "question"})


def is_items_row(obj: Mapping[str, object]) -> bool:
    """A row of this layout: the required fields, and only Item's fields; a row with options and
    an answer, or without any answer (a patient question), or with a reference. (A row whose text
    `answer` stands without options is the free-form layout's.)"""
    keys = set(obj)
    if not (REQUIRED <= keys <= FIELDS):
        return False
    return "options" in keys or "answer" not in keys


def _item(obj: Mapping[str, object], path: Path | str, line: int) -> Item:
    options, answer = obj.get("options"), obj.get("answer")
    if isinstance(options, dict) and options and answer not in options:  # the record's own check names no field
        what = "is missing" if answer is None else f"{show(answer)} is not one of the options"
        raise InputError(path, line, "answer", f"{what} ({', '.join(map(str, options))})")
    return parse_record(Item, obj, path, line, sized=True)  # json_lines checked the sizes


def read_items(path: Path | str) -> Iterator[Item]:
    """Stream the Items of an items .jsonl; a bad row is an InputError naming file, line and field,
    a repeated id one on its second line."""
    return read_json_items(path, _item)
