"""A local evidence corpus for the `retrieval` and `agent` settings: a full-text index in one SQLite file
(FTS5, BM25 ranking), no server.

    from medresilience.corpus import CorpusIndex, build_index

    manifest = build_index("abstracts.jsonl", "corpus.sqlite", chunk_words=200, overlap=40)
    with CorpusIndex("corpus.sqlite") as idx:
        for p in idx.search("Does metformin lower HbA1c in diabetes?", k=3):
            print(p.rank, p.citation, p.score)

`documents` reads the inputs and refuses answer keys (suites, benchmark and release files),
`query` turns a question into an FTS5 expression and chunks documents, `index` builds and
searches. The command is `medres corpus index CORPUS --out INDEX.sqlite`.

May import: family, runtime, sources."""

from __future__ import annotations

from .documents import SUITE_FILES, Document, answer_key_reason, plan_sources, read_documents
from .index import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP, FORMAT, TOKENIZER, CorpusIndex, Passage, build_index, check_fts5
from .query import chunk, contains, fts_string, match_expression, normalise, query_terms

__all__ = [
    "DEFAULT_CHUNK_WORDS",
    "DEFAULT_OVERLAP",
    "FORMAT",
    "SUITE_FILES",
    "TOKENIZER",
    "CorpusIndex",
    "Document",
    "Passage",
    "answer_key_reason",
    "build_index",
    "check_fts5",
    "chunk",
    "contains",
    "fts_string",
    "match_expression",
    "normalise",
    "plan_sources",
    "query_terms",
    "read_documents",
]
