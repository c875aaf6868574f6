"""Items that ask for the wrong option, and the replies that answer them by calling one option wrong.

An item whose question asks for the incorrect statement, the exception or the one that does not
belong ("Which of the following is NOT ...", "... all of the following EXCEPT", "señale la
afirmación INCORRECTA", "下列哪项是错误的", "不属于...的是") is answered by naming the option that is
wrong: "因此D选项是不正确的", "Option C is false", "选项E中的'...'是错误的". On any other item the same
words only set an option aside, so they are read as a commitment only when the question itself asks
for the wrong one (`asks_for_wrong`). A reply may also answer such an item by restating the
question's own negated predicate with one option's text as its subject ("La vacuna antigripal no
debe administrarse a un lactante ..." for "¿Cuál ... NO debe administrarse a un lactante ...?"): the
echo carries the polarity, so no reading of "incorrect" is needed.

`called_wrong` gives each place a reply calls one option wrong, by its label or by such an echo;
the reader takes each as a leaning (an explicit answer outweighs it; two options so called leave the
reply ambiguous). Not read: a wrong-word denied ("no es incorrecta", "并非错误", "not false"), two
labels in the one clause, a sentence holding two options' texts.

May import: option_texts (for norm_text)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from .option_texts import norm_text

_I = re.IGNORECASE

#: the stem of a question asking for the wrong option, in the languages of the corpus (capitals are
#: the exam's own emphasis: "NOT", "EXCEPTO", "INCORRECTA"; "NO" before a lowercase word, not the
#: molecule)
_ASKS_CAPS = re.compile(
    r"\b(?:EXCEPT|NOT(?=\s+[a-z])|FALSE|INCORRECT|UNTRUE|EXCEPTO|SALVO|INCORRECTA|FALSA|NO(?=\s+[a-záéíóúñ])|NÃO(?=\s+[a-zà-ú])|EXCETO|INCORRETA|SAUF|FAUSSE|INEXACTE|AUSSER|AUẞER|FALSCH|NICHT)\b"
)
_ASKS_WORDS = re.compile(
    r"\b(?:all\s+(?:of\s+)?the\s+following\b.*\bexcept|which\s+(?:of\s+the\s+following\s+)?(?:\w+\s+){0,3}?(?:is|are|does|do|would|should|can)(?:\s+not\b|n['’]t\b)|which\s+(?:of\s+the\s+following\s+)?(?:statements?\s+)?(?:is|are)\s+(?:not\s+(?:true|correct|accurate)|incorrect|false|untrue|wrong|inaccurate)"
    r"|(?:incorrect|false|untrue|wrong|inaccurate)\s+statement|except\s*[:?]?\s*$"
    r"|(?:afirmaci[oó]n|respuesta|opci[oó]n|proposici[oó]n)\s+(?:incorrecta|falsa|err[oó]nea)|excepto|señale\s+la\s+(?:incorrecta|falsa)"
    r"|(?:afirma[çc][aã]o|alternativa|op[çc][aã]o)\s+(?:incorreta|falsa|errada)|exceto|affirmation\s+(?:fausse|inexacte)|sauf)\b"
    r"|错误|不正确|不属于|不属|不包括|除外|不是|不符合|不宜|不应|不恰当|不妥|不对|誤っている|誤り|正しくない|含まれない|該当しない|틀린|옳지\s*않은|아닌\s*것",
    _I,
)
#: an option list appended to the question ("Options: A) ...", "A. ..." lines): not the stem
_OPTION_LIST = re.compile(r"\n\s*(?:options?|choices?|alternativ\w*|opciones)\s*:|\n\s*[(\[]?[A-Ja-j1-9][.)\]:]\s", _I)


def _stem(question: str) -> str:
    """The question's last sentence (its stem), without an appended option list."""
    cut = _OPTION_LIST.search(question)
    text = (question[: cut.start()] if cut else question).strip()
    lines = [x for x in text.splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    # a sentence of a word at least (not the blank "（  ）" of a Chinese item, nor a stray ":")
    parts = [p for p in re.split(r"(?<=[.!?。！？])\s*(?=\S)", last.strip()) if re.search(r"[^\W_]", p)]
    return parts[-1] if parts else last


def asks_for_wrong(question: str | None) -> bool:
    """Whether an item's question asks for the wrong option (the exception, the false statement)."""
    if not question:
        return False
    stem = _dehyphen(_stem(question))
    return bool(_ASKS_CAPS.search(stem) or _ASKS_WORDS.search(stem))


def _dehyphen(text: str) -> str:
    """A word a typeset exam broke at a line ("admi-nistrarse", "INCO-RRECTA") made whole again."""
    return re.sub(r"(?<=[a-záéíóúñ])-\s*(?=[a-záéíóúñ])", "", text, flags=_I)


class Called(NamedTuple):
    start: int
    end: int
    label: str


#: calling something wrong, in the languages of the corpus
_WRONG = (
    r"(?:incorrect[aoe]?s?|false|fals[ao]s?|wrong|untrue|inaccurate|erróne[ao]|errone[ao]|errad[ao]|fausse|faux|inexacte|falsch|felaktig"
    r"|not\s+(?:true|correct|accurate)|no\s+es\s+(?:correct[ao]|ciert[ao]|verdader[ao])"
    r"|不正确|错误|不对|不属于|不属|不符合|誤り|誤っている|正しくない|틀린|틀렸)"
)
#: ... denied: "no es incorrecta", "not false", "并非错误", "不是错误"
_DENIED_BEFORE = re.compile(r"(?:\b(?:not|no|never|nicht|pas|n[aã]o)\s+(?:\w+\s+){0,1}|并非|不是|并不|並非)$", _I)
#: an option named by its label: "option D", "D选项", "选项E", "(C)", "la opción 3", "3)" opening a line
_NAMED = re.compile(
    r"(?:\b(?:option|choice|answer|opci[oó]n|alternativa|alternativ|respuesta)\s+(?:n[uú]mero\s+)?[(\[]?(?P<a>[A-Ja-j1-9])[)\]]?(?![\w])"
    r"|(?:选项|選項)\s*(?P<b>[A-Ja-j1-9])(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])(?P<c>[A-Ja-j1-9])\s*(?:选项|選項|项|項)"
    r"|(?:^|(?<=[\s(（]))[(\[（]?(?P<d>[A-Ja-j1-9])[)\]）](?=\s))",
    _I | re.M,
)
#: what may stand between the option named and its being called wrong: its clause, without a
#: sentence end, another option named, or a turn ("but", "however", "但")
_CLAUSE = r"[^.!?。！？;；\n]{0,80}?"
_TURN = re.compile(r"\b(?:but|however|although|though|pero|sin\s+embargo|aunque)\b|但|然而|虽然", _I)
_NEGATION = re.compile(r"\b(?:no|not|never|nicht|n[aã]o)\s+(\w+(?:\s+\w+)?)", _I)
_SENTENCE = re.compile(r"[^.!?。！？\n]+")


def called_wrong(text: str, question: str, letters: str, options: Mapping[str, str] | None) -> list[Called]:
    """Each place the reply calls one option wrong (by its label) or denies the question's negated
    predicate of one option's text; only for items that ask for the wrong option."""
    if not asks_for_wrong(question):
        return []
    found = _by_label(text, letters)
    if options:
        found += _by_echo(text, question, letters, options)
    return found


def _by_label(text: str, letters: str) -> list[Called]:
    out = []
    for m in _NAMED.finditer(text):
        label = next(g for g in m.group("a", "b", "c", "d") if g).upper()
        if label not in letters:
            continue
        w = re.compile(rf"{_CLAUSE}(?:\b(?:is|es|est|ist|é|è|está|är)\s+(?:\w+\s+)?)?(?<![A-Za-z])({_WRONG})(?![A-Za-z])", _I).match(text, m.end())
        if w is None or _TURN.search(w.group(0)) or _NAMED.search(text, m.end(), w.start(1)) is not None:
            continue
        if _DENIED_BEFORE.search(text[max(0, w.start(1) - 20) : w.start(1)]):
            continue
        out.append(Called(m.start(), w.end(), label))
    return out


def _by_echo(text: str, question: str, letters: str, options: Mapping[str, str]) -> list[Called]:
    """ "<option's text> no debe administrarse ..." where the question asks which NO debe administrarse."""
    asked = f" {norm_text(_dehyphen(question))} "
    texts = {k: norm_text(_dehyphen(v)) for k, v in options.items() if k in letters and norm_text(v)}
    out = []
    for s in _SENTENCE.finditer(text):
        # the sentence up to a turn ("..., aunque ...", "..., but ..."): what follows may say the opposite
        turn = _TURN.search(s.group(0))
        sentence = _dehyphen(s.group(0)[: turn.start()] if turn else s.group(0))
        named = _texts_of(sentence, texts)
        if len(named) != 1:
            continue
        for n in _NEGATION.finditer(sentence):
            predicate = norm_text(n.group(1))
            # two words, one of them a word of substance ("se caracteriza", "debe administrarse", "a feature")
            if len(predicate.split()) == 2 and max(map(len, predicate.split())) >= 5 and f" {predicate} " in asked:
                out.append(Called(s.start(), s.start() + (turn.start() if turn else len(s.group(0))), named[0]))
                break
    return out


def _texts_of(sentence: str, texts: dict[str, str]) -> list[str]:
    """The options whose whole text the sentence holds as words (an option whose text holds another's
    is the one named)."""
    said = f" {norm_text(sentence)} "
    inside = [k for k, t in texts.items() if len(t) >= 3 and f" {t} " in said]
    return [k for k in inside if not any(j != k and texts[k] in texts[j] for j in inside)]
