"""SymCat as MDAgents evaluated it (Kim et al., NeurIPS 2024: github.com/mitmedialab/MDAgents).
No public file of it was found: MDAgents' code reads data/symcat/test.jsonl and train.jsonl (JSON
lines) that its repository does not ship, and SymCat's own symptom-disease tables (symcat.com,
used through github.com/teliov/SymCat-to-synthea; the NLICE paper, Al-Ars et al. 2023, that
Cancer-Myth cites) are no longer published. The catalogue says so.

This reader takes the one row shape MDAgents' code reads options from, MedQA's: JSON lines with
question, options {A: text, ...}, answer_idx (the letter) and/or answer (the option's text),
optionally id. Items are ``symcat-{id or line}`` with source symcat, so a file of that shape is
reported as SymCat. Errors name the file, line and field."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from ..records import Item
from ._common import read_json_items
from .medqa import medqa_item

__all__ = ["SOURCE", "read_symcat", "symcat_item"]

SOURCE = "symcat"


def symcat_item(obj: Mapping[str, object], path: Path | str = "<symcat>", line: int | None = None) -> Item:
    item = medqa_item(obj, path, line)
    row_id = str(obj["id"]).strip() if obj.get("id") is not None else str(line)
    return item.model_copy(update={"id": f"{SOURCE}-{row_id}", "source": SOURCE})


def read_symcat(path: Path | str) -> Iterator[Item]:
    """Stream the Items of a SymCat JSON-lines file (MedQA's row shape); a repeated id is an error."""
    return read_json_items(path, symcat_item)
