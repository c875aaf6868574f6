"""Free-form question answering, the common open layout: JSON lines with `question` and a
free-text `answer` (no options), optionally `id`, `source` and `subject`.

An Item without options whose `reference` is the answer (a diagnosis, a finding); ids are the
row's `id` when it has one, else ``freeform-{line number}``; `source` names the dataset the rows
come from (default: freeform)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import parse_record
from ._common import read_json_items, text_field

__all__ = ["KEYS", "SOURCE", "freeform_item", "is_freeform_row", "read_freeform"]

SOURCE = "freeform"
KEYS = ("question", "answer")
#: fields that make a row multiple-choice: such a row is another format's
OPTION_KEYS = frozenset({"options", "answer_idx", "opa", "cop", "choices", "label"})


def is_freeform_row(obj: Mapping[str, object]) -> bool:
    """A row of this layout: a question and a text answer, and no options."""
    return all(k in obj for k in KEYS) and isinstance(obj.get("answer"), str) and not (set(obj) & OPTION_KEYS)


def freeform_item(obj: Mapping[str, object], path: Path | str = "<freeform>", line: int | None = None) -> Item:
    """One row -> Item (no options; the answer is the reference). `path` and `line` label errors."""
    question = text_field(obj.get("question"), path, line, "question")
    answer = text_field(obj.get("answer"), path, line, "answer")
    row_id = obj.get("id")
    if row_id is not None and not str(row_id).strip():
        raise InputError(path, line, "id", "is blank")
    source = text_field(obj["source"], path, line, "source") if obj.get("source") is not None else SOURCE
    subject = text_field(obj["subject"], path, line, "subject") if obj.get("subject") is not None else None
    record = {
        "id": str(row_id).strip() if row_id is not None else f"{SOURCE}-{line}",
        "source": source,
        "question": question,
        "reference": answer,
        "subject": subject,
    }
    return parse_record(Item, record, path, line)


def read_freeform(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a free-form JSON-lines file; a repeated id is an error on its second line."""
    return read_json_items(path, freeform_item)
