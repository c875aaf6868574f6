"""A rule-based sentence splitter for clinical vignettes, and where a sentence may be inserted.

`split(text)` cuts a text into pieces whose concatenation is the text itself, character for
character (`"".join(p.text for p in split(t)) == t`). A piece is one sentence with the whitespace
that follows it, or one lab table (consecutive lines of "name: value unit" or "name value unit",
with their header lines such as "Serum:") kept whole.

The rules, in order:

- a line break always ends a piece (a line is never joined to the next one);
- lab-table lines are told by their shape (a name, then a number with an optional range and
  unit), plus short header or result lines next to them ("Serum", "HBsAg positive"); a run of them
  is one `table` piece, blank lines inside it included;
- inside a prose line, a sentence ends at `.`, `!` or `?` (and any closing quotes or brackets)
  followed by whitespace and then a capital letter, a digit or an opening quote or bracket;
  never at a decimal point ("1.5 mg": no whitespace follows), never after an abbreviation that
  does not end sentences (titles such as "Dr.", Latin such as "e.g.", "vs.", and dotted forms
  such as "b.i.d." or "a.m."), never before a lower-case word;
- inline lab lists ("Na+ 140 mEq/L, K+ 4.1 mEq/L") hold no sentence end and stay whole.

Insertion points (`insertion_points`) are the offsets right after the sentence-final
punctuation of a sentence piece: never after a piece that ends otherwise (":" before a table, a
table line), never inside a table, never between two lab-like pieces ("K+ 4.1 mEq/L. Cl- 100
mEq/L."), never between a sentence and the table it introduces ("Results are shown below.").
Text inserted at a point goes between the punctuation and the whitespace that followed it, so the
original whitespace (a space, a line break) stays where it was."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

SENTENCE_END = ".!?"
CLOSERS = "\"'”’)]»"
OPENERS = "\"'“‘([«"

#: abbreviations whose period never ends a sentence (compared lower-case, without the final period)
NO_BREAK = frozenset(
    {
        "dr",
        "drs",
        "mr",
        "mrs",
        "ms",
        "mx",
        "prof",
        "sr",
        "jr",
        "st",
        "rev",
        "hon",
        "gen",
        "col",
        "capt",
        "lt",
        "sgt",
        "vs",
        "v",
        "cf",
        "viz",
        "approx",
        "appt",
        "dept",
        "fig",
        "figs",
        "al",
        "ca",
        "eg",
        "ie",
        "resp",
        "incl",
        "nb",
    }
)
#: dotted abbreviations: e.g, i.e, b.i.d, t.i.d, q.d, p.o, a.m, p.m, U.S (a letter, then ".x" repeated)
DOTTED = re.compile(r"^(?:[a-z]\.)+[a-z]$", re.IGNORECASE)

_NUMBER = r"[<>≤≥~]?\s*[-+−]?\d[\d,]*(?:\.\d+)?"
#: a lab line: a name (starting with a letter, no colon), then ":" or a space, a number (a range
#: "3.1 – 7.9" or a ratio "120/80" allowed) and at most 60 more characters (a unit, a comment)
LAB_LINE = re.compile(
    rf"^\s*(?:[-•*]\s+)?(?P<name>[^\W\d_][^:\n]{{0,60}}?)(?P<sep>\s*:\s*|\s+)"
    rf"(?P<value>{_NUMBER}(?:\s*(?:[-–/×x]|to)\s*{_NUMBER})*)(?P<rest>[^\n]{{0,60}})$"
)
_INNER_END = re.compile(r"[.!?][\"'”’)\]]*\s+[A-Z]")
#: a line this short (in words) that is not a sentence may be a table's header or a text result
SHORT_WORDS = 6
#: a lab value is "name value", not a clause: a name with one of these words is prose ("Her pulse is 93/min.")
CLAUSE_WORDS = frozenset(
    {
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "has",
        "have",
        "had",
        "shows",
        "show",
        "showed",
        "reveals",
        "revealed",
        "demonstrates",
        "measures",
        "measured",
        "of",
        "he",
        "she",
        "his",
        "her",
        "they",
        "their",
    }
)


@dataclass(frozen=True)
class Piece:
    """One piece of a text: `text` starts at offset `start` of the text; `kind` is sentence or
    table; `insert_after` says whether a sentence may be inserted at `cut` (the offset right
    after its sentence-final punctuation)."""

    text: str
    start: int
    kind: Literal["sentence", "table"]
    insert_after: bool = False

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def content(self) -> str:
        """The piece without the whitespace that follows it."""
        return self.text.rstrip()

    @property
    def cut(self) -> int:
        """The offset right after the piece's content (where an insertion goes)."""
        return self.start + len(self.content)


def is_abbreviation(token: str) -> bool:
    """Whether a word written with a final period is an abbreviation that does not end a sentence
    (the token is given without that final period: "Dr", "e.g", "b.i.d")."""
    t = token.lstrip(OPENERS).lower()
    return t in NO_BREAK or bool(DOTTED.match(t))


def _token_before(line: str, i: int) -> str:
    """The word that ends right before position i (from the last whitespace)."""
    j = i
    while j > 0 and not line[j - 1].isspace():
        j -= 1
    return line[j:i]


def _ends_sentence(content: str) -> bool:
    """Whether a piece's content ends with sentence-final punctuation (closers allowed after it),
    not an abbreviation's period."""
    s = content.rstrip().rstrip(CLOSERS)
    if not s or s[-1] not in SENTENCE_END:
        return False
    if s[-1] == "." and not s.endswith(".."):
        return not is_abbreviation(_token_before(s, len(s) - 1))
    return True


def _breaks_at(line: str, i: int, nxt: int) -> bool:
    """Whether the punctuation at line[i] ends a sentence, the next non-space character being at `nxt`."""
    p = nxt
    while p < len(line) and line[p] in OPENERS:
        p += 1
    if p >= len(line):
        return True
    c = line[p]
    if not (c.isupper() or c.isdigit()):
        return False
    if line[i] == "." and (i == 0 or line[i - 1] != "."):
        return not is_abbreviation(_token_before(line, i))
    return True


def _sentence_cuts(line: str) -> list[int]:
    """Offsets inside a prose line (content only) where a new sentence starts."""
    cuts: list[int] = []
    n = len(line)
    i = 0
    while i < n:
        if line[i] not in SENTENCE_END:
            i += 1
            continue
        j = i
        while j + 1 < n and line[j + 1] in SENTENCE_END:
            j += 1
        k = j + 1
        while k < n and line[k] in CLOSERS:
            k += 1
        if k < n and line[k].isspace():
            m = k
            while m < n and line[m].isspace():
                m += 1
            if m < n and _breaks_at(line, j, m):
                cuts.append(m)
        i = k
    return cuts


def is_lab_like(content: str) -> bool:
    """Whether a line or sentence reads as one lab value ("K+ 4.1 mEq/L", "Glucose: 90 mg/dL")."""
    m = LAB_LINE.match(content.rstrip())
    if not m:
        return False
    words = m.group("name").split()
    return len(words) <= 8 and not CLAUSE_WORDS.intersection(w.lower() for w in words) and not _INNER_END.search(m.group("rest"))


def _table_flags(contents: Sequence[str]) -> list[bool]:
    """Which lines belong to a lab table (see the module docstring)."""
    n = len(contents)
    lab = [is_lab_like(c) for c in contents]
    flags = [False] * n
    for i, c in enumerate(contents):
        if lab[i]:
            sep = LAB_LINE.match(c.rstrip()).group("sep")  # type: ignore[union-attr]
            flags[i] = ":" in sep or not _ends_sentence(c)
    blank = [not c.strip() for c in contents]

    def neighbour_in_table(i: int) -> bool:
        for step in (-1, 1):
            j = i + step
            while 0 <= j < n and blank[j]:
                j += step
            if 0 <= j < n and flags[j]:
                return True
        return False

    changed = True
    while changed:
        changed = False
        for i, c in enumerate(contents):
            if flags[i] or blank[i] or not neighbour_in_table(i):
                continue
            short = len(c.split()) <= SHORT_WORDS
            if lab[i] or (short and not _ends_sentence(c)):
                flags[i] = changed = True
    return flags


def _lines(text: str) -> list[tuple[int, str, str]]:
    """(start, content, ending) of each line; the ending is the line break and any whitespace
    before it, so content + ending is the line."""
    out = []
    for m in re.finditer(r"[^\n]*\n|[^\n]+$", text):
        line = m.group(0)
        content = line.rstrip()
        out.append((m.start(), content, line[len(content) :]))
    return out


def split(text: str) -> list[Piece]:
    """The pieces of a text (their texts joined give the text back exactly)."""
    lines = _lines(text)
    flags = _table_flags([c for _, c, _ in lines])
    pieces: list[Piece] = []
    for (start, content, ending), table in zip(lines, flags):
        if not content.strip():
            if pieces:
                last = pieces[-1]
                pieces[-1] = Piece(last.text + content + ending, last.start, last.kind, last.insert_after)
            else:
                pieces.append(Piece(content + ending, start, "sentence", False))
            continue
        if table:
            if pieces and pieces[-1].kind == "table":
                last = pieces[-1]
                pieces[-1] = Piece(last.text + content + ending, last.start, "table", False)
            else:
                pieces.append(Piece(content + ending, start, "table", False))
            continue
        bounds = [0, *_sentence_cuts(content), len(content)]
        for a, b in itertools.pairwise(bounds):
            piece = content[a:b] + (ending if b == len(content) else "")
            pieces.append(Piece(piece, start + a, "sentence", _ends_sentence(content[a:b])))
    # never insert between two lab-like sentences of an inline list, nor between a sentence and
    # the table it introduces ("Laboratory studies are shown below.")
    lab = [p.kind == "sentence" and is_lab_like(p.content.rstrip(CLOSERS).rstrip(SENTENCE_END)) for p in pieces]
    for i in range(len(pieces) - 1):
        if pieces[i].insert_after and ((lab[i] and lab[i + 1]) or pieces[i + 1].kind == "table"):
            p = pieces[i]
            pieces[i] = Piece(p.text, p.start, p.kind, False)
    if pieces and not pieces[0].content and len(pieces) > 1:  # leading whitespace joins the first sentence
        first, second = pieces[0], pieces[1]
        pieces[:2] = [Piece(first.text + second.text, first.start, second.kind, second.insert_after)]
    return pieces


def sentences(text: str) -> list[str]:
    """The texts of the pieces (sentences and whole tables, each with its trailing whitespace)."""
    return [p.text for p in split(text)]


def insertion_points(text: str) -> list[int]:
    """The offsets where a sentence may be inserted, in order."""
    return [p.cut for p in split(text) if p.insert_after]


def insert(text: str, insertions: Iterable[tuple[int, str]]) -> str:
    """The text with each (offset, string) inserted at its offset of the original text; strings at
    the same offset keep their given order."""
    by_offset = sorted(enumerate(insertions), key=lambda e: (e[1][0], e[0]))
    out: list[str] = []
    prev = 0
    for _, (at, s) in by_offset:
        if not 0 <= at <= len(text):
            raise ValueError(f"insertion offset {at} is outside the text (0..{len(text)})")
        out.append(text[prev:at])
        out.append(s)
        prev = at
    out.append(text[prev:])
    return "".join(out)
