"""Human labels of judged answers: a CSV, TSV or Parquet file with one row per answer (or per
annotator and answer), a review export (ratings.csv / ratings.parquet) or a review directory (see
the package's docstring). Every bad row is an InputError naming the file, the line and the
column."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from ...runtime.errors import ConfigError, InputError
from ...runtime.fileio import table_rows
from ...runtime.jsontypes import JSONObject

_MISSING = {"", "na", "n/a", "nan", "none", "null"}
KEY_COLUMNS = ("unit_id", "item_id", "model", "setting", "condition", "probe_id")
SINGLE_LABEL_COLUMNS = ("label", "score", "human", "human_label", "human_score", "value")
ANNOTATOR_COLUMNS = ("annotator", "reviewer", "rater")
_ANNOTATOR_LABEL = re.compile(r"^(label|score|human|annotator|rater|reviewer)[ _\-]?[A-Za-z0-9]+$", re.IGNORECASE)
#: columns of a review export (`medres review stats`: ratings.csv) that identify the judged answer
REVIEW_COLUMNS = ("hidden_unit", "hidden_model", "reviewer", "status")


@dataclass
class HumanLabel:
    """One labelled answer: how it names the answer, its annotators' values (None: blank), the
    line (or row) where it is (the first one, for a long file)."""

    line: int | None
    keys: dict[str, str]
    ratings: JSONObject = field(default_factory=dict)  # annotator -> raw cell
    lines: dict[str, int | None] = field(default_factory=dict)  # annotator -> line
    columns: dict[str, str] = field(default_factory=dict)  # annotator -> column


@dataclass
class HumanLabels:
    path: Path
    kind: str  # csv | parquet | review
    labels: list[HumanLabel]
    annotators: list[str]
    columns: list[str]  # the label columns read
    skipped: Counter = field(default_factory=Counter)


def label_cell(v: object) -> str | None:
    """A label cell: blank or an NA word is no label."""
    s = _key_cell(v)
    return None if s is None or s.lower() in _MISSING else s


def _key_cell(v: object) -> str | None:
    """A cell naming the answer (unit, item, model, setting, ...): only a blank cell is missing, so
    a value such as the setting `none` (no mitigation) is a name like any other."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    s = str(v).strip()
    return s or None


def _review_dimension(header: Sequence[str], label_columns: Sequence[str] | None, path: Path) -> list[str]:
    if label_columns:
        return list(label_columns)
    from ..rubrics import rubrics

    numeric = [d.key for r in rubrics().values() if r.needs_run for d in r.dimensions if d.numeric() and d.key in header]
    numeric = list(dict.fromkeys(numeric))
    if len(numeric) != 1:
        found = ", ".join(numeric) or "none"
        raise InputError(
            path, 1, "label", f"cannot tell which rated dimension holds the label (numeric dimensions found: {found}); name it with --label-column"
        )
    return numeric


def _label_columns(header: Sequence[str], label_columns: Sequence[str] | None, long: str | None, path: Path) -> list[str]:
    if label_columns:
        missing = [c for c in label_columns if c not in header]
        if missing:
            raise InputError(path, 1, missing[0], f"no such column (columns: {', '.join(header)})")
        return list(label_columns)
    single = [c for c in header if c.lower() in SINGLE_LABEL_COLUMNS]
    if single:
        return single[:1]
    multi = [c for c in header if _ANNOTATOR_LABEL.match(c) and c != long and c.lower() not in ANNOTATOR_COLUMNS]
    if multi:
        return multi
    raise InputError(
        path, 1, "label", f"no label column: expected label (or score), or one column per annotator such as label_1, label_2 (columns: {', '.join(header)})"
    )


def read_labels(path: Path | str, *, label_columns: Sequence[str] | None = None) -> HumanLabels:
    """Human labels from a CSV/TSV/Parquet file, a review export (ratings.csv/.parquet) or a
    review directory (see the module's docstring)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "labels file not found")
    if path.is_dir() or path.suffix == ".sqlite":
        return _review_labels(path, label_columns)
    kind, header, rows = table_rows(path)
    if set(REVIEW_COLUMNS) <= set(header):
        return _labels_from_rows(path, "review", header, rows, _review_dimension(header, label_columns, path), review=True)
    return _labels_from_rows(path, kind, header, rows, None, label_columns=label_columns)


def _review_labels(path: Path, label_columns: Sequence[str] | None) -> HumanLabels:
    from ..db import ReviewDB
    from ..stats import ratings_frame

    with ReviewDB(path) as db:
        rubric = db.rubric
        frame = ratings_frame(db)
        db_path = db.path
    if not rubric.needs_run:
        raise InputError(
            db_path,
            None,
            "rubric",
            f"review rubric {rubric.key} rates items, not model answers: judge agreement needs a rubric that rates responses (e.g. premise-answer)",
        )
    header = list(frame.columns)
    if label_columns:
        columns = list(label_columns)
    else:
        columns = [d.key for d in rubric.dimensions if d.numeric()]
        if len(columns) != 1:
            raise ConfigError(
                "--label-column", f"review rubric {rubric.key} has {len(columns)} numeric dimensions ({', '.join(columns) or 'none'}); name the one to compare"
            )
    records = cast(list[JSONObject], frame.astype(object).where(frame.notna(), None).to_dict("records"))  # its columns are names
    rows = ((None, row) for row in records)
    return _labels_from_rows(db_path, "review", header, rows, columns, review=True)


def _layout(
    path: Path, header: Sequence[str], columns: list[str] | None, review: bool, label_columns: Sequence[str] | None
) -> tuple[dict[str, str], str | None, list[str]]:
    """How a file of labels is laid out: (the key of an answer -> the column holding it, the column
    naming the annotator (None: one column per annotator), the label columns)."""
    if review:
        for c in columns or ():
            if c not in header:
                raise InputError(path, 1, c, f"no such column (columns: {', '.join(header)})")
        return {"unit_id": "hidden_unit", "model": "hidden_model", "scorer": "hidden_scoring"}, "reviewer", list(columns or ())
    if "unit_id" not in header and "item_id" not in header:
        raise InputError(path, 1, "item_id", f"no column names the answer: expected unit_id, or item_id with model (columns: {', '.join(header)})")
    long = next((c for c in header if c.lower() in ANNOTATOR_COLUMNS), None)
    return {k: k for k in KEY_COLUMNS if k in header}, long, _label_columns(header, label_columns, long, path)


def _labels_from_rows(
    path: Path,
    kind: str,
    header: Sequence[str],
    rows: Iterator[tuple[int | None, JSONObject]],
    columns: list[str] | None,
    *,
    review: bool = False,
    label_columns: Sequence[str] | None = None,
) -> HumanLabels:
    skipped: Counter = Counter()
    key_map, long, columns = _layout(path, header, columns, review, label_columns)
    labels: dict[tuple, HumanLabel] = {}
    annotators: list[str] = []
    index = 0
    for line, row in rows:
        index += 1
        where = line if line is not None else index
        if review and str(row.get("status")) != "rated":
            skipped["review_not_rated"] += 1
            continue
        keys = {}
        for k, col in key_map.items():
            v = _key_cell(row.get(col))
            if v is not None:
                keys[k] = v
        if "unit_id" not in keys and "item_id" not in keys:
            field_name = key_map["unit_id"] if review else ("unit_id" if "unit_id" in header else "item_id")
            raise InputError(path, where, field_name, "is blank: every label needs the answer it rates")
        ident = tuple(sorted(keys.items()))
        if long is not None:
            who = label_cell(row.get(long))
            if who is None:
                raise InputError(path, where, long, "is blank")
            pairs = [(who if len(columns) == 1 else f"{who}/{c}", c) for c in columns]
        else:
            pairs = [(c, c) for c in columns]
        lab = labels.get(ident)
        if lab is None:
            lab = labels[ident] = HumanLabel(where, keys)
        elif long is None:
            raise InputError(
                path,
                where,
                key_map.get("unit_id", "item_id"),
                f"labels the same answer as line {lab.line} (several annotators: one column each, or an annotator column)",
            )
        for name, col in pairs:
            if name in lab.ratings:
                raise InputError(path, where, long or col, f"annotator {name!r} labels this answer twice (first on line {lab.lines[name]})")
            lab.ratings[name] = row.get(col)
            lab.lines[name] = where
            lab.columns[name] = col
            if name not in annotators:
                annotators.append(name)
    return HumanLabels(path, kind, list(labels.values()), annotators, list(columns or ()), skipped)
