"""The Parquet layouts the hub stores three sources in, read with the sources' own row readers
(errors name the 1-based row as the line):

- MedMCQA (openlifescienceai/medmcqa): the original's columns, but `cop` is 0-based (0-3) and the
  test split's is -1 (no answers published).
- MMLU (cais/mmlu, one folder per subject): question, subject, choices (a list of four), answer (an
  index 0-3). Item ids ``mmlu-{subject}-{split}-{row}``, the split taken from the file name
  (test-00000-of-00001.parquet -> test).
- PubMedQA (qiaojin/PubMedQA): pubid, question, context {contexts, labels, meshes, ...},
  long_answer, final_decision; read as the original's PMID entries.
- MedJourney rows (a MedMisBench MEDMISJOURNEY config stored as Parquet): the JSON-lines rows.

`layout_of(columns)` tells them apart (None for other columns)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..records import Item
from ..runtime.errors import InputError
from ..runtime.fileio import iter_parquet_rows, show
from ._common import IdChecker, build_item, text_field
from .medjourney import medjourney_item
from .medmcqa import medmcqa_item
from .mmlu import SOURCE as MMLU
from .pubmedqa import pubmedqa_item

__all__ = ["READERS", "layout_of"]


def layout_of(columns: list[str]) -> str | None:
    cols = set(columns)
    if {"opa", "cop"} <= cols:
        return "medmcqa"
    if {"question", "choices", "answer"} <= cols:
        return "mmlu"
    if {"pubid", "final_decision"} <= cols:
        return "pubmedqa"
    return None


def read_medmcqa_parquet(path: Path | str) -> Iterator[Item]:
    ids = IdChecker(path)
    for n, row in iter_parquet_rows(path):
        cop = row.get("cop")
        if cop == -1:
            raise InputError(path, n, "cop", "is -1: this split has no published answers (MedMCQA's test split); use validation")
        if isinstance(cop, int) and not isinstance(cop, bool):
            if not 0 <= cop <= 3:
                raise InputError(path, n, "cop", f"must be 0-3 (the hub's 0-based index of the correct option), got {show(cop)}")
            row = {**row, "cop": cop + 1}
        item = medmcqa_item(row, path, n)
        ids.check(item.id, n)
        yield item


def read_mmlu_parquet(path: Path | str) -> Iterator[Item]:
    path = Path(path)
    split = path.stem.split("-")[0]
    for n, row in iter_parquet_rows(path):
        question = text_field(row.get("question"), path, n, "question")
        choices = row.get("choices")
        if not isinstance(choices, list) or len(choices) < 2:
            raise InputError(path, n, "choices", f"expected a list of options, got {show(choices)}")
        letters = "ABCDEFGHIJ"[: len(choices)]
        options = {k: text_field(c, path, n, f"choices[{i}]", numbers=True) for i, (k, c) in enumerate(zip(letters, choices))}
        answer = row.get("answer")
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(choices):
            raise InputError(path, n, "answer", f"must be an index 0-{len(choices) - 1}, got {show(answer)}")
        subject = str(row.get("subject") or path.parent.name).strip()
        yield build_item(path, n, id=f"{MMLU}-{subject}-{split}-{n}", source=MMLU, question=question, options=options, answer=letters[answer], subject=subject)


def read_pubmedqa_parquet(path: Path | str) -> Iterator[Item]:
    ids = IdChecker(path, field="pubid", what="PMID")
    for n, row in iter_parquet_rows(path):
        pmid = str(row.get("pubid") if row.get("pubid") is not None else "").strip()
        context = row.get("context") or {}
        if not isinstance(context, dict):
            raise InputError(path, n, "context", f"must be an object (contexts, labels, meshes), got {show(context)}")
        entry = {
            "QUESTION": row.get("question"),
            "CONTEXTS": context.get("contexts"),
            "LABELS": context.get("labels"),
            "MESHES": context.get("meshes"),
            "LONG_ANSWER": row.get("long_answer"),
            "final_decision": row.get("final_decision"),
        }
        item = pubmedqa_item(pmid, entry, path, n)
        ids.check(item.id, n)
        yield item


def read_medjourney_parquet(path: Path | str) -> Iterator[Item]:
    ids = IdChecker(path)
    for n, row in iter_parquet_rows(path):
        item = medjourney_item(row, path, n)
        ids.check(item.id, n)
        yield item


READERS = {"medjourney": read_medjourney_parquet, "medmcqa": read_medmcqa_parquet, "mmlu": read_mmlu_parquet, "pubmedqa": read_pubmedqa_parquet}
