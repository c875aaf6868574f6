"""Chinese replies that name the chosen option by its text, not its label: "最适宜的处方是银翘散",
"所以病位在心", "这种情况属于虚热证", "应首选转呆丹", "因此，坐位，胸骨左缘第4肋间处，深吸气末是最易触及
心包摩擦感的".

A sentence (up to 。！？; or a line break) is a claim on an option when it holds that one option's
whole text and no other's, and either
- the text ends a clause right after a word that makes it what the sentence's subject is or
  prescribes: a copula or classifier (是, 为, 即, 属于, 称为, 在于, 在, 位于) or a choice or course
  (首选, 选用, 应该, 治疗 ...): "...的病毒是HBV。", "应该吊销其执业证书"; or
- the text opens a clause and is then called the most or the right one: "<text>是...最佳方法", or
  opens the sentence and a later clause, its subject left out, calls it the most suitable:
  "附桂八味丸具有温阳补肾的功效，最适合治疗此证".

Each is a commitment in the way "The most likely diagnosis is X" is in English: the sentence says
what the answer *is*. It is none when the clause denies or doubts (不, 非, 无, 没, 未, 排除, 鉴别,
可能是, 也许, 如果, 是否, 吗 ...), when the text is one of several joined (和, 或, 及, 与, 、:
"应该是寒和暑"), or when the sentence holds a second option's text ("特点是<B>，<C>，..." restates
options), when it restates an option after its label ("A选项是<A's text>", a walk through the
options), or when a hypothesis precedes it in its sentence (如果, 假如, 若). An option text of one
character is read only where it ends the sentence. An ending all the options share (a formula such
as "主之", "governs it") may be left off: "应选用葛根汤" names "葛根汤主之".

May import: option_texts (the texts come in as a label -> text map, normalised by its `norm_text`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from .option_texts import norm_text

_CJK = re.compile(r"[\u4e00-\u9fff]")
#: a sentence: up to 。！？; (full-width forms arrive as ASCII after NFKC), or a line break; an ASCII
#: period ends none ("旁开1.5寸")
_SENTENCE = re.compile(r"[^。!?;\n]+")
#: the word right before a clause-final option text that makes the text the claim
_BEFORE = re.compile(r"(?:是|为|即|属于|称为|称作|叫做|在于|在|位于|首选|选用|选择|采用|应该|应当|应|诊断为|考虑|治疗)$")
#: ... not when the clause denies or doubts it, or names it as a hypothesis
_DENIES = re.compile(r"不|非|无|没|未|否|排除|除外|鉴别|错误|(?<!最)可能|也许|或许|大概|是否|吗|还是")
#: ... nor when it is one of several joined ("寒和暑", "A、B")
_JOINED = re.compile(r"(?:和|或|或者|及|与|以及|、|跟)$")
#: ... nor an option's text restated after its label ("A选项是脾曲结肠癌": a walk through the options)
_LABELLED = re.compile(r"(?<![a-z])[a-z]\s?(?:选项|項|项)|(?:选项|選項)\s?[a-z](?![a-z])")
#: a hypothesis anywhere before the text in its sentence ("如果以不正当手段取得,就应该...")
_IF = re.compile(r"如果|假如|假设|若|倘若|要是")
#: the text opening a clause, then called the most or the right one: "<text>是...最佳方法"
_CALLED_BEST = re.compile(r"^(?:是|为)[^ ]{0,40}?(?:最|正确|首选)")


_LEAD = re.compile(r"(?:(?:因此|所以|综上所述|综上|故|总之)\s?)?")
_LATER_BEST = re.compile(r" (?:是|为)?最(?:适合|适宜|合适|宜|佳)")


class ZhClaim(NamedTuple):
    """A sentence's claim on an option: the label and the span (in the reply) of its sentence."""

    label: str
    start: int
    end: int


def _held(sentence: str, texts: Mapping[str, str]) -> list[str]:
    """The options whose whole text the normalised sentence holds (one whose text holds another's
    named counts as that one: "银翘散加马勃 玄参" holds "银翘散")."""
    inside = [k for k, t in texts.items() if t and t in sentence]
    return [k for k in inside if not any(j != k and texts[k] in texts[j] and texts[j] in sentence for j in inside)]


def _clause(sentence: str, at: int, end: int) -> tuple[str, str]:
    """The clause text before `at` and after `end` in a normalised sentence (clauses break at spaces)."""
    start = sentence.rfind(" ", 0, at) + 1
    stop = sentence.find(" ", end)
    return sentence[start:at], sentence[end : stop if stop >= 0 else len(sentence)]


def _claims_in(sentence: str, label: str, text: str) -> bool:
    """Whether the normalised sentence claims the option whose text it holds (see the module)."""
    i = sentence.find(text)
    while i >= 0:
        end = i + len(text)
        before, after = _clause(sentence, i, end)
        at_end = end == len(sentence) or sentence[end] == " "
        if len(text) == 1 and end != len(sentence):
            at_end = False
        if not _DENIES.search(before + after) and not _JOINED.search(before) and not _LABELLED.search(before) and not _IF.search(sentence, 0, i):
            if at_end and _BEFORE.search(before):
                return True
            if not before and len(text) > 1 and _CALLED_BEST.match(after):
                return True
            # the text opens the sentence and a later clause, its subject left out, calls it the
            # most suitable: "附桂八味丸具有温阳补肾的功效，最适合治疗此证"
            lead = _LEAD.match(sentence)
            if lead is not None and i == lead.end() and len(text) > 1 and _LATER_BEST.search(sentence, end) and not _DENIES.search(sentence, end):
                return True
        i = sentence.find(text, i + 1)
    return False


def zh_text_claims(text: str, texts: Mapping[str, str]) -> list[ZhClaim]:
    """The sentences of a Chinese reply that claim one option by its text (see the module)."""
    if not texts or not _CJK.search(text):
        return []
    out = []
    # an ending every option shares is a formula a reply may leave off ("...主之"): the first form
    # (the whole texts, then each shorter) that the sentence holds any option in is the one read
    short = _without_shared_end(texts)
    for m in _SENTENCE.finditer(text):
        sentence = norm_text(m.group())
        if not _CJK.search(sentence):
            continue
        for forms in (texts, *short):
            held = _held(sentence, forms)
            if held:
                break
        if len(held) == 1 and _claims_in(sentence, held[0], forms[held[0]]):
            out.append(ZhClaim(held[0], m.start(), m.end()))
    return out


def _without_shared_end(texts: Mapping[str, str]) -> list[dict[str, str]]:
    """The option texts without an ending every one of them shares ("葛根汤主之", "黄连汤主之" without
    "之", then without "主之"), shortest ending first, while at least two characters of each are
    left and they stay distinct (the longest shared ending, "汤主之", would leave the herb "葛根" for
    the formula "葛根汤")."""
    vals = list(texts.values())
    out = []
    n = 1
    while len(vals) > 1 and all(len(v) > n + 1 for v in vals) and len({v[-n] for v in vals}) == 1:
        short = {k: v[:-n] for k, v in texts.items()}
        if len(set(short.values())) == len(short):
            out.append(short)
        n += 1
    return out
