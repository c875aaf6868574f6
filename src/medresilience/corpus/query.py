"""Words in, FTS5 query out, and the text tests for an answer key.

`chunk(text, words, overlap)`: a document as passages of at most `words` whitespace-separated
words, consecutive passages sharing `overlap` words (the last one may be shorter; a document of
at most `words` words is one passage).

`match_expression(text)`: the FTS5 MATCH expression of a question: its word tokens (Unicode
letters and digits), lower-cased, without one-character tokens (option letters), numbers of one
digit and common English and prompt words, first occurrence first, at most `max_terms` of them,
each written as an FTS5 string ("term", a double quote doubled) and joined with OR. User text
never reaches FTS5 as syntax: AND, OR, NOT, NEAR, quotes, parentheses, `*`, `^`, `:` and `-`
are words or separators here, never operators. None when no term is left.

`normalise(text)` / `contains(passage, gold)`: the word tokens joined by single spaces, and
whether a passage holds a text as a run of whole words."""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "chunk", "contains", "fts_string", "match_expression", "normalise", "query_terms"]

_WORD = re.compile(r"\w+", re.UNICODE)

_STOPWORDS_TEXT = """
a about above after again against all also am an and any are as at be because been before being below between both but by
can could did do does doing down during each few for from further had has have having he her here hers herself him himself
his how i if in into is it its itself just let me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves then there these they this
those through to too under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves may might must shall one two three use used using per vs via etc
question questions answer answers option options reply letter letters single best form following correct choose select
context additional nothing else explain step think given
"""
#: common English words and the words of answer-format instructions, left out of queries
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def chunk(text: str, words: int, overlap: int) -> list[str]:
    if words < 1 or not 0 <= overlap < words:
        raise ValueError(f"chunking needs words >= 1 and 0 <= overlap < words, got words={words}, overlap={overlap}")
    toks = text.split()
    if len(toks) <= words:
        return [" ".join(toks)] if toks else []
    step = words - overlap
    out = []
    for start in range(0, len(toks), step):
        out.append(" ".join(toks[start : start + words]))
        if start + words >= len(toks):
            break
    return out


def query_terms(text: str, max_terms: int = 32) -> list[str]:
    seen: dict[str, None] = {}
    for m in _WORD.finditer(text.lower()):
        t = m.group(0).strip("_")
        if len(t) < 2 or t in STOPWORDS or t in seen:
            continue
        seen[t] = None
        if len(seen) >= max_terms:
            break
    return list(seen)


def fts_string(term: str) -> str:
    """A term as an FTS5 string: in double quotes, a double quote inside doubled."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(text: str, max_terms: int = 32) -> str | None:
    terms = query_terms(text, max_terms)
    return " OR ".join(fts_string(t) for t in terms) if terms else None


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def contains(passage: str, gold: str) -> bool:
    """Whether `gold` occurs in `passage` as a run of whole words (case, punctuation and spacing ignored)."""
    g = normalise(gold)
    return bool(g) and f" {g} " in f" {normalise(passage)} "
