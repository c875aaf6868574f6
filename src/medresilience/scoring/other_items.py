"""Text a reply writes for items other than the one it was asked: a copy of the item's option
list, a question of its own ("Question: ..."), options of its own, or a run of answers to other
questions. The answer reader (`letters`) reads a reply only up to where it starts answering
another item."""

from __future__ import annotations

import re

from .option_texts import LABEL_LINE, OptionTexts, norm_text

_I = re.IGNORECASE

#: ... in Japanese and Chinese a numbered question heading: "第1の問題:", "第2問：", "第3题:"
_NEW_QUESTION = re.compile(
    r"\n[ \t]*(?:#+[ \t]*)?(?:(?:question|q)[ \t]*\d*[ \t]*[:.：]|第[ \t]*[0-9一二三四五六七八九十]{1,3}[ \t]*の?(?:問題|問|题|題)[ \t]*[:：]?[ \t]*\n)", _I
)


def without_echo(text: str, options: OptionTexts) -> str:
    """The reply without a copy of the whole option list ("A) Fetal hydrocephalus\nB) ...\nE) ..."
    line by line, every option in order): an echo of the question states no answer."""
    if len(options.texts) < 2:
        return text
    lines = text.split("\n")
    want = list(options.texts.items())
    for i in range(len(lines) - len(want) + 1):
        block = [LABEL_LINE.match(lines[i + j]) for j in range(len(want))]
        if all(b and b.group(1).upper() == k and norm_text(b.group(2)) == t for b, (k, t) in zip(block, want, strict=True)):
            return "\n".join(lines[:i] + lines[i + len(want) :])
    return text


#: a line that is only a short answer ("The answer is (G).", "- [response]: The answer is (C).")
_ANSWER_LINES = re.compile(
    r"(?:^[ \t]*(?:[-*][ \t]*)?(?:\[?\w+\]?:[ \t]*)?(?:the[ \t]+)?answer[ \t]+is[ \t]*:?[ \t]*[(\[]?[A-Za-z0-9][)\]]?\.?[ \t]*(?:\n\s*|$)){3,}", re.M | _I
)
_ANSWER_LABEL = re.compile(r"answer[ \t]+is[ \t]*:?[ \t]*[(\[]?([A-Za-z0-9])", _I)


def answer_run(text: str) -> int | None:
    """Where three or more lines in a row that are each only a short answer, naming two or more
    labels, begin ("The answer is (C).\n\nThe answer is (G).\n\nThe answer is (F)."): answers to
    other questions (an answer key, or a base model looping), not to this item."""
    for m in _ANSWER_LINES.finditer(text):
        if len({x.upper() for x in _ANSWER_LABEL.findall(m.group(0))}) > 1:
            return m.start()
    return None


def other_options(text: str, options: OptionTexts) -> int | None:
    """Where a paragraph begins that the reply goes on to write with options of its own ("The
    patient is most likely suffering from\nA. Alzheimer's disease.\nB. ...\nE. ..."): three or
    more lines opened by labels in order, none of them one of this item's options."""
    if not options:
        return None
    for m in _OWN_LIST.finditer(text):
        rows = LABEL_LINE.findall(m.group(0))
        if "".join(k.upper() for k, _ in rows) in "ABCDEFGHIJ" and not any(options.named(t, exact_only=True) for _, t in rows):
            start = text.rfind("\n\n", 0, m.start())
            return start + 2 if start >= 0 else m.start()
    return None


_OWN_LIST = re.compile(r"(?:^[ \t]*[A-J][.)][ \t]+[^\n]+\n?){3,}", re.M)


def new_question(text: str) -> int | None:
    """Where a question the reply goes on to write itself begins ("\n\nQuestion: Which of ...",
    "\n\n第1の問題:\n\n...はどれか。")."""
    m = _NEW_QUESTION.search(text)
    return m.start() if m else None
