"""The results frame: the store's units, calls and scores joined with the suite's item and probe
facts, one row per unit, as a pandas DataFrame. Every later number is computed from this frame.

`status` is one of: valid (a readable answer), invalid (a reply with no readable answer),
error (the call failed after retries; excluded from every rate and counted), missing (not run).

Built for millions of rows in bounded memory: the join is read in chunks of ``chunk`` rows with a
narrow query (the frame needs neither request keys nor unit ids; fixed vocabularies come back as
small integers), each chunk is turned into integer codes at once, and string columns end as
pandas categoricals. Item and probe facts are looked up by code, not merged row by row."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from .records import Suite
from .store import Store

FRAME_COLUMNS = [
    "model", "defense", "scoring", "item_id", "probe_id", "condition", "source", "subject",
    "content_type", "provenance", "target", "gold", "label", "status", "correct",
    "prompt_tokens", "completion_tokens", "cost",
]

STATUSES = ["valid", "invalid", "error", "missing"]
CONDITIONS = ["clean", "type1", "type2"]

# The same join as Store.iter_results (units LEFT JOIN calls LEFT JOIN scores on the unit's own
# scorer), narrowed to what the frame needs. Codes: condition 0 clean, 1 type1, 2 type2, 3 other
# (then the text is read from `condition_text`); call 0 none, 1 ok, 2 error; score 0 none,
# 1 valid, 2 other (invalid or unscored).
_SQL = """
SELECT u.model, u.item_id, u.probe_id,
       CASE u.condition WHEN 'clean' THEN 0 WHEN 'type1' THEN 1 WHEN 'type2' THEN 2 ELSE 3 END,
       u.defense, u.scoring,
       CASE c.status WHEN 'ok' THEN 1 WHEN 'error' THEN 2 ELSE 0 END,
       s.label,
       CASE s.status WHEN 'valid' THEN 1 WHEN 'invalid' THEN 2 WHEN 'unscored' THEN 2 ELSE 0 END,
       COALESCE(c.prompt_tokens, 0), COALESCE(c.completion_tokens, 0), c.cost,
       CASE WHEN u.condition IN ('clean', 'type1', 'type2') THEN NULL ELSE u.condition END
FROM units u
LEFT JOIN calls c ON c.key = u.key
LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring
"""


class _Codes:
    """A growing vocabulary: strings -> stable integer codes across chunks (None -> -1)."""

    def __init__(self, initial: Sequence[str] = ()):
        self.index: dict[Any, int] = {}
        for v in initial:
            self.index.setdefault(v, len(self.index))

    def remap(self, local: np.ndarray, uniques: Sequence[Any]) -> np.ndarray:
        """Chunk-local factor codes (and their uniques) -> codes of this vocabulary."""
        if len(uniques) == 0:
            return np.full(len(local), -1, dtype=np.int32)
        lookup = np.fromiter((self.index.setdefault(u, len(self.index)) for u in uniques), dtype=np.int32, count=len(uniques))
        return np.where(local >= 0, lookup[np.maximum(local, 0)], -1).astype(np.int32, copy=False)

    @property
    def categories(self) -> list[Any]:
        return list(self.index)


_TEXT = {"model": 0, "item_id": 1, "probe_id": 2, "scoring": 5, "label": 7, "condition_text": 12}


def _factorize(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    return codes.astype(np.int32, copy=False), uniques


def _convert(rows: list[tuple]) -> dict[str, Any]:
    """One chunk of rows -> numeric arrays and chunk-local factorised text columns."""
    n = len(rows)
    out: dict[str, Any] = {name: _factorize([r[j] for r in rows]) for name, j in _TEXT.items()}
    out["condition"] = np.fromiter((r[3] for r in rows), dtype=np.int32, count=n)
    out["defense"] = np.fromiter((r[4] for r in rows), dtype=np.int8, count=n).astype(bool)
    out["call"] = np.fromiter((r[6] for r in rows), dtype=np.int8, count=n)
    out["score"] = np.fromiter((r[8] for r in rows), dtype=np.int8, count=n)
    out["prompt_tokens"] = np.fromiter((r[9] for r in rows), dtype=np.int64, count=n)
    out["completion_tokens"] = np.fromiter((r[10] for r in rows), dtype=np.int64, count=n)
    out["cost"] = np.array([r[11] for r in rows], dtype=np.float64)  # None -> nan
    return out


def _read(conn: sqlite3.Connection, where: str, args: Sequence[Any], chunk: int) -> list[dict[str, Any]]:
    cur = conn.execute(_SQL + where, args)
    out = []
    try:
        while True:
            rows = cur.fetchmany(chunk)
            if not rows:
                return out
            out.append(_convert(rows))
            del rows
    finally:
        cur.close()


def _read_parallel(store: Store, chunk: int, workers: int) -> list[dict[str, Any]]:
    """Read the join in `workers` rowid ranges on their own read-only connections (SQLite works
    outside the GIL); a store that is not a plain file is read on its own connection."""
    lo, hi = store.conn.execute("SELECT MIN(rowid), MAX(rowid) FROM units").fetchone()
    if lo is None:
        return []
    path = store.path
    if workers <= 1 or not path.is_file() or hi - lo < 2 * chunk:
        return _read(store.conn, "", (), chunk)
    bounds = np.linspace(lo, hi + 1, workers + 1).astype(np.int64)
    ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]

    def job(r: tuple[int, int]) -> list[dict[str, Any]]:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        try:
            return _read(conn, " WHERE u.rowid >= ? AND u.rowid < ?", r, chunk)
        finally:
            conn.close()

    with ThreadPoolExecutor(max_workers=len(ranges)) as pool:
        return [part for parts in pool.map(job, ranges) for part in parts]


def _categorical(codes: np.ndarray, categories: Sequence[Any]) -> pd.Categorical:
    cats = list(categories)
    if len(cats) == 0:
        return pd.Categorical.from_codes(np.full(len(codes), -1, dtype=np.int8), categories=pd.Index([], dtype=object))
    return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))


def _facts(keys: list[Any], table: dict[Any, tuple], width: int) -> list[list[Any]]:
    """Per-key fact tuples (None where the key is not in the suite), transposed into columns."""
    empty = (None,) * width
    rows = [table.get(k, empty) for k in keys]
    return [list(col) for col in zip(*rows)] if rows else [[] for _ in range(width)]


def _lookup(codes: np.ndarray, values: list[Any]) -> pd.Categorical:
    """Map per-key values (one per category code) onto rows, as a categorical (-1 -> missing)."""
    vcodes, vuniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    vcodes = np.append(vcodes, -1).astype(np.int32)  # index -1 (missing key) -> missing
    return _categorical(vcodes[codes], list(vuniques))


def _same(a: pd.Categorical, b: pd.Categorical) -> np.ndarray:
    """Element-wise a == b for two categoricals with different vocabularies (missing != anything)."""
    union = list(dict.fromkeys([*a.categories, *b.categories]))
    ca = a.set_categories(union).codes
    cb = b.set_categories(union).codes
    return (ca == cb) & (ca >= 0)


def results_frame(
    store: Store, suite: Suite | Callable[[], Suite], chunk: int = 100_000, workers: int | None = None
) -> pd.DataFrame:
    """One row per unit of the store, with the suite's facts. ``workers`` parallel readers
    (default: up to 4, one per CPU) each stream their share of the units in ``chunk``-row pieces.
    ``suite`` may be a zero-argument callable: it is called while the store is being read, so that
    loading a large suite overlaps with the read."""
    if workers is None:
        workers = max(1, min(4, os.cpu_count() or 1))
    if callable(suite):
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(suite)
            parts = _read_parallel(store, chunk, workers)
            suite = pending.result()
    else:
        parts = _read_parallel(store, chunk, workers)
    vocab = {name: _Codes() for name in _TEXT}
    cond_c = _Codes(CONDITIONS)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (*_TEXT, "condition", "defense", "call", "score",
                                                        "prompt_tokens", "completion_tokens", "cost")}
    for part in parts:
        for name in _TEXT:
            if name != "condition_text":
                cols[name].append(vocab[name].remap(*part[name]))
        cond = part["condition"]
        if (cond == 3).any():  # a condition outside the known three: keep its text
            cond = np.where(cond == 3, cond_c.remap(*part["condition_text"]), cond).astype(np.int32)
        cols["condition"].append(cond)
        for name in ("defense", "call", "score", "prompt_tokens", "completion_tokens", "cost"):
            cols[name].append(part[name])
    del parts
    dtypes = {"defense": bool, "call": np.int8, "score": np.int8, "prompt_tokens": np.int64,
              "completion_tokens": np.int64, "cost": np.float64}
    cat = {k: (np.concatenate(v) if v else np.empty(0, dtype=dtypes.get(k, np.int32))) for k, v in cols.items()}
    del cols
    model_c, item_c, probe_c, scoring_c, label_c = (vocab[k] for k in ("model", "item_id", "probe_id", "scoring", "label"))

    # item and probe facts, looked up by code
    item_keys = item_c.categories
    item_table = {it.id: (it.source, it.subject, it.answer) for it in suite.items.values()}
    source, subject, gold = _facts(item_keys, item_table, 3)
    probe_keys = probe_c.categories
    probe_table = {p.id: (p.content_type, p.provenance, p.target) for p in suite.probes}
    content_type, provenance, target = _facts(probe_keys, probe_table, 3)

    call, score = cat["call"], cat["score"]
    status_code = np.full(len(call), 3, dtype=np.int8)  # missing
    status_code[call == 2] = 2  # error
    ok = call == 1
    status_code[ok & (score == 1)] = 0  # valid
    status_code[ok & (score != 1)] = 1  # invalid (invalid, unscored, or no score row)

    icode, pcode = cat["item_id"], cat["probe_id"]
    df = pd.DataFrame({
        "model": _categorical(cat["model"], model_c.categories),
        "defense": cat["defense"],
        "scoring": _categorical(cat["scoring"], scoring_c.categories),
        "item_id": _categorical(icode, item_keys),
        "probe_id": _categorical(pcode, probe_keys),
        "condition": _categorical(cat["condition"], cond_c.categories),
        "source": _lookup(icode, source),
        "subject": _lookup(icode, subject),
        "content_type": _lookup(pcode, content_type),
        "provenance": _lookup(pcode, provenance),
        "target": _lookup(pcode, target),
        "gold": _lookup(icode, gold),
        "label": _categorical(cat["label"], label_c.categories),
        "status": _categorical(status_code, STATUSES),
        "prompt_tokens": cat["prompt_tokens"],
        "completion_tokens": cat["completion_tokens"],
        "cost": cat["cost"],
    })
    df["correct"] = (status_code == 0) & _same(df["label"].array, df["gold"].array)
    return df[FRAME_COLUMNS]
