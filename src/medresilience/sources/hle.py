"""Humanity's Last Exam (cais/hle): rows with id, question, image (a data URI or "" for a text-only
question), image_preview, answer, answer_type ("multipleChoice" | "exactMatch"), author_name,
rationale, rationale_image, raw_subject, category, canary. Read from JSON lines or, when pyarrow is
installed, from the Parquet file a Hugging Face dataset is stored as (errors then name the 1-based
row number as the line).

Only text-only multiple-choice rows become Items. The choices are written inside the question,
most often as::

    Answer Choices:
    A. first choice
    B. second choice

("A)", "A:", "(A)" and the inline "(A) text (B) text" layout are read too; a line that starts no
new choice continues the previous one). The Item's question is the text before the choices;
answer is the letter. Rows left out are counted in `skips` by reason, never silently dropped:
"image" (the row has an image), "not multiple choice" (answer_type exactMatch), "more than 10
options" (the toolkit labels options A-J). Item ids are ``hle-{row id}``; subject is raw_subject,
meta keeps category, raw_subject, author_name and rationale."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import LETTERS, Item
from ..runtime.errors import InputError
from ..runtime.fileio import iter_parquet_rows, json_lines, open_parquet, show
from ..runtime.jsontypes import JSONObject
from ._common import IdChecker, build_item, text_field
from .medxpertqa import inline_choices

__all__ = [
    "ANSWER_TYPES",
    "KEYS",
    "SKIP_IMAGE",
    "SKIP_NOT_MC",
    "SKIP_TOO_MANY",
    "SOURCE",
    "SkippedRow",
    "hle_choices",
    "hle_item",
    "parquet_columns",
    "read_hle",
]

SOURCE = "hle"
#: keys whose presence in the first object of a JSON-lines file (or a Parquet column) marks HLE
KEYS: tuple[str, ...] = ("answer_type", "canary")
ANSWER_TYPES = ("multipleChoice", "exactMatch")
SKIP_IMAGE = "image"
SKIP_NOT_MC = "not multiple choice"
SKIP_TOO_MANY = "more than 10 options"

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_HEADER = re.compile(r"(?im)^[ \t]*(?:answer[ \t]+choices|answer[ \t]+options|choices|options)[ \t]*:[ \t]*")
_CHOICE = re.compile(r"^[ \t]*(?:\(([A-Z])\)|([A-Z])[.):])(?:[ \t]+(.*))?$")
# columns never needed to build an Item (images are large; `image` tells whether there is one)
_HEAVY = ("image_preview", "rationale_image")


class SkippedRow(Exception):
    """Raised by `hle_item` for a row that is left out; `reason` is one of the SKIP_* values."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _choice_lines(lines: list[str], start: int) -> dict[str, str] | None:
    """Choices lettered A, B, ... on lines from `start` (the line of A) to the end."""
    choices: dict[str, list[str]] = {}
    for text in lines[start:]:
        m = _CHOICE.match(text)
        expected = _ALPHABET[len(choices)] if len(choices) < len(_ALPHABET) else None
        letter = (m.group(1) or m.group(2)) if m else None
        if m is not None and letter is not None and letter == expected:
            choices[letter] = [m.group(3) or ""]
        elif choices:
            choices[_ALPHABET[len(choices) - 1]].append(text)
        elif text.strip():
            return None
    if len(choices) < 2:
        return None
    return {k: "\n".join(v).strip() for k, v in choices.items()}


def hle_choices(question: str) -> tuple[str, dict[str, str]] | None:
    """(stem, {letter: text}) of an HLE multiple-choice question, or None when no choices lettered
    A, B, ... can be found. With an "Answer Choices:" header the choices follow it (one per line,
    or inline as "(A) ... (B) ..."); without one they are the trailing lines "A. ...", "B. ..."."""
    headers = list(_HEADER.finditer(question))
    if headers:
        h = headers[-1]
        stem, block = question[: h.start()], question[h.end() :]
        lines = block.split("\n")
        first = next((i for i, t in enumerate(lines) if t.strip()), None)
        if first is not None:
            found = _choice_lines(lines, first)
            if found is not None:
                return stem.rstrip(), found
        inline = inline_choices(block, _ALPHABET)
        if inline is not None and not inline[0].strip():
            return stem.rstrip(), inline[1]
        return None
    lines = question.split("\n")
    for i in reversed(range(len(lines))):
        m = _CHOICE.match(lines[i])
        if m and (m.group(1) or m.group(2)) == "A":
            found = _choice_lines(lines, i)
            if found is not None:
                return "\n".join(lines[:i]).rstrip(), found
    return None


def _has_image(obj: Mapping[str, object]) -> bool:
    image = obj.get("image")
    if isinstance(image, str) and image.strip():
        return True
    preview = obj.get("image_preview")
    if isinstance(preview, dict):
        return any(preview.get(k) for k in ("bytes", "path", "src"))
    return bool(preview)


def _answer_letter(raw: object, options: dict[str, str], path: Path | str, line: int | None) -> str:
    text = text_field(raw, path, line, "answer")
    m = re.fullmatch(r"\(?([A-Za-z])\)?(?:[.):]\s*(.*))?", text, re.S)
    if m is None:
        raise InputError(path, line, "answer", f"expected an option letter for a multipleChoice row, got {show(raw)}")
    letter = m.group(1).upper()
    if letter not in options:
        raise InputError(path, line, "answer", f"answer {show(letter)} is not one of the choices {', '.join(options)} in the question")
    return letter


def hle_item(obj: Mapping[str, object], path: Path | str = "<hle>", line: int | None = None) -> Item:
    """One HLE row -> Item, or SkippedRow (with its reason) for a row that is left out. `path` and
    `line` only label errors; `read_hle` counts the skips."""
    row_id = text_field(obj.get("id"), path, line, "id")
    question = text_field(obj.get("question"), path, line, "question")
    kind = obj.get("answer_type")
    if kind not in ANSWER_TYPES:
        raise InputError(path, line, "answer_type", f"expected {' or '.join(ANSWER_TYPES)}, got {show(kind)}")
    if _has_image(obj):
        raise SkippedRow(SKIP_IMAGE)
    if kind != "multipleChoice":
        raise SkippedRow(SKIP_NOT_MC)
    parsed = hle_choices(question)
    if parsed is None:
        raise InputError(path, line, "question", "a multipleChoice row whose choices (Answer Choices: A. ..., B. ...) cannot be found in the question")
    stem, options = parsed
    if not stem.strip():
        raise InputError(path, line, "question", "has no text before its answer choices")
    empty = [k for k, v in options.items() if not v]
    if empty:
        raise InputError(path, line, "question", f"answer choice {empty[0]} is blank")
    if len(options) > len(LETTERS):
        raise SkippedRow(SKIP_TOO_MANY)
    answer = _answer_letter(obj.get("answer"), options, path, line)
    raw_subject = obj.get("raw_subject")
    subject = (str(raw_subject).strip() or None) if raw_subject is not None else None
    meta = {k: obj.get(k) for k in ("category", "raw_subject", "author_name", "rationale")}
    return build_item(
        path,
        line,
        id=f"{SOURCE}-{row_id}",
        source=SOURCE,
        question=stem.strip(),
        options=options,
        answer=answer,
        subject=subject,
        meta=meta,
    )


def parquet_columns(path: Path | str) -> list[str]:
    """The column names of a Parquet file (InputError when pyarrow is missing or the file is not Parquet)."""
    return list(open_parquet(path).schema_arrow.names)


def _parquet_rows(path: Path | str) -> Iterator[tuple[int, JSONObject]]:
    pf = open_parquet(path)
    names = pf.schema_arrow.names
    columns = [c for c in names if c not in _HEAVY]
    if "image" not in names and "image_preview" in names:
        columns.append("image_preview")
    return iter_parquet_rows(path, columns, file=pf, batch_size=256)


def read_hle(path: Path | str, skips: Counter | None = None) -> Iterator[Item]:
    """Stream the Items of an HLE file (JSON lines, or Parquet by the .parquet suffix). Rows left
    out are counted in `skips` (reason -> rows) when given; a repeated id is an error."""
    path = Path(path)
    rows = _parquet_rows(path) if path.suffix.lower() == ".parquet" else json_lines(path)
    ids = IdChecker(path)
    for n, obj in rows:
        try:
            item = hle_item(obj, path, n)
        except SkippedRow as s:
            if skips is not None:
                skips[s.reason] += 1
            continue
        ids.check(item.id, n)
        yield item
