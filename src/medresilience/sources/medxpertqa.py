"""MedXpertQA text (JSON lines): id, question (the stem followed by "Answer Choices: (A) ... (J)
..."), options (a list of {letter, content}, or an object letter -> text), label (a list holding the
answer letter, or the letter itself), medical_task, body_system, question_type.

The Item's question is the stem without the appended answer-choices block (the toolkit shows the
options itself). When a row has both, the choices written in the question must agree with
`options` (texts compared with runs of whitespace collapsed); a row without `options` takes its
choices from the question. Item ids are ``medxpertqa-{row id}``; subject is body_system and meta
keeps medical_task, body_system and question_type.

`inline_choices` splits "(A) text (B) text ..." (or "(1) text (2) text ...") out of a text; the
MedJourney loader uses it for numbered choices written inside the question."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..records import LETTERS, Item
from ..runtime.errors import InputError
from ..runtime.fileio import show
from ._common import build_item, read_json_items, text_field

__all__ = ["CHOICES_HEADER", "KEYS", "SOURCE", "inline_choices", "medxpertqa_item", "read_medxpertqa", "split_choices"]

SOURCE = "medxpertqa"
#: keys whose presence in the first object of a JSON-lines file marks MedXpertQA (format detection)
KEYS: tuple[str, ...] = ("medical_task", "body_system")
CHOICES_HEADER = "Answer Choices:"


def _marker(label: str) -> re.Pattern[str]:
    # a "(X)" not glued to a preceding ASCII letter or digit, so "Rh(D)-positive" is no marker
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(f"({label})"))


def inline_choices(text: str, labels: str = LETTERS) -> tuple[str, dict[str, str]] | None:
    """Split choices written inline as "(A) text (B) text ..." (labels in order, from the first
    one) off `text`: (the text before the first marker, {label: choice text}). None when `text`
    has no marker for the first label followed by one for the second. Labels are searched one
    after the other from the previous marker; a "(X)" glued to a preceding ASCII letter or digit
    ("Rh(D)") is text, not a marker."""
    first = _marker(labels[0]).search(text)
    if first is None:
        return None
    spans = [(labels[0], first.start(), first.end())]
    for label in labels[1:]:
        m = _marker(label).search(text, spans[-1][2])
        if m is None:
            break
        spans.append((label, m.start(), m.end()))
    if len(spans) < 2:
        return None
    choices = {}
    for i, (label, _start, end) in enumerate(spans):
        stop = spans[i + 1][1] if i + 1 < len(spans) else len(text)
        choices[label] = text[end:stop].strip()
    return text[: first.start()], choices


def split_choices(question: str) -> tuple[str, dict[str, str] | None]:
    """(stem, choices) of a MedXpertQA question: the stem is the text before the last
    "Answer Choices:" header (the whole question, and choices None, when there is none)."""
    at = question.rfind(CHOICES_HEADER)
    if at < 0:
        return question, None
    parsed = inline_choices(question[at + len(CHOICES_HEADER) :])
    return question[:at].rstrip(), (parsed[1] if parsed is not None else {})


def _squash(text: str) -> str:
    return " ".join(text.split())


def _options(raw: object, path: Path | str, line: int | None) -> dict[str, str]:
    """`options` as letter -> text, from a list of {letter, content} or an object."""
    pairs: list[tuple[Any, Any, str]] = []
    if isinstance(raw, list):
        for i, entry in enumerate(raw):
            if not isinstance(entry, dict):
                raise InputError(path, line, f"options[{i}]", f"expected an object with letter and content, got {show(entry)}")
            pairs.append((entry.get("letter"), entry.get("content"), f"options[{i}]"))
    elif isinstance(raw, dict):
        pairs = [(k, v, f"options.{k}") for k, v in raw.items()]
    else:
        raise InputError(path, line, "options", f"expected a list of {{letter, content}} objects, got {show(raw)}")
    options: dict[str, str] = {}
    for letter, content, field in pairs:
        key = str(letter).strip().upper() if isinstance(letter, str) else None
        if key is None or len(key) != 1 or key not in LETTERS:
            raise InputError(path, line, field if isinstance(raw, dict) else f"{field}.letter", f"option letter {show(letter)} is not a letter A-{LETTERS[-1]}")
        if key in options:
            raise InputError(path, line, field, f"option {key} is given twice")
        options[key] = text_field(content, path, line, field if isinstance(raw, dict) else f"{field}.content", numbers=True)
    if "".join(options) != LETTERS[: len(options)] or len(options) < 2:
        raise InputError(path, line, "options", f"expected at least two options lettered A, B, ... in order; got {', '.join(options) or 'none'}")
    return options


def _label(raw: object, path: Path | str, line: int | None) -> str:
    value = raw
    if isinstance(raw, list):
        if len(raw) != 1:
            raise InputError(path, line, "label", f"expected exactly one answer letter, got {show(raw)}")
        value = raw[0]
    if value is None:
        raise InputError(path, line, "label", "is missing")
    if not isinstance(value, str) or len(value.strip()) != 1 or value.strip().upper() not in LETTERS:
        raise InputError(path, line, "label", f"expected an answer letter A-{LETTERS[-1]}, got {show(raw)}")
    return value.strip().upper()


def _disagreement(parsed: dict[str, str], options: dict[str, str]) -> str | None:
    if list(parsed) != list(options):
        return f"the question's {CHOICES_HEADER} block lists {', '.join(parsed) or 'no choices'}, the options are {', '.join(options)}"
    for k, text in options.items():
        if _squash(parsed[k]) != _squash(text):
            return f"option {k} is {show(text)} but the question's {CHOICES_HEADER} block has {show(parsed[k])}"
    return None


def medxpertqa_item(obj: Mapping[str, object], path: Path | str = "<medxpertqa>", line: int | None = None) -> Item:
    """One MedXpertQA row -> Item. `path` and `line` only label errors."""
    question = text_field(obj.get("question"), path, line, "question")
    stem, parsed = split_choices(question)
    if not stem.strip():
        raise InputError(path, line, "question", f"has no stem before its {CHOICES_HEADER} block")
    raw = obj.get("options")
    if raw is None or raw == [] or raw == {}:
        if parsed is None:
            raise InputError(path, line, "options", f"is missing, and the question has no {CHOICES_HEADER} block to take the choices from")
        if len(parsed) < 2 or any(not t for t in parsed.values()):
            raise InputError(path, line, "question", f"its {CHOICES_HEADER} block does not parse as (A) text (B) text ...")
        options = parsed
    else:
        options = _options(raw, path, line)
        if parsed is not None:
            why = _disagreement(parsed, options)
            if why is not None:
                raise InputError(path, line, "options", f"disagree with the question text: {why}")
    answer = _label(obj.get("label"), path, line)
    row_id = obj.get("id")
    if row_id is not None and not str(row_id).strip():
        raise InputError(path, line, "id", "is blank")
    item_id = f"{SOURCE}-{str(row_id).strip() if row_id is not None else line}"
    body = obj.get("body_system")
    subject = (str(body).strip() or None) if body is not None else None
    meta = {k: obj.get(k) for k in ("medical_task", "body_system", "question_type")}
    return build_item(
        path,
        line,
        id=item_id,
        source=SOURCE,
        question=stem.strip(),
        options=options,
        answer=answer,
        subject=subject,
        meta=meta,
        answer_field="label",
    )


def read_medxpertqa(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a MedXpertQA JSON-lines file; a repeated id is an error on its second line."""
    return read_json_items(path, medxpertqa_item)
