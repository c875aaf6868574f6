"""Diagnosis cases from multiple-choice or free-form items: the questions that ask for the most
likely diagnosis or cause, turned into free-form cases.

A case keeps the item's id, source, options and gold letter (for MCQ mode); its `question` is the
vignette without the final question sentence, its `reference` is the gold option's text (the
answer key of free-text mode), or a free-form item's own answer (such a case has no options: it is
asked in diagnosis mode only), and its meta records the question sentence (`ask`, shown in MCQ
mode after the vignette), the whitespace that separated it from the vignette (`ask_sep`), its kind
(`ask_kind`: diagnosis or cause), the pattern that matched (`ask_pattern`) and an open form of
the question for free-text mode (`open_ask`: "What is the most likely cause of ...?").

The patterns are data (`ASK_PATTERNS`): each has a name, a kind and a regular expression searched
(case-insensitively) in the item's last sentence: questions, and completion stems as MedMCQA
writes them ("The most likely diagnosis is:"). An asking clause must open the sentence or follow
a comma ("According to these results, what is ..."); a question about a property of the diagnosis
("The most likely cause ... has which of the following characteristics?") or one whose answer is
part of a phrase ("A defect in which of the following is ...") does not match.

`diagnosis_cases(items)` works on items of any MCQ source and yields each item as a case or as a
`CaseSkip` with its reason; `load_items_file(path)` reads an items .jsonl (from `medres import`)
or any source file `sources.load_items` reads (the free-form layout, question and answer,
included); `read_diagnosis_cases(path)` is the `diagnosis` import format: the cases of any such
file, its other rows counted by reason."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....records import Item
from ....runtime.errors import InputError
from ....runtime.fileio import read_jsonl
from ....runtime.jsontypes import JSONObject
from .split import split

_LEAD = r"(?:^|[,;:]\s*)"
_LEAD_GROUP = r"(^|[,;:]\s*)"
_WHICH_IS = r"(?:(?:which (?:one )?of the following|what)\s+(?:is|was|could be|would be|may be|might be)|what[’']s)\s+"
_IS = r"\s+(?:is|was)\s+"
_LIKELY = r"(?:(?:the\s+)?most\s+(?:likely|probable)|(?:the\s+)?(?:likely|probable))"
_STEM_END = r"\s+(?:is|would be)\s*[:\-–]?\s*$"
_ABOUT = r"(?:\s+(?:in|of|for)\s+[^,:;?]{1,60}?)?"

#: (name, kind, regular expression) of the questions that ask for a diagnosis or a cause: questions
#: ("Which of the following is the most likely diagnosis?") and completion stems, as MedMCQA writes
#: them ("The most likely diagnosis is:")
ASK_PATTERNS: tuple[dict[str, str], ...] = (
    {"name": "most likely diagnosis", "kind": "diagnosis", "regex": _LEAD + _WHICH_IS + r"(?:the\s+|your\s+)?(?:\w+[’']s\s+)?" + _LIKELY + r"\s+diagnosis\b"},
    {"name": "which diagnosis is most likely", "kind": "diagnosis", "regex": _LEAD + r"which (?:one )?of the following diagnoses" + _IS + _LIKELY + r"\b"},
    {
        "name": "explained by which diagnosis",
        "kind": "diagnosis",
        "regex": r"\b(?:best\s+)?(?:explained|described|characterized)\s+by\s+which (?:one )?of the following diagnoses\b",
    },
    {"name": "the diagnosis", "kind": "diagnosis", "regex": _LEAD + _WHICH_IS + r"(?:the|your)\s+(?:correct\s+|final\s+|tentative\s+)?diagnosis\b"},
    {
        "name": "diagnosis is (stem)",
        "kind": "diagnosis",
        "regex": _LEAD + r"(?:the\s+)?(?:(?:(?:most\s+)?(?:likely|probable)|tentative|correct)\s+)?diagnosis" + _ABOUT + _STEM_END,
    },
    {
        "name": "most likely cause",
        "kind": "cause",
        "regex": _LEAD
        + r"(?:which (?:one )?of the following(?:\s+[\w-]+){0,3}|what)"
        + _IS
        + r"(?:the\s+)?(?:(?:most\s+)?(?:likely|probable)\s+)?(?:underlying\s+|direct\s+)?(?:cause|etiology|etiologic agent|explanation)\b",
    },
    {
        "name": "cause is (stem)",
        "kind": "cause",
        "regex": _LEAD + r"(?:the\s+)?(?:most\s+)?(?:likely|probable)\s+(?:underlying\s+)?(?:cause|etiology)" + _ABOUT + _STEM_END,
    },
)
KINDS = ("diagnosis", "cause")

#: open forms of the question for free-text mode, tried in order; the first that applies is used
OPEN_FORMS: tuple[tuple[str, str], ...] = (
    (_LEAD_GROUP + r"which (?:one )?of the following diagnoses (is|was) (?:the )?most likely\b", r"\1what diagnosis \2 most likely"),
    (r"\b(by|of|with) which (?:one )?of the following diagnoses\b", r"\1 which diagnosis"),
    (_LEAD_GROUP + r"which (?:one )?of the following(?:\s+[\w-]+){0,3}\s+(is|was)\s+", r"\1what \2 "),
)
GENERIC_OPEN = {"diagnosis": "What is the most likely diagnosis?", "cause": "What is the most likely cause of this patient's condition?"}

_COMPILED = [(p["name"], p["kind"], re.compile(p["regex"], re.IGNORECASE)) for p in ASK_PATTERNS]


@dataclass(frozen=True)
class CaseSkip:
    """An item that is not a diagnosis case, with why."""

    item_id: str
    reason: str
    detail: str = ""

    def as_dict(self) -> JSONObject:
        return {"item_id": self.item_id, "reason": self.reason, "detail": self.detail}


def match_ask(sentence: str, kinds: Sequence[str] = KINDS) -> tuple[str, str] | None:
    """(pattern name, kind) of the first pattern of one of `kinds` that the sentence matches."""
    s = clean_ask(sentence)
    for name, kind, rx in _COMPILED:
        if kind in kinds and rx.search(s):
            return name, kind
    return None


def clean_ask(sentence: str) -> str:
    """The question sentence without surrounding whitespace and without an unbalanced closing quote
    (some MedQA questions end in a stray `"`)."""
    s = sentence.strip()
    for q in ('"', "'"):
        if s.endswith(q) and s.count(q) % 2 == 1:
            s = s[:-1].rstrip()
    return s


def open_question(ask: str, kind: str) -> str:
    """The question in open form (no "of the following"), or a generic one of its kind (for a
    completion stem such as "The most likely diagnosis is:")."""
    s = clean_ask(ask)
    if not s.endswith("?"):
        return GENERIC_OPEN[kind]
    for pattern, repl in OPEN_FORMS:
        new, n = re.subn(pattern, repl, s, count=1, flags=re.IGNORECASE)
        if n:
            s = new
            break
    if re.search(r"\bof the following\b", s, re.IGNORECASE):
        return GENERIC_OPEN[kind]
    return s[:1].upper() + s[1:]


def to_case(item: Item, kinds: Sequence[str] = KINDS) -> Item | CaseSkip:
    """The diagnosis case of an MCQ or free-form item, or why it is not one."""
    mcq = item.options is not None and item.answer is not None
    if not mcq and not item.reference:
        return CaseSkip(item.id, "no_reference", "a case needs a reference diagnosis: the gold option of an MCQ item or a free-form answer")
    if "ask" in item.meta and item.reference:
        return item  # already a case
    pieces = split(item.question)
    last = pieces[-1] if pieces else None
    if last is None or last.kind != "sentence":
        return CaseSkip(item.id, "not_a_diagnosis_question", "the question does not end with a question sentence")
    hit = match_ask(last.content, kinds)
    if hit is None:
        return CaseSkip(item.id, "not_a_diagnosis_question", clean_ask(last.content)[-160:])
    vignette_end = len(item.question[: last.start].rstrip())
    vignette = item.question[:vignette_end]
    if not vignette.strip():
        return CaseSkip(item.id, "empty_vignette", "the question is only the question sentence")
    name, kind = hit
    ask = clean_ask(last.content)
    meta = {
        **item.meta,
        "ask": ask,
        "ask_sep": item.question[vignette_end : last.start + len(last.text) - len(last.text.lstrip())] or " ",
        "ask_kind": kind,
        "ask_pattern": name,
        "open_ask": open_question(ask, kind),
    }
    reference = item.options[item.answer] if mcq else item.reference  # type: ignore[index]  # mcq: both set
    return item.model_copy(update={"question": vignette, "reference": reference, "meta": meta})


def diagnosis_cases(items: Iterable[Item], kinds: Sequence[str] = KINDS) -> Iterator[Item | CaseSkip]:
    """Each item as a diagnosis case, or a CaseSkip with its reason, in order."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown question kind(s) {', '.join(unknown)} (known: {', '.join(KINDS)})")
    for it in items:
        yield to_case(it, kinds)


def full_question(case: Item, text: str | None = None) -> str:
    """The case's text (or a perturbed one) followed by its question sentence, as the MCQ shows it."""
    body = case.question if text is None else text
    ask = case.meta.get("ask")
    return body if not ask else f"{body}{case.meta.get('ask_sep', ' ')}{ask}"


ITEM_KEYS = frozenset({"id", "source", "question"})


def load_items_file(path: Path | str, fmt: str = "auto") -> list[Item]:
    """Items from an items .jsonl (one Item per line, as `medres import` writes) or from any source
    file `sources.load_items` reads (MedQA, MedMCQA, MMLU, ...)."""
    from .... import sources

    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    name = str(fmt).strip().lower()
    if name == "auto" and path.suffix.lower() not in (".csv", ".parquet"):
        try:
            with path.open(encoding="utf-8-sig") as fh:
                first = next((line for line in fh if line.strip()), "")
            obj = json.loads(first) if first else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            obj = None
        if isinstance(obj, dict) and set(obj) >= ITEM_KEYS:
            name = "items"
    if name == "items":
        return list(read_jsonl(path, Item))
    return list(sources.load_items(path, fmt=name))


def read_diagnosis_cases(path: Path | str, skips: Any = None) -> Iterator[Item]:
    """The `diagnosis` import format: the diagnosis cases of any file `load_items_file` reads (an
    MCQ source, an items .jsonl, the free-form layout); `skips` (a Counter) counts the other rows
    by reason."""
    for c in diagnosis_cases(load_items_file(path)):
        if isinstance(c, CaseSkip):
            if skips is not None:
                skips[c.reason] += 1
            continue
        yield c
