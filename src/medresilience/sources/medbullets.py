"""Medbullets (Chen et al., NAACL 2024: github.com/HanjieChen/ChallengeClinicalQA, folder
medbullets/): USMLE Step 2/3-style questions in two files of 308 each, `medbullets_op4` (options
A-D) and `medbullets_op5` (A-E), each as .json and .csv.

The .json is a table written column by column (pandas' default `to_json`), one JSON object on one
line: {"link": {"0": url, ...}, "question": {"0": text, ...}, "opa": {...}, ..., "ope": {...},
"answer_idx": {"0": "C", ...}, "answer": {...}, "explanation": {...}}, every column keyed by the
same row numbers. The .csv has the same columns under a header row (an explanation runs over
several lines inside its quotes).

Each row becomes an item with id ``medbullets-op4-{row}`` (op5 for five options; the number of
options, not the file name, decides), options A.. from opa.., the answer the letter in
answer_idx, which must name the option whose text is `answer`; meta keeps link and explanation
(never shown to the model). Errors name the file, the line (of a .csv row; 1 for the one-line
.json) and the field, a .json field with its row: ``opc["17"]``."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import csv_records, read_text, show
from ._common import IdChecker, build_item, text_field

__all__ = ["COLUMNS", "SOURCE", "is_medbullets_columns", "is_medbullets_header", "medbullets_item", "read_medbullets"]

SOURCE = "medbullets"
OPTION_COLUMNS = ("opa", "opb", "opc", "opd", "ope")
COLUMNS = ("link", "question", *OPTION_COLUMNS, "answer_idx", "answer", "explanation")
_REQUIRED = frozenset({"question", "opa", "opb", "answer_idx"})


def is_medbullets_columns(obj: Mapping[str, object]) -> bool:
    """A JSON object in the release's column-wise layout: question, opa, opb and answer_idx, each
    an object of row -> value, and no other column than the release's."""
    return _REQUIRED <= set(obj) <= set(COLUMNS) and all(isinstance(v, dict) for v in obj.values())


def is_medbullets_header(cells: list[str]) -> bool:
    """A CSV header row of the release: its required columns, and only the release's."""
    names = {c.strip() for c in cells}
    return _REQUIRED <= names <= set(COLUMNS)


def medbullets_item(row: Mapping[str, object], path: Path | str = "<medbullets>", line: int | None = None, where: str = "") -> Item:
    """One row (column -> value) -> Item; `where` is appended to each field named in an error (the
    .json's ``["17"]``), `row` must hold the row's number under "_row"."""
    question = text_field(row.get("question"), path, line, "question" + where)
    options: dict[str, str] = {}
    fields: dict[str, str] = {}
    ended: str | None = None  # the first option column left empty: the options end before it
    for letter, col in zip("ABCDE", OPTION_COLUMNS):
        value = row.get(col)
        if value is None or (isinstance(value, str) and not value.strip()):
            if col in ("opa", "opb"):
                raise InputError(path, line, col + where, "is missing" if value is None else "is blank")
            ended = ended or col
            continue
        if ended is not None:
            raise InputError(path, line, ended + where, f"is empty, but {col} after it is not")
        options[letter] = text_field(value, path, line, col + where, numbers=True)
        fields[letter] = col + where
    idx = row.get("answer_idx")
    if not isinstance(idx, str) or idx.strip().upper() not in options:
        raise InputError(path, line, "answer_idx" + where, f"{show(idx)} is not one of the options {', '.join(options)}")
    answer = idx.strip().upper()
    text = row.get("answer")
    if text is not None and str(text).strip() != options[answer]:
        raise InputError(path, line, "answer" + where, f"answer text {show(text)} is not option {answer} ({show(options[answer])}) named by answer_idx")
    meta = {k: row[k] for k in ("link", "explanation") if isinstance(row.get(k), str) and str(row[k]).strip()}
    return build_item(
        path,
        line,
        id=f"{SOURCE}-op{len(options)}-{row['_row']}",
        source=SOURCE,
        question=question,
        options=options,
        answer=answer,
        meta=meta,
        option_field=fields,
        answer_field="answer_idx" + where,
    )


def _json_rows(path: Path) -> Iterator[tuple[int, dict[str, object], str]]:
    text = read_text(path)
    try:
        table = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(table, dict) or not is_medbullets_columns(table):
        got = ", ".join(sorted(table)[:10]) if isinstance(table, dict) else type(table).__name__
        raise InputError(path, 1, None, f"expected Medbullets' column-wise object (question, opa, ..., answer_idx: each row -> value), got {got}")
    line = 1 if "\n" not in text.strip() else None
    keys = list(table["question"])
    for col, values in table.items():
        extra = [k for k in values if k not in table["question"]]
        if extra:
            raise InputError(path, line, f'{col}["{extra[0]}"]', f"row {show(extra[0])} has no question (every column holds the same rows)")
    for key in keys:
        yield line or 1, {"_row": key, **{col: values.get(key) for col, values in table.items()}}, f'["{key}"]'


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, object], str]]:
    records = csv_records(path)
    first = next(records, None)
    if first is None:
        raise InputError(path, None, None, "is empty (expected a header row: link, question, opa, ..., answer_idx, answer, explanation)")
    n, header = first
    if not is_medbullets_header(header):
        raise InputError(path, n, None, f"header {show(','.join(header))} is not Medbullets' ({', '.join(COLUMNS)})")
    names = [c.strip() for c in header]
    for i, (line, cells) in enumerate(records):
        if len(cells) != len(names):
            raise InputError(path, line, None, f"has {len(cells)} cells for the header's {len(names)}")
        yield line, {"_row": str(i), **dict(zip(names, cells))}, ""


def read_medbullets(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a Medbullets .json (column-wise) or .csv file; a repeated row is an error."""
    path = Path(path)
    rows = _csv_rows(path) if path.suffix.lower() == ".csv" else _json_rows(path)
    ids = IdChecker(path)
    for line, row, where in rows:
        item = medbullets_item(row, path, line, where)
        ids.check(item.id, line, "question" + where)
        yield item
