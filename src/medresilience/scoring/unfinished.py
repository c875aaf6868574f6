"""Replies that never reach a commitment although they name options: text that repeats the
option list ("A. Metformin B. Insulin C. Glipizide D. Sitagliptin A. Metformin B. ...", "The answer
is A.\\nThe answer is B.\\n..." again and again) or a long passage of its own, and a per-option analysis cut off under an
option's heading ("**Option C:** Glipizide is a sulfonylurea that" and the text stops). What the
reader reads inside such stretches is not the reply's answer; a commitment made before them is.

Both work on labels found by one linear scan and compare short stretches of text: no pattern here
backtracks over a long reply.

May import: option_texts."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .option_texts import norm_text

#: a label standing as a list item: after a space, a line start, a colon or a bracket, then a
#: period, bracket, colon or space ("A. Metformin", "(B)", "答案:A B C D", "C)")
_ITEM = re.compile(r"(?<![^\s:(\[])[(\[]?([A-Z0-9])(?:[.):\]、]|(?=\s|$))")
#: the longest stretch one turn of a loop may take (a repeated option list is short)
_TURN_MAX = 600
_SPACES = re.compile(r"\s+")


def _same(a: str, b: str, last: bool = False) -> bool:
    """Whether two turns of a loop say the same (`last`: b is the final turn, perhaps cut short)."""
    a, b = _SPACES.sub(" ", a).strip(), _SPACES.sub(" ", b).strip()
    return a == b or (last and len(b) >= 2 and a.startswith(b))


def loop_span(text: str, letters: str) -> tuple[int, int] | None:
    """Where the reply repeats a run of two or more different labels three times over with the
    same text each time (the option list, or "The answer is A. ... The answer is D." in turn): from
    the first label of the loop to the label after its last turn (the end of the text when it loops
    to the end), or None. One answer repeated ("Final Answer: C" again and again) is no such loop."""
    items = [(m.start(), m.group(1)) for m in _ITEM.finditer(text) if m.group(1) in letters]
    labels = [label for _, label in items]
    n = len(labels)
    for i in range(n):
        for k in range(2, len(letters) + 1):
            cycle = labels[i : i + k]
            if i + 3 * k > n or len(set(cycle)) != k:
                break
            if labels[i + k : i + 2 * k] != cycle or labels[i + 2 * k : i + 3 * k] != cycle:
                continue
            a, b, c = items[i][0], items[i + k][0], items[i + 2 * k][0]
            d = items[i + 3 * k][0] if i + 3 * k < n else len(text)
            if b - a <= _TURN_MAX and c - b <= _TURN_MAX and _same(text[a:b], text[b:c]) and _same(text[b:c], text[c:d], last=i + 3 * k >= n):
                j = i + 3 * k
                while j < n and labels[j] == cycle[(j - i) % k]:
                    j += 1
                return a, items[j][0] if j < n else len(text)
    return None


#: a passage compared at each line's start, and the shortest run of text that, coming again word for
#: word, makes a reply one that goes round: several sentences (a restated answer line, "The answer is
#: (C).", or a restated sentence of reasoning is far shorter; the corpus's readable replies repeat at
#: most 270 characters)
_PASSAGE = 160
_GOES_ROUND = 600


def repeated_passage(text: str) -> tuple[int, int] | None:
    """Where the longest passage opening a line comes again word for word later in the reply: the
    start of its second turn and the length it runs the same, when that is 600 characters or more;
    else None.
    One dict lookup per line of 40 characters or more: no scan backtracks over a long reply."""
    seen: dict[str, int] = {}
    best: tuple[int, int] | None = None
    pos = 0
    for line in text.split("\n"):
        key = text[pos : pos + _PASSAGE]
        if len(line.strip()) >= 40 and len(key) == _PASSAGE:
            if key in seen:
                first, n = seen[key], _PASSAGE
                while pos + n < len(text) and text[first + n] == text[pos + n] and first + n < pos:
                    n += 1
                if best is None or n > best[1]:
                    best = (pos, n)
            else:
                seen[key] = pos
        pos += len(line) + 1
    return best if best is not None and best[1] >= _GOES_ROUND else None


#: an option's heading opening a line: "Option C: ...", "Option C", "C) ...", "(C) ...", "C. ...",
#: "C: ..." (markup already dropped: "**Option C:**", "### Option C")
_HEADING = re.compile(r"^[ \t>#•*|-]*(?:(?i:option|choice)[ \t]+[(\[]?([A-Z0-9])[)\]]?(?=[ \t]*(?:[.:)\-–—]|$))|[(\[]?([A-Z0-9])[.):\]](?=[ \t]))", re.M)
_OTHER_LABEL = r"(?:(?i:option|choice)[ \t]+{0}\b|\({0}\)|(?<![\w'’]){0}\))"
#: text that ends a sentence (or a quotation or bracket closing one)
_ENDED = re.compile(r"[.!?。！？)\]\"'”’]\s*$")
#: what follows an option's name in its analysis: a separator then words, or a sentence under way
_ANALYSING = re.compile(
    r"^[^\n]*?(?:[:：][ \t]*\S|[ \t][-–—][ \t]+\S|\b(?i:is|are|was|were|can|may|might|could|has|have|this|it|which|because|would|should|does|do)\b)"
)


_ANSWER_WORD = re.compile(r"\b(?i:answer|final|correct\s+(?:option|choice))\b|答案|正确|正確|答え|正解|정답")


#: a line that ends on its verdict on the option ("D. Trisomy 18 - no", "C) Glipizide: incorrect") is complete
_VERDICT_END = re.compile(r"(?:[-–—:|.,;(]\s*(?i:yes|no|correct|incorrect|true|false|wrong|right|likely|unlikely)|[✓✔✗✘❌✅×])\s*$")


def _heading(line: str, letters: str) -> re.Match[str] | None:
    m = _HEADING.match(line)
    return m if m is not None and (m.group(1) or m.group(2)) in letters else None


def _label(m: re.Match[str]) -> str:
    return m.group(1) or m.group(2)


def _alone(m: re.Match[str], line: str) -> bool:
    """A heading that is a title on its own line ("Option C", "### Option C:", "Option C:
    Glipizide"): the lines after it are its text."""
    rest = line[m.end() :].strip(" \t:-–—")
    return not rest or (len(rest) <= 60 and not rest.endswith(".") and not _ANALYSING.search(rest))


def cut_off_analysis(text: str, letters: str, texts: Mapping[str, str] | None = None) -> int | None:
    """When the reply stops in mid-sentence while analysing an option under its heading ("**Option
    C:** Glipizide is a sulfonylurea that", "C) This is the correct", a heading alone at the end)
    after discussing other options (under headings of their own, or in prose by label or by their
    `texts`, normalised as norm_text does): where the analysis of
    the options begins; else None. "B. Insulin glargine\n\nBasal insulin is ... it" (no other
    option discussed before it) is an answer and an explanation cut short, and a last line that
    gives an option's name after a line ending in a colon ("... is:\n(H) 65-year-old female with
    ...") concludes: neither is cut in an analysis."""
    lines = text.rstrip().split("\n")
    last = len(lines) - 1
    # a last line that ends its sentence, or states an answer ("Answer: B"), is no cut analysis
    if _ENDED.search(text) or _ANSWER_WORD.search(lines[last]):
        return None
    m = _heading(lines[last], letters)
    # ... nor is an option's title followed by a line that is no sentence under way
    if m is None and last > 0 and (h := _heading(lines[last - 1], letters)) is not None and _alone(h, lines[last - 1]) and len(lines[last].split()) >= 2:
        m, last = h, last - 1
    elif m is not None and not _alone(m, lines[last]) and (not _ANALYSING.search(lines[last][m.end() :]) or _VERDICT_END.search(lines[last])):
        return None
    above = next((x for x in reversed(lines[:last]) if x.strip()), "")
    at = sum(len(x) + 1 for x in lines[:last])
    # a review of the options opened by a line ending in a colon ("4. Fungua majibu:"), cut off in
    # its first option's analysis titled by the option's own text ("A. <its text>: Chaguo hili ...")
    if m is not None and above.rstrip().endswith((":", "：")) and _titled(lines[last][m.end() :], (texts or {}).get(_label(m), "")):
        return at
    if m is None or above.rstrip().endswith((":", "：")):
        return None
    heads = [h for h in _HEADING.finditer(text, 0, at) if _label(h) in letters]
    label = _label(m)
    others = {_label(h) for h in heads} - {label}
    if not others and not _discussed(text[:at], label, letters, texts or {}):
        return None
    return heads[0].start() if others else at


_TITLE_COLON = re.compile(r"[ \t]*[:：][ \t]*")


def _titled(rest: str, own: str) -> bool:
    """Whether a line's rest after an option's label is the option's own text as a title, a colon,
    then an analysis of three words or more."""
    if not own or (":" not in rest and "：" not in rest):
        return False
    title, _, analysis = re.split(r"([:：])", rest, maxsplit=1)
    return norm_text(title) == own and len(analysis.split()) >= 3


def _discussed(before: str, label: str, letters: str, texts: Mapping[str, str]) -> bool:
    """Whether the text before an option's heading names another option, by label or by text."""
    if any(re.search(_OTHER_LABEL.format(re.escape(x)), before) for x in letters if x != label):
        return True
    said = f" {norm_text(before)} "
    return any(f" {t} " in said for x, t in texts.items() if x != label and t)


def in_option_sections(text: str, start: int, letters: str) -> list[tuple[int, int]]:
    """The stretches after `start` that analyse one option each: a line opened by an option's
    heading, with the lines after a heading alone on its line up to a blank line."""
    out, pos, under = [], start, False
    for line in text[start:].split("\n"):
        end = pos + len(line)
        m = _heading(line, letters)
        if m is not None or (under and line.strip()):
            out.append((pos, end + 1))
        under = (m is not None and _alone(m, line)) or (under and bool(line.strip()) and m is None)
        pos = end + 1
    return out


#: the end of a reply that breaks off where its answer was to follow: "... maybe the answer is",
#: "The correct option would be (", "Answer:"
_STATING = re.compile(
    r"(?:\b(?:(?:correct|final|best|right|most\s+likely)\s+)?(?:answer|option|choice)\s+(?:is|would\s+be|should\s+be|must\s+be|might\s+be|could\s+be|may\s+be)"
    r"|\b(?i:answer)\s*[:：]|答案(?:(?:是|为)[:：]?|[:：]))[\s(\[*]*$",
    re.I,
)


def stops_stating_answer(text: str) -> bool:
    """Whether the reply breaks off just where it was stating its answer."""
    return _STATING.search(text[-80:]) is not None
