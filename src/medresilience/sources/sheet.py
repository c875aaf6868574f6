"""A question sheet: the CSV a clinician writes in a spreadsheet (File > Save as > CSV), one
multiple-choice question per row under a header row.

    id,question,A,B,C,D,E,answer,explanation
    chest-1,"A 58-year-old man has crushing chest pain ... Next step?",Aspirin,...,A,"Guideline ..."

Columns, matched by name whatever their case, spaces or underscores:
- `question` (required): the question text, any length, commas and line breaks quoted as the
  spreadsheet writes them;
- the options (at least two): columns `A`, `B`, ... (also `option A`, `option_a`, `choice A`, or
  `option 1`, `option 2`, ... for A, B, ...). A question with fewer options than the sheet has
  columns leaves the last ones blank; a blank option before a filled one is an error;
- `answer` (required; also `correct answer`): the letter of the right option (`B`, `b`, `(B)`) or
  the exact text of one option;
- optional: `id` (unique; default FILE-ROW, the row counted from 1 under the header), `source`
  (the dataset named in reports; default the file's name without .csv), `subject`, and
  `explanation` (kept with the item as meta.explanation; never shown to the model).

Any other column is an error naming it (so a misspelt `anwser` is never silently dropped); blank
rows are skipped. The delimiter is a comma, or a semicolon or tab when the header holds those and
no comma (spreadsheets in some locales save so); a `.tsv` file is tab-separated. Every bad row is
an InputError naming file, line and column."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..records import LETTERS, Item
from ..runtime.errors import InputError
from ..runtime.fileio import csv_records, show, text_lines
from ._common import IdChecker, build_item

__all__ = ["COLUMNS", "is_sheet", "read_sheet"]

#: the column names of the layout, for messages
COLUMNS = "question, A, B, C, ... (or option A, ...), answer; optional id, source, subject, explanation"
_OPTION = re.compile(r"^(?:option|choice|opt)?([a-j]|10|[1-9])$")
_NAMES = {
    "question": "question",
    "answer": "answer",
    "correctanswer": "answer",
    "id": "id",
    "source": "source",
    "subject": "subject",
    "explanation": "explanation",
}
_LETTER = re.compile(r"^\(?([A-Ja-j])\)?[.)]?$")


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name.strip().lower())


def _column(name: str) -> str | None:
    """The layout's name for a header cell: question, answer, id, ... or an option letter."""
    key = _key(name)
    if key in _NAMES:
        return _NAMES[key]
    m = _OPTION.match(key)
    if m is None:
        return None
    mark = m.group(1)
    return LETTERS[int(mark) - 1] if mark.isdigit() else mark.upper()


def _delimiter(path: Path) -> str:
    if path.suffix.lower() == ".tsv":
        return "\t"
    try:
        header = next((text for _, text in text_lines(path) if text.strip()), "")
    except (OSError, InputError):
        return ","
    if "," not in header:
        for d in (";", "\t"):
            if d in header:
                return d
    return ","


def is_sheet(path: Path | str) -> bool:
    """A CSV/TSV file whose first row is a header naming a question or an answer column (a header
    missing the other is then the sheet's error, not another format's)."""
    path = Path(path)
    try:
        first = next(csv_records(path, _delimiter(path)), None)
    except (OSError, InputError):
        return False
    cols = {_column(c) for c in first[1]} if first else set()
    return bool({"question", "answer"} & cols)


def _header(path: Path, cells: list[str]) -> dict[int, str]:
    """Cell index -> the layout's column name; unknown, repeated or missing columns are errors on line 1."""
    cols: dict[int, str] = {}
    seen: dict[str, str] = {}
    for i, cell in enumerate(cells):
        if not cell.strip():
            continue
        name = _column(cell)
        if name is None:
            raise InputError(path, 1, cell.strip(), f"unknown column; a question sheet has {COLUMNS}")
        if name in seen:
            raise InputError(path, 1, cell.strip(), f"names the same column as {seen[name]!r}")
        seen[name] = cell.strip()
        cols[i] = name
    missing = [c for c in ("question", "answer") if c not in seen]
    if missing:
        raise InputError(path, 1, missing[0], f"no {missing[0]} column in the header; a question sheet has {COLUMNS}")
    letters = sorted(n for n in seen if len(n) == 1)
    if "".join(letters) != LETTERS[: len(letters)] or len(letters) < 2:
        raise InputError(path, 1, "options", f"expected option columns A, B, ... in sequence (at least two), got {', '.join(letters) or 'none'}")
    return cols


def _options(path: Path, line: int, cells: dict[str, str], header: dict[str, str]) -> dict[str, str]:
    options: dict[str, str] = {}
    gap: str | None = None
    for letter in LETTERS:
        if letter not in cells:
            break
        text = cells[letter]
        if not text:
            gap = gap or letter
            continue
        if gap:
            raise InputError(path, line, header[gap], f"is blank, but option {letter} after it is not")
        options[letter] = text
    if len(options) < 2:
        raise InputError(path, line, header["A"], f"a question needs at least two options, this row has {len(options)}")
    return options


def _answer(path: Path, line: int, raw: str, options: dict[str, str], field: str) -> str:
    if not raw:
        raise InputError(path, line, field, "is blank (give the letter of the right option, or its text)")
    m = _LETTER.match(raw)
    if m and m.group(1).upper() in options:
        return m.group(1).upper()
    norm = " ".join(raw.split()).lower()
    hits = [k for k, v in options.items() if " ".join(v.split()).lower() == norm]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise InputError(path, line, field, f"{show(raw)} is the text of options {', '.join(hits)}; give the letter")
    raise InputError(path, line, field, f"{show(raw)} is neither an option letter ({', '.join(options)}) nor the text of an option")


def read_sheet(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a question sheet (see the module docstring)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    if path.is_dir():
        raise InputError(path, None, None, "is a directory, expected a file")
    records = csv_records(path, _delimiter(path))
    first = next(records, None)
    if first is None:
        raise InputError(path, None, None, f"is empty (expected a header row: {COLUMNS})")
    cols = _header(path, first[1])
    header = {name: first[1][i].strip() for i, name in cols.items()}  # the sheet's own spelling, for errors
    ids = IdChecker(path, header.get("id", "id"))
    for row, (line, rec) in enumerate(records, start=1):
        if len(rec) > len(first[1]) and any(c.strip() for c in rec[len(first[1]) :]):
            raise InputError(path, line, None, f"has {len(rec)} cells, the header has {len(first[1])}")
        cells = {name: (rec[i].strip() if i < len(rec) else "") for i, name in cols.items()}
        yield _row_item(path, line, row, cells, header, ids)


def _row_item(path: Path, line: int, row: int, cells: dict[str, str], header: dict[str, str], ids: IdChecker) -> Item:
    if not cells["question"]:
        raise InputError(path, line, header["question"], "is blank")
    options = _options(path, line, cells, header)
    answer = _answer(path, line, cells["answer"], options, header["answer"])
    item_id = cells.get("id") or f"{path.stem}-{row}"
    ids.check(item_id, line)
    meta = {"explanation": cells["explanation"]} if cells.get("explanation") else None
    field_of = {k: header[k] for k in options}
    return build_item(
        path,
        line,
        id=item_id,
        source=cells.get("source") or path.stem,
        question=cells["question"],
        options=options,
        answer=answer,
        subject=cells.get("subject") or None,
        meta=meta,
        option_field=field_of,
        answer_field=header["answer"],
    )
