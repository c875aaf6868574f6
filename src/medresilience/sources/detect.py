"""One entry point for MCQ sources: `load_items(path, fmt="auto")`. Auto-detection: a .csv file is
MMLU; a JSON-lines file is told by the keys of its first object (option contexts -> a MedMisBench
release, opa..opd / cop -> MedMCQA, answer_idx -> MedQA). Only the first object is read to decide;
the items are then streamed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import InputError
from ..records import Item
from .medmcqa import read_medmcqa
from .medmisbench import CONTEXT_KEYS, read_release_items
from .medqa import read_medqa
from .mmlu import read_mmlu

__all__ = ["FORMATS", "detect_format", "load_items"]

_READERS: dict[str, Callable[[Path], Iterator[Item]]] = {
    "medqa": read_medqa,
    "medmcqa": read_medmcqa,
    "mmlu": read_mmlu,
    "medmisbench": read_release_items,
}
FORMATS: tuple[str, ...] = tuple(_READERS)
_KNOWN = (
    "known formats: medqa (JSON lines with answer_idx), medmcqa (JSON lines with opa..opd and cop), "
    "mmlu (.csv: question, A, B, C, D, answer), medmisbench (JSON lines with option_contexts)"
)


def _first_object(path: Path) -> tuple[int, dict] | None:
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                if line.lstrip().startswith("["):
                    raise InputError(path, n, None, f"a JSON array; expected JSON lines (one object per line); {_KNOWN}")
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(path, n, None, f"not valid JSON ({e.msg} at column {e.colno}), cannot tell its format; {_KNOWN}") from None
                if not isinstance(obj, dict):
                    raise InputError(path, n, None, f"expected a JSON object, cannot tell its format; {_KNOWN}")
                return n, obj
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text ({e.reason}), cannot tell its format; {_KNOWN}") from None
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
        raise InputError(path, None, None, f"is empty, cannot tell its format; {_KNOWN}")
    n, obj = first
    keys = set(obj)
    if keys & set(CONTEXT_KEYS):
        return "medmisbench"
    if keys & {"opa", "cop"}:
        return "medmcqa"
    if "answer_idx" in keys:
        return "medqa"
    shown = ", ".join(sorted(keys)[:10]) + (", ..." if len(keys) > 10 else "")
    raise InputError(path, n, None, f"cannot tell the format from the fields ({shown}); {_KNOWN}")


def load_items(path: Path | str, fmt: str = "auto") -> Iterator[Item]:
    """Stream the Items of a source file. `fmt` is "auto" or one of FORMATS. The format is decided
    (and a bad one reported) at call time; rows are read, and their errors raised, as you iterate."""
    path = Path(path)
    name = str(fmt).strip().lower()
    if name == "auto":
        name = detect_format(path)
    reader = _READERS.get(name)
    if reader is None:
        raise InputError(path, None, None, f"unknown format {fmt!r} (use auto or one of: {', '.join(FORMATS)})")
    return reader(path)
