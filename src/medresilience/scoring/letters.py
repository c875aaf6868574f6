"""Reading the chosen option from a free-text MCQ reply, the way a careful reader does.

Every place the reply states an answer is collected as a statement with a strength: the study's
JSON answer field ({"answer_letter": "C"}), a final answer ("Final answer: C", \\boxed{C}), an
explicit answer ("Answer: C", "the correct option is C)", "C is the answer", "I'd go with C", a
label alone on a line or opening one) or a leaning ("I think C", "the most likely diagnosis is C").
Statements the reply does not make its own are dropped: those it attributes to others ("the
context claims the answer is B"), asks about ("the answer is B?") or puts under a condition ("if
the answer is B, ..."). The statements are then read in order, as a conclusion is: a later one
replaces an earlier one when it is stronger or when the reply revises itself ("Wait, ... Final
answer: C"); two different options stated with the same strength and no revision, or in one
breath ("B or C"), leave the reply ambiguous: None. So does a reply that states nothing.

Labels are the item's option labels, "A".."J" or "1".."9"; anything not in `letters` is not an
answer, and a label is only read where it stands alone (not "A 45-year-old", "I think", "B12",
"2 mg", "type 2", "1.5", "C. difficile")."""

from __future__ import annotations

import re
from typing import NamedTuple

_I = re.IGNORECASE

# statement strengths, weakest first
LEANING, ANSWER, FINAL, FIELD = 1, 2, 3, 4


class _Said(NamedTuple):
    """One place a reply states an answer: its span, its strength and its label (None: a hedge)."""

    start: int
    end: int
    tier: int
    label: str | None


# --- labels -------------------------------------------------------------------------------

_GLUED = re.compile(r"\w|[.,]\d|[-‐/]\w|['’]\w|%|\.[A-Za-z]")
_GENUS = re.compile(r"\.[ \t]+[a-z]")
_NEXT_WORD = re.compile(r"[ \t]+(\w+)")
_LINKS = frozenset(["because", "since", "as", "given", "due", "for", "which", "is", "was", "would", "seems", "appears", "here", "in", "on", "and", "or", "nor", "vs", "versus"])
_LABEL = re.compile(r"[(\[{]?[ \t]*([A-Za-z0-9])")


def _stands_alone(text: str, end: int) -> bool:
    """The label ending at `end` is a token of its own, not part of a word, number or name."""
    c, rest = text[end - 1], text[end : end + 40]
    # glued to a word, number, hyphen or apostrophe: "B12", "1.5", "B-cell", "I'd", "e.g."
    if _GLUED.match(rest):
        return False
    # a capital, a period and a lowercase word abbreviate a genus: "C. difficile", "E. coli"
    if c.isupper() and _GENUS.match(rest):
        return False
    # "A", "I", a lowercase letter or a digit before a word is an article, a pronoun or a quantity
    # ("A 45-year-old", "I think", "a beta-blocker", "2 mg"), unless the word links ("A because")
    m = _NEXT_WORD.match(rest)
    return not (m and (c in "AI" or c.islower() or c.isdigit()) and m.group(1).lower() not in _LINKS)


def _label_at(text: str, i: int, letters: str) -> tuple[str, int] | None:
    """The option label that starts at i ("C", "(c)", "[3]") and the index after it, or None."""
    m = _LABEL.match(text, i)
    if not m:
        return None
    label, s = m.group(1).upper(), m.start(1)
    # only the item's own labels are answers: "E" is no answer to a four-option item
    if label not in letters:
        return None
    # not the tail of a word or a number: "vitamin", "12"
    if s > 0 and (text[s - 1].isalnum() or text[s - 1] in "'’_"):
        return None
    return (label, m.end(1)) if _stands_alone(text, m.end(1)) else None


_ALTERNATIVE = re.compile(r"[ \t]*[)\]]?[ \t]*\(?[ \t]*(?:(,)|/|&|\bor\b|\band\b|\bnor\b|\bvs\.?|\bversus\b)[ \t]*(?:(?:or|possibly|perhaps|maybe|even|also|option|choice)\b[ \t]*)*", _I)


def _hedged(text: str, end: int, label: str, letters: str) -> bool:
    """A second option named right after the first ("B or C", "B/C", "B and C", "A, B") is a hedge."""
    m = _ALTERNATIVE.match(text, end)
    other = _label_at(text, m.end(), letters) if m else None
    if m is None or other is None or other[0] == label:
        return False
    # after a comma only a bare label counts ("A, B"), not a new clause ("C, B is wrong")
    return not m.group(1) or not _NEXT_WORD.match(text, other[1])


_VALUE_LEAD = re.compile(r"[ \t\"'(\[]*(?:(?:option|choice|letter|answer)\s*:?\s*)?", _I)


def _label_in_value(value: str, letters: str) -> str | None:
    """A field or box names an option when it opens with a lone label: "C", "(c)", "C) Metformin"."""
    lead = _VALUE_LEAD.match(value)
    got = _label_at(value, lead.end() if lead else 0, letters)
    return None if got is None or _hedged(value, got[1], got[0], letters) else got[0]


# --- the reply's text -----------------------------------------------------------------------

_TEX_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_MARKUP = re.compile(r"\*+|`+|__+|\$+|\\[()\[\]]")
_THINK_END = re.compile(r"</think(?:ing)?>", _I)


def _plain(text: str) -> str:
    """Markdown emphasis, code ticks and TeX wrappers say nothing about the answer: drop them."""
    return _MARKUP.sub("", _TEX_WRAP.sub(r"\1", _TEX_WRAP.sub(r"\1", text)))


def _after_thinking(text: str) -> str | None:
    """The text after a closed <think> block: the scratch work is not the answer."""
    parts = _THINK_END.split(text)
    return parts[-1] if len(parts) > 1 else None


# --- statements -------------------------------------------------------------------------------

_FIELD_KEYS = r"answer_letter|final_answer|answer_choice|answer_option|answer_label|correct_answer|correct_option|selected_answer|selected_option|chosen_answer|chosen_option|final_choice"
_FIELD = re.compile(
    rf"""(?:["'](?:{_FIELD_KEYS}|answer|choice|option|letter)["']|\b(?:{_FIELD_KEYS})\b)"""
    r"""\s*:\s*(?:"([^"\n]*)"|'([^'\n]*)'|(\d+)\b|(\(?[A-Za-z]\)?)(?!\w)|(?:null|none|false)\b)""",
    _I,
)
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")


def _field_value(value: str, letters: str) -> str | None:
    """A field's value: a label ("C", "C) Metformin") or a sentence that states one ("The answer is C")."""
    label = _label_in_value(value, letters)
    return label if label is not None or len(value.split()) < 3 else extract_letter(value, letters)


def _fields(text: str, letters: str) -> list[_Said]:
    """The study's JSON answer field is the strongest statement; an unreadable value is no answer."""
    return [_Said(m.start(), m.end(), FIELD, _field_value(m.group(1) or m.group(2) or m.group(3) or m.group(4) or "", letters)) for m in _FIELD.finditer(text)]


def _boxed(text: str, letters: str) -> list[_Said]:
    """\\boxed{C} marks a final answer."""
    return [_Said(m.start(), m.end(), FINAL, _label_in_value(m.group(1), letters)) for m in _BOXED.finditer(text)]


_FILL = (
    r"""(?:[\s:：=>#,"'“”‘’(\[\-–—→]|\bno\.|\b(?:option|choice|letter|number|answer|that|it['’]?s|it\s+is|i\s+think|i\s+believe|i['’]d\s+say|i\s+would\s+say"""
    r"""|one|probably|likely|most\s+likely|clearly|definitely|certainly|actually|therefore|thus|then|still|either|both|between|simply|just)\b)*"""
)
_NOUN = r"(?:option|choice|selection|response|pick)"
_QUAL = r"(?:correct|right|best|single\s+best|most\s+(?:likely|appropriate|accurate)|my|our|final|true|real|actual)"
_SURE = r"(?:is|would\s+be|will\s+be|should\s+be|must\s+be|has\s+to\s+be|remains)\b"
_UNSURE = r"(?:might\s+be|could\s+be|may\s+be|seems\s+to\s+be|appears\s+to\s+be)\b"
_ABOUT = r"(?:\s+(?:to\s+(?:this|the)\s+question|here|for\s+this\s+(?:patient|question|case|item)))?"
_SEP = r"[ \t]*(?:[:：=→]|->|[-–—](?=\s)|,\s*which\s+is\b|\n)"
_ANSWER_NOUN = rf"\b(?:(?:{_QUAL}\s+)*(?:answer|ans\b\.?(?=\s*[:：=]))|(?:{_QUAL}\s+)+(?:answer\s+)?{_NOUN})\b{_ABOUT}"
_CONTENT = r"(?:next\s+(?:best\s+)?step(?:\s+in\s+management)?|diagnosis|treatment|management|intervention|explanation|drug|medication|test|cause|mechanism)"

# (cue, strength, whether the label must end its phrase); the label follows the cue
_CUES: tuple[tuple[re.Pattern[str], int, bool], ...] = (
    # "Final answer: C", "my final answer is (C)"
    (re.compile(rf"\b(?:final|ultimate)\s+(?:answer|choice|selection|response)\b{_ABOUT}(?:\s+(?:is|would\s+be|will\s+be)\b)?{_FILL}", _I), FINAL, False),
    # "Answer: C", "The correct answer is C", "The correct option is C) Metformin", "**Answer**\nC"
    (re.compile(rf"{_ANSWER_NOUN}(?:\s+{_SURE}|{_SEP}|[ \t]+(?=[(\[])){_FILL}", _I), ANSWER, False),
    # "I'd go with C", "I choose B", "Going with D"
    (re.compile(rf"(?:\b(?:i|we)(?:['’]d|['’]ll|['’]m\s+going\s+to|\s+(?:would|will|shall|must|have\s+to|had\s+to|am\s+going\s+to))?\s+(?:go\s+with|went\s+with|choose|chose|pick|picked|select|selected|opt\s+for|say|answer|mark|settle\s+on)|\b(?:i['’]m\s+|i\s+am\s+)?going\s+with|\blet['’]s\s+go\s+with)\b{_FILL}", _I), ANSWER, False),
    # "answer D." without a colon (the label ends the phrase: "the answer A patient ..." is no answer)
    (re.compile(rf"\b(?:{_QUAL}\s+)*answer[ \t]+", _I), ANSWER, True),
    # "A reasonable choice would be C"
    (re.compile(rf"\b(?:reasonable|appropriate|preferred|safest|better|good|sensible)\s+(?:answer|option|choice)\s+{_SURE}{_FILL}", _I), LEANING, False),
    # "Option: C" opening a line
    (re.compile(rf"^[ \t]*(?:option|choice|letter)[ \t]*:{_FILL}", _I | re.M), ANSWER, False),
    # "The answer might be B"
    (re.compile(rf"{_ANSWER_NOUN}\s+{_UNSURE}{_FILL}", _I), LEANING, False),
    # "The most likely diagnosis is C) Sarcoidosis"
    (re.compile(rf"\b(?:{_QUAL}\s+)+(?:(?:initial|first|next|definitive|underlying|immediate)\s+)?{_CONTENT}(?:\s+(?:is|would\s+be)\b|[ \t]*:){_FILL}", _I), LEANING, False),
    # "The patient needs option B"
    (re.compile(r"\b(?:needs?|requires?|recommend|favou?r|prefer)\s+(?:option|choice)\s+", _I), LEANING, False),
    # "By elimination, D", "which leaves C"
    (re.compile(rf"\b(?:by\s+(?:(?:the\s+)?process\s+of\s+)?elimination|(?:that|which|this)\s+leaves(?:\s+(?:us\s+with|only))?){_FILL}", _I), ANSWER, False),
    # "Probably B, but I'm not certain" opening a line
    (re.compile(r"^[ \t]*(?:probably|most\s+likely|likely|maybe|perhaps)[ \t,:]+", _I | re.M), LEANING, False),
    # "... but it's A." (the label ends the phrase: "it's a good question" is no answer)
    (re.compile(r"\bit(?:['’]s|\s+is)\s+(?:(?:definitely|clearly|probably|likely|most\s+likely|option|choice)\s+)*", _I), LEANING, True),
    # "Therefore, C." (the label ends the phrase: "So B is wrong" is no answer)
    (re.compile(r"\b(?:so|therefore|thus|hence|in\s+conclusion|ultimately|overall|on\s+reflection|on\s+second\s+thought)[ \t]*[,:]?[ \t]+(?:(?:option|choice)[ \t]+)?", _I), ANSWER, True),
    # "which corresponds to option C", "this matches option B"
    (re.compile(r"\b(?:corresponds?\s+to|matches|fits)\s+(?:option|choice|answer)\s+", _I), LEANING, False),
    # "I think C.", "leaning towards C" (the label ends the phrase: "I think B is wrong" is no answer)
    (re.compile(r"\b(?:i\s+(?:think|believe|guess|suspect|feel)|i['’]m\s+leaning|leaning|i(?:['’]d|\s+would)?\s+lean)\s+(?:towards?\s+|to\s+)?(?:(?:it['’]s|it\s+is|that|option|choice)\s+)*", _I), LEANING, True),
)

_NAMED_TEXT = re.compile(r"([\w ,'’/-]{1,60}?)\s*\((?:option|choice)?\s*([A-Za-z0-9])\)", _I)
_NOT_OPTION_TEXT = re.compile(r"\b(?:not|because|since|as|which|that|when|while|where|if|context|claims?)\b|n['’]t\b", _I)
_PAREN_LABEL = re.compile(r"\((?:option|choice)?\s*([A-Za-z0-9])\)", _I)
_DISOWNED = re.compile(r"\b(?:wrong|incorrect|tempting|obvious|trap|misleading|suggested|proposed|claimed|expected|other|alternative|naive|initial|original|previous|intuitive|their|its|another)\s+$", _I)
_SENTENCE_END = re.compile(r"[.!?\n]")


def _named_by_text(text: str, i: int, letters: str) -> tuple[str | None, int] | None:
    """'The answer is Metformin (C)': the option's text, then its label in parentheses."""
    m = _NAMED_TEXT.match(text, i)
    if not m or len(m.group(1).split()) > 6 or _NOT_OPTION_TEXT.search(m.group(1)) or m.group(2).upper() not in letters:
        return None
    stop = _SENTENCE_END.search(text, m.end())
    others = {g.upper() for g in _PAREN_LABEL.findall(text, m.end(), stop.start() if stop else len(text))} & set(letters)
    # "Metformin (C) or insulin (D)" names two options
    return (m.group(2).upper() if others <= {m.group(2).upper()} else None), m.end()


def _cued(text: str, letters: str) -> list[_Said]:
    """Statements where a cue introduces the label: "Answer: C", "the answer is (C)", "I'd go with C"."""
    said = []
    for pattern, tier, bare in _CUES:
        for m in pattern.finditer(text):
            # "the wrong answer is B", "the tempting answer is B" are not the reply's answer
            if _DISOWNED.search(text, max(0, m.start() - 30), m.start()):
                continue
            got: tuple[str | None, int] | None = _label_at(text, m.end(), letters)
            if got is None and tier >= ANSWER:
                got = _named_by_text(text, m.end(), letters)
            if got is None or (bare and _NEXT_WORD.match(text, got[1])):
                continue
            label, end = got
            if label is not None and _hedged(text, end, label, letters):
                label = None
            said.append(_Said(m.start(), end, tier, label))
    return said


_CLAIM = re.compile(
    r"(?<![\w'’.-])((?:option|choice|letter|answer)\s+)?([(\[]?)([A-Za-z0-9])([)\]]?)[ \t]+(?:is|would\s+be|must\s+be|seems\s+to\s+be|remains)\s+"
    r"(?:(?:definitely|clearly|certainly|probably|likely|indeed|therefore|thus|still)\s+)?(?:(?:the|my|our)\s+)?"
    r"((?:(?:final|correct|right|best|single\s+best|most\s+(?:likely|appropriate))\s+)*)(answer|option|choice|response|one|" + _CONTENT + r")\b",
    _I,
)
_RIGHT = re.compile(
    r"(?<![\w'’.-])((?:option|choice|letter|answer)\s+)?([(\[]?)([A-Za-z0-9])([)\]]?)[ \t]+(?:is|seems|appears)(?:\s+to\s+be)?\s+"
    r"(?:(?:definitely|clearly|certainly|probably|likely|indeed|therefore|thus)\s+)?(?:the\s+)?(?:correct|right|best|most\s+(?:appropriate|likely))"
    r"(?=[ \t]*(?:[.!,;:)\n]|$|because|since|as|given|here|[-–—]))",
    _I,
)
_CLAUSE_OPENS = re.compile(r"(?:^|[.!?;:,\n–—]|\s-|\b(?:so|thus|therefore|hence|then|clearly|think|believe|feel|guess|say|that|and|no|yes|actually|wait|ultimately|overall|finally)\b)[\s\"'“‘(\[>#-]*$", _I)


def _claims(text: str, letters: str) -> list[_Said]:
    """Statements that name the label first: "C is the answer", "Option B is correct"."""
    said = []
    for pattern in (_CLAIM, _RIGHT):
        for m in pattern.finditer(text):
            label = m.group(3).upper()
            if label not in letters or not _stands_alone(text, m.end(3)):
                continue
            # the label opens its clause ("So C is the answer") unless it is named as an option
            # ("Option B is correct", "Metformin (C) is correct"): "Vitamin B is the answer" names a vitamin
            named = m.group(1) or (m.group(2) == "(" and m.group(4) == ")")
            if not named and not _CLAUSE_OPENS.search(text, max(0, m.start() - 40), m.start()):
                continue
            if pattern is _CLAIM:
                quals, noun = m.group(5).lower(), m.group(6).lower()
                # "C is the right one", "C is the best treatment": a bare "one"/"treatment" says nothing
                if noun not in ("answer", "option", "choice", "response") and not quals:
                    continue
                tier = FINAL if "final" in quals else ANSWER
            else:
                tier = LEANING
            said.append(_Said(m.start(), m.end(), tier, label))
    return said


_LONE = re.compile(r"^[ \t>#•-]*(?:(?:option|choice|letter|answer)[ \t]+)?[(\[]?[ \t]*([A-Za-z0-9])[ \t]*[)\]]?[ \t.!]*$", re.M | _I)
_OPENER = re.compile(r"^[ \t>#•-]*(?:[Oo]ption[ \t]+|[Cc]hoice[ \t]+)?[(\[]?([A-Z0-9])(?:[)\]]|[.:](?=[ \t])|[ \t]+[-–—](?=[ \t])|[ \t]*[–—]|[ \t]+(?=\())[ \t]*\S", re.M)
_VERDICT = re.compile(r"[ \t]*(?:correct|right|true|best\s+answer|this\s+is\s+(?:the\s+)?(?:correct|right|best))\b", _I)
_ROMAN = re.compile(r"^[ \t>#•-]*II[.)]", re.M)


def _lines(text: str, letters: str) -> list[_Said]:
    """A label alone on a line ("C", "(C)", "Option 2") or opening one ("B. Metformin")."""
    lone = [_Said(m.start(), m.end(), ANSWER, m.group(1).upper()) for m in _LONE.finditer(text) if m.group(1).upper() in letters]
    openers = [m for m in _OPENER.finditer(text) if m.group(1) in letters and _stands_alone(text, m.end(1))]
    # "I." opening a line is a Roman numeral when another line opens with "II."
    if _ROMAN.search(text):
        openers = [m for m in openers if m.group(1) != "I"]
    # lines opened by two or more different labels are a list (restated options, numbered steps);
    # in such a list the line marked "correct" ("C: correct, ...") is a leaning towards its option
    if len({m.group(1) for m in openers}) > 1:
        return lone + [_Said(m.start(), m.end(), LEANING, m.group(1)) for m in openers if _VERDICT.match(text, m.end() - 1)]
    # "C (or possibly D)" opening a line is a hedge
    return lone + [_Said(m.start(), m.end(1), ANSWER, None if _hedged(text, m.end(1), m.group(1), letters) else m.group(1)) for m in openers]


# --- whose statement it is ------------------------------------------------------------------

_CLAUSE_START = re.compile(r"[.!?;\n]|\b(?:but|however|whereas|although|though|yet)\b|\band\s+(?=(?:i|we)\b)", _I)
_REPORTED = re.compile(
    r"\b(?:claim(?:s|ed)?|says|said|states|stated|asserts?|asserted|argues|argued|alleges?|alleged|insists?|purports?|suggests?\s+that|implies"
    r"|would\s+have\s+(?:us|you|me)\s+(?:believe|think|choose|pick)|wants\s+(?:us|you|me)\s+to|quoted)\b",
    _I,
)
_IF_BEFORE = re.compile(r"\b(?:if|unless|whether|suppose|supposing|assuming)\s+(?:the\s+|option\s+|choice\s+|it\s+(?:is|were)\s+)?$", _I)
_FORCED = re.compile(r"(?:i|we)\s+(?:had|have|must)\b|forced\b", _I)
_IF = re.compile(r"\b(?:if|unless|were)\b(?!\s+(?:i|we)\s+(?:had|have|must)\b)(?!\s+forced\b)", _I)
_COUNTERFACTUAL = re.compile(r"\b(?:would|could|might)\b", _I)
_REJECTED_AFTER = re.compile(r"(?:[^.!?\n]*?\bbut\s+(?:it|this|that)(?:['’]s|\s+is)|\s*(?:is|was))\s+(?:wrong|incorrect|false|misleading|outdated|not\s+(?:correct|true|right|supported))\b", _I)
_DISCREDITED_SOURCE = re.compile(r"\b(?:according\s+to|as\s+(?:claimed|stated|suggested)\s+(?:by|in))\s+the\s+(?:misleading|incorrect|false|wrong|outdated|erroneous)\b", _I)
_ASKED = re.compile(r"[ \t)\]\"'’”]*(?:,?[ \t]*(?:right|correct|maybe|perhaps))?[ \t]*\?", _I)


def _clause_before(text: str, start: int) -> str:
    """The text from the start of the statement's clause up to the statement."""
    window = max(0, start - 300)
    last = window
    for m in _CLAUSE_START.finditer(text, window, start):
        last = m.end()
    return text[last:start]


def _sentence_after(text: str, end: int) -> str:
    """The rest of the statement's sentence."""
    stop = _SENTENCE_END.search(text, end)
    return text[end : stop.start() if stop else len(text)]


def _own(text: str, s: _Said) -> bool:
    """Whether the reply makes the statement itself (the JSON answer field always is its own)."""
    if s.tier == FIELD:
        return True
    before = _clause_before(text, s.start)
    # attributed to others: "the context claims the answer is B", "the note says B is the best answer"
    if _REPORTED.search(before):
        return False
    # a hypothesis under test: "if the answer is B, ...", "whether B is correct"
    if _IF_BEFORE.search(before) and not _FORCED.match(text, s.start):
        return False
    # a counterfactual: "if she were pregnant, the answer would be B", "B would be the answer if ..."
    if _COUNTERFACTUAL.search(text, s.start, s.end) and (_IF.search(before) or _IF.search(_sentence_after(text, s.end))):
        return False
    # rejected in the same sentence: "... that option D is correct is false", "B is the answer, but that is wrong",
    # "B is the answer according to the misleading context"
    after = _sentence_after(text, s.end)
    if _REJECTED_AFTER.match(after) or _DISCREDITED_SOURCE.search(after):
        return False
    # a question: "So the answer is B?"
    return not _ASKED.match(text, s.end)


# --- reading the statements in order ----------------------------------------------------------------

_REVISION = re.compile(
    r"\b(?:wait|actually|on\s+second\s+thought|reconsider\w*|re-?evaluat\w*|re-?examin\w*|re-?check\w*|rethink\w*|re-think\w*|correction|scratch\s+that"
    r"|i\s+was\s+wrong|(?:a|my)\s+mistake|i\s+misread|revis\w+|change\s+my\s+answer|upon\s+(?:further\s+)?reflection|on\s+reflection"
    r"|after\s+(?:further\s+)?(?:consideration|review)|hmm+|no(?=[,!]\s)|that['’]s\s+(?:not\s+right|wrong))\b",
    _I,
)
_CONCLUSION = re.compile(r"\b(?:so|therefore|thus|hence|in\s+conclusion|in\s+summary|overall|ultimately|finally|to\s+conclude|in\s+the\s+end|all\s+things\s+considered|taken\s+together)\b", _I)


def _replaces(text: str, cur: _Said, s: _Said) -> bool:
    """Whether a later statement naming another option (or a hedge) replaces the current answer."""
    # a later single answer at least as strong settles an earlier hedge ("B or C ... Answer: C")
    if cur.label is None and s.label is not None and s.tier >= cur.tier:
        return True
    # the reply revises itself ("Wait, ... the answer is C"): the revised answer stands
    if _REVISION.search(text, cur.end, s.start):
        return True
    # a stronger statement ("Answer: B ... Final answer: C"), or a conclusion as strong ("... Therefore, the answer is C")
    return s.tier > cur.tier or (s.tier == cur.tier and bool(_CONCLUSION.search(_clause_before(text, s.start))))


def _settle(text: str, said: list[_Said]) -> str | None:
    """The label the reply ends on: statements are read in order, as a reader follows a conclusion."""
    cur: _Said | None = None
    for s in sorted(said, key=lambda s: (s.start, -s.tier)):
        if cur is None:
            cur = s
        # the same option again: keep the strongest wording of it
        elif s.label is not None and s.label == cur.label:
            cur = s._replace(tier=max(s.tier, cur.tier))
        elif _replaces(text, cur, s):
            cur = s
        # two options stated as strongly, without a revision, are ambiguous; a weaker mention
        # after the answer is explanation ("Answer: C. Option B is correct only in ...")
        elif s.tier == cur.tier:
            cur = _Said(cur.start, s.end, cur.tier, None)
    return cur.label if cur else None


def _statements(text: str, letters: str) -> list[_Said]:
    """Every statement of an answer that the reply makes its own."""
    found = _fields(text, letters) + _boxed(text, letters) + _cued(text, letters) + _claims(text, letters) + _lines(text, letters)
    return [s for s in found if _own(text, s)]


def extract_letter(text: str | None, letters: str = "ABCD") -> str | None:
    """The option label a reply chooses (one of `letters`), or None when it names none or is ambiguous."""
    if not text or not text.strip():
        return None
    plain = _plain(text)
    tail = _after_thinking(plain)
    if tail is not None and (said := _statements(tail, letters)):
        return _settle(tail, said)
    return _settle(plain, _statements(plain, letters))
