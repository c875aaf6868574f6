"""CRAFT-MD (Johri et al., Nature Medicine 2025: github.com/rajpurkarlab/craft-md, MIT licence),
its case file data/usmle_and_derm_dataset.csv: 2,004 case vignettes (1,804 from MedQA-USMLE, 100
public and 100 private dermatology cases) under a header row

    ,case_vignette,choice_1,choice_2,choice_3,choice_4,answer,category,dataset,case_id

(the first column, unnamed, is the row number pandas wrote), the answer given as the text of the
right choice. CRAFT-MD asks for a free-text diagnosis in a conversation; read here each case is a
four-option multiple-choice item (the study's own multiple-choice vignette condition), so the
MCQ families use it, and the answer text is also its free-text reference.

Item ids are ``craftmd-{case_id}``; subject is the category; meta keeps dataset (the case's
origin) and category. The answer must be one of the choices, compared with the spaces at either
end left out (the release pads some with a space); a case whose answer is none of its choices (the
release has one: case_112 answers "Henoch-Scholein vasculitis" with "IgA vasculitis" among the
choices) is left out and counted in `skips` ("answer not among the choices"), never guessed.
Errors name the file, line and column."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import csv_records, show
from ._common import IdChecker, build_item, text_field

__all__ = ["COLUMNS", "SKIP_NO_ANSWER", "SOURCE", "is_craftmd_header", "read_craftmd"]

SOURCE = "craftmd"
CHOICES = ("choice_1", "choice_2", "choice_3", "choice_4")
COLUMNS = ("", "case_vignette", *CHOICES, "answer", "category", "dataset", "case_id")
SKIP_NO_ANSWER = "answer not among the choices"
_REQUIRED = frozenset({"case_vignette", "choice_1", "choice_2", "answer", "case_id"})


def is_craftmd_header(cells: list[str]) -> bool:
    names = {c.strip() for c in cells}
    return _REQUIRED <= names <= set(COLUMNS)


def _answer(row: dict[str, str], options: dict[str, str], path: Path, line: int) -> str | None:
    text = text_field(row.get("answer"), path, line, "answer")
    hits = [k for k, v in options.items() if v == text]
    return hits[0] if len(hits) == 1 else None


def read_craftmd(path: Path | str, skips: Counter | None = None) -> Iterator[Item]:
    """Stream the Items of CRAFT-MD's case CSV; cases whose answer is not exactly one of their
    choices are counted in `skips` when given; a repeated case_id is an error."""
    path = Path(path)
    records = csv_records(path)
    first = next(records, None)
    if first is None:
        raise InputError(path, None, None, f"is empty (expected CRAFT-MD's header: {','.join(COLUMNS)})")
    n, header = first
    if not is_craftmd_header(header):
        raise InputError(path, n, None, f"header {show(','.join(header))} is not CRAFT-MD's ({','.join(COLUMNS)})")
    names = [c.strip() for c in header]
    ids = IdChecker(path, field="case_id", what="case_id")
    for line, cells in records:
        if len(cells) != len(names):
            raise InputError(path, line, None, f"has {len(cells)} cells for the header's {len(names)}")
        row = dict(zip(names, cells))
        case = text_field(row.get("case_id"), path, line, "case_id")
        ids.check(case, line)
        question = text_field(row.get("case_vignette"), path, line, "case_vignette")
        options: dict[str, str] = {}
        for letter, col in zip("ABCD", CHOICES):
            if col in row:
                options[letter] = text_field(row[col], path, line, col, numbers=True)
        answer = _answer(row, options, path, line)
        if answer is None:
            if skips is not None:
                skips[SKIP_NO_ANSWER] += 1
            continue
        category = row.get("category", "").strip() or None
        meta = {k: row[k].strip() for k in ("dataset", "category") if row.get(k, "").strip()}
        yield build_item(
            path,
            line,
            id=f"{SOURCE}-{case}",
            source=SOURCE,
            question=question,
            options=options,
            answer=answer,
            subject=category,
            meta=meta,
            option_field=dict(zip("ABCD", CHOICES)),
        )
