"""A reply that reviews every option by its label ("Option A, <text>, may ...", "Neostigmine (option
C) is ...", "(choice D)") and keeps one: the option whose sentences claim it while every other
option's sentences set it aside ("not", "less", "if", "but", "reserved", ...). Where no single
option is kept so, the review names none (an honest unread, never the first option mentioned)."""

from __future__ import annotations

import re

_I = re.IGNORECASE

#: an option named by its label: "(option B)", "(choice D)", "Option A," / "Option A (" / "Option A is"
_NAMED = re.compile(r"\((?:option|choice)[ \t]+([A-Za-z])\)|\b(?:option|choice)[ \t]+([A-Z])\b(?=[ \t]*[,(:]|[ \t]+(?:is|was|would|may|might|can|could)\b)", _I)
#: several options named in one: "Options D and E are incorrect", "Option A, C, D, and E are incorrect"
#: (counted only where the sentence sets them aside)
_SEVERAL_NAMED = re.compile(
    r"\b(?:option|choice)s?[ \t]+([A-Z](?:[ \t]*,[ \t]*[A-Z])*,?[ \t]+(?:and|or)[ \t]+[A-Z])\b(?=[ \t]+(?:are|were|would|may|might|can|could)\b)", _I
)
#: words that set an option aside, or make it conditional, doubtful or lesser ("to rule out a
#: stroke" is a purpose; "is ruled out" sets aside)
_ASIDE = re.compile(
    r"\b(?:not|no|never|neither|nor|unlikely|incorrect|wrong|less|rather|reserved|if|unless|but|however|although|though|while|whereas|only\s+(?:if|when)"
    r"|may|might|could|drastic|inappropriate|irrelevant|unnecessary|(?:is|are|be|been)\s+(?:excluded|ruled\s+out)|other\s+options)\b|n['’]t\b",
    _I,
)
#: phrases with a negative word that set nothing aside ("not only ... but also")
_NOT_ASIDE = re.compile(r"\bnot\s+only\b|\bbut\s+also\b", _I)
#: a claim: the sentence says what something is or would be
_CLAIM = re.compile(r"\b(?:is|are|was|(?:would|should)\s+be)\b", _I)


def _sentences(text: str) -> list[tuple[int, int]]:
    """Each sentence's span (a full stop inside "e.g." or "1.5" does not end one)."""
    spans, start = [], 0
    for m in re.finditer(r"[.!?](?=\s|$)|\n", text):
        if m.end() - start > 1:
            spans.append((start, m.end()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def reviewed_choice(text: str, letters: str) -> tuple[str | None, str] | None:
    """(the kept option or None, how) for a reply that names every option by its label in a review
    (or three or more, setting each aside); None for any other reply."""
    low = text.casefold()
    if len(letters) < 3 or ("option" not in low and "choice" not in low):
        return None
    by_label: dict[str, list[str]] = {}
    for a, b in _sentences(text):
        sentence = text[a:b]
        for label in _labels(sentence):
            by_label.setdefault(label, []).append(sentence)
    if len(by_label) < 3 or not set(by_label) <= set(letters.upper()):
        return None
    kept = [
        label
        for label, sentences in by_label.items()
        if any(_CLAIM.search(s) and len(set(_labels(s))) == 1 for s in sentences) and not any(_ASIDE.search(_NOT_ASIDE.sub(" ", s)) for s in sentences)
    ]
    aside = {label for label, sentences in by_label.items() if all(_ASIDE.search(_NOT_ASIDE.sub(" ", s)) for s in sentences)}
    if set(by_label) != set(letters.upper()):
        # a review of some of the options setting aside each it names names none of them
        return (None, "a review of the options setting aside each it names") if aside == set(by_label) else None
    if len(kept) == 1 and aside == set(by_label) - set(kept):
        return kept[0], f"a review of every option keeping {kept[0]} and setting the others aside"
    return None, f"a review of every option keeping {' and '.join(sorted(kept)) or 'none'}, not one"


def names_in_review(text: str, at: int) -> bool:
    """Whether the text at `at` names an option as a review does ("Option A,", "(choice D)")."""
    return _NAMED.match(text, at) is not None


def _labels(sentence: str) -> list[str]:
    """The options a sentence names by label, one by one or several in one where it sets them aside
    ("Options D and E are incorrect"; "Options A, B and D are typical features" may answer an item
    asking for the exception, and is left to the other rules)."""
    several = (
        [x.upper() for m in _SEVERAL_NAMED.finditer(sentence) for x in re.findall(r"\b[A-Za-z]\b", m.group(1))]
        if _ASIDE.search(_NOT_ASIDE.sub(" ", sentence))
        else []
    )
    return [(m.group(1) or m.group(2)).upper() for m in _NAMED.finditer(sentence)] + several
