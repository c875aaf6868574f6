"""MedQA (USMLE) JSON lines: question, options {A..D or A..E}, answer (the option text), answer_idx
(its letter), meta_info (step1 / step2&3), metamap_phrases.

Item ids are the row's own `id` when it has one, else ``medqa-{line number}``; the letter in
answer_idx is the answer and must name the option whose text is `answer` when both are given."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import LETTERS, Item
from ..runtime.errors import InputError
from ..runtime.fileio import show
from ._common import build_item, read_json_items, text_field

__all__ = ["SOURCE", "medqa_item", "read_medqa"]

SOURCE = "medqa"


def _options(raw: object, path: Path | str, line: int | None) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise InputError(path, line, "options", f"expected an object of letter -> text, got {show(raw)}")
    keyed = {}
    for key, text in raw.items():
        letter = str(key).strip().upper()
        if len(letter) != 1 or letter not in LETTERS:
            raise InputError(path, line, "options", f"option key {show(key)} is not a letter A-{LETTERS[-1]}")
        keyed[letter] = text_field(text, path, line, f"options.{key}", numbers=True)
    options = dict(sorted(keyed.items()))
    if "".join(options) != LETTERS[: len(options)] or len(options) < 2:
        raise InputError(path, line, "options", f"expected at least two options lettered A, B, ...; got {', '.join(options) or 'none'}")
    return options


def medqa_item(obj: Mapping[str, object], path: Path | str = "<medqa>", line: int | None = None) -> Item:
    """One MedQA row -> Item. `path` and `line` only label errors."""
    question = text_field(obj.get("question"), path, line, "question")
    options = _options(obj.get("options"), path, line)
    idx, text = obj.get("answer_idx"), obj.get("answer")
    if idx is not None:
        if not isinstance(idx, str) or idx.strip().upper() not in options:
            raise InputError(path, line, "answer_idx", f"{show(idx)} is not one of the options {', '.join(options)}")
        answer = idx.strip().upper()
        if text is not None and str(text).strip() != options[answer]:
            raise InputError(
                path,
                line,
                "answer",
                f"answer text {show(text)} is not option {answer} ({show(options[answer])}) named by answer_idx",
            )
    elif text is not None:
        hits = [k for k, v in options.items() if v == str(text).strip()]
        if len(hits) != 1:
            raise InputError(path, line, "answer", f"answer text {show(text)} matches {len(hits)} options, expected exactly one")
        answer = hits[0]
    else:
        raise InputError(path, line, "answer_idx", "is missing (and so is 'answer')")
    row_id = obj.get("id")
    if row_id is not None and not str(row_id).strip():
        raise InputError(path, line, "id", "is blank")
    item_id = str(row_id).strip() if row_id is not None else f"{SOURCE}-{line}"
    meta = {"meta_info": obj["meta_info"]} if obj.get("meta_info") is not None else {}
    return build_item(
        path,
        line,
        id=item_id,
        source=SOURCE,
        question=question,
        options=options,
        answer=answer,
        meta=meta,
        answer_field="answer_idx",
    )


def read_medqa(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a MedQA JSON-lines file; a repeated id is an error on its second line."""
    return read_json_items(path, medqa_item)
