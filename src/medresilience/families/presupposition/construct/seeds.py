"""The examples a generator is shown: valid questions (a hidden false belief, with its correction)
and invalid ones (with why they do not work).

The project ships its own small seed set (`data/seeds.json`: 2 valid, 4 invalid, written for this
project). `--valid-seeds` / `--invalid-seeds` read other seed files in the layout of the study's
init_examples.json (objects with `example_question`, `example_assumption`) and
init_neg_examples.json (`example_question`, `reason`), as a JSON array or one object per line;
other fields (`from_model`, `source_info`, ...) are ignored. Errors name the file, the line where
the object starts and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ....runtime.errors import InputError
from ....runtime.fileio import check_field_sizes, json_values, read_text
from ....runtime.seeding import stable_hash

PACKAGE_SEEDS = "seeds.json"


@dataclass(frozen=True)
class ValidExample:
    """A question that hides a false belief well, and what a good answer must correct. `origin`:
    where it came from (`seed`, or the id of a question the loop found)."""

    question: str
    correction: str
    origin: str = "seed"


@dataclass(frozen=True)
class InvalidExample:
    """A question that does not work as a test, and why."""

    question: str
    reason: str
    origin: str = "seed"


@dataclass(frozen=True)
class Seeds:
    valid: tuple[ValidExample, ...]
    invalid: tuple[InvalidExample, ...]
    sources: dict[str, str]  # "valid" / "invalid" -> where they came from (file name or "medresilience")

    @property
    def hash(self) -> str:
        return stable_hash([[e.question, e.correction] for e in self.valid], [[e.question, e.reason] for e in self.invalid])[:16]


def _elements(path: Path) -> Iterator[tuple[int, Any]]:
    """(line where it starts, value) of each element of a top-level JSON array, or of each line of
    a JSON-lines file."""
    if not path.exists():
        raise InputError(path, None, None, "seed file not found")
    return json_values(path, read_text(path))


def _text(obj: object, path: Path, line: int, field: str) -> str:
    if not isinstance(obj, dict):
        raise InputError(path, line, None, "a seed example must be a JSON object")
    value = obj.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, line, field, "missing or empty (a non-empty text is needed)")
    return value.strip()


def read_valid_seeds(path: Path | str) -> tuple[ValidExample, ...]:
    """Valid examples from a file in the layout of the study's init_examples.json."""
    path = Path(path)
    out = []
    for line, obj in _elements(path):
        check_field_sizes(obj, path, line)
        out.append(ValidExample(_text(obj, path, line, "example_question"), _text(obj, path, line, "example_assumption"), f"file:{path.name}"))
    if not out:
        raise InputError(path, None, None, "no valid example in the file")
    return tuple(out)


def read_invalid_seeds(path: Path | str) -> tuple[InvalidExample, ...]:
    """Invalid examples from a file in the layout of the study's init_neg_examples.json."""
    path = Path(path)
    out = []
    for line, obj in _elements(path):
        check_field_sizes(obj, path, line)
        out.append(InvalidExample(_text(obj, path, line, "example_question"), _text(obj, path, line, "reason"), f"file:{path.name}"))
    if not out:
        raise InputError(path, None, None, "no invalid example in the file")
    return tuple(out)


def package_seeds() -> Seeds:
    """This project's own seed examples (data/seeds.json)."""
    raw = json.loads(resources.files("medresilience.families.presupposition").joinpath("data", PACKAGE_SEEDS).read_text(encoding="utf-8"))
    return Seeds(
        tuple(ValidExample(e["question"], e["correction"]) for e in raw["valid"]),
        tuple(InvalidExample(e["question"], e["reason"]) for e in raw["invalid"]),
        {"valid": "medresilience", "invalid": "medresilience"},
    )


def load_seeds(valid: Path | str | None = None, invalid: Path | str | None = None) -> Seeds:
    """The package's seeds, with either part replaced by a file's."""
    base = package_seeds()
    v = read_valid_seeds(valid) if valid is not None else base.valid
    i = read_invalid_seeds(invalid) if invalid is not None else base.invalid
    return Seeds(
        v, i, {"valid": Path(valid).name if valid is not None else "medresilience", "invalid": Path(invalid).name if invalid is not None else "medresilience"}
    )
