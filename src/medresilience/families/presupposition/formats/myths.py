"""Myth records (cancer, myth, fact, source): the seeds of the adversarial question loop.

The study's myth file is a stream of pretty-printed JSON objects one after another (not one object
per line, whatever its name says). `read_myths` decodes it object by object without reading the
whole file at once, and also reads JSON lines, a JSON array, or the normalised file
`write_myths` writes. Each myth keeps its 1-based row in the file (`row`), which is how the
study's NFP release points back at it (`source_row`). Errors name the file, the line where the
object starts, and the field."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ....runtime.errors import InputError, validation_problem
from ....runtime.fileio import check_field_sizes, json_values, write_jsonl

CHUNK = 1 << 20


class Myth(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    row: int = Field(ge=1, description="1-based position in the myth file")
    cancer: str = Field(min_length=1)
    myth: str = Field(min_length=1)
    fact: str = Field(min_length=1)
    source: str = ""

    @property
    def id(self) -> str:
        return f"myth-{self.row}"


def _objects(path: Path) -> Iterator[tuple[int, object]]:
    """(line where the value starts, value) for each top-level JSON value in the file; a top-level
    array yields its elements (each with its own line). Streamed by fileio.json_values: decoded line
    by line (a byte that is not UTF-8 is named by its line), parsed about CHUNK characters at a time."""
    if not path.is_file():
        raise InputError(path, None, None, "myth file not found" if not path.exists() else "is a directory, expected a file")
    return json_values(path, hint=" (a myth file is UTF-8 JSON)", chunk=CHUNK)


def read_myths(path: Path | str) -> list[Myth]:
    """Every myth of the file in file order; `row` is the 1-based position (kept from a
    normalised file that stores it)."""
    path = Path(path)
    out: list[Myth] = []
    for n, (line, obj) in enumerate(_objects(path), 1):
        if not isinstance(obj, dict):
            raise InputError(path, line, None, "a myth record must be a JSON object with cancer, myth, fact, source")
        check_field_sizes(obj, path, line)
        data = {**obj, "row": obj.get("row", n)}
        try:
            out.append(Myth.model_validate(data))
        except ValidationError as e:
            where, msg = validation_problem(e)
            raise InputError(path, line, where, msg) from None
    if not out:
        raise InputError(path, None, None, "no myth records")
    return out


def write_myths(path: Path | str, myths: Iterable[Myth]) -> int:
    """The myths as JSON lines (row, cancer, myth, fact, source), written atomically."""
    return write_jsonl(path, (m.model_dump() for m in myths))
