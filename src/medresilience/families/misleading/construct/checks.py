"""Deterministic checks of the misleading-context builder: which input items can be used at all
(`item_skip_reason`), and whether a generated bundle may enter a suite (`bundle_problems`).

Every check returns a code (counted in the build report) and a detail (kept with the item's
decision). Codes:

items      no_answer, one_option, not_multiple_choice, blank_option, duplicate_options,
           multi_choice (MedMCQA choice_type "multi")
bundles    missing_sentence, unknown_option, too_short, too_long, several_sentences,
           names_option_letter, reveals_answer_key, copies_question, restates_option (the sentence
           only repeats its option's text and adds no claim), duplicate_sentence,
           gold_supports_distractor, claim_drift (a restated bundle changed what a sentence
           claims), not_reframed (a restated sentence came back unchanged: no new framing),
           framing_patient / framing_authority / framing_neutral (a sentence does not read in the
           bundle's provenance: see framing.py, whose rules are a table of cue patterns)

The last three came from reading what a small real generator (the embedded Qwen 1.5B) wrote on
MedMCQA: option texts returned as their own "context", two sentences where one was asked for,
and crossed-design restatements identical to the neutral original. The framing checks came from
its held-out MedQA bundles: "patient" sentences that read as plain textbook statements.

The checks are deliberately conservative: a bundle with any problem is dropped, never repaired."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ....records import LETTERS, Item
from ....runtime.jsontypes import JSONObject
from .framing import FRAMING_CODES, framing_problem

ITEM_SKIP_CODES = ("no_answer", "one_option", "not_multiple_choice", "blank_option", "duplicate_options", "multi_choice")
BUNDLE_CODES = (
    "missing_sentence",
    "unknown_option",
    "too_short",
    "too_long",
    "several_sentences",
    "names_option_letter",
    "reveals_answer_key",
    "copies_question",
    "restates_option",
    "duplicate_sentence",
    "gold_supports_distractor",
    "claim_drift",
    "not_reframed",
    *FRAMING_CODES,
)


@dataclass(frozen=True)
class Limits:
    """Length limits of one context sentence, and the share of a sentence's content words (and
    all of its numbers) a restated sentence must keep."""

    min_words: int = 5
    max_words: int = 60
    max_chars: int = 400
    min_claim_overlap: float = 0.5

    def __post_init__(self) -> None:
        if not 1 <= self.min_words <= self.max_words:
            raise ValueError(f"sentence length limits: need 1 <= min_words ({self.min_words}) <= max_words ({self.max_words})")
        if self.max_chars < 20:
            raise ValueError(f"sentence length limits: max_chars ({self.max_chars}) must be at least 20")
        if not 0.0 <= self.min_claim_overlap <= 1.0:
            raise ValueError(f"min_claim_overlap ({self.min_claim_overlap}) must be between 0 and 1")


@dataclass(frozen=True)
class Problem:
    code: str
    option: str | None
    detail: str

    def __str__(self) -> str:
        where = f" (option {self.option})" if self.option else ""
        return f"{self.code}{where}: {self.detail}"


# --------------------------------------------------------------------------- text helpers

_NON_WORD = re.compile(r"[^0-9a-z]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+(?:[.,]\d+)?")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "his",
        "her",
        "their",
        "there",
        "here",
        "than",
        "then",
        "so",
        "such",
        "very",
        "more",
        "most",
        "less",
        "least",
        "not",
        "no",
        "nor",
        "only",
        "also",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "while",
        "because",
        "into",
        "over",
        "under",
        "after",
        "before",
        "during",
        "about",
        "against",
        "between",
        "through",
        "per",
        "may",
        "might",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "must",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "patient",
        "patients",
        "according",
        "guideline",
        "guidelines",
        "protocol",
        "note",
        "discharge",
        "insists",
        "believes",
        "believe",
        "says",
        "said",
        "states",
        "stated",
        "claims",
        "claim",
        "read",
        "online",
        "reports",
        "reported",
        "self",
        "senior",
        "physician",
        "doctor",
        "attending",
        "local",
        "policy",
        "current",
        "recommends",
        "recommend",
        "recommendation",
        "recommendations",
    ]
)
GENERIC_OPTIONS = frozenset(
    {"all of the above", "none of the above", "both", "neither", "all", "none", "both of the above", "all the above", "none of these", "all of these"}
)


def norm(text: str) -> str:
    """Lower case, every run of non-alphanumerics one space, padded (for whole-word finds)."""
    return " " + _NON_WORD.sub(" ", text.lower()).strip() + " "


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(text: str) -> set[str]:
    return {w.lower() for w in words(text) if (len(w) >= 4 or w[0].isdigit()) and w.lower() not in STOPWORDS}


def numbers(text: str) -> set[str]:
    return {n.replace(",", ".") for n in _NUMBER.findall(text)}


# --------------------------------------------------------------------------- items


def _options_of(raw: object) -> JSONObject | None:
    if isinstance(raw, dict):
        return {str(k).strip().upper(): v for k, v in raw.items()}
    if isinstance(raw, list):
        return dict(zip(LETTERS, raw))
    return None


def raw_skip_reason(options: object, answer: object) -> tuple[str, str] | None:
    """The skip reason of a raw row given its options (object or list, or None) and its answer
    (a letter, or None): checked before the strict loader sees the row."""
    opts = _options_of(options)
    if opts is None:
        return "not_multiple_choice", "the row has no list of options"
    filled = {k: v for k, v in opts.items() if v is not None and str(v).strip()}
    if len(filled) < 2:
        return "one_option", f"{len(filled)} non-blank option(s)"
    if len(filled) < len(opts):
        blank = ", ".join(k for k in opts if k not in filled)
        return "blank_option", f"option(s) {blank} blank"
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return "no_answer", "no answer given"
    if str(answer).strip().upper() not in opts:
        return "no_answer", f"answer {str(answer)[:40]!r} is not one of the options {', '.join(opts)}"
    return None


def item_skip_reason(item: Item) -> tuple[str, str] | None:
    """Why a valid Item cannot be used for misleading-context construction, or None."""
    seen: dict[str, str] = {}
    for k, text in item.choices.items():
        key = norm(text)
        if key in seen:
            return "duplicate_options", f"options {seen[key]} and {k} have the same text"
        seen[key] = k
    ct = item.meta.get("choice_type")
    if isinstance(ct, str) and ct.strip().lower() == "multi":
        return "multi_choice", "the source marks this question as multi-choice (choice_type = multi)"
    return None


# --------------------------------------------------------------------------- bundles

_LETTER_REFS = (
    # "option B", "answer: C", "choice (D)", "letter A", "options A and B" (letters upper case only)
    re.compile(r"\b(?i:options?|answers?|choices?|alternatives?|letters?)\s*(?:is\s+|=\s*|:\s*|#\s*)?[\"'(\[]?([A-J])\b(?![-'])"),
    # "(B)", "[C]"
    re.compile(r"[(\[]([A-J])[)\]]"),
    # a sentence that starts with "B." / "C)" / "D:"
    re.compile(r"^\s*([A-J])\s*[.):]\s"),
)
_ANSWER_KEY = re.compile(
    r"(?i)\b(?:answer\s+key|the\s+answer\s+is|(?:correct|right|best)\s+(?:answer|choice)s?|(?:correct|right)\s+options?"
    r"|(?:this|the)\s+question|the\s+options?\b|the\s+choices\b)"
)


def _names_letter(text: str, letters: str) -> str | None:
    for rx in _LETTER_REFS:
        for m in rx.finditer(text):
            if m.group(1) in letters:
                return m.group(0).strip()
    return None


def _copies_question(sentence: str, question: str, run: int = 10) -> bool:
    """True when the sentence repeats a run of `run` consecutive words of the question."""
    q = [w.lower() for w in words(question)]
    if len(q) < run:
        return False
    grams = {tuple(q[i : i + run]) for i in range(len(q) - run + 1)}
    s = [w.lower() for w in words(sentence)]
    return any(tuple(s[i : i + run]) in grams for i in range(len(s) - run + 1))


# a full stop, then space, then a capital or digit; the word before the stop decides whether it
# ended a sentence ("e.g.", "Dr.", "U.S." and single initials do not)
_BREAK = re.compile(r"(\S+)[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "cf",
        "vs",
        "etc",
        "al",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "no",
        "fig",
        "approx",
        "ca",
        "resp",
        "incl",
        "max",
        "min",
        "mg",
        "ml",
        "dl",
        "kg",
        "cm",
        "mm",
    ]
)


def sentence_breaks(text: str) -> int:
    """How many sentence ends fall inside the text (0 for one sentence)."""
    n = 0
    for m in _BREAK.finditer(text.strip()):
        word = m.group(1).lower().rstrip(".")
        if word in ABBREVIATIONS or "." in word or (len(word) == 1 and word.isalpha()):
            continue
        n += 1
    return n


def _restates_option(sentence: str, option_text: str) -> bool:
    """True when every content word of the sentence is already in the option's own text."""
    cw = content_words(sentence)
    return bool(cw) and cw <= content_words(option_text)


def _mentions(sentence_norm: str, option_text: str) -> bool:
    return norm(option_text) in sentence_norm


def bundle_problems(
    item: Item,
    sentences: Mapping[str, object],
    limits: Limits = Limits(),
    source: Mapping[str, str] | None = None,
    provenance: str | None = None,
) -> list[Problem]:
    """Every problem of a generated bundle (empty: it may enter the suite). `source` is the
    bundle a restated one was made from: then each sentence must keep its claim (claim_drift).
    `provenance` is the framing every sentence must read in (framing_*; None: not checked)."""
    out: list[Problem] = [Problem("unknown_option", k, f"a sentence for '{k}', which is not an option") for k in sentences if k not in item.choices]
    texts: dict[str, str] = {}
    for k in item.choices:
        v = sentences.get(k)
        if not isinstance(v, str) or not v.strip():
            out.append(Problem("missing_sentence", k, "no sentence"))
            continue
        texts[k] = " ".join(v.split())
    letters = "".join(item.choices)
    for k, t in texts.items():
        out += _sentence_problems(item, k, t, letters, limits, provenance)
    out += _duplicates(texts)
    out += _gold_problems(item, texts)
    if source is not None:
        out += _restatement_problems(texts, source, limits)
    return out


def sentence_problems(item: Item, option: str, text: str, limits: Limits = Limits(), provenance: str | None = None) -> list[Problem]:
    """The problems of one context sentence for `option` on its own (a bundle's sentence, or another
    family's single added sentence): its length, one sentence, a claim of its own, no option letter
    or answer key, not the question's words, and its framing in `provenance` (None: not checked)."""
    return _sentence_problems(item, option, " ".join(text.split()), "".join(item.choices), limits, provenance)


def _sentence_problems(item: Item, k: str, t: str, letters: str, limits: Limits, provenance: str | None) -> list[Problem]:
    """The problems of option `k`'s sentence `t` on its own: its length, one sentence, a claim of its
    own, no option letter or answer key, not the question's words, and its framing."""
    out: list[Problem] = []
    n = len(words(t))
    if n < limits.min_words:
        out.append(Problem("too_short", k, f"{n} words, at least {limits.min_words} needed"))
    if n > limits.max_words or len(t) > limits.max_chars:
        out.append(Problem("too_long", k, f"{n} words / {len(t)} characters, at most {limits.max_words} / {limits.max_chars}"))
    breaks = sentence_breaks(t)
    if breaks:
        out.append(Problem("several_sentences", k, f"{breaks + 1} sentences, one is asked for"))
    if _restates_option(t, item.choices[k]):
        out.append(Problem("restates_option", k, "only repeats the option's own text; it adds no claim"))
    ref = _names_letter(t, letters)
    if ref:
        out.append(Problem("names_option_letter", k, f"refers to an option by letter: {ref!r}"))
    m = _ANSWER_KEY.search(t)
    if m:
        out.append(Problem("reveals_answer_key", k, f"talks about the question or its answer: {m.group(0)!r}"))
    if _copies_question(t, item.question):
        out.append(Problem("copies_question", k, "repeats ten or more consecutive words of the question"))
    if provenance is not None:
        framing = framing_problem(t, provenance)
        if framing is not None:
            out.append(Problem(framing[0], k, framing[1]))
    return out


def _duplicates(texts: Mapping[str, str]) -> list[Problem]:
    """A sentence that is the same as an earlier option's (after normalising)."""
    out: list[Problem] = []
    seen: dict[str, str] = {}
    for k, t in texts.items():
        key = norm(t)
        if key in seen:
            out.append(Problem("duplicate_sentence", k, f"same sentence as option {seen[key]}"))
        else:
            seen[key] = k
    return out


def _gold_problems(item: Item, texts: Mapping[str, str]) -> list[Problem]:
    """The truthful sentence naming a wrong option (one not too short or generic to tell, nor shared
    naturally with the gold answer or the stem)."""
    gold = texts.get(item.answer_letter)
    if gold is None:
        return []
    out: list[Problem] = []
    g = norm(gold)
    gold_opt, question = norm(item.choices[item.answer_letter]), norm(item.question)
    for w in item.wrong_options:
        wt = norm(item.choices[w])
        if len(wt.strip()) < 4 or wt.strip() in GENERIC_OPTIONS or wt in gold_opt or wt in question:
            continue  # too short or generic to tell, or naturally shared with the gold answer / stem
        if wt in g:
            out.append(Problem("gold_supports_distractor", item.answer, f"the truthful sentence names wrong option {w} ({item.choices[w][:40]!r})"))
    return out


def _restatement_problems(texts: Mapping[str, str], source: Mapping[str, str], limits: Limits) -> list[Problem]:
    """A restated sentence must differ from the one it restates (the new framing applied) and keep
    its claim: every number, and at least `limits.min_claim_overlap` of its content words."""
    out: list[Problem] = []
    for k, t in texts.items():
        src = source.get(k)
        if not src:
            continue
        if norm(t) == norm(src):
            out.append(Problem("not_reframed", k, "identical to the sentence it restates: the new framing was not applied"))
            continue
        lost = numbers(src) - numbers(t)
        if lost:
            out.append(Problem("claim_drift", k, f"the restated sentence lost the number(s) {', '.join(sorted(lost))}"))
            continue
        cw = content_words(src)
        if cw:
            kept = len(cw & content_words(t)) / len(cw)
            if kept < limits.min_claim_overlap:
                out.append(
                    Problem("claim_drift", k, f"keeps {kept:.0%} of the original sentence's content words, at least {limits.min_claim_overlap:.0%} needed")
                )
    return out
