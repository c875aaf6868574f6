"""MedJourney multiple-choice items with NUMBERED options (JSON lines), in the layout of the
MedMisBench release's MEDMISJOURNEY config: flat rows ``id``, ``question``, ``answer`` (the number
of the correct option, a digit or an integer) and ``opa``, ``opb``, ... (the texts of options 1, 2,
...). Release rows also carry ``injecta``, ``injectb``, ... and ``injection_content`` /
``injection_provenance``; item loading ignores them.

Two variants are read as well: ``options`` as an object keyed "1", "2", ... (or a list, numbered
in order), the form the study extracted the choices into; and, where no option field holds text,
options written inside the question as "(1) text (2) text ..." (the question is then the text
before "(1)").

The original MedJourney files (Medical-AI-Learning/MedJourney, dp/ep/mp/tp.json: ``prompt``,
``target``, ``keyentity``) list the candidates inline in Chinese, separated by "、", which also
occurs inside candidates; the study extracted them with a model, so they are not read here.

Items keep the numbers as option keys ("1".."9") and the answer as a number key. An option field
that is null, blank, "nan" or '"' counts as absent (a release's columns cover its longest item);
options must be consecutive from the first. Item ids are ``medjourney-{row id}``
(``medjourney-{line}`` for a row without one)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import NUMBERS, Item
from ..runtime.errors import InputError
from ..runtime.fileio import parse_record, show
from ._common import read_json_items, text_field
from .medxpertqa import inline_choices

__all__ = ["OPTION_FIELDS", "SOURCE", "is_medjourney_row", "medjourney_item", "read_medjourney"]

SOURCE = "medjourney"
#: option field -> its number: opa -> "1", opb -> "2", ...
OPTION_FIELDS = {f"op{c}": n for c, n in zip("abcdefghi", NUMBERS)}
_MORE_FIELDS = tuple(f"op{c}" for c in "jklmnopqrstuvwxyz")
_ABSENT = {"", "nan", '"'}


def _present(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return not (isinstance(value, str) and value.strip() in _ABSENT)


def _number(value: object) -> int | None:
    """An option number from an int, an integral float or a string of digits, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def is_medjourney_row(obj: Mapping[str, object]) -> bool:
    """Whether a JSON object looks like a numbered MedJourney row (format detection): its answer
    is a number and its options are opa, ... (without MedMCQA's cop), an object keyed by
    numbers, or written as "(1) ..." inside the question."""
    if _number(obj.get("answer")) is None:
        return False
    if "opa" in obj and "cop" not in obj:
        return True
    options = obj.get("options")
    if isinstance(options, dict) and options and all(str(k).strip().isdigit() for k in options):
        return True
    question = obj.get("question")
    return isinstance(question, str) and inline_choices(question, NUMBERS) is not None


def _flat_options(obj: Mapping[str, object], path: Path | str, line: int | None) -> dict[str, str]:
    """Options from opa, opb, ...: {number: text}."""
    for field in _MORE_FIELDS:
        if _present(obj.get(field)):
            raise InputError(path, line, field, f"at most {len(NUMBERS)} numbered options (opa-opi) are supported")
    options: dict[str, str] = {}
    gap: str | None = None
    for field, number in OPTION_FIELDS.items():
        value = obj.get(field)
        if not _present(value):
            gap = gap or field
            continue
        if gap is not None:
            raise InputError(path, line, gap, f"is empty but a later option ({field}) is given; options must be consecutive")
        options[number] = text_field(value, path, line, field, numbers=True)
    return options


def _object_options(raw: object, path: Path | str, line: int | None) -> dict[str, str]:
    if isinstance(raw, list):
        pairs = [(str(i), v, f"options[{i - 1}]") for i, v in enumerate(raw, 1)]
    elif isinstance(raw, dict):
        pairs = [(str(k).strip(), v, f"options.{k}") for k, v in raw.items()]
    else:
        raise InputError(path, line, "options", f"expected an object of number -> text, got {show(raw)}")
    options: dict[str, str] = {}
    for key, value, field in pairs:
        if not key.isdigit():
            raise InputError(path, line, field, f"option key {show(key)} is not a number (MedJourney options are numbered 1, 2, ...)")
        options[str(int(key))] = text_field(value, path, line, field, numbers=True)
    options = dict(sorted(options.items(), key=lambda kv: int(kv[0])))
    if len(options) > len(NUMBERS):
        raise InputError(path, line, "options", f"at most {len(NUMBERS)} numbered options are supported, got {len(options)}")
    return options


def medjourney_item(obj: Mapping[str, object], path: Path | str = "<medjourney>", line: int | None = None) -> Item:
    """One numbered MedJourney row -> Item. `path` and `line` only label errors."""
    question = text_field(obj.get("question"), path, line, "question")
    if _present(obj.get("options")) and obj.get("options") not in ([], {}):
        options, where = _object_options(obj["options"], path, line), "options"
    else:
        options = _flat_options(obj, path, line)
        where = "opa"
    if not options:
        parsed = inline_choices(question, NUMBERS)
        if parsed is None:
            raise InputError(path, line, "opa", 'no option field holds text and the question has no "(1) ... (2) ..." choices')
        stem, options = parsed
        question, where = stem.rstrip(' :\n\t"').strip(), "question"
        if not question:
            raise InputError(path, line, "question", 'has no text before its "(1) ..." choices')
        blank = [k for k, v in options.items() if not v]
        if blank:
            raise InputError(path, line, "question", f"choice ({blank[0]}) is blank")
    expected = NUMBERS[: len(options)]
    if "".join(options) != expected or len(options) < 2:
        raise InputError(path, line, where, f"expected at least two options numbered 1, 2, ... in order; got {', '.join(options) or 'none'}")
    raw = obj.get("answer")
    if raw is None:
        raise InputError(path, line, "answer", "is missing (the number of the correct option)")
    number = _number(raw)
    if number is None or str(number) not in options:
        raise InputError(
            path,
            line,
            "answer",
            f"expected an option number 1-{len(options)} (MedJourney options are numbered), got {show(raw)}",
        )
    row_id = obj.get("id")
    if row_id is not None and not str(row_id).strip():
        raise InputError(path, line, "id", "is blank")
    item_id = f"{SOURCE}-{str(row_id).strip() if row_id is not None else line}"
    return parse_record(
        Item,
        dict(id=item_id, source=SOURCE, question=question, options=options, answer=str(number), meta={}),
        path,
        line,
    )


def read_medjourney(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a numbered MedJourney JSON-lines file; a repeated id is an error on its
    second line."""
    return read_json_items(path, medjourney_item)
