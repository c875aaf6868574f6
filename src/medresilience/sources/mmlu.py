"""MMLU CSV (the original release: no header, one file per subject and split): question, A, B, C,
D, answer letter. Read with the csv module, so quoted fields may hold commas and newlines.

Item ids are ``mmlu-{file stem}-{row}`` (row = 1-based record number, blank lines not counted);
the subject is the file stem without its split suffix (clinical_knowledge_test.csv ->
clinical_knowledge). Errors name the physical line where the record starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import csv_records, show
from ._common import build_item

__all__ = ["COLUMNS", "SOURCE", "SPLIT_SUFFIXES", "mmlu_subject", "read_mmlu"]

SOURCE = "mmlu"
COLUMNS = ("question", "A", "B", "C", "D", "answer")
SPLIT_SUFFIXES = ("_test", "_dev", "_val", "_validation", "_train", "_auxiliary_train")


def mmlu_subject(path: Path | str) -> str:
    """clinical_knowledge_test.csv -> clinical_knowledge."""
    stem = Path(path).stem
    for suffix in sorted(SPLIT_SUFFIXES, key=len, reverse=True):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def read_mmlu(path: Path | str, subject: str | None = None) -> Iterator[Item]:
    """Stream the Items of one MMLU CSV file. `subject` overrides the one taken from the name."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    if path.is_dir():
        raise InputError(path, None, None, "is a directory, expected a file")
    stem, subject = path.stem, subject or mmlu_subject(path)
    row = 0
    try:
        for start, rec in csv_records(path):
            row += 1
            yield _item(rec, path, start, f"{SOURCE}-{stem}-{row}", subject)
    except OSError as e:
        raise InputError(path, None, None, f"cannot read ({e.strerror or e})") from None


def _item(rec: list[str], path: Path, line: int, item_id: str, subject: str) -> Item:
    if len(rec) != len(COLUMNS):
        raise InputError(path, line, "columns", f"expected {len(COLUMNS)} columns ({', '.join(COLUMNS)}), got {len(rec)}")
    cells = dict(zip(COLUMNS, (c.strip() for c in rec)))
    for col in COLUMNS[:-1]:
        if not cells[col]:
            raise InputError(path, line, col, "is blank")
    answer = cells["answer"].upper()
    if answer not in ("A", "B", "C", "D"):
        raise InputError(path, line, "answer", f"must be one of A, B, C, D, got {show(cells['answer'])}")
    options = {k: cells[k] for k in "ABCD"}
    return build_item(path, line, id=item_id, source=SOURCE, question=cells["question"], options=options, answer=answer, subject=subject)
