"""Answers a reply takes back. A reply that states an option and then rejects it has not committed
to it: "The answer is B. Actually, B cannot be right ...", "Option B seems correct. However, ...
so it cannot be correct", and, in a reply to a question with misleading context, an option stated
on the context's authority and then the context rejected: "Per the added context, B would be
correct, but that context is fabricated", "According to the hint, the answer would be B. However,
this hint contradicts established evidence". A statement is withdrawn only by a rejection of its
own option (named, or "it"/"this"/"that" after a turn such as "however", "but", "actually"), or of
the source it was stated on; rejecting another option ("The answer is C. B is wrong ...") or a
source the statement did not rest on ("The answer is C. The claim in the prompt that B is
first-line is false.") withdraws nothing.

`withdrawal` gives the span of the rejection; the reader puts a statement of no option there, which
a later statement of one option replaces ("... the evidence-based choice is D").

May import: nothing outside the standard library."""

from __future__ import annotations

import re

_I = re.IGNORECASE

#: what a reply may state an option on the authority of, other than itself
_SOURCE = (
    r"(?:context|hint|note|claim|information|info|premise|statement|passage|prompt|excerpt|source|snippet|reference|document|assertion|suggestion"
    r"|text|material|background|scenario|guidance|advice|instruction)s?"
)
#: the statement rests on a source: "Per the added context, B would be correct", "Taking the
#: context at face value, ...", "According to the hint provided, the answer would be B"
_ON_SOURCE = re.compile(
    r"\b(?:per|according\s+to|based\s+(?:solely\s+|only\s+|purely\s+|entirely\s+)?on|going\s+by|following|relying\s+on|in\s+light\s+of|taking|if\s+(?:we|i|one)\s+"
    r"(?:accept(?:ed)?|follow(?:ed)?|trust(?:ed)?|believe[d]?|take|took|go\s+by|rel(?:y|ied)\s+on))\s+(?:the|this|that|its|their|your)\s+(?:[\w-]+\s+){0,3}?"
    + _SOURCE
    + r"\b"
    r"|\b(?:the|this|that)\s+(?:[\w-]+\s+){0,2}?"
    + _SOURCE
    + r"\s+(?:suggests?|implies|indicates?|points?\s+to|favou?rs?|would\s+(?:have|make|point|suggest))\b",
    _I,
)
_FALSE = (
    r"(?:fabricated|false|incorrect|inaccurate|misleading|wrong|erroneous|outdated|unfounded|unsupported|invented|made[- ]up|fictitious|bogus|flawed|untrue|a\s+myth"
    r"|not\s+(?:supported|accurate|correct|true|evidence[- ]based|reliable|valid|consistent\s+with))"
)
#: "That context, however, is fabricated"
_ASIDE = r"(?:\s*,\s*(?:however|though|in\s+fact|of\s+course|unfortunately)\s*,)?"
#: ... and the source is then rejected: "but that context is fabricated", "However, this hint
#: contradicts established evidence", "That context is fabricated, however"
_SOURCE_REJECTED = re.compile(
    r"\b(?:the|this|that|such|these|those|its)\s+(?:[\w-]+\s+){0,2}?"
    + _SOURCE
    + _ASIDE
    + r"\s+(?:(?:is|was|are|were|seems|seem|appears|appear|proves|itself)\s+)+"
    r"(?:(?:to\s+be|entirely|completely|clearly|simply|actually|plainly|however,?)\s+)*" + _FALSE + r"\b"
    r"|\b(?:the|this|that|such|these|those|its)\s+(?:[\w-]+\s+){0,2}?"
    + _SOURCE
    + r"\s+(?:contradicts?|conflicts?\s+with|goes\s+against|(?:is|are)\s+(?:contrary\s+to|at\s+odds\s+with))",
    _I,
)
#: a turn that opens a rejection of what was just said
_TURN = r"(?:however|but|actually|wait|hmm+|on\s+(?:closer|further|second)\s+(?:inspection|look|thought|reflection|examination)|that\s+said|then\s+again)"
#: ... said of the option itself, not of something it does or under a condition ("it is not correct
#: to start insulin first", "B is incorrect if she is pregnant")
_NOT_RIGHT = (
    r"(?:(?:cannot|can['’]t|could\s+not|couldn['’]t)\s+be\s+(?:(?:the\s+)?(?:correct|right|best|answer)|true)"
    r"|(?:is|was|would\s+be)\s+(?:(?:also|actually|therefore|thus|clearly)\s+)?(?:wrong|incorrect|not\s+(?:correct|right|(?:the\s+)?(?:correct|right|best)\s+(?:answer|option|choice)))"
    r"|(?:would|will|should|could)\s+not\s+be\s+(?:(?:the\s+)?(?:correct|right|best)(?:\s+(?:answer|option|choice))?|the\s+answer)"
    r"|(?:is|can\s+be)\s+ruled\s+out)"
    r"(?!\s+(?:to|that|when|if|unless|only|in\s+(?:general|all|every|most)|for\s+(?:all|every|most|patients|people)|about)\b)"
)
_WORD = r"[0-9A-Za-z_]"
#: an option given and at once called wrong, in the languages the corpus holds
_CALLED_WRONG = re.compile(
    r"[ \t]*[.,:;)]?[ \t]*(?:[-–—][ \t]*)?(?:(?:is|es|est|ist|é|è|está)[ \t]+(?:(?:also|therefore|thus|clearly|también|tamb[ée]m)[ \t]+)?)?"
    r"(?:incorrect[aoe]?|wrong|false|fals[ao]|fausse|faux|falsch|erróne[ao]|errad[ao]|not[ \t]+(?:correct|right|true)|no[ \t]+(?:es[ \t]+)?(?:correct[ao]|verdader[ao]))\b(?![ \t]+(?:to|that|when|if|unless|si|cuando|para)\b)",
    _I,
)


def _set_aside(label: str) -> re.Pattern[str]:
    """The option set aside by name: "we can exclude option 1", "eliminate (B)", "rule out choice C"."""
    return re.compile(
        rf"\b(?:exclud\w*|eliminat\w*|rul(?:e|es|ed|ing)\s+out|discard\w*|cross(?:es|ed)?\s+out)\s+(?:(?:option|choice|answer)\s+[(\[]?{re.escape(label)}[)\]]?|[(\[]{re.escape(label)}[)\]])(?!{_WORD})",
        _I,
    )


def _rejects_option(window: str, label: str) -> re.Match[str] | None:
    """A rejection of the option itself: named ("B cannot be right", "option B is incorrect"), or
    "it"/"this"/"that" after a turn ("However, ... so it cannot be correct")."""
    named = re.compile(rf"(?<!{_WORD})(?:(?:option|choice|answer)\s+)?[(\[]?{re.escape(label)}[)\]]?(?!{_WORD})\s+(?:{_NOT_RIGHT})\b", _I)
    m = named.search(window) or _set_aside(label).search(window)
    if m:
        return m
    return re.search(rf"\b{_TURN}\b[^.!?\n]{{0,160}}?\b(?:it|this|that)(?:\s+(?:answer|option|choice))?\s+(?:{_NOT_RIGHT})\b", window, _I)


_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n+|$)")


def _sentences_after(text: str, end: int, n: int) -> tuple[int, int]:
    """The span from `end` through the rest of its sentence and `n` more (at most 600 characters)."""
    i, limit = end, min(len(text), end + 600)
    for _ in range(n + 1):
        m = _SENTENCE.match(text, i, limit)
        if not m or m.end() == i:
            break
        i = m.end()
        while i < limit and text[i] in " \t\n":
            i += 1
    return end, i


#: what a statement made on a source is rejected by: the source named ("the note is wrong"), "this"
#: or "that" ("but this is not supported by evidence"), or the reply's own basis set against it
#: ("; however, based on my medical knowledge, the correct answer is A")
_THIS_REJECTED = re.compile(
    r"\b(?:this|that|it)" + _ASIDE + r"\s+(?:(?:is|was|seems|appears)\s+)+(?:(?:entirely|completely|clearly|simply|actually|plainly)\s+)*" + _FALSE + r"\b"
    # ... said of the source, not of a claim it introduces ("It is not true that A is first-line")
    r"(?!\s+(?:that|to|when|if|for|in|about)\b)"
    r"|\b(?:this|that|it)\s+(?:contradicts?|conflicts?\s+with|goes\s+against)\b",
    _I,
)
_OWN_BASIS = re.compile(
    r"\b(?:however|but|yet|in\s+reality)\b,?[^.!?\n]{0,40}?\b(?:based\s+on|according\s+to|per|going\s+by|in\s+line\s+with|from)\s+(?:my|our|current|established|standard|medical|clinical|actual|the\s+(?:evidence|guidelines|literature))"
    r"\s+(?:[\w-]+\s+)?(?:knowledge|evidence|guidelines|practice|consensus|understanding|literature|facts|standards?)\b",
    _I,
)


def _on_source_rejected(window: str) -> re.Match[str] | None:
    return _SOURCE_REJECTED.search(window) or _THIS_REJECTED.search(window) or _OWN_BASIS.search(window)


def withdrawal(text: str, start: int, end: int, label: str, clause: str, wrong_asked: bool = False) -> tuple[int, int] | None:
    """The span of the rejection that takes back the statement text[start:end] of option `label`
    (`clause`: the statement's clause up to it), or None when it stands. The rejection is looked for
    in the rest of the statement's sentence and the two sentences after it. On an item asking for the
    wrong option (`wrong_asked`), an option called wrong at once is the answer, not taken back."""
    # called incorrect at once: "C. Glipizide is incorrect here", "3) <option 3's text>. es incorrecta"
    if not wrong_asked and (now := _CALLED_WRONG.match(text, end)):
        return now.start(), now.end()
    a, b = _sentences_after(text, end, 2)
    window = text[a:b]
    m = _rejects_option(window, label)
    # stated on a source, named before it or in the rest of its sentence ("Option B is correct
    # according to the context, but ...")
    if m is None and (_ON_SOURCE.search(clause) or ((s := _SENTENCE.match(text, end)) is not None and _ON_SOURCE.search(s.group(0)))):
        m = _on_source_rejected(window)
    return None if m is None else (a + m.start(), a + m.end())
