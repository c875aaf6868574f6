"""An item's option texts, and the replies that name an option by its text rather than its label.

`OptionTexts` compares a reply's phrases with the item's option texts (normalised by `norm_text`):
the one option a phrase names, holds or opens with. `concluded_by_text` reads a reply that states
no label but concludes on one option by its whole text: a concluding sentence ("Therefore, I would
enroll this patient in Trial A."), the complement ending the last sentence that names an option
("... is most closely associated with Zoroastrianism."), or Korean sentences endorsing it ("X는 ...
일치합니다"). Each is read only when it names exactly one option and denies or doubts nothing.

May import: nothing outside the standard library."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from typing import NamedTuple

_I = re.IGNORECASE

#: a label in brackets after an option's text: "acute renal failure (I)", "(option C)"
PAREN_LABEL = re.compile(r"\((?:option|choice)?\s*([A-Za-z0-9])\)", _I)
#: a line opened by a label and holding a text: "B. Metformin", "(C) Naloxone", "- d: ..."
LABEL_LINE = re.compile(r"^[ \t>#•*-]*[(\[]?([A-Za-z0-9])[.):\]][ \t]+([^\n]{1,120}?)[ \t.]*$", re.M)

_ARTICLES = re.compile(r"(?<= )(?:the|a|an)(?= )")


def _holds_bare(bare: str, own: str) -> bool:
    """Whether a sentence without its articles (padded with spaces) holds the option's text so."""
    return f" {_without_articles(own)} " in bare


#: an option that is an action: its verb, then what it is done with
_ACTION = re.compile(r"(?:administer|give|start|begin|initiate|perform|obtain|order|prescribe|recommend|use)\s+(.+)")


def _without_articles(text: str) -> str:
    return " ".join(_ARTICLES.sub(" ", f" {text} ").split())


_STRAY = re.compile(r"(?<=\S)\s[a-z](?=\s)")
_NORM_DROP = re.compile(r"[*_`\"'“”‘’«»「」『』【】<>]+")
_NORM_PUNCT = re.compile(r"[\s.,;:!?。，；：！？、()（）\[\]-]+")


def norm_text(text: str) -> str:
    """Text compared with option texts: casefolded, without quotes, markup or punctuation runs."""
    return _NORM_PUNCT.sub(" ", _NORM_DROP.sub("", unicodedata.normalize("NFKC", text))).strip().casefold()


def _lost(full: str, short: str) -> bool:
    """Whether `short` is `full` with a few letters lost: at most three, at most two in a row,
    never its first, never a digit ("10" is not "100")."""
    if not short or short[0] != full[0] or not 0 < len(full) - len(short) <= 3 or any(c.isdigit() for c in full):
        return False
    i, run = 0, 0
    for c in full:
        if i < len(short) and c == short[i]:
            i, run = i + 1, 0
        elif (run := run + 1) > 2:
            return False
    return i == len(short)


#: letters a scan or a typist confuses: "3 lPV" for "3 IPV", "I measles" for "1 measles"
_CONFUSED = str.maketrans("l1", "ii")


def _lost_letters(said: list[str], own: list[str]) -> bool:
    """Whether each word of `own` is the word of `said` at its place, or differs from it as a
    dataset's typo does: a few letters lost (`_lost`), a few typed twice (`_stuttered`), or "l",
    "1" and "I" confused; and some word differs."""
    if len(said) != len(own):
        return False
    return all(a == b or _lost(a, b) or _stuttered(b, a) or (len(a) == len(b) and a.translate(_CONFUSED) == b.translate(_CONFUSED)) for a, b in zip(said, own))


def _stuttered(own: str, said: str) -> bool:
    """Whether `own` is `said` with one to three of its letters typed twice in a row, as a dataset's
    typo ("mucogingigival" for "mucogingival"); a reply that lost letters is not read so."""
    k = len(own) - len(said)
    return 0 < k <= 3 and not any(c.isdigit() for c in own) and any(own == said[:i] + said[i - k : i] + said[i:] for i in range(k, len(said) + 1))


def option_texts(options: Mapping[str, str] | None, letters: str) -> OptionTexts:
    """The OptionTexts of an item, made once per distinct (options, letters): a run reads several
    replies of each item, and normalising its texts is most of the cost of reading a short reply."""
    return _option_texts(tuple((options or {}).items()), letters)


@functools.lru_cache(maxsize=4096)
def _option_texts(options: tuple[tuple[str, str], ...], letters: str) -> OptionTexts:
    return OptionTexts(dict(options), letters)


class OptionTexts:
    """An item's option texts, to read a reply that names an option by its text ("Answer:
    Olanzapine.", 'the answer is "no"', "<否>") instead of its label. Read-only once made (shared
    through `option_texts`)."""

    def __init__(self, options: Mapping[str, str] | None, letters: str):
        self.texts_raw = dict(options or {})
        # an option text that repeats its own label ("a.\tColonic carcinomas") is read without it
        self.texts = {k: norm_text(re.sub(rf"^\s*[(\[]?{re.escape(k)}[.)\]:]\s+", "", v, flags=_I)) for k, v in self.texts_raw.items() if k in letters}
        self.texts = {k: t for k, t in self.texts.items() if t}
        # a stray lowercase letter inside an option's text, as datasets leave them ("Reverse c shoulder
        # replacement"): read also without it
        self.stray = {k: b for k, v in self.texts_raw.items() if k in self.texts and (b := norm_text(_STRAY.sub(" ", v))) != self.texts[k]}
        self.bare = {k: b for k, v in self.texts_raw.items() if k in self.texts and (b := norm_text(re.sub(r"\([^()]*\)", " ", v))) and b != self.texts[k]}
        # options that are actions ("Administer carboprost tromethamine"): what each is done with,
        # where that is two words or more and no other option's is the same
        done = {k: m.group(1) for k, t in self.texts.items() if (m := _ACTION.fullmatch(t)) and len(m.group(1).split()) >= 2}
        self.done = {k: t for k, t in done.items() if list(done.values()).count(t) == 1}

    def __bool__(self) -> bool:
        return bool(self.texts)

    def named(self, phrase: str, exact_only: bool = False) -> str | None:
        """The one option a phrase names: its whole text, its text then more ("Olanzapine, because
        ..."), or most of its text ("Autosomal dominant polycystic kidney disease" for "... (ADPKD)")."""
        said = norm_text(phrase)
        if not said:
            return None
        exact = [k for k, t in self.texts.items() if said in (t, self.bare.get(k))]
        if exact:
            return exact[0] if len(exact) == 1 else None
        if exact_only:
            return None
        longer = [k for k, t in self.texts.items() if said.startswith(t + " ") and len(t) >= 3 and not _joined(phrase, t) and not _compounded(phrase, t)]
        # "Real seal and Raeko sealer": a second option's text after the first
        if longer and any(t in said[len(self.texts[k]) :] for k in longer for j, t in self.texts.items() if j != k and len(t) >= 3):
            return None
        if longer:
            best = max(len(self.texts[k]) for k in longer)
            top = [k for k in longer if len(self.texts[k]) == best]
            return top[0] if len(top) == 1 else None
        shorter = [k for k, t in self.texts.items() if t.startswith(said + " ") and len(said) >= max(6, 0.6 * len(t))]
        return shorter[0] if len(shorter) == 1 else self.nearly(said)

    def nearly(self, said: str) -> str | None:
        """The one option whose text is a normalised phrase with a few letters lost, as datasets
        lose them ("Live bihs + Still bih" for "Live births + Still births", "aicles ... dru" for
        "articles ... drug"): word for word, each option word is the phrase's word or that word
        missing a few letters, never its first nor three in a row ("decreased" is not "increased",
        "bilateral" not "lateral", "antagonist" not "agonist"). Short phrases are never read so."""
        words = said.split()
        if len(said) < 12:
            return None
        near = [
            k
            for k, t in self.texts.items()
            if t != said and any(_lost_letters(words, own.split()) for own in ((t, self.stray[k]) if k in self.stray else (t,)))
        ]
        return near[0] if len(near) == 1 else None

    def cut_short(self, phrase: str) -> str | None:
        """The one option whose text begins with the phrase cut inside a word ("posterior ureth"
        for "posterior urethral valves"), the phrase holding most of it; the option may have lost
        a few of the phrase's letters, as datasets lose them ("hydrochloroth" for "Hydrochlorthiazide")."""
        said = norm_text(phrase)
        cut = [k for k, t in self.texts.items() if _begins_cut(t, said)]
        return cut[0] if len(cut) == 1 and len(said) >= max(8, 0.6 * len(self.texts[cut[0]])) else None

    def follows(self, label: str, text: str, i: int) -> bool:
        """Whether the text at i opens with the option's own text ("B. Hepatitis B virus ...")."""
        own = self.texts.get(label)
        if not own:
            return False
        said = norm_text(text[i : i + len(own) + 40])
        return said == own or said.startswith(own + " ") or (len(own) > 12 and own.startswith(said[: max(12, len(said) - 1)]))

    def opens(self, label: str, phrase: str) -> bool:
        """Whether a line's phrase is the option's text as far as it goes: word by word, each word
        the option's or missing a few letters (`_lost`), the last one perhaps cut inside ("При осмотре
        ... назофарингоском не предст"); or, where every option opens with the same words (a stem
        and its completions), the words of its own that follow them ("Гарднереллез")."""
        own = self.texts.get(label, "").split()
        said = norm_text(phrase).split()
        if not own or not said:
            return False
        if len(said) >= 3 and len(said) <= len(own):
            *whole, last = said
            if all(a == b or _lost(b, a) for a, b in zip(whole, own, strict=False)) and (own[len(whole)].startswith(last) or _lost(own[len(whole)], last)):
                return True
        return len(self.texts) > 1 and said == own[_shared_words(list(self.texts.values())) :]

    def mentions(self, text: str) -> list[tuple[int, int, str]]:
        """Places the reply names an option by its text and then its label in brackets
        ("acute renal failure (I)", "慢性骨髄性白血病(b)"): (start, end, label)."""
        out = []
        for m in PAREN_LABEL.finditer(text):
            label = m.group(1).upper()
            own = self.texts.get(label)
            before = norm_text(text[max(0, m.start() - len(own or "") - 60) : m.start()])
            # an article the reply adds ("reverse the anticoagulation with ..." for "Reverse
            # anticoagulation with ...") does not hide the text
            if own and (before.endswith(own) or _without_articles(before).endswith(_without_articles(own))):
                out.append((m.start(), m.end(), label))
        return out

    def at(self, text: str, i: int, exact_only: bool = False) -> tuple[str | None, int] | None:
        """The option a phrase starting at i names (up to the end of its sentence or line)."""
        m = _PHRASE_END.search(text, i)
        end = m.start() if m else len(text)
        if end - i > 300:
            return None
        phrase = text[i:end]
        label = self.named(phrase, exact_only)
        if label is None and not exact_only:
            label = self.within(phrase)
            if label is None and self.joined(phrase):
                return None, end
        # a reply cut off while naming an option ("... is posterior ureth"): the one option whose
        # text the phrase begins, cut inside a word, when nothing follows it
        if label is None and not exact_only and not text[end:].strip() and re.search(r"\w\Z", phrase.rstrip()):
            label = self.cut_short(phrase)
        # "the answer is not Metformin", "정답은 X이 아닙니다": the text named to deny it (a negation
        # inside the option's own text, "No remarkable finding", is the option's)
        if label is not None and _NEGATION.search(norm_text(phrase).replace(self.texts[label], " ")):
            return None, end
        return (label, end) if label is not None else None

    def named_in(self, sentence: str) -> str | None:
        """The one option whose whole text a sentence holds as words ("I would enroll this patient in
        Trial A"): none when two options' texts are there, or none is."""
        said = f" {norm_text(sentence)} "
        inside = [k for k, t in self.texts.items() if len(t) >= 2 and f" {t} " in said]
        if not inside:
            # an article the reply adds ("reducing the polyethylene insert thickness")
            bare = f" {_without_articles(said)} "
            inside = [k for k, t in self.texts.items() if len(t) >= 2 and _holds_bare(bare, t)]
        if not inside and self.done:
            # what an option's action is done with ("carboprost tromethamine represents the most
            # appropriate next step" for "Administer carboprost tromethamine")
            inside = [k for k, t in self.done.items() if f" {t} " in said]
        inside = [k for k in inside if not any(j != k and self.texts[k] in self.texts[j] for j in inside)]
        return inside[0] if len(inside) == 1 else None

    def within(self, phrase: str) -> str | None:
        """The one option whose whole text a short phrase holds ("'피부간경유쓸개관배액술' (PTBD)입니다",
        where particles glue to the text): none when two options' texts are there."""
        said = norm_text(phrase)
        longest = max(map(len, self.texts.values()))
        if len(said) > 2 * longest + 20:
            return None
        # Korean spacing varies ("전체 위절제술" for "전체위절제술"): Hangul texts are matched without spaces
        bare = said.replace(" ", "")
        inside = [k for k, t in self.texts.items() if len(t) >= 2 and (_holds(said, t) or (_HANGUL.search(t) and t.replace(" ", "") in bare))]
        # an option whose text holds another's ("type 2 diabetes" holds "diabetes") is the one named
        inside = [k for k in inside if not any(j != k and self.texts[k] in self.texts[j] for j in inside)]
        return inside[0] if len(inside) == 1 and not _joined(phrase, self.texts[inside[0]]) and not _compounded(phrase, self.texts[inside[0]]) else None

    def joined_after(self, label: str, phrase: str) -> bool:
        """Whether a phrase opens with the option's own text joined at once to another thing
        ("Comitantes o incomitantes." for "Comitantes."): it names several things, not that option."""
        own, said = self.texts.get(label, ""), norm_text(phrase)
        return bool(own) and said.startswith(f"{own} ") and said[len(own) + 1 :].split(maxsplit=1)[0] in _JOINS

    def joined(self, phrase: str) -> bool:
        """Whether a phrase holds one option's whole text joined to another thing ("his anxiety and
        medication"): a statement of several things, not of that option."""
        said = norm_text(phrase)
        return any(len(t) >= 2 and _holds(said, t) and _joined(phrase, t) for t in self.texts.values())


#: what joins an option's text to another thing: "his anxiety and medication", "surgery or radiation";
#: in Spanish, Portuguese, French and German too: "Comitantes o incomitantes", "ou", "y", "et", "oder", "und"
_JOINS = frozenset(["and", "or", "plus", "&", "nor", "o", "ou", "oder", "y", "et", "und"])
#: an option's text glued by a hyphen to a word that makes it another thing: "Neurofilament-like
#: staining", "Desmin-negative", "Heparin-induced"
_COMPOUND = re.compile(r"[-‐‑][^\W\d_]")


def _joined(phrase: str, own: str) -> bool:
    """Whether a phrase joins the option's text it holds to another thing ("that his anxiety and
    medication are contributing", "anxiety, medication and stress"): it names several things, not
    that option."""
    words, n = [w for part in _COMMAS.split(phrase) for w in (*norm_text(part).split(), ",")][:-1], len(own.split())
    for i in range(len(words) - n + 1):
        if " ".join(words[i : i + n]) == own:
            after = words[i + n] if i + n + 1 < len(words) else ""
            before = words[i - 1] if i >= 2 else ""
            # "X, Y and Z": a short item between the comma and the join (not ", where ... and ...")
            if after in _JOINS or before in _JOINS or (after == "," and _JOINS.intersection(words[i + n + 2 : i + n + 5])):
                return True
    return False


_COMMAS = re.compile(r"[,，、]")


def _compounded(phrase: str, own: str) -> bool:
    """Whether the phrase holds the option's text glued by a hyphen to another word
    ("Neurofilament-like staining" for "Neurofilament"): a compound naming another thing."""
    return _compound_of(own).search(unicodedata.normalize("NFKC", phrase)) is not None


@functools.lru_cache(maxsize=4096)
def _compound_of(own: str) -> re.Pattern[str]:
    """The option's text glued by a hyphen to a following word, as a pattern (made once per text)."""
    return re.compile(r"(?<![^\W\d_])" + r"[\W_]+".join(map(re.escape, own.split())) + _COMPOUND.pattern, re.IGNORECASE)


def _shared_words(texts: list[str]) -> int:
    """How many words every text opens with."""
    words = [t.split() for t in texts]
    n = 0
    while all(len(w) > n + 1 for w in words) and len({w[n] for w in words}) == 1:
        n += 1
    return n


def _begins_cut(text: str, said: str) -> bool:
    """Whether an option's text begins with the phrase and goes on inside its last word, or does so
    with a few of the phrase's letters lost (`_lost`: never its first, at most two in a row)."""
    if text.startswith(said) and text[len(said) : len(said) + 1].isalnum():
        return True
    return any(_lost(said, text[: len(said) - k]) and text[len(said) - k : len(said) - k + 1].isalnum() for k in (1, 2, 3) if len(said) - k > 0)


_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN = "0-9a-z\u00c0-\u024f"


def _holds(said: str, text: str) -> bool:
    """Whether a normalised phrase holds an option's text, glued only to what is not a Latin word
    (particles glue to CJK text; "bilateral epicondylitis" does not hold "lateral epicondylitis")."""
    if text not in said:
        return False
    return re.search(rf"(?<![{_LATIN}]){re.escape(text)}(?![{_LATIN}])", said) is not None


_NEGATION = re.compile(r"\b(?:not|never|no|neither|nor|none)\b|n['’]t\b|않|아니|아닌|아닙|不是|并非|ではない|ではありません|じゃない", _I)
_PHRASE_END = re.compile(r"[.!?。！？;；](?=\s|$)|\n|,\s+(?:because|since|as|which|given)\b|\s+(?:because|since|as\s+it|given\s+that)\b")


_CONCLUDING = re.compile(
    r"(?:^|(?<=[.!?。]\s)|(?<=\n))[ \t*#>-]*(?:(?:okay|ok|alright|well|yeah|so)[ \t]*,?[ \t]+)?"
    r"(?:so|therefore|thus|hence|in\s+conclusion|in\s+summary|overall|ultimately|finally|to\s+conclude|all\s+things\s+considered|all\s+in\s+all|in\s+the\s+end"
    r"|(?:putting|taking|piecing)\s+(?:it\s+)?(?:all\s+)?(?:this\s+|these\s+\w+\s+|everything\s+)?together|(?:after|upon)\s+(?:considering|weighing|thinking\s+(?:through|about))\s+(?:all\s+)?(?:of\s+)?(?:this|these|the|that|everything)(?:\s+\w+)?|"
    r"따라서|그러므로|결론적으로|因此|所以|综上|por\s+(?:lo\s+)?tanto|portanto|donc|daher|also)\b[ \t,:]*([^.!?。\n]{3,240})",
    _I,
)
#: ... or names as what it disagrees with, dismisses or rejects ("I would have to disagree with your
#: conclusion of 7 gene pairs", "I agree with your dismissal of ... luck")
DISAGREED = r"\b(?:disagree\w*|dismiss\w*|reject\w*|refut\w*)\b|"
DENIED = re.compile(
    DISAGREED
    + r"\b(?:not|no|never|neither|nor|unlikely|less\s+likely|rule[sd]?\s+out|exclude[sd]?|incorrect|wrong|inappropriate|contraindicated|avoid\w*|rather\s+than|instead\s+of|except|versus|vs)\b|않|아니|아닌|不|没|sin\b|pas\b|nicht|kein",
    _I,
)


#: what follows an option's text that opens a clause claiming it: a copula ("pancuronium is the drug
#: of choice"), not another verb ("rifampicin will decrease the levels of tacrolimus" says what it does)
_CLAIMED_SUBJECT = re.compile(r"(?:is|are|was|were|remains|seems|appears|looks|represents|(?:would|should|will|must|can)\s+be)\b", _I)


def _as_subject_unclaimed(clause: str, own: str) -> bool:
    """Whether the option's text opens the clause and a verb other than a copula follows it."""
    said, own = _without_articles(norm_text(clause)), _without_articles(own)
    return said.startswith(own + " ") and not _CLAIMED_SUBJECT.match(said, len(own) + 1)


def _denied_later(text: str, end: int, own: str) -> bool:
    """Whether a sentence after `end` names the option's text and denies it ("However, insulin is not
    the drug of choice in obese patients")."""
    return any(f" {own} " in f" {norm_text(m.group())} " and DENIED.search(m.group()) for m in _SENTENCE.finditer(text, end))


def _concluding(text: str, opts: OptionTexts) -> TextConclusion | None:
    """The reply's last concluding sentence ("Therefore, I would enroll this patient in Trial A.")
    names exactly one option by its whole text, as a claim, and denies and doubts nothing: that
    option. Not a claim: the text opening the clause before a verb other than a copula ("Therefore,
    rifampicin will decrease the levels of tacrolimus"); a doubt ("may", "might", "could"); the
    option's text denied in a later sentence."""
    last = None
    for m in _CONCLUDING.finditer(text):
        # a later concluding sentence naming no option ("So, yeah, that's probably the key
        # mechanism") affirms the one before it, unless it denies or doubts
        if (
            last is not None
            and opts.named_in(m.group(1)) is None
            and _mentions_none(m.group(1), opts)
            and not (DENIED.search(m.group(1)) or _CONCLUSION_DOUBT.search(m.group(1)))
        ):
            continue
        last = m
    if last is None or DENIED.search(last.group(1)) or _CONCLUSION_DOUBT.search(last.group(1)):
        return None
    label = opts.named_in(last.group(1))
    if label is None or any(_as_subject_unclaimed(last.group(1), own) for own in (opts.texts[label], opts.done.get(label)) if own):
        return None
    if _denied_later(text, last.end(1), opts.texts[label]):
        return None
    return TextConclusion(label, last.start(1), last.end(1), f"concluding sentence names option {label} by its text")


def _mentions_none(clause: str, opts: OptionTexts) -> bool:
    """Whether a clause names no option's text, not even one word of two or more of its own."""
    said = set(norm_text(clause).split())
    return not any(len(w) >= 5 and w in said for t in opts.texts.values() for w in t.split())


#: the reply's last sentence turning against what came before ("However, the patient is Asian."):
#: a conclusion it follows is left open, since the reply stops before settling the objection
_OBJECTION_LAST = re.compile(r"[.!?。]\s+(?:however|but|yet|nevertheless|that\s+said)\b[^.!?。\n]*[.!?。]?\s*\Z", _I)


_SENTENCE = re.compile(r"[^.!?。\n]+(?:[.!?。]+|\n|$)")
#: a doubt in a concluding sentence ("Therefore, coumarin may increase ..."): it concludes on no option
_CONCLUSION_DOUBT = re.compile(r"\b(?:might|may|could|possibly|perhaps|maybe)\b", _I)


def _describes(sentence: str, own: str) -> bool:
    """Whether the option's text ends the sentence inside a relative clause ("Nitrous oxide is a gas
    that is less soluble than nitrogen"): it describes something, it claims no option."""
    return norm_text(sentence).endswith(tuple(f" {w} {own}" for w in ("that", "which", "who")))


_COPULA = re.compile(r"\b(?:is|are|was|were|would\s+be)\b", _I)
#: a sentence opening on a condition ("- If it looks like a network of tubes with dots on it, it is
#: the Rough Endoplasmic Reticulum."): a hint for a case the reply leaves open, no claim; "If I had
#: to choose, ..." and "If forced to pick, ..." still commit
_CONDITIONAL = re.compile(
    r"^[\s>#*_\-\u2022\d.)]*(?:if|unless)\b(?!\s+(?:i|we)\s+(?:had|have|must|were)\s+to\b|\s+forced\b|\s+(?:i|we)\s+must\s+(?:choose|pick|select)\b)",
    _I,
)
_UNSURE_WORDS = re.compile(r"\b(?:might|may|could|possibly|perhaps|maybe|either|unclear|uncertain|cannot|can['’]t|or)\b|\?", _I)


def _complement(text: str, opts: OptionTexts) -> TextConclusion | None:
    """The last sentence that names an option by its whole text ends with it, after a copula and
    without a denial or a doubt ("... is most closely associated with **Zoroastrianism**."): that
    option. A later sentence naming another option, or none named at the end, reads nothing; nor
    does a sentence opening on a condition ("If it looks like ..., it is the Golgi bodies.")."""
    last = None
    for m in _SENTENCE.finditer(text):
        if opts.named_in(m.group()) is not None or any(f" {t} " in f" {norm_text(m.group())} " for t in opts.texts.values()):
            last = m
    if last is None:
        return None
    sentence = last.group().strip()
    label = opts.named_in(sentence)
    if label is None or not norm_text(sentence).endswith(" " + opts.texts[label]) or not _COPULA.search(sentence):
        return None
    if _describes(sentence, opts.texts[label]) or _CONDITIONAL.match(sentence):
        return None
    if DENIED.search(sentence) or _UNSURE_WORDS.search(sentence):
        return None
    return TextConclusion(label, last.start(), last.end(), f"last sentence ends with option {label}'s text")


#: Korean, a sentence endorsing the option whose text it holds: "백일해(pertussis)는 이러한 임상 증상과 ...
#: 일치합니다" (consistent with), "이러한 증상은 콜린두드러기의 전형적인 특징입니다" (the typical feature of),
#: "탐색개복술을 통해 정확한 진단과 처치가 필요합니다" (needed), "... 간쐐기절제술 및 림프절절제술입니다" (the
#: text then the copula); a denial ("않", "아니", "없", "낮") endorses nothing
_KO_ENDORSES = re.compile(
    r"(?:일치합니다|일치한다|적절합니다|적절하다|적합합니다|적합하다|필요합니다|필요하다|특징입니다|특징이다|의심됩니다|의심된다|해당합니다|권장됩니다|도움이\s*(?:됩니다|될\s*수\s*있습니다)|관련이\s*깊(?:다|습니다)|가능성이\s*(?:가장\s*)?높습니다)[.。]?\s*$"
)
#: ("낮" is "low", as in "가능성이 낮습니다"; "낮추" is "to lower", no denial)
_KO_DENIED = re.compile(r"않|아니|아닌|없|낮(?!추)")


def _ko_held(segment: str, opts: OptionTexts) -> list[str]:
    """The options whose whole text (of three characters or more) a Korean segment holds: spacing
    aside ("전체 위절제술" for "전체위절제술"), or word by word with particles and endings glued on
    ("소변검사를 재검하는" holds "소변검사 재검")."""
    bare = norm_text(segment).replace(" ", "")
    tokens = norm_text(segment).split()
    held = []
    for k, t in opts.texts.items():
        words = t.split()
        if len(t.replace(" ", "")) < 3:
            continue
        # spacing is ignored for Hangul texts only: a Latin text glued to a Latin letter is another word
        if (
            (_HANGUL.search(t) and t.replace(" ", "") in bare)
            or _holds(" ".join(tokens), t)
            or (len(words) > 1 and any(all(tokens[i + j].startswith(_ko_stem(w)) for j, w in enumerate(words)) for i in range(len(tokens) - len(words) + 1)))
        ):
            held.append(k)
    return [k for k in held if not any(j != k and opts.texts[k] in opts.texts[j] for j in held)]


def _ko_stem(word: str) -> str:
    """A Korean word as it begins when endings are glued on: a verb's plain form without its ending
    ("물어본다" as "물어보" in "물어보는 것은", "시행한다" as "시행하"); any other word as it is."""
    if len(word) < 3 or not word.endswith("다") or not _HANGUL.fullmatch(word[-2]):
        return word
    code = ord(word[-2]) - 0xAC00
    # the syllable before 다 carries the ending's ㄴ as its final consonant (보 + ㄴ = 본)
    return word[:-2] + chr(0xAC00 + code - 4) if code % 28 == 4 else word


def _ko_endorsed(text: str, opts: OptionTexts) -> TextConclusion | None:
    """The one option that the reply's Korean endorsing sentences name by its text (every such
    sentence naming the same one): that option. A sentence ending in an endorsement must deny
    nothing; one whose option text takes the copula ("... X입니다, 이는 ...") must deny nothing in
    that clause."""
    if not _HANGUL.search(text):
        return None
    found: dict[str, re.Match[str]] = {}
    for m in _SENTENCE.finditer(text):
        sentence = m.group().strip()
        held = _ko_held(sentence, opts)
        if len(held) != 1:
            continue
        label = held[0]
        copula = re.compile(re.escape(opts.texts[label].replace(" ", "")) + r"(?:이)?(?:입니다|이다)")
        clauses = [c for c in re.split(r"[,，]", sentence) if copula.search(norm_text(c).replace(" ", ""))]
        if (_KO_ENDORSES.search(sentence) and not _KO_DENIED.search(sentence)) or (clauses and not _KO_DENIED.search(clauses[0])):
            found[label] = m
    if len(found) != 1:
        return None
    ((label, m),) = found.items()
    return TextConclusion(label, m.start(), m.end(), f"Korean sentence endorses option {label} by its text")


class TextConclusion(NamedTuple):
    """An option a reply concludes on by its text: the label, the span that says so, and how."""

    label: str
    start: int
    end: int
    how: str


def concluded_by_text(text: str, opts: OptionTexts) -> TextConclusion | None:
    """The option a reply that states no label concludes on by its whole text, or None."""
    for read in (_concluding, _complement, _ko_endorsed):
        if (got := read(text, opts)) is not None:
            return None if _OBJECTION_LAST.search(text, got.end - 1) else got
    return None
