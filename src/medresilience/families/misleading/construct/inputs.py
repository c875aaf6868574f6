"""The items a build starts from: an items .jsonl written by `medres import` (one Item per line)
or any source file `sources.load_items` reads (MedQA, MedMCQA, MMLU, a MedMisBench release).

Rows that cannot be misleading-context items (no answer, one option, no options, a blank option,
duplicate options, MedMCQA multi-choice) are skipped with a counted reason and their file:line.
Anything else wrong with a row (bad JSON, a blank question, a repeated id, an answer that is not
a letter) is an InputError naming file, line and field, as everywhere in the project. For the
JSON-lines formats (items, MedQA, MedMCQA) rows are pre-checked, so a row without an answer is a
skip rather than an error; MMLU CSV and release files are read by their strict loaders."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .... import sources
from ....records import Item
from ....runtime.errors import InputError
from ....runtime.fileio import iter_json_lines, parse_record
from ....runtime.jsontypes import JSONObject
from .checks import item_skip_reason, raw_skip_reason

ITEM_KEYS = frozenset({"id", "source", "question", "options", "answer"})
INPUT_FORMATS = tuple(dict.fromkeys(("auto", "items", *sources.FORMATS)))


@dataclass(frozen=True)
class Skip:
    item_id: str | None
    line: int | None
    reason: str
    detail: str

    def as_dict(self) -> JSONObject:
        return {"item_id": self.item_id, "line": self.line, "reason": self.reason, "detail": self.detail}


@dataclass
class LoadedItems:
    path: Path
    format: str
    items: list[Item]
    skipped: list[Skip]
    rows: int

    def skip_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.skipped:
            out[s.reason] = out.get(s.reason, 0) + 1
        return dict(sorted(out.items()))


def detect_input_format(path: Path) -> str:
    """'items' for a file of Item records, else the source format sources.detect_format finds."""
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    if path.is_dir():
        raise InputError(path, None, None, "is a directory, expected an items .jsonl or a source file")
    if path.suffix.lower() != ".csv":
        try:
            with path.open(encoding="utf-8-sig") as fh:
                for line in fh:
                    if line.strip():
                        obj = json.loads(line)
                        if isinstance(obj, dict) and set(obj) >= ITEM_KEYS and not ({"option_contexts", "contexts"} & set(obj)):
                            return "items"
                        break
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass  # detect_format reports it with its line
    return sources.detect_format(path)


def _raw_answer_letter(fmt: str, obj: Mapping[str, object]) -> tuple[Any, Any]:
    """(options, answer letter or None) of a raw row, for the pre-check."""
    if fmt == "medmcqa":
        cells = [obj.get(f) for f in ("opa", "opb", "opc", "opd")]
        if all(o is None for o in cells):
            return None, None
        cop = obj.get("cop")
        if isinstance(cop, str) and cop.strip().lstrip("-").isdigit():
            cop = int(cop.strip())
        if isinstance(cop, float) and cop.is_integer():
            cop = int(cop)
        if cop is None or cop == "" or (isinstance(cop, int) and not isinstance(cop, bool) and cop <= 0):
            return cells, None  # MedMCQA's test split marks unknown answers with -1 or nothing
        if isinstance(cop, int) and not isinstance(cop, bool) and 1 <= cop <= 4:
            return cells, "ABCD"[cop - 1]
        return cells, "ABCD"[0]  # invalid value: let the strict loader name it
    opts = obj.get("options")
    if fmt == "medqa":
        idx, text = obj.get("answer_idx"), obj.get("answer")
        if idx not in (None, ""):
            return opts, idx
        if text in (None, "") or not isinstance(opts, dict):
            return opts, None
        hits = [k for k, v in opts.items() if isinstance(v, str) and v.strip() == str(text).strip()]
        return opts, (hits[0] if len(hits) == 1 else "?")
    return opts, obj.get("answer")


def _row_id(fmt: str, obj: Mapping[str, object], line: int) -> str | None:
    """The id the strict loader would give the row (for the skip record)."""
    rid = obj.get("id")
    if fmt in ("medmcqa", "medqa") and (rid is None or not str(rid).strip()):
        return f"{fmt}-{line}"
    if fmt == "medmcqa":
        return f"medmcqa-{str(rid).strip()}"
    return None if rid is None else str(rid).strip()


def _strict(fmt: str, obj: Mapping[str, object], path: Path, line: int) -> Item:
    if fmt == "medmcqa":
        return sources.medmcqa_item(obj, path, line)
    if fmt == "medqa":
        return sources.medqa_item(obj, path, line)
    return parse_record(Item, obj, path, line)


def iter_input(path: Path | str, fmt: str = "auto") -> Iterator[tuple[int | None, Item | Skip]]:
    """(line, Item) for each usable row and (line, Skip) for each skipped one, in file order."""
    path = Path(path)
    name = str(fmt).strip().lower()
    if name not in INPUT_FORMATS:
        raise InputError(path, None, None, f"unknown format {fmt!r} (use one of: {', '.join(INPUT_FORMATS)})")
    if name == "auto":
        name = detect_input_format(path)
    seen: dict[str, int | None] = {}

    def dup_check(item: Item, line: int | None) -> None:
        if item.id in seen:
            first = seen[item.id]
            raise InputError(path, line, "id", f"duplicate item id {item.id!r}" + (f" (first on line {first})" if first else ""))
        seen[item.id] = line

    if name in ("items", "medqa", "medmcqa"):
        for n, obj in iter_json_lines(path):
            opts, answer = _raw_answer_letter(name, obj)
            why = raw_skip_reason(opts, answer)
            if why is not None:
                yield n, Skip(_row_id(name, obj, n), n, *why)
                continue
            item = _strict(name, obj, path, n)
            dup_check(item, n)
            why = item_skip_reason(item)
            yield n, (Skip(item.id, n, *why) if why else item)
        return
    for item in sources.load_items(path, fmt=name):
        dup_check(item, None)
        why = item_skip_reason(item)
        yield None, (Skip(item.id, None, *why) if why else item)


def load_build_items(path: Path | str, fmt: str = "auto", limit: int | None = None) -> LoadedItems:
    """Read the usable items (the first `limit` of them) and the skipped rows before them."""
    path = Path(path)
    name = detect_input_format(path) if str(fmt).strip().lower() == "auto" else str(fmt).strip().lower()
    items: list[Item] = []
    skipped: list[Skip] = []
    rows = 0
    for _line, x in iter_input(path, name):
        if limit is not None and len(items) >= limit:
            break
        rows += 1
        if isinstance(x, Skip):
            skipped.append(x)
        else:
            items.append(x)
    return LoadedItems(path, name, items, skipped, rows)
