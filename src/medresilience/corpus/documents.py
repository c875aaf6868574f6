"""What a corpus is read from, and what it may never be read from.

Inputs: a JSON-lines file of passages (`{"id": ..., "title": ..., "text": ...}`, the text field
named by `field`), a `.txt` / `.md` file (one document: its id is the file name, its title the
first `# heading` of a Markdown file, else the file's stem), a PubMedQA file (one object keyed by
PMID: each abstract, its CONTEXTS sentences, is one document with id `PMID <n>`; the question,
LONG_ANSWER and final_decision are never read), or a directory of them (walked in sorted order,
hidden entries skipped; ids are paths relative to it; other files are skipped and listed).

Never an answer key: a suite directory (suite.json, items.jsonl, probes.jsonl) or a suite file,
anything a family's format detector recognises (its release layouts), anything the source
detector recognises as a benchmark file (MedQA, MedMCQA, MMLU, ...; PubMedQA is read for its
abstracts only), and JSON lines whose first object is an item (a question with an answer,
options or reference) or a probe. Every file is checked before anything is indexed; a refusal is
an InputError naming the file and why."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.errors import InputError, MedresError
from ..runtime.fileio import read_text

__all__ = ["SUITE_FILES", "TEXT_SUFFIXES", "Document", "SourceFile", "answer_key_reason", "plan_sources", "read_documents"]

SUITE_FILES = ("suite.json", "items.jsonl", "probes.jsonl")
TEXT_SUFFIXES = (".txt", ".md", ".markdown")
JSON_SUFFIXES = (".jsonl", ".json")
#: keys of a first JSON object that make it an item row (a question with its answer key) or a probe row
_ITEM_KEYS = frozenset({"answer", "answer_idx", "options", "reference", "final_decision", "cop", "label", "gold"})
_PROBE_KEYS = frozenset({"item_id", "condition"})
_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    line: int | None = None  # where it starts in its file (JSON lines, PubMedQA), for errors


@dataclass
class SourceFile:
    """One input file, as the manifest records it."""

    path: Path
    kind: str  # passages | text | markdown | pubmedqa
    id_prefix: str = ""  # a directory's files: their path relative to it
    sha256: str = ""
    bytes: int = 0
    documents: int = 0
    passages: int = 0

    def record(self) -> dict:
        return {"path": str(self.path), "kind": self.kind, "sha256": self.sha256, "bytes": self.bytes, "documents": self.documents, "passages": self.passages}


@dataclass
class Plan:
    sources: list[SourceFile] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)


def _first_keys(path: Path) -> set[str] | None:
    """The keys of the first JSON object of a JSON-lines file (None: not one)."""
    import json

    try:
        with path.open("rb") as fh:
            for raw in fh:
                line = raw.decode("utf-8-sig", errors="strict").strip()
                if line:
                    obj = json.loads(line)
                    return set(obj) if isinstance(obj, dict) else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return None


def _family_format(path: Path) -> tuple[str, str] | None:
    """(family, format) when a family's detector recognises the file or folder."""
    from ..family import families

    for fam in families():
        if fam.suites.detect is None:
            continue
        try:
            fmt = fam.suites.detect(path)
        except (MedresError, OSError, ValueError):
            fmt = None
        if fmt:
            return fam.name, fmt
    return None


def _source_format(path: Path) -> str | None:
    from ..sources import detect_format

    try:
        return detect_format(path)
    except (MedresError, OSError, ValueError):
        return None


def answer_key_reason(path: Path | str) -> str | None:
    """Why a file or folder must not be indexed (it holds a benchmark's answer key), or None.
    A PubMedQA file is not refused: its abstracts are read, never its answers."""
    path = Path(path)
    why = "a benchmark's answer key is never indexed as evidence"
    if path.is_dir():
        present = [n for n in SUITE_FILES if (path / n).exists()]
        if present:
            return f"is a suite directory ({', '.join(present)}): {why}"
        found = _family_format(path)
        return f"is a '{found[1]}' release folder (the {found[0]} family's format detector recognises it): {why}" if found else None
    if path.name in SUITE_FILES:
        return f"is a suite's {path.name}: {why}"
    found = _family_format(path)
    if found:
        return f"is a '{found[1]}' file (the {found[0]} family's format detector recognises it): {why}"
    fmt = _source_format(path)
    if fmt is not None and fmt != "pubmedqa":
        if fmt == "items":  # the toolkit's own items layout (what `medres import` writes)
            return f"holds items (the items layout `medres import` writes): {why}"
        return f"is a '{fmt}' benchmark file (medresilience.sources recognises it): {why}"
    if path.suffix.lower() in JSON_SUFFIXES and fmt is None:
        keys = _first_keys(path)
        if keys and "question" in keys and keys & _ITEM_KEYS:
            return f"holds items (question with {', '.join(sorted(keys & _ITEM_KEYS))}): {why}"
        if keys and keys >= _PROBE_KEYS:
            return f"holds probes (item_id, condition): {why}"
    return None


def _refuse(path: Path) -> None:
    reason = answer_key_reason(path)
    if reason:
        raise InputError(path, None, None, f"{reason}; not indexed")


def _kind(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "text" if suffix == ".txt" else "markdown"
    if suffix in JSON_SUFFIXES:
        return "pubmedqa" if _source_format(path) == "pubmedqa" else "passages"
    return None


def plan_sources(path: Path | str, exclude: tuple[Path, ...] = ()) -> Plan:
    """The files an index is built from, every one checked first (InputError on the first that is
    an answer key, before anything is read). `exclude`: paths never read (the index being written)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "not found (expected a JSON-lines file of passages, a .txt/.md file, a PubMedQA file or a directory)")
    _refuse(path)
    plan = Plan()
    if path.is_file():
        kind = _kind(path) or "passages"  # a single file of another suffix is read as JSON lines
        plan.sources.append(SourceFile(path, kind))
        return plan
    skip = {p.resolve() for p in exclude}
    for f in sorted(path.rglob("*")):
        rel = f.relative_to(path)
        if any(part.startswith(".") for part in rel.parts) or f.resolve() in skip or f.name.endswith(".tmp-index"):
            continue
        if f.is_dir():
            present = [n for n in SUITE_FILES if (f / n).exists()]
            if present:
                raise InputError(
                    f, None, None, f"is a suite directory ({', '.join(present)}): a benchmark's answer key is never indexed as evidence; not indexed"
                )
            continue
        if not f.is_file():
            continue
        _refuse(f)
        found = _kind(f)
        if found is None:
            plan.skipped.append({"path": str(f), "reason": "not .txt, .md, .jsonl or .json"})
            continue
        plan.sources.append(SourceFile(f, found, id_prefix=rel.as_posix()))
    if not plan.sources:
        raise InputError(path, None, None, "holds no .txt, .md, .jsonl or .json file to index")
    return plan


def _checksum(src: SourceFile) -> None:
    h = hashlib.sha256()
    n = 0
    with src.path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            n += len(chunk)
    src.sha256, src.bytes = h.hexdigest(), n


def _markdown_title(text: str) -> str | None:
    for line in text.splitlines()[:50]:
        m = _HEADING.match(line)
        if m:
            return m.group(1)
    return None


def _id_of(value: object, path: Path, line: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(path, line, "id", "is missing" if value is None else f"expected text or a number, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise InputError(path, line, "id", "is blank")
    return text


def _passages(path: Path, text_field: str) -> Iterator[Document]:
    from ..runtime.fileio import iter_json_lines

    for n, obj in iter_json_lines(path):
        doc_id = _id_of(obj.get("id"), path, n)
        text = obj.get(text_field)
        if text is None:
            raise InputError(
                path, n, text_field, f"is missing (the passage text; --field names another field; this line has {', '.join(sorted(obj)) or 'no fields'})"
            )
        if not isinstance(text, str):
            raise InputError(path, n, text_field, f"expected text, got {type(text).__name__}")
        if not text.strip():
            raise InputError(path, n, text_field, "is blank")
        title = obj.get("title")
        if title is not None and not isinstance(title, str):
            raise InputError(path, n, "title", f"expected text, got {type(title).__name__}")
        yield Document(doc_id, (title or "").strip() or doc_id, text, n)


def _pubmedqa(path: Path) -> Iterator[Document]:
    from ..sources.pubmedqa import read_pubmedqa

    for item in read_pubmedqa(path):
        context = item.meta.get("context")
        if context:
            pmid = item.id.removeprefix("pubmedqa-")
            yield Document(f"PMID {pmid}", "PubMed abstract", context)


def read_documents(src: SourceFile, text_field: str = "text") -> Iterator[Document]:
    """The documents of one input file (its checksum and size are filled in first)."""
    _checksum(src)
    if src.kind == "passages":
        yield from _passages(src.path, text_field)
    elif src.kind == "pubmedqa":
        yield from _pubmedqa(src.path)
    else:
        text = read_text(src.path)
        if not text.strip():
            return
        doc_id = src.id_prefix or src.path.name
        title = (_markdown_title(text) if src.kind == "markdown" else None) or src.path.stem
        yield Document(doc_id, title, text)
