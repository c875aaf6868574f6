"""Export a suite for others:

- `release` / `parquet`: the study's flat release layout (medmisbench.py), as JSON lines or as
  Parquet with the same columns (how a Hugging Face dataset is stored; a folder gets one file
  per config);
- `bundles` / `bundles-parquet`: this project's nested layout (one row per bundle, several
  bundles per item allowed), as JSON lines, or as Parquet with options and option contexts as
  aligned lists so rows with 4 and 5 options share one schema (meta as JSON strings).

    datasets.load_dataset("parquet", data_files="MEDMISQA.parquet")"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ....records import LETTERS
from ....runtime.errors import ConfigError
from ....runtime.fileio import write_parquet_table
from ....suite import Suite
from ..bundles import bundle_id_for
from ..probe import probes_of
from .release import release_rows, write_release

EXPORT_FORMATS = ("release", "parquet", "bundles", "bundles-parquet")

PARQUET_COLUMNS = (
    "id",
    "item_id",
    "bundle_id",
    "source_dataset",
    "subject",
    "question",
    "options",
    "option_letters",
    "answer",
    "answer_index",
    "content_type",
    "provenance",
    "option_contexts",
    "meta",
    "bundle_meta",
)


def parquet_rows(suite: Suite) -> list[dict[str, Any]]:
    """The release rows of a suite, flattened for Parquet."""
    rows = []
    by_bundle: dict[str, str] = {p.bundle_id: p.item_id for p in probes_of(suite)}
    for r in release_rows(suite):
        letters = list(r["options"])
        item_id = r.get("item_id", r["id"])
        bid = r.get("bundle_id")
        if bid is None:
            # the bundle id the row implies (see sources.medmisbench): the row id when it differs
            # from the item id, else the canonical id of (item, content type, provenance)
            bid = r["id"] if r["id"] != item_id else bundle_id_for(item_id, r["content_type"], r["provenance"])
        if by_bundle.get(bid) != item_id:
            raise ValueError(f"release row {r['id']!r}: bundle {bid!r} of item {item_id!r} is not in the suite")
        rows.append(
            {
                "id": str(r["id"]),
                "item_id": str(item_id),
                "bundle_id": bid,
                "source_dataset": r["source_dataset"],
                "subject": r.get("subject"),
                "question": r["question"],
                "options": [r["options"][k] for k in letters],
                "option_letters": letters,
                "answer": r["answer"],
                "answer_index": LETTERS.index(r["answer"]),
                "content_type": r["content_type"],
                "provenance": r["provenance"],
                "option_contexts": [r["option_contexts"][k] for k in letters],
                "meta": json.dumps(r.get("meta", {}), ensure_ascii=False, sort_keys=True),
                "bundle_meta": json.dumps(r.get("bundle_meta", {}), ensure_ascii=False, sort_keys=True),
            }
        )
    return rows


def write_parquet(suite: Suite, path: Path | str) -> int:
    """Write the suite's bundles as a Parquet file (atomically); returns the number of rows. The
    suite's manifest (name, seed, generator, prompt hashes) goes into the file's metadata."""
    import pyarrow as pa

    path = Path(path)
    rows = parquet_rows(suite)
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("item_id", pa.string()),
            ("bundle_id", pa.string()),
            ("source_dataset", pa.string()),
            ("subject", pa.string()),
            ("question", pa.string()),
            ("options", pa.list_(pa.string())),
            ("option_letters", pa.list_(pa.string())),
            ("answer", pa.string()),
            ("answer_index", pa.int32()),
            ("content_type", pa.string()),
            ("provenance", pa.string()),
            ("option_contexts", pa.list_(pa.string())),
            ("meta", pa.string()),
            ("bundle_meta", pa.string()),
        ],
        metadata={b"medresilience.suite": suite.manifest.model_dump_json().encode("utf-8")},
    )
    write_parquet_table(path, pa.Table.from_pylist(rows, schema=schema))
    return len(rows)


def export_suite(suite: Suite, path: Path | str, fmt: str) -> int:
    from .medmisbench import write_medmisbench

    fmt = fmt.strip().lower()
    if fmt == "release":
        return write_medmisbench(suite, path, "jsonl")
    if fmt == "parquet":
        return write_medmisbench(suite, path, "parquet")
    if fmt == "bundles":
        return write_release(suite, path)
    if fmt == "bundles-parquet":
        return write_parquet(suite, path)
    raise ConfigError("--format", f"unknown export format {fmt!r} (known: {', '.join(EXPORT_FORMATS)})")
