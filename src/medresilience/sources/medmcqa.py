"""MedMCQA rows (one JSON object per line): question, opa..opd, cop (1-based index of the correct
option), choice_type (single / multi), exp, subject_name, topic_name, id.

Item ids are ``medmcqa-{row id}`` (``medmcqa-{line number}`` for a row without one). choice_type is
kept in meta so builders can skip "multi" items (their stems often read "all of the following
except")."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import show
from ._common import build_item, read_json_items, text_field

__all__ = ["OPTION_FIELDS", "SOURCE", "medmcqa_item", "read_medmcqa"]

SOURCE = "medmcqa"
OPTION_FIELDS = {"A": "opa", "B": "opb", "C": "opc", "D": "opd"}


def _cop(value: object, path: Path | str, line: int | None) -> int:
    n = len(OPTION_FIELDS)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is None:
        raise InputError(path, line, "cop", "is missing (the 1-based index of the correct option)")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= n:
        raise InputError(path, line, "cop", f"must be 1-{n} (the 1-based index of the correct option), got {show(value)}")
    return value


def medmcqa_item(obj: Mapping[str, object], path: Path | str = "<medmcqa>", line: int | None = None) -> Item:
    """One MedMCQA row -> Item. `path` and `line` only label errors."""
    question = text_field(obj.get("question"), path, line, "question")
    options = {k: text_field(obj.get(f), path, line, f, numbers=True) for k, f in OPTION_FIELDS.items()}
    answer = "ABCD"[_cop(obj.get("cop"), path, line) - 1]
    row_id = obj.get("id")
    if row_id is not None and not str(row_id).strip():
        raise InputError(path, line, "id", "is blank")
    item_id = f"{SOURCE}-{str(row_id).strip() if row_id is not None else line}"
    subject = obj.get("subject_name")
    subject = (str(subject).strip() or None) if subject is not None else None
    meta = {"choice_type": obj.get("choice_type"), "topic": obj.get("topic_name"), "exp": obj.get("exp")}
    return build_item(
        path,
        line,
        id=item_id,
        source=SOURCE,
        question=question,
        options=options,
        answer=answer,
        subject=subject,
        meta=meta,
        option_field=OPTION_FIELDS,
        answer_field="cop",
    )


def read_medmcqa(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a MedMCQA JSON-lines file; a repeated id is an error on its second line."""
    return read_json_items(path, medmcqa_item)
