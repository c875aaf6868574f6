"""A local full-text index: one SQLite file with an FTS5 table, no server.

Tables: `passages` (rowid, doc_id, chunk, chunks, title, text), `passages_fts` (FTS5 over title and
text, external content = passages, tokenizer `porter unicode61 remove_diacritics 2`) and
`manifest` (key -> JSON): format and version, sources (path, kind, SHA-256, bytes, documents,
passages), skipped files, counts, tokenizer, chunking, text field, `content_sha256` (of every
passage in order: doc id, chunk, title, text) and `index_hash` (of the content, tokenizer and
chunking: what decides what a query returns). The build writes a temporary file beside `out` and
renames it over `out` when complete, so a failed or interrupted build leaves nothing; an existing
`out` that is not an index is never overwritten.

Search: `CorpusIndex.search(text, k, exclude=())` ranks passages by FTS5 `bm25()` (title and text
weighted alike; lower is better) over `query.match_expression(text)`, ties broken by rowid, and
skips passages that hold any `exclude` text as a run of whole words. Same index and text, same
passages. `CorpusIndex.passage(rowid)` reads one passage back (the search agent's `read`)."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..runtime.errors import ConfigError, InputError
from ..runtime.fileio import node_kind, output_mode
from ..runtime.seeding import stable_hash
from .documents import plan_sources, read_documents
from .query import chunk, contains, match_expression

__all__ = ["DEFAULT_CHUNK_WORDS", "DEFAULT_OVERLAP", "FORMAT", "TOKENIZER", "CorpusIndex", "Passage", "build_index", "check_fts5"]

FORMAT = "medres-corpus-index"
VERSION = 1
TOKENIZER = "porter unicode61 remove_diacritics 2"
DEFAULT_CHUNK_WORDS = 200
DEFAULT_OVERLAP = 40
_BATCH = 2000

_SCHEMA = f"""
CREATE TABLE manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE passages (rowid INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, chunk INTEGER NOT NULL, chunks INTEGER NOT NULL,
                       title TEXT NOT NULL, text TEXT NOT NULL, UNIQUE (doc_id, chunk));
CREATE VIRTUAL TABLE passages_fts USING fts5(title, text, content='passages', content_rowid='rowid', tokenize='{TOKENIZER}');
"""


def check_fts5(conn: sqlite3.Connection | None = None) -> None:
    """ConfigError when this Python's SQLite has no FTS5."""
    c = conn or sqlite3.connect(":memory:")
    try:
        c.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x)")
        c.execute("DROP TABLE temp.fts5_probe")
    except sqlite3.OperationalError as e:
        raise ConfigError(
            "sqlite3",
            f"this Python's SQLite {sqlite3.sqlite_version} has no FTS5 ({e}); "
            "the corpus index needs a SQLite built with FTS5 (most are: python.org and distribution builds)",
        ) from None
    finally:
        if conn is None:
            c.close()


@dataclass(frozen=True)
class Passage:
    rank: int
    rowid: int
    doc_id: str
    chunk: int
    chunks: int
    title: str
    text: str
    score: float

    @property
    def citation(self) -> str:
        """`title (doc id)`, with `part i of n` for a chunk of a longer document."""
        part = f", part {self.chunk} of {self.chunks}" if self.chunks > 1 else ""
        return f"{self.title} ({self.doc_id}{part})" if self.title != self.doc_id else f"{self.doc_id}{part}"


def _is_index(path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM manifest WHERE key = 'format'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and json.loads(row[0]) == FORMAT


def build_index(
    source: Path | str, out: Path | str, *, field: str = "text", chunk_words: int = DEFAULT_CHUNK_WORDS, overlap: int = DEFAULT_OVERLAP
) -> dict[str, Any]:
    """Index a corpus (see corpus.documents for the inputs and refusals); returns the manifest."""
    source, out = Path(source), Path(out)
    if chunk_words < 10:
        raise ConfigError("--chunk-words", f"at least 10 words, got {chunk_words}")
    if not 0 <= overlap < chunk_words:
        raise ConfigError("--overlap", f"0 <= overlap < chunk words ({chunk_words}), got {overlap}")
    kind = node_kind(out)
    if kind is not None:  # a link, a pipe, a device or a directory is never replaced by the index
        raise InputError(out, None, None, f"exists and is {kind}, not a medres corpus index; not overwritten (choose another --out)")
    if out.exists() and not _is_index(out):
        raise InputError(out, None, None, "exists and is not a medres corpus index; not overwritten (choose another --out)")
    check_fts5()
    plan = plan_sources(source, exclude=(out,))  # refuses an answer key before anything is read
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp-index", dir=out.parent)
    os.fchmod(fd, output_mode())  # mkstemp makes 0600; an index is shared as any output
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        manifest = _write(tmp, source, plan, field, chunk_words, overlap)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return manifest


def _write(tmp: Path, source: Path, plan, field: str, chunk_words: int, overlap: int) -> dict[str, Any]:
    import hashlib

    conn = sqlite3.connect(tmp)
    try:
        conn.execute("PRAGMA journal_mode = OFF")  # a temporary file: a failed build is deleted whole
        conn.execute("PRAGMA synchronous = OFF")
        conn.executescript(_SCHEMA)
        content = hashlib.sha256()
        seen: dict[str, tuple[str, int | None]] = {}
        rowid = docs = words = 0
        batch: list[tuple] = []
        for src in plan.sources:
            for doc in read_documents(src, field):
                doc_id = doc.id
                if doc_id in seen:
                    where = seen[doc_id]
                    first = where[0] + (f":{where[1]}" if where[1] else "")
                    raise InputError(src.path, doc.line, "id", f"{doc_id!r} is given twice (first at {first}); document ids must be unique")
                seen[doc_id] = (str(src.path), doc.line)
                parts = chunk(doc.text, chunk_words, overlap)
                if not parts:
                    continue
                docs += 1
                src.documents += 1
                words += len(doc.text.split())
                for i, text in enumerate(parts, 1):
                    rowid += 1
                    src.passages += 1
                    batch.append((rowid, doc_id, i, len(parts), doc.title, text))
                    content.update(json.dumps([doc_id, i, doc.title, text], ensure_ascii=False).encode("utf-8"))
                    content.update(b"\n")
                if len(batch) >= _BATCH:
                    conn.executemany("INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?)", batch)
                    batch.clear()
        if batch:
            conn.executemany("INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?)", batch)
        if rowid == 0:
            raise InputError(source, None, field, "no passage to index (every document is empty)")
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('optimize')")
        chunking = {"unit": "whitespace-separated words", "words": chunk_words, "overlap": overlap}
        content_sha = content.hexdigest()
        manifest: dict[str, object] = {
            "format": FORMAT,
            "version": VERSION,
            "medresilience": __version__,
            "sqlite": sqlite3.sqlite_version,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "input": str(source),
            "sources": [s.record() for s in plan.sources],
            "skipped": plan.skipped,
            "counts": {"files": len(plan.sources), "documents": docs, "passages": rowid, "words": words},
            "field": field,
            "tokenizer": TOKENIZER,
            "chunking": chunking,
            "ranking": "FTS5 bm25(), title and text weighted 1.0, ties by rowid",
            "content_sha256": content_sha,
            "index_hash": stable_hash(FORMAT, VERSION, TOKENIZER, chunking, content_sha)[:16],
        }
        conn.executemany("INSERT INTO manifest VALUES (?, ?)", [(k, json.dumps(v, ensure_ascii=False)) for k, v in manifest.items()])
        conn.commit()
        conn.execute("VACUUM")
    finally:
        conn.close()
    return manifest


class CorpusIndex:
    """A built index, opened read-only. Safe to share between threads (one connection, a lock)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(self.path, None, None, "no corpus index here (build one with: medres corpus index CORPUS --out INDEX.sqlite)")
        try:
            self._conn = sqlite3.connect(f"file:{self.path.resolve()}?mode=ro", uri=True, check_same_thread=False)
            rows = self._conn.execute("SELECT key, value FROM manifest").fetchall()
        except sqlite3.Error as e:
            raise InputError(self.path, None, None, f"not a medres corpus index ({e})") from None
        self.manifest: dict[str, Any] = {k: json.loads(v) for k, v in rows}
        if self.manifest.get("format") != FORMAT:
            raise InputError(self.path, None, "manifest.format", f"not a medres corpus index (format {self.manifest.get('format')!r})")
        if self.manifest.get("version") != VERSION:
            raise InputError(
                self.path, None, "manifest.version", f"index version {self.manifest.get('version')} (this medresilience reads {VERSION}); rebuild it"
            )
        check_fts5(self._conn)
        self._lock = threading.Lock()

    @property
    def index_hash(self) -> str:
        return str(self.manifest["index_hash"])

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> CorpusIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, text: str, k: int = 3, exclude: Sequence[str] = (), max_terms: int = 32) -> list[Passage]:
        """The top `k` passages for a question text (see the module doc), without any passage that
        holds one of `exclude` as a run of whole words."""
        expr = match_expression(text, max_terms)
        if expr is None or k < 1:
            return []
        out: list[Passage] = []
        page, offset = max(4 * k, 16), 0
        with self._lock:
            while len(out) < k:
                ranked = self._conn.execute(
                    "SELECT rowid, bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH ? ORDER BY s, rowid LIMIT ? OFFSET ?",
                    (expr, page, offset),
                ).fetchall()
                if not ranked:
                    break
                rows = self._rows([r[0] for r in ranked])
                for rowid, score in ranked:
                    doc_id, ch, chunks, title, body = rows[rowid]
                    if any(contains(f"{title}\n{body}", g) for g in exclude):
                        continue
                    out.append(Passage(len(out) + 1, rowid, doc_id, ch, chunks, title, body, score))
                    if len(out) == k:
                        break
                if len(ranked) < page:
                    break
                offset += page
        return out

    def passage(self, rowid: int) -> Passage | None:
        """The passage stored under `rowid` (rank 0, score 0), or None when there is none."""
        with self._lock:
            row = self._rows([rowid]).get(rowid)
        if row is None:
            return None
        doc_id, ch, chunks, title, body = row
        return Passage(0, rowid, doc_id, ch, chunks, title, body, 0.0)

    def _rows(self, rowids: Iterable[int]) -> dict[int, tuple]:
        ids = list(rowids)
        marks = ",".join("?" * len(ids))
        return {r[0]: r[1:] for r in self._conn.execute(f"SELECT rowid, doc_id, chunk, chunks, title, text FROM passages WHERE rowid IN ({marks})", ids)}
