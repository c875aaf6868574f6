"""One entry point for MCQ sources: `load_items(path, fmt="auto")`. Auto-detection: a .csv file is
MMLU; a JSON-lines file is told by the keys of its first object (opa..opd / cop -> MedMCQA,
answer_idx -> MedQA, and the keys a family registers for its own release layouts). Only the first
object is read to decide; the items are then streamed.

Families add formats with `register_format(name, reader, keys, doc)`; the registry of families is
loaded before a format is looked up, so their formats are always known."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..errors import InputError
from ..records import Item
from .medmcqa import read_medmcqa
from .medqa import read_medqa
from .mmlu import read_mmlu

__all__ = ["FORMATS", "detect_format", "formats", "load_items", "register_format"]

_READERS: dict[str, Callable[[Path], Iterator[Item]]] = {
    "medqa": read_medqa,
    "medmcqa": read_medmcqa,
    "mmlu": read_mmlu,
}
_DOCS = {
    "medqa": "medqa (JSON lines with answer_idx)",
    "medmcqa": "medmcqa (JSON lines with opa..opd and cop)",
    "mmlu": "mmlu (.csv: question, A, B, C, D, answer)",
}
#: formats told by the keys of the first object, checked before the built-in JSON-lines formats
_KEYED: dict[str, frozenset[str]] = {}


def register_format(name: str, reader: Callable[[Path], Iterator[Item]], keys: Iterable[str], doc: str) -> None:
    """Add an item format: `reader(path)` streams its Items; a JSON-lines file whose first object
    has any of `keys` is detected as it."""
    _READERS[name] = reader
    _DOCS[name] = doc
    _KEYED[name] = frozenset(keys)


def _families() -> None:
    from ..family import families

    families()


def formats() -> tuple[str, ...]:
    _families()
    return tuple(_READERS)


def _known() -> str:
    _families()
    return "known formats: " + ", ".join(_DOCS.values())


FORMATS: tuple[str, ...] = ("medqa", "medmcqa", "mmlu")  # the built-in ones; formats() lists all


def _first_object(path: Path) -> tuple[int, dict] | None:
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
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
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text ({e.reason}), cannot tell its format; {_known()}") from None
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
    if path.suffix.lower() == ".csv":
        return "mmlu"
    first = _first_object(path)
    if first is None:
        raise InputError(path, None, None, f"is empty, cannot tell its format; {_known()}")
    n, obj = first
    keys = set(obj)
    _families()
    for name, marks in _KEYED.items():
        if keys & marks:
            return name
    if keys & {"opa", "cop"}:
        return "medmcqa"
    if "answer_idx" in keys:
        return "medqa"
    shown = ", ".join(sorted(keys)[:10]) + (", ..." if len(keys) > 10 else "")
    raise InputError(path, n, None, f"cannot tell the format from the fields ({shown}); {_known()}")


def load_items(path: Path | str, fmt: str = "auto") -> Iterator[Item]:
    """Stream the Items of a source file. `fmt` is "auto" or one of FORMATS. The format is decided
    (and a bad one reported) at call time; rows are read, and their errors raised, as you iterate."""
    path = Path(path)
    name = str(fmt).strip().lower()
    if name == "auto":
        name = detect_format(path)
    reader = _READERS.get(name)
    if reader is None:
        _families()
        reader = _READERS.get(name)
    if reader is None:
        raise InputError(path, None, None, f"unknown format {fmt!r} (use auto or one of: {', '.join(formats())})")
    return reader(path)
