"""One entry point for MCQ sources: `load_items(path, fmt="auto")`. Auto-detection: a .csv (or
.tsv) file whose first row is a header naming a question or an answer column is a question sheet
(`csv`, sources.sheet), any other .csv is MMLU; a .parquet file is HLE (by its columns answer_type / canary) or the hub's layout of MedMCQA, MMLU
or PubMedQA (sources.hub_layouts, by its columns); a file that is one JSON object
whose first key is a number (a PMID) mapping to an object with QUESTION is PubMedQA; a JSON-lines
file is told by the keys of its first object: first the keys a family registers for its own
release layouts, then the project's own items layout (id, source, question and only Item's
fields: sources.items), then medical_task / body_system -> MedXpertQA, answer_type / canary -> HLE,
an object of PMID -> {QUESTION, ...} on one line -> PubMedQA, a numeric answer with opa.. (no
cop), options keyed "1", "2", ... or "(1) ... (2) ..." in the question -> MedJourney, opa / cop
-> MedMCQA, answer_idx -> MedQA, a question with a text answer and no options -> free-form; a
JSON object of columns (question, opa, ..., answer_idx, each row -> value) -> Medbullets; a .csv
whose header is CRAFT-MD's (case_vignette, choice_1, ...) or Medbullets' (question, opa, ...,
answer_idx) -> that release. SymCat (MedQA's row shape) is read only when named (`symcat`). Only
the start of the file is read to decide; the items are then streamed.

`load_items(..., skips=Counter())` passes the Counter to a reader that counts the rows it leaves
out (HLE: image and non-multiple-choice rows); readers that skip nothing ignore it.

Families add formats with `register_format(name, reader, keys, doc)`; the registry of families is
loaded before a format is looked up, so their formats are always known."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..records import Item
from ..registry import Registry
from ..runtime.errors import InputError
from ..runtime.fileio import csv_records, text_lines
from .craftmd import is_craftmd_header, read_craftmd
from .freeform import is_freeform_row, read_freeform
from .hle import KEYS as HLE_KEYS
from .hle import parquet_columns, read_hle
from .hub_layouts import READERS as HUB_READERS
from .hub_layouts import layout_of
from .items import is_items_row, read_items
from .medbullets import is_medbullets_columns, is_medbullets_header, read_medbullets
from .medjourney import is_medjourney_row, read_medjourney
from .medmcqa import read_medmcqa
from .medqa import read_medqa
from .medxpertqa import KEYS as MEDXPERTQA_KEYS
from .medxpertqa import read_medxpertqa
from .mmlu import read_mmlu
from .pubmedqa import is_pubmedqa_file, read_pubmedqa
from .sheet import is_sheet, read_sheet
from .symcat import read_symcat

__all__ = ["FORMATS", "detect_format", "formats", "load_items", "register_format"]


@dataclass(frozen=True)
class ItemFormat:
    """One item format: `reader(path)` streams its Items; `doc` says what it is in errors; a
    JSON-lines file whose first object has any of `keys` is detected as it (built-in formats have
    none: they are told by the rules of `detect_format`)."""

    reader: Callable[..., Iterator[Item]]
    doc: str
    keys: frozenset[str] = frozenset()


_FORMATS: Registry[ItemFormat] = Registry("format")
_FORMATS.register("items", ItemFormat(read_items, "items (this project's layout: JSON lines with id, source, question, options, answer)"))
_FORMATS.register("csv", ItemFormat(read_sheet, "csv (a question sheet: a header row with question, A, B, ..., answer; optional id, source, explanation)"))
_FORMATS.register("medqa", ItemFormat(read_medqa, "medqa (JSON lines with answer_idx)"))
_FORMATS.register("medmcqa", ItemFormat(read_medmcqa, "medmcqa (JSON lines with opa..opd and cop)"))
_FORMATS.register("mmlu", ItemFormat(read_mmlu, "mmlu (.csv: question, A, B, C, D, answer)"))
_FORMATS.register("medxpertqa", ItemFormat(read_medxpertqa, "medxpertqa (JSON lines with options, label, medical_task, body_system)"))
_FORMATS.register("pubmedqa", ItemFormat(read_pubmedqa, "pubmedqa (.json: one object keyed by PMID, with QUESTION and final_decision)"))
_FORMATS.register("hle", ItemFormat(read_hle, "hle (JSON lines or .parquet with answer_type; text-only multipleChoice rows)"))
_FORMATS.register("medjourney", ItemFormat(read_medjourney, "medjourney (JSON lines with numbered options opa.. or (1) ... and a number answer)"))
_FORMATS.register("freeform", ItemFormat(read_freeform, "freeform (JSON lines with question and a free-text answer, no options)"))
_FORMATS.register("medbullets", ItemFormat(read_medbullets, "medbullets (medbullets_op4/op5 .json, column-wise, or .csv: question, opa.., answer_idx)"))
_FORMATS.register("craftmd", ItemFormat(read_craftmd, "craftmd (CRAFT-MD's case .csv: case_vignette, choice_1..4, answer text, case_id)"))
_FORMATS.register("symcat", ItemFormat(read_symcat, "symcat (JSON lines in MedQA's row shape, as MDAgents reads SymCat; name it: --format symcat)"))


def register_format(name: str, reader: Callable[[Path], Iterator[Item]], keys: Iterable[str], doc: str) -> None:
    """Add an item format: `reader(path)` streams its Items; a JSON-lines file whose first object
    has any of `keys` is detected as it (the keys of registered formats are checked before the
    built-in JSON-lines formats)."""
    _FORMATS.register(name, ItemFormat(reader, doc, frozenset(keys)))


def _families() -> None:
    from ..family import families

    families()


def formats() -> tuple[str, ...]:
    _families()
    return tuple(_FORMATS.names())


def _known() -> str:
    _families()
    return "known formats: " + ", ".join(f.doc for f in _FORMATS.values())


FORMATS: tuple[str, ...] = (
    "items",
    "csv",
    "medqa",
    "medmcqa",
    "mmlu",
    "medxpertqa",
    "pubmedqa",
    "hle",
    "medjourney",
    "freeform",
    "medbullets",
    "craftmd",
    "symcat",
)  # the built-in ones; formats() lists all


def _first_object(path: Path) -> tuple[int, dict] | None:
    try:
        for n, line in text_lines(path, f", cannot tell its format; {_known()}"):
            if not line.strip():
                continue
            if line.lstrip().startswith("["):
                raise InputError(path, n, None, f"a JSON array; expected JSON lines (one object per line); {_known()}")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(path, n, None, f"not valid JSON ({e.msg} at column {e.colno}), cannot tell its format; {_known()}") from None
            if not isinstance(obj, dict):
                raise InputError(path, n, None, f"expected a JSON object, cannot tell its format; {_known()}")
            return n, obj
    except OSError as e:
        raise InputError(path, None, None, f"cannot read ({e.strerror or e})") from None
    return None


def detect_format(path: Path | str) -> str:
    """The format name of a source file (one of FORMATS), or InputError listing the known ones."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    if path.is_dir():
        raise InputError(path, None, None, "is a directory, expected a file")
    if path.suffix.lower() in (".csv", ".tsv"):
        return _csv_format(path)
    if path.suffix.lower() == ".parquet":
        return _parquet_format(path)
    if is_pubmedqa_file(path):
        return "pubmedqa"
    first = _first_object(path)
    if first is None:
        raise InputError(path, None, None, f"is empty, cannot tell its format; {_known()}")
    n, obj = first
    name = _row_format(obj)
    if name is None:
        shown = ", ".join(sorted(obj)[:10]) + (", ..." if len(obj) > 10 else "")
        raise InputError(path, n, None, f"cannot tell the format from the fields ({shown}); {_known()}")
    return name


def _csv_format(path: Path) -> str:
    """A release whose header names its own columns (CRAFT-MD's cases, Medbullets), else a question
    sheet (a header naming a question or answer column; any .tsv), else MMLU."""
    if path.suffix.lower() == ".csv":
        try:
            first = next(csv_records(path), None)
        except InputError:
            first = None  # not valid CSV: the reader the other rules pick says where
        if first is not None and is_craftmd_header(first[1]):
            return "craftmd"
        if first is not None and is_medbullets_header(first[1]):
            return "medbullets"
    return "csv" if is_sheet(path) or path.suffix.lower() == ".tsv" else "mmlu"


def _parquet_format(path: Path) -> str:
    """The format of a Parquet file, by its columns: HLE's, or a hub layout (MedMCQA, MMLU, PubMedQA)."""
    columns = parquet_columns(path)
    if set(columns) & set(HLE_KEYS):
        return "hle"
    if (layout := layout_of(columns)) is not None:
        return layout
    shown = ", ".join(columns[:10]) + (", ..." if len(columns) > 10 else "")
    raise InputError(
        path,
        None,
        None,
        f"cannot tell the format of a Parquet file with columns ({shown}); Parquet is read for HLE and the hub's MedMCQA, MMLU and PubMedQA; {_known()}",
    )


def _row_format(obj: dict) -> str | None:
    """The format a JSON file's first object is a row of, by its fields (a registered format's marks
    first), or None."""
    keys = set(obj)
    _families()
    for name in _FORMATS.names():
        if keys & _FORMATS.get(name).keys:
            return name
    if is_items_row(obj):
        return "items"
    if is_medbullets_columns(obj):
        return "medbullets"
    if keys & set(MEDXPERTQA_KEYS):
        return "medxpertqa"
    if keys & set(HLE_KEYS):
        return "hle"
    if keys and all(k.isdigit() and isinstance(v, dict) and "QUESTION" in v for k, v in obj.items()):
        return "pubmedqa"
    if "answer_idx" not in keys and is_medjourney_row(obj):
        return "medjourney"
    if keys & {"opa", "cop"}:
        return "medmcqa"
    if "answer_idx" in keys:
        return "medqa"
    if is_freeform_row(obj):
        return "freeform"
    return None


def _reader_of(name: str) -> Callable[..., Iterator[Item]] | None:
    return _FORMATS.get(name).reader if name in _FORMATS else None


def _counts_skips(reader: Callable[..., Iterator[Item]]) -> bool:
    try:
        return "skips" in inspect.signature(reader).parameters
    except (TypeError, ValueError):
        return False


def load_items(path: Path | str, fmt: str = "auto", skips: Counter | None = None) -> Iterator[Item]:
    """Stream the Items of a source file. `fmt` is "auto" or one of FORMATS. The format is decided
    (and a bad one reported) at call time; rows are read, and their errors raised, as you iterate.
    `skips`, when given, counts the rows the reader leaves out by reason (readers that accept a
    `skips` argument, such as HLE's; the others leave nothing out)."""
    path = Path(path)
    name = str(fmt).strip().lower()
    if name == "auto":
        name = detect_format(path)
    reader = _reader_of(name)
    if path.suffix.lower() == ".parquet" and name in HUB_READERS:  # the hub's Parquet layout of a JSON/CSV source
        reader = HUB_READERS[name]
    if reader is None:
        _families()
        reader = _reader_of(name)
    if reader is None:
        raise InputError(path, None, None, f"unknown format {fmt!r} (use auto or one of: {', '.join(formats())})")
    if skips is not None and _counts_skips(reader):
        return reader(path, skips=skips)
    return reader(path)
