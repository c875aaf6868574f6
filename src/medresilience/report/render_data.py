"""The data renderer of the report's parts (`parts`): each table as one frame, a column per column
key holding the cells' values, and a cell's further fields (a rate's lo, hi and n) in the columns
its column names for them (`Column.fields`; by default `<key>_<field>`). The report writes each
frame as CSV, Parquet and Markdown under tables/ (`tables.write_tables`)."""

from __future__ import annotations

import pandas as pd

from .parts import Scalar, Table


def _fields(table: Table, i: int) -> list[tuple[str, str]]:
    """(field, data column) of column i's further fields, in the order its cells give them."""
    col = table.columns[i]
    if col.fields is not None:
        return list(col.fields.items())
    seen: dict[str, str] = {}
    for row in table.rows:
        for k in row[i].data:
            seen.setdefault(k, f"{col.key}_{k}")
    return list(seen.items())


def table_frame(table: Table) -> pd.DataFrame:
    """The table's values: every column (shown or not), in order."""
    fields = [_fields(table, i) for i in range(len(table.columns))]
    names = [name for i, col in enumerate(table.columns) for name in (col.key, *(c for _, c in fields[i]))]
    records: list[list[Scalar]] = []
    for row in table.rows:
        rec: list[Scalar] = []
        for i, cell in enumerate(row):
            rec.append(cell.value)
            rec += [cell.data.get(k) for k, _ in fields[i]]
        records.append(rec)
    return pd.DataFrame(records, columns=names)
