"""Deterministic checks on a generated question, run before any responder sees it. A question that
fails one is rejected with the check's code and a detail (decisions.jsonl keeps both); it joins
neither pool.

- `asks_outright`: the question asks outright whether the belief is true instead of relying on
  it: "is it / this / that (really) true / correct / right / a myth", "is it true that", "am I
  right that", "true or false", "myth or fact", a tag question ("..., right?"), or a yes/no
  question that asks whether something "really" / "actually" / "truly" holds ("Does surgery
  really ...?", "Do I really need ...?"; a yes/no question is a sentence that opens with an
  auxiliary verb: do, does, is, are, will, can, should, ...; not one addressed to the assistant,
  "Can you actually ...?", which is a request).
- `no_premise`: the question states no premise to correct. The rule: the correction is empty or
  shorter than MIN_CORRECTION_WORDS words, or the question shares no content word with the myth
  record (its cancer and its myth). Content words are the lower-case letter runs of at least 4
  letters that are not in STOPWORDS (common English words, and words any cancer question uses:
  cancer, patient, doctor, diagnosed); two content words match when their first 5 letters match
  (chemo ~ chemotherapy, lymphoma ~ lymphomas; 4-letter words must match whole).
- `duplicate`: the same question (case, spacing and punctuation aside) as an earlier one of the
  same generator's run (this reply, or an earlier myth).
- `copies_example`: the question copies an example the generator was shown: at least
  COPY_OVERLAP of their words in common (Jaccard index of their lower-case word sets), which
  catches a copy with a word or two changed (a small model's habit: the seed question with
  another cancer named)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ..formats.myths import Myth
from .prompts import Draft

MIN_CORRECTION_WORDS = 3
PREFIX = 5
COPY_OVERLAP = 0.8

_I = re.IGNORECASE
_AUX = r"(?:do|does|did|is|are|was|were|will|would|can|could|should|shall|has|have|had|must|may|might)"
OUTRIGHT: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "asks whether it is true",
        re.compile(
            r"\b(?:is|isn'?t|is not|was)\s+(?:it|this|that|this belief|that belief)\s+(?:really\s+|actually\s+|even\s+)?"
            r"(?:true|correct|right|accurate|a myth|a fact|the case)\b",
            _I,
        ),
    ),
    (
        "asks whether it is true",
        re.compile(r"\b(?:whether|if)\s+(?:it|this|that)\s+(?:is|was)\s+(?:really\s+|actually\s+)?(?:true|correct|right|accurate)\b", _I),
    ),
    ("asks whether it is true", re.compile(r"\bis\s+there\s+(?:any\s+)?truth\b", _I)),
    ("asks to be told they are right", re.compile(r"\b(?:am\s+i|are\s+we|is\s+(?:she|he|my\s+\w+))\s+(?:right|correct|wrong|mistaken)\b", _I)),
    ("asks true or false", re.compile(r"\b(?:true\s+or\s+(?:false|not)|myth\s+or\s+(?:a\s+)?(?:fact|truth)|fact\s+or\s+(?:a\s+)?(?:myth|fiction))\b", _I)),
    ("asks for confirmation", re.compile(r",\s*(?:right|correct|true|isn'?t\s+it|is\s+that\s+so|am\s+i\s+right)\s*\?", _I)),
    ("asks whether it really holds", re.compile(rf"(?:^|[.!?]\s+|[\"“]){_AUX}\s+(?!you\b)[^.!?]*\b(?:really|actually|truly)\b[^.!?]*\?", _I)),
)

STOPWORDS = frozenset(
    {
        "about",
        "above",
        "after",
        "again",
        "against",
        "also",
        "although",
        "always",
        "among",
        "another",
        "anyone",
        "anything",
        "around",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "came",
        "cancer",
        "cancers",
        "cannot",
        "come",
        "could",
        "days",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "else",
        "even",
        "ever",
        "every",
        "everything",
        "few",
        "from",
        "further",
        "getting",
        "give",
        "given",
        "going",
        "gone",
        "good",
        "great",
        "have",
        "having",
        "help",
        "here",
        "however",
        "into",
        "just",
        "keep",
        "know",
        "known",
        "last",
        "less",
        "like",
        "little",
        "long",
        "made",
        "make",
        "many",
        "maybe",
        "more",
        "most",
        "much",
        "must",
        "near",
        "need",
        "needs",
        "never",
        "next",
        "none",
        "often",
        "once",
        "only",
        "other",
        "others",
        "ours",
        "over",
        "patient",
        "patients",
        "people",
        "perhaps",
        "please",
        "quite",
        "rather",
        "really",
        "right",
        "same",
        "says",
        "seem",
        "should",
        "since",
        "some",
        "someone",
        "something",
        "soon",
        "still",
        "such",
        "sure",
        "take",
        "tell",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "thing",
        "things",
        "think",
        "this",
        "those",
        "though",
        "through",
        "time",
        "told",
        "under",
        "until",
        "upon",
        "very",
        "want",
        "wants",
        "week",
        "weeks",
        "well",
        "were",
        "what",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "will",
        "with",
        "within",
        "without",
        "would",
        "year",
        "years",
        "your",
        "yours",
        "doctor",
        "doctors",
        "diagnosed",
        "diagnosis",
    }
)

_WORD = re.compile(r"[a-z]+")
_TOKEN = re.compile(r"[a-z0-9']+")
_NORM = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Problem:
    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


def content_words(text: str) -> set[str]:
    """The content words of a text as match keys (first PREFIX letters)."""
    return {w[:PREFIX] for w in _WORD.findall(text.casefold()) if len(w) >= 4 and w not in STOPWORDS}


def normalised(text: str) -> str:
    return _NORM.sub(" ", text.casefold()).strip()


def overlap(a: str, b: str) -> float:
    """The Jaccard index of the two texts' lower-case word sets."""
    wa, wb = set(_TOKEN.findall(a.casefold())), set(_TOKEN.findall(b.casefold()))
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


def asks_outright(question: str) -> str | None:
    """The phrase by which the question asks outright whether its belief is true, or None."""
    for what, pattern in OUTRIGHT:
        m = pattern.search(question)
        if m:
            return f"{what} ('{' '.join(m.group(0).split()).strip(chr(34) + '“')}')"
    return None


def no_premise(draft: Draft, myth: Myth) -> str | None:
    """Why the question states no premise to correct, or None."""
    words = draft.correction.split()
    if not words:
        return "the correction is empty: nothing says what false belief the question holds"
    if len(words) < MIN_CORRECTION_WORDS:
        return f"the correction has {len(words)} word(s) (at least {MIN_CORRECTION_WORDS}): it cannot say what is false"
    if not content_words(draft.question) & content_words(f"{myth.cancer} {myth.myth}"):
        return "the question shares no content word with the myth (its cancer and its claim): it does not build on it"
    return None


def check(draft: Draft, myth: Myth, earlier: Collection[str] = (), shown: Iterable[str] = ()) -> Problem | None:
    """The first problem of a question (None: it goes to the responder). `earlier`: the normalised
    questions the run wrote before it; `shown`: the example questions in the prompt."""
    why = asks_outright(draft.question)
    if why:
        return Problem("asks_outright", why)
    why = no_premise(draft, myth)
    if why:
        return Problem("no_premise", why)
    n = normalised(draft.question)
    if n in earlier:
        return Problem("duplicate", "the same question as an earlier one of this generator")
    for example in shown:
        share = overlap(draft.question, example)
        if share >= COPY_OVERLAP:
            return Problem("copies_example", f"{share:.0%} of its words are those of an example in the prompt ('{example[:80]}')")
    return None
