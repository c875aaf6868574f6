"""PubMedQA-L (ori_pqal.json / test_set.json): ONE JSON object keyed by PMID, each value an object
with QUESTION, CONTEXTS (the abstract's sentences or sections), LABELS (their section labels),
MESHES, YEAR, final_decision (yes / no / maybe), LONG_ANSWER (and reasoning_*_pred).

Each PMID becomes a three-option item: A "yes", B "no", C "maybe", the answer taken from
final_decision; id ``pubmedqa-{PMID}``. The abstract (each CONTEXTS entry prefixed with its LABEL,
"BACKGROUND: ...", one per line) is kept in ``meta["context"]`` for a toolkit that shows it; meta
also keeps YEAR, MESHES and LONG_ANSWER under their own names.

The file is parsed with the stdlib json decoder one PMID at a time, so every error names the line
where the PMID, or the field at fault, is written."""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator, Mapping
from json.decoder import scanstring  # type: ignore[attr-defined]  # public in json.decoder, absent from its stubs
from pathlib import Path
from typing import Any

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import json_value_at, read_text, show
from ._common import IdChecker, build_item, text_field

__all__ = ["ANSWERS", "OPTIONS", "SOURCE", "is_pubmedqa_file", "pubmedqa_item", "read_pubmedqa"]

SOURCE = "pubmedqa"
OPTIONS = {"A": "yes", "B": "no", "C": "maybe"}
ANSWERS = {text: key for key, text in OPTIONS.items()}

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _ws(text: str, pos: int) -> int:
    """The position after the JSON whitespace at `pos` (the pattern matches the empty string)."""
    m = _WS.match(text, pos)
    return pos if m is None else m.end()


_HEAD = re.compile(r'\A\ufeff?[ \t\n\r]*\{[ \t\n\r]*"(\d+)"[ \t\n\r]*:[ \t\n\r]*\{')


class _Lines:
    """Line numbers of positions in a text, counted forward from the last position asked."""

    def __init__(self, text: str):
        self.text, self.pos, self.line = text, 0, 1

    def at(self, pos: int) -> int:
        if pos >= self.pos:
            self.line += self.text.count("\n", self.pos, pos)
        else:
            self.line = self.text.count("\n", 0, pos) + 1
        self.pos = pos
        return self.line


def _members(text: str, pos: int, lines: _Lines, path: Path, what: str) -> Generator[tuple[str, int, int], int, int]:
    """Walk the object whose "{" is at `pos`: yield (key, line of the key, position of the value);
    the caller decodes the value and sends back the position after it."""
    pos = _ws(text, pos + 1)
    if text.startswith("}", pos):
        return pos + 1
    while True:
        if not text.startswith('"', pos):
            raise InputError(path, lines.at(pos), None, f"not valid JSON (expected a quoted key in {what})")
        key_line = lines.at(pos)
        try:
            key, pos = scanstring(text, pos + 1)
        except json.JSONDecodeError as e:
            raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg} at column {e.colno})") from None
        pos = _ws(text, pos)
        if not text.startswith(":", pos):
            raise InputError(path, lines.at(pos), None, f"not valid JSON (expected ':' after key {show(key)})")
        pos = _ws(text, pos + 1)
        pos = yield key, key_line, pos
        pos = _ws(text, pos)
        if text.startswith(",", pos):
            pos = _ws(text, pos + 1)
            continue
        if text.startswith("}", pos):
            return pos + 1
        raise InputError(path, lines.at(pos), None, f"not valid JSON (expected ',' or '}}' in {what})")


def _walk(text: str, pos: int, lines: _Lines, path: Path, what: str, visit) -> int:
    """Drive `_members` over the object at `pos`, `visit(key, line, pos)` returning the position
    after each value; returns the position after the object."""
    gen = _members(text, pos, lines, path, what)
    try:
        key, line, at = next(gen)
        while True:
            key, line, at = gen.send(visit(key, line, at))
    except StopIteration as stop:
        return stop.value


def _entry(text: str, pos: int, lines: _Lines, path: Path, pmid: str) -> tuple[dict[str, Any], dict[str, int], int]:
    """Decode the object of one PMID at `pos`: (fields, field -> line, position after it)."""
    entry: dict[str, object] = {}
    where: dict[str, int] = {}

    def field(key: str, key_line: int, vpos: int) -> int:
        value, end = json_value_at(text, vpos, path)
        if key in entry:
            raise InputError(path, key_line, key, f"is given twice for PMID {pmid}")
        entry[key], where[key] = value, key_line
        return end

    end = _walk(text, pos, lines, path, f"PMID {pmid}", field)
    return entry, where, end


def _text_list(value: object, path: Path, line: int | None, field: str) -> list[str]:
    if not isinstance(value, list):
        raise InputError(path, line, field, f"expected a list of texts, got {show(value)}")
    return [text_field(v, path, line, f"{field}[{i}]") for i, v in enumerate(value)]


def _context(entry: Mapping[str, object], path: Path, where: dict[str, int | None]) -> str | None:
    if entry.get("CONTEXTS") is None:
        return None
    contexts = _text_list(entry["CONTEXTS"], path, where.get("CONTEXTS"), "CONTEXTS")
    if entry.get("LABELS") is None:
        return "\n".join(contexts) or None
    labels = _text_list(entry["LABELS"], path, where.get("LABELS"), "LABELS")
    if len(labels) != len(contexts):
        raise InputError(path, where.get("LABELS"), "LABELS", f"has {len(labels)} labels for {len(contexts)} CONTEXTS")
    return "\n".join(f"{label}: {ctx}" for label, ctx in zip(labels, contexts)) or None


def pubmedqa_item(
    pmid: str, entry: Mapping[str, object], path: Path | str = "<pubmedqa>", line: int | None = None, lines: dict[str, int] | None = None
) -> Item:
    """One PMID's entry -> Item. `path`, `line` (where the PMID is written) and `lines` (field ->
    line, where known) only label errors."""
    path = Path(path)
    where = {k: line for k in entry} | (lines or {})
    if not str(pmid).strip():
        raise InputError(path, line, "PMID", "is blank")
    question = text_field(entry.get("QUESTION"), path, where.get("QUESTION", line), "QUESTION")
    decision = entry.get("final_decision")
    if decision is None:
        raise InputError(path, line, "final_decision", "is missing (expected yes, no or maybe)")
    if not isinstance(decision, str) or decision.strip().lower() not in ANSWERS:
        raise InputError(path, where.get("final_decision", line), "final_decision", f"expected yes, no or maybe, got {show(decision)}")
    meta: dict[str, object] = {"context": _context(entry, path, where)}
    for field in ("YEAR", "MESHES", "LONG_ANSWER"):
        meta[field] = entry.get(field)
    return build_item(
        path,
        line,
        id=f"{SOURCE}-{str(pmid).strip()}",
        source=SOURCE,
        question=question,
        options=OPTIONS,
        answer=ANSWERS[decision.strip().lower()],
        meta=meta,
        answer_field="final_decision",
    )


def read_pubmedqa(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a PubMedQA .json file (one object keyed by PMID), in file order; a
    repeated PMID is an error on its second line."""
    path = Path(path)
    text = read_text(path)
    lines = _Lines(text)
    pos = _ws(text, 0)
    if pos == len(text):
        raise InputError(path, None, None, "is empty (expected one JSON object keyed by PMID)")
    if not text.startswith("{", pos):
        raise InputError(path, lines.at(pos), None, f"expected one JSON object keyed by PMID, found {show(text[pos : pos + 20])}")
    ids = IdChecker(path, field="PMID", what="PMID")
    gen = _members(text, pos, lines, path, "the object keyed by PMID")
    try:
        pmid, line, at = next(gen)
        while True:
            ids.check(pmid, line)
            if not text.startswith("{", at):
                value, _ = json_value_at(text, at, path)
                raise InputError(path, line, "PMID", f"{show(pmid)} should map to an object with QUESTION, CONTEXTS, ..., got {show(value)}")
            entry, where, end = _entry(text, at, lines, path, pmid)
            yield pubmedqa_item(pmid, entry, path, line, where)
            pmid, line, at = gen.send(end)
    except StopIteration as stop:
        end = stop.value
    rest = _ws(text, end)
    if rest != len(text):
        raise InputError(path, lines.at(rest), None, "not valid JSON (extra data after the object keyed by PMID)")


def is_pubmedqa_file(path: Path | str, probe: int = 1 << 20) -> bool:
    """Whether a file has PubMedQA's shape: a JSON object whose first key is a number (a PMID)
    mapping to an object with a QUESTION field. Reads at most `probe` characters."""
    try:
        with Path(path).open(encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(probe)
    except OSError:
        return False
    m = _HEAD.match(head)
    if m is None:
        return False
    try:
        first, _ = _DECODER.raw_decode(head, m.end() - 1)
    except json.JSONDecodeError:
        # the first entry runs past the probe: its keys so far must include QUESTION
        return re.search(r'"QUESTION"[ \t\n\r]*:', head[m.end() :]) is not None
    return isinstance(first, dict) and "QUESTION" in first
