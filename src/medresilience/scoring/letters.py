"""Letter extraction for MCQ replies. Accepts the usual shapes ("B", "(B)", "B.", "Answer: B",
"**B.**", "The answer is B", JSON with an answer field, "B. <option text>") and returns None
(invalid) when the reply names no letter or names two different ones as the answer."""

from __future__ import annotations

import json
import re

_STRONG_CUE = re.compile(
    r"(?:final\s+answer|correct\s+answer|best\s+answer|answer)\s*(?:is|would\s+be|:|=|-)?\s*[:\-]?\s*"
    r"[\*\(\[\"'`\s]*([A-J])(?![A-Za-z])",
    re.IGNORECASE,
)
_WEAK_CUE = re.compile(r"(?:option|choice)\s*(?:is|:)?\s*[\*\(\[\"'`\s]*([A-J])(?![A-Za-z])", re.IGNORECASE)
_HEDGE = re.compile(r"^[\*\)\]\.\s]*(?:or|and|/|,)\s*[\*\(\[]*[A-J](?![A-Za-z])")


def _cued(pattern: re.Pattern[str], text: str, letters: str) -> set[str] | None:
    """Letters named after a cue; None when a cue names two letters ("A or B")."""
    found: set[str] = set()
    for m in pattern.finditer(text):
        if m.group(1) not in letters:
            continue
        if _HEDGE.match(text[m.end(1):]):
            return None
        found.add(m.group(1))
    return found


def _letter_only(text: str, letters: str) -> str | None:
    """'B', '(B)', '[B]', '**B**', 'B.', 'B)', 'B:' possibly followed by the option text."""
    m = re.match(r"^[\s\*_`\"'\(\[]*([A-J])(?:[\s\*_`\"'\)\]\.:,]|$)", text)
    if m and m.group(1) in letters:
        # "A patient ..." or "I think" are words, not letters: the letter must stand alone
        rest = text[m.end(1):]
        if _HEDGE.match(rest):
            return None
        nxt = rest.lstrip(" \t")
        if not rest or not rest[0].isspace() or not nxt or not nxt[0].islower():
            return m.group(1)
    return None


def _from_json(text: str, letters: str) -> str | bool | None:
    s = text.strip()
    if s.startswith("```"):
        s = s.strip("`")
        s = s[s.find("{") :] if "{" in s else s
    if not s.startswith("{"):
        return False
    end = s.rfind("}")
    try:
        obj = json.loads(s[: end + 1])
    except (json.JSONDecodeError, ValueError):
        return False
    if not isinstance(obj, dict):
        return False
    for k in ("answer", "final_answer", "choice", "option", "letter"):
        if k in obj:
            v = str(obj[k]).strip().strip("()[]. ").upper()
            return v if len(v) == 1 and v in letters else None
    return None


def extract_letter(text: str | None, letters: str = "ABCD") -> str | None:
    """The answer letter in a reply, or None when there is none or it is ambiguous."""
    if text is None:
        return None
    t = text.strip()
    if not t:
        return None
    j = _from_json(t, letters)
    if j is not False:
        return j  # type: ignore[return-value]
    first = _letter_only(t, letters)
    if first is not None:
        return first
    for pattern in (_STRONG_CUE, _WEAK_CUE):
        cues = _cued(pattern, t, letters)
        if cues is None or len(cues) > 1:
            return None
        if len(cues) == 1:
            return cues.pop()
    # a lone letter on its own line, e.g. "...\n\nC"
    lone = {m.group(1) for m in re.finditer(r"(?m)^[\s\*\(\[]*([A-J])[\s\*\)\]\.]*$", t) if m.group(1) in letters}
    if len(lone) == 1:
        return lone.pop()
    return None
