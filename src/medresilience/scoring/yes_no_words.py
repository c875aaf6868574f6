"""An answer field answering a yes/no/maybe item (PubMedQA style) in words rather than with the
word itself: "FINAL_ANSWER: Uncertain", "FINAL_ANSWER: Feasible" to "Is ... feasible in ...?", "FINAL_ANSWER:
No association" to "... is there any association?".

The rule, kept by `worded_answer`: only where the item's options are exactly yes, no and maybe (the
caller checks), only from the field's opening words, and never when the field also carries a
contrary word ("not feasible", "uncertain but likely yes", "possibly feasible"). The words are a
small closed list; an echo of the question is read only where it repeats the question's own
predicate (what the question asks of its subject, not the subject itself, and not a question
that denies it: "Is X not feasible?"), so that a yes is the yes the question asks for."""

from __future__ import annotations

import re

_I = re.IGNORECASE

#: words saying the evidence does not decide: the item's "maybe"
MAYBE_WORDS = frozenset(["uncertain", "unclear", "inconclusive", "undetermined", "indeterminate", "equivocal"])

#: words that, anywhere in the field, turn or weaken what its opening words say: the field is then
#: unread (a negation, a hedge, a second answer word, a turn)
_CONTRARY = re.compile(
    r"\b(?:not|no|never|neither|nor|none|yes|maybe|possibly|probably|perhaps|likely|unlikely|partly|partially|sometimes|may|might|could|but|however|although|though|except|uncertain|unclear|depends?|debated|controversial)\b|n['’]t\b",
    _I,
)
#: the opening words of a field: up to the first sentence end, comma, semicolon or dash
_OPENING = re.compile(r"[^.,;:!?\n–—]+")
#: a yes/no question's last clause (after a title's colon or dash): an auxiliary opens it
_ASKS = re.compile(r"(?:^|[:?.]\s+|--\s*|\s[-–—]\s)((?:is|are|was|were|does|do|did|can|could|should|will|would|has|have|had)\b[^?:]*)\?\s*$", _I)
#: what may follow the question's predicate: nothing, or a phrase a preposition opens ("feasible in
#: community palliative care")
_TAIL = re.compile(r"\s*(?:$|(?:in|into|for|among|with|within|after|before|during|at|on|of|to|from|by|than|as|under|over|between|versus|vs\.?)\b)", _I)
_PREPOSITION_BEFORE = re.compile(
    r"\b(?:in|into|for|among|with|within|after|before|during|at|on|of|to|from|by|than|as|under|over|between|versus|vs\.?|the|a|an|any|there)\s*$", _I
)
_NEGATED = re.compile(r"\b(?:not|no|never)\b|n['’]t\b", _I)
#: "No association" to "... is there any association?": the question asks whether a thing exists
_EXISTS = re.compile(r"\b(?:is|are)\s+there\s+(?:(?:any|an?|a\s+\w+)\s+)?", _I)


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'’*-]+", text.casefold())


def _predicate_at(asked: str, phrase: list[str]) -> bool:
    """Whether the words `phrase` stand in the asked clause as its predicate: not first after the
    auxiliary (the subject), not after a preposition or article, and followed by the clause's end or
    a prepositional phrase."""
    pattern = r"\b" + r"[\s-]+".join(re.escape(w) for w in phrase) + r"\b"
    for m in re.finditer(pattern, asked, _I):
        before = asked[: m.start()]
        if len(_words(before)) < 2 or _PREPOSITION_BEFORE.search(before):
            continue
        if _TAIL.match(asked, m.end()):
            return True
    return False


def worded_answer(value: str, question: str | None) -> str | None:
    """ "yes", "no" or "maybe" for an answer field's value in words on a yes/no/maybe item, or None.

    - the opening words are one word of MAYBE_WORDS ("Uncertain"): maybe;
    - the opening words (one to four) repeat the question's own predicate ("Feasible" to "Is an
      advance care planning model feasible in community palliative care?", "Clinically early
      cancer" to "... is it clinically early cancer?"): yes;
    - "No" and a thing the question asks exists ("No association" to "is there any association?"): no;
    and none where the field carries a contrary word anywhere, or the question denies itself."""
    value = value.strip().strip("*_`\"'“”")
    opening = _OPENING.match(value)
    if opening is None:
        return None
    head = _words(opening.group(0))
    if not head or len(head) > 4:
        return None
    if len(head) == 1 and head[0] in MAYBE_WORDS:
        rest = value[opening.end() :]
        return None if _CONTRARY.search(rest) else "maybe"
    asked = _asked(question)
    if asked is None or _NEGATED.search(asked):
        return None
    if head[0] == "no" and len(head) > 1 and not _CONTRARY.search(value[opening.start() + 2 :]):
        thing = head[1:]
        there = _EXISTS.search(asked)
        said = r"\b" + r"[\s-]+".join(re.escape(w) for w in thing) + r"\s*$"
        return "no" if there and re.search(said, asked[there.end() :], _I) else None
    if _CONTRARY.search(value):
        return None
    return "yes" if _predicate_at(asked, head) else None


def _asked(question: str | None) -> str | None:
    """The question's last clause when it is a yes/no question ("Is ... feasible in ...?"), else None."""
    if not question:
        return None
    m = _ASKS.search(question.strip())
    return m.group(1) if m else None
