"""One flat row per unit (`units.RunUnits.columns`) as JSON Lines or Parquet, written as the rows
stream from the store: Parquet in row groups of `batch` rows, through fileio's one Parquet writer
(atomic: a failed export leaves no file behind)."""

from __future__ import annotations

import json
from pathlib import Path

from ..runtime.fileio import atomic_write, write_parquet_batches
from .units import INTEGERS, REALS, RunUnits


def write_jsonl_rows(run: RunUnits, out: Path | str) -> int:
    """Write every unit of `run` as one JSON object a line; returns how many."""
    n = 0
    with atomic_write(out) as fh:
        for row in run.rows():
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def parquet_schema(run: RunUnits):
    """The Parquet schema of `run`'s rows: integers, reals, the rest text (facets too; nullable)."""
    import pyarrow as pa

    def kind(name: str):
        return pa.int64() if name in INTEGERS else pa.float64() if name in REALS else pa.string()

    return pa.schema([(name, kind(name)) for name in run.columns])


def write_parquet_rows(run: RunUnits, out: Path | str, batch: int = 10_000) -> int:
    """Write every unit of `run` as one Parquet row, `batch` rows a row group; returns how many."""
    import pyarrow as pa

    schema = parquet_schema(run)
    facets = run.facets  # a facet's values may be numbers (a dose): text in the file, like the other facets
    count = 0

    def batches():
        nonlocal count
        buf: list[dict] = []
        for row in run.rows():
            for f in facets:
                if row[f] is not None:
                    row[f] = str(row[f])
            buf.append(row)
            if len(buf) >= batch:
                count += len(buf)
                yield pa.RecordBatch.from_pylist(buf, schema=schema)
                buf = []
        count += len(buf)
        if buf or not count:
            yield pa.RecordBatch.from_pylist(buf, schema=schema)

    write_parquet_batches(out, schema, batches())
    return count
