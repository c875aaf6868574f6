"""`retrieval:INDEX[,k=N][,terms=M]`: the top-k passages of a local corpus index (`medres corpus index`),
added before the question as numbered, cited evidence.

    medres eval --setting none --setting retrieval:corpus.sqlite,k=3 ...

The query is the text of the last user message as the family renders it (so whatever the model is
shown, added context included): its words, without option letters, one-digit numbers and common
English and prompt words, the first `terms` of them (default 32; fewer is faster, see
BENCHMARKS.md), OR-ed and ranked by FTS5 bm25() (see corpus.query). Each passage is written `[E1] title (document id, part i of n)` then its text;
the labels carry a letter so a citation is never read as an option label. An instruction asks the
model to use a passage only where it is relevant, cite what it relies on, and keep the reply
format asked for. When nothing matches, the block says so.

The item's answer key never comes back as evidence: a passage that holds the gold option's text
(an MCQ) or the item's reference (free text) as a run of whole words is skipped, when that text
has at least `MIN_GOLD_WORDS` words (a shorter one, "yes" or "Metformin", would take every
relevant passage with it). The index's hash (of its passages, tokenizer and chunking), k and
these texts are recorded with the run; the same index and messages give the same passages, so
request keys are stable and a rerun resumes."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from ..runtime.errors import ConfigError
from .registry import register_factory
from .setting import Messages, Setting

if TYPE_CHECKING:  # pragma: no cover
    from ..corpus import CorpusIndex, Passage
    from ..records import Item

NAME = "retrieval"
USAGE = "retrieval:INDEX.sqlite[,k=3][,terms=32] (build the index with: medres corpus index CORPUS --out INDEX.sqlite)"
DEFAULT_K = 3
MAX_K = 20
MIN_GOLD_WORDS = 4
DEFAULT_TERMS = 32
MIN_TERMS, MAX_TERMS = 4, 64

EVIDENCE_INSTRUCTION = (
    "Use a passage only where it is relevant to the question, and cite the passages you rely on by their labels, "
    "e.g. [E1]. Keep to the reply format the question asks for."
)
EVIDENCE_HEAD = "Evidence passages (retrieved by keyword search from a reference corpus; they may be incomplete, outdated or beside the point):"
NO_EVIDENCE = "Evidence passages: none in the reference corpus matched this question."
QUERY_RULE = (
    "the last user message: word tokens, lower-cased, without one-character tokens and stopwords, "
    "the first `terms`, each quoted and OR-ed; ranked by FTS5 bm25(), ties by rowid; passages holding the "
    f"item's gold text (>= {MIN_GOLD_WORDS} words) skipped"
)


def whole_number(value: str, key: str, lo: int, hi: int, where: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(where, f"{key} must be a whole number from {lo} to {hi}, got {value!r}") from None
    if not lo <= n <= hi:
        raise ConfigError(where, f"{key} must be from {lo} to {hi}, got {n}")
    return n


def parse(args: str, name: str) -> tuple[Path, int, int]:
    """(index path, k, terms) from `INDEX[,k=N][,terms=M]` (the index may also be given as index=INDEX)."""
    where = f"--setting {name}"
    path: str | None = None
    k, terms = DEFAULT_K, DEFAULT_TERMS
    for part in args.split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq:
            if path is not None:
                raise ConfigError(where, f"two index paths ({path}, {part}); {USAGE}")
            path = part
        elif key == "index":
            path = value.strip()
        elif key == "k":
            k = whole_number(value, "k", 1, MAX_K, where)
        elif key == "terms":
            terms = whole_number(value, "terms", MIN_TERMS, MAX_TERMS, where)
        else:
            raise ConfigError(where, f"unknown option {key!r} (known: k, terms, index); {USAGE}")
    if not path:
        raise ConfigError(where, f"no index given; {USAGE}")
    return Path(path), k, terms


def gold_texts(item: Item) -> tuple[str, ...]:
    """The item's answer-key texts long enough to filter on (at least MIN_GOLD_WORDS words)."""
    texts = []
    if item.options and item.answer in item.options:
        texts.append(item.options[item.answer])
    if item.reference:
        texts.append(item.reference)
    return tuple(t for t in texts if len(t.split()) >= MIN_GOLD_WORDS)


def evidence_block(passages: list[Passage]) -> str:
    if not passages:
        return NO_EVIDENCE
    body = "\n\n".join(f"[E{p.rank}] {p.citation}\n{p.text}" for p in passages)
    return f"{EVIDENCE_HEAD}\n\n{body}\n\n{EVIDENCE_INSTRUCTION}"


def _last_user(messages: Messages) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return i
    return None


def _stamp(args: str) -> object:
    try:
        path = parse(args, NAME)[0]
        st = path.stat()
    except (ConfigError, OSError):
        return None
    return (str(path.resolve()), st.st_mtime_ns, st.st_size, st.st_ino)


def make(args: str, name: str) -> Setting:
    from ..corpus import CorpusIndex

    path, k, terms = parse(args, name)
    index = CorpusIndex(path)
    m = index.manifest
    return _setting(
        index,
        k,
        terms,
        name,
        {
            "instruction": EVIDENCE_INSTRUCTION,
            "head": EVIDENCE_HEAD,
            "none": NO_EVIDENCE,
            "query": QUERY_RULE,
            "k": str(k),
            "terms": str(terms),
            "index": (
                f"index_hash={m['index_hash']}; passages={m['counts']['passages']}; documents={m['counts']['documents']}; "
                f"tokenizer={m['tokenizer']}; chunking={m['chunking']['words']} words, overlap {m['chunking']['overlap']}"
            ),
        },
        f"top-{k} passages of the corpus index {path} (hash {m['index_hash']}) as cited evidence before the question",
    )


def _setting(index: CorpusIndex, k: int, terms: int, name: str, texts: dict[str, str], description: str) -> Setting:
    @functools.lru_cache(maxsize=8192)
    def block(query: str, exclude: tuple[str, ...]) -> str:
        return evidence_block(index.search(query, k, exclude, terms))

    def apply_item(messages: Messages, item: Item | None) -> Messages:
        i = _last_user(messages)
        if i is None:
            return messages
        content = messages[i]["content"]
        evidence = block(content, gold_texts(item) if item is not None else ())
        return [*messages[:i], {**messages[i], "content": f"{evidence}\n\n{content}"}, *messages[i + 1 :]]

    return Setting(name, description, lambda messages: apply_item(messages, None), texts, apply_item)


register_factory(NAME, make, USAGE, _stamp)
