"""An answer the reply gives first and then contradicts in its own reasoning: "1. Your Final Answer: A
... 3. Justification: ... This is the D option.", "Final Answer: B ... the power of the study is 1%"
(1% being option A's text). A careful reader
cannot tell which option such a reply holds: neither the opening answer nor the later one is read.

What counts against the opening answer, in the text after it, where that text never names the
opening option again (by label or by its text; a per-option table naming every label aside):

- a claim by label: "This is the D option", "which is option D";
- an option's whole text as what something is: "... the power of the study is 1% accurately.";
- a sentence linking the case to one other option's text (or its text without a bracketed gloss:
  "... this more closely align with Vitamin B1 deficiency.") that denies or sets aside nothing;
- after a JSON answer field, the reasoning's last claim of an option by label or by its whole text
  ("CPT 20005 is actually the correct code", "option A would be the most appropriate") naming
  another option, even where it named the field's option before (`last_claimed`).

A per-option probability table ('Probs: {"A": 0.4, "B": 0.1, "D": 0.2}') decides nothing: the replies
that give one beside an answer do not rank their answer first often enough to read it as a claim.

May import: option_texts."""

from __future__ import annotations

import re

from .option_texts import DENIED, OptionTexts, norm_text

_I = re.IGNORECASE

#: "This is the D option", "which is option D", "that is choice (D)"
THE_OPTION = re.compile(
    r"\b(?:this|that|which|it)\s+is\s+(?:the\s+)?(?:([A-Za-z0-9])\s+(?:option|choice)\b|(?:option|choice)\s+[(\[]?([A-Za-z0-9])\b[)\]]?)",
    _I,
)
#: "... the power of the study is 1% accurately.": the whole of what follows "is", up to the clause's end
_IS_TEXT = re.compile(r"\b(?:is|are|was|remains)\s+(?P<said>[^.!?\n,;:]{1,80}?)(?:\s+[a-z]+ly)?[ \t]*(?=[.!?\n,;:]|$)", _I)
#: a table of per-option probabilities or confidences: 'Probs: {"A": 0.25, "B": 0, "D": 0.5}'
_TABLE = re.compile(r"""\b(?:probs|probabilit(?:y|ies)|confidences?|likelihoods?)\b["']?\s*[:=]\s*\{([^{}\n]{1,300})\}""", _I)
_PAIR = re.compile(r"""["']?([A-Za-z0-9])["']?\s*:\s*(\d*\.?\d+)""")


def table_span(text: str, letters: str) -> tuple[int, int] | None:
    """Where a table of per-option probabilities over two or more of the item's labels stands."""
    m = _TABLE.search(text)
    return m.span() if m is not None and len({k.upper() for k, _ in _PAIR.findall(m.group(1))} & set(letters)) >= 2 else None


def text_claims(text: str, options: OptionTexts) -> set[str]:
    """The options whose whole text is what something "is" in the text ("... is 1% accurately.")."""
    if not options:
        return set()
    out = set()
    for m in _IS_TEXT.finditer(text):
        label = options.named(m.group("said"), exact_only=True)
        if label is not None:
            out.add(label)
    return out


_SENTENCE = re.compile(r"[^.!?\n]+")
#: a sentence that concedes or sets aside what it names ("While B is also ...", "unlike B")
_ASIDE = re.compile(r"\b(?:while|although|though|whereas|unlike|also|other|alternatives?|could|may|might|but)\b", _I)


#: what links the case to what it names: "align with", "consistent with", "suggests", "points to"
_LINK = re.compile(r"\b(?:align\w*|consistent|compatible|suggest\w*|indicat\w*|point\w*\s+(?:to|towards)|fits?|match\w*|explain\w*|most\s+likely)\b", _I)


def sentence_names(text: str, options: OptionTexts, opening: str) -> set[str]:
    """The options other than the `opening` one that a sentence links the case to by text alone
    among the options, denying and conceding nothing (a text inside the opening option's is its)."""
    if not options:
        return set()
    own = options.texts.get(opening, "")
    out = set()
    for m in _SENTENCE.finditer(text):
        sentence = m.group(0)
        link = _LINK.search(sentence)
        if link is None or DENIED.search(sentence) or _ASIDE.search(sentence):
            continue
        said = f" {norm_text(sentence[link.start() :])} "
        named = {k for k, t in options.texts.items() if len(t) >= 3 and (f" {t} " in said or f" {options.bare.get(k) or chr(0)} " in said)}
        if len(named) == 1 and not any(f" {options.texts[k]} " in f" {own} " for k in named):
            out |= named
    return out - {opening}


_CLAIMED = r"\s+(?:is|would\s+be|remains|seems\s+to\s+be)\s+(?:(?:actually|indeed|therefore|thus|clearly|really)\s+)?(?:the\s+)?(?:correct|right|best|most\s+(?:appropriate|accurate|suitable|likely))\b"


def last_claimed(text: str, letters: str, options: OptionTexts) -> str | None:
    """The option the text claims last, by label ("option A would be the most appropriate") or by its
    whole raw text ("CPT 20005 is actually the correct code"), or None."""
    found = [
        (m.start(), (m.group(1) or "").upper())
        for m in re.finditer(r"\b(?:option|choice|answer)\s+[(\[]?([A-Za-z0-9])\b[)\]]?(?:\s+\([^()\n]{1,80}\))?" + _CLAIMED, text, _I)
        if (m.group(1) or "").upper() in letters
    ]
    for k, raw in options.texts_raw.items() if options else ():
        if k in letters and raw.strip():
            found += [(m.start(), k) for m in re.finditer(rf"(?<![\w.-]){re.escape(raw.strip())}(?![\w-])(?:\s+\([^()\n]{{1,80}}\))?{_CLAIMED}", text, _I)]
    return max(found)[1] if found else None


def names_option(text: str, label: str, options: OptionTexts) -> bool:
    """Whether the text names the option at all: its label standing alone, or its text (or the text
    without a bracketed gloss) as words."""
    if re.search(rf"(?<![\w'’-]){re.escape(label)}(?![\w'’-])", text, re.IGNORECASE if label.isalpha() and label not in "AI" else 0):
        return True
    said = f" {norm_text(text)} "
    return any(t and f" {t} " in said for t in (options.texts.get(label), options.bare.get(label))) if options else False
