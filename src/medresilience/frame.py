"""The results frame: the store's units, calls and scores joined with the suite's item and probe
facts, one row per unit, as a pandas DataFrame. Every later number is computed from this frame.

`status` is one of: valid (a readable answer), invalid (a reply with no readable answer),
error (the call failed after retries; excluded from every rate and counted), missing (not run).

Built for millions of rows in bounded memory. The units x calls x scores join is
read in chunks with a narrow query: the frame needs neither request keys nor unit ids, and the
small vocabularies (model, condition, setting, call and score status, scoring, answer letter) come
back from SQLite packed into one integer per row, so that only the item and probe ids are strings.
Each chunk becomes
integer codes at once; string columns end as pandas categoricals; item and probe facts are looked
up by code, not merged row by row. A store whose values fall outside the packed vocabularies (an
unknown condition, scoring or label) is read the general way, as text."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .records import LETTERS, Suite
from .store import Store

FRAME_COLUMNS = [
    "model", "defense", "scoring", "item_id", "probe_id", "condition", "source", "subject",
    "content_type", "provenance", "target", "gold", "label", "status", "correct",
    "prompt_tokens", "completion_tokens", "cost",
]

STATUSES = ["valid", "invalid", "error", "missing"]
CONDITIONS = ["clean", "type1", "type2"]
SCORINGS = ["letter", "logprob"]

_JOIN = """
FROM units u
LEFT JOIN calls c ON c.key = u.key
LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring
"""
_COND = "(CASE u.condition WHEN 'clean' THEN 0 WHEN 'type1' THEN 1 WHEN 'type2' THEN 2 ELSE 3 END)"
_CALL = "(CASE c.status WHEN 'ok' THEN 1 WHEN 'error' THEN 2 ELSE 0 END)"  # 0: no call row
_SCORE = "(CASE s.status WHEN 'valid' THEN 1 WHEN 'invalid' THEN 2 WHEN 'unscored' THEN 2 ELSE 0 END)"
_SCORING = "(CASE u.scoring " + " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(SCORINGS)) + " ELSE 3 END)"
_LABEL = ("(CASE WHEN s.label IS NULL THEN 15 ELSE (CASE s.label "
          + " ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(LETTERS)) + " ELSE 14 END) END)")
# bits: condition 0-1, defense 2, call 3-4, score 5-6, scoring 7-8, label 9-12, model 13-
_PACKED = f"({_COND} + 4 * u.defense + 8 * {_CALL} + 32 * {_SCORE} + 128 * {_SCORING} + 512 * {_LABEL} + 8192 * {{model}})"
_TOKENS = "(COALESCE(c.prompt_tokens, 0) * 4294967296 + COALESCE(c.completion_tokens, 0))"

# The general query: every vocabulary as text (conditions outside the three as their text).
_SQL_TEXT = f"""
SELECT u.model, u.item_id, u.probe_id, {_COND}, u.defense, u.scoring, {_CALL}, s.label, {_SCORE},
       {_TOKENS}, c.cost, CASE WHEN u.condition IN ('clean', 'type1', 'type2') THEN NULL ELSE u.condition END
{_JOIN}"""


class _Unpackable(Exception):
    """A value outside the packed vocabularies: read the store as text instead."""


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


def _factorize(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    return codes.astype(np.int32, copy=False), uniques


def _fixed(codes: np.ndarray, vocab: Sequence[Any], missing: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Codes into a fixed vocabulary, as (codes, uniques) like _factorize (missing -> -1)."""
    codes = codes.astype(np.int32)
    if missing is not None:
        codes[codes == missing] = -1
    return codes, np.asarray(list(vocab), dtype=object)


def _convert_packed(rows: list[tuple], models: list[str]) -> dict[str, Any]:
    n = len(rows)
    packed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    if (packed < 0).any():
        raise _Unpackable("a model not in the store's model list")
    cond, scoring, label = packed & 3, (packed >> 7) & 3, (packed >> 9) & 15
    if (cond == 3).any() or (scoring == 3).any() or (label == 14).any():
        raise _Unpackable("a condition, scoring or label outside the packed vocabularies")
    tokens = np.fromiter((r[3] for r in rows), dtype=np.int64, count=n)
    return {
        "model": _fixed(packed >> 13, models),
        "item_id": _factorize([r[1] for r in rows]),
        "probe_id": _factorize([r[2] for r in rows]),
        "scoring": _fixed(scoring, SCORINGS),
        "label": _fixed(label, LETTERS, missing=15),
        "condition": _fixed(cond, CONDITIONS),
        "defense": ((packed >> 2) & 1).astype(bool),
        "call": ((packed >> 3) & 3).astype(np.int8),
        "score": ((packed >> 5) & 3).astype(np.int8),
        "prompt_tokens": tokens >> 32,
        "completion_tokens": tokens & 0xFFFFFFFF,
        "cost": np.array([r[4] for r in rows], dtype=np.float64),  # None -> nan
    }


def _convert_text(rows: list[tuple]) -> dict[str, Any]:
    n = len(rows)
    cond = np.fromiter((r[3] for r in rows), dtype=np.int32, count=n)
    cond_codes: tuple[np.ndarray, np.ndarray] = _fixed(cond, CONDITIONS)
    if (cond == 3).any():  # conditions outside the known three keep their text
        text = np.array([CONDITIONS[c] if c < 3 else r[11] for c, r in zip(cond, rows)], dtype=object)
        cond_codes = _factorize(text)
    tokens = np.fromiter((r[9] for r in rows), dtype=np.int64, count=n)
    return {
        "model": _factorize([r[0] for r in rows]),
        "item_id": _factorize([r[1] for r in rows]),
        "probe_id": _factorize([r[2] for r in rows]),
        "scoring": _factorize([r[5] for r in rows]),
        "label": _factorize([r[7] for r in rows]),
        "condition": cond_codes,
        "defense": np.fromiter((r[4] for r in rows), dtype=np.int8, count=n).astype(bool),
        "call": np.fromiter((r[6] for r in rows), dtype=np.int8, count=n),
        "score": np.fromiter((r[8] for r in rows), dtype=np.int8, count=n),
        "prompt_tokens": tokens >> 32,
        "completion_tokens": tokens & 0xFFFFFFFF,
        "cost": np.array([r[10] for r in rows], dtype=np.float64),
    }


def _read(conn: sqlite3.Connection, sql: str, args: Sequence[Any], chunk: int,
          convert: Callable[[list[tuple]], dict[str, Any]]) -> list[dict[str, Any]]:
    cur = conn.execute(sql, args)
    out = []
    try:
        while True:
            rows = cur.fetchmany(chunk)
            if not rows:
                return out
            out.append(convert(rows))
            del rows
    finally:
        cur.close()


def _read_all(store: Store, chunk: int) -> list[dict[str, Any]]:
    """Read the join in chunks: packed when every value fits the packed vocabularies, else as text."""
    models = [r[0] for r in store.conn.execute("SELECT DISTINCT model FROM units")]
    if not models:
        return []
    model_case = "(CASE u.model " + " ".join("WHEN ? THEN ?" for _ in models) + " ELSE -1 END)"
    model_args: list[Any] = [v for i, m in enumerate(models) for v in (m, i)]
    packed_sql = f"SELECT {_PACKED.format(model=model_case)}, u.item_id, u.probe_id, {_TOKENS}, c.cost {_JOIN}"
    try:
        return _read(store.conn, packed_sql, model_args, chunk, lambda rows: _convert_packed(rows, models))
    except _Unpackable:
        return _read(store.conn, _SQL_TEXT, (), chunk, _convert_text)


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


TEXT_COLUMNS = ("model", "item_id", "probe_id", "scoring", "label", "condition")


def results_frame(store: Store, suite: Suite, chunk: int = 100_000) -> pd.DataFrame:
    """One row per unit of the store, with the suite's facts; the store is streamed in pieces of
    ``chunk`` rows. (Reading with several threads or loading the suite beside the read was tried
    and measured: both are slower, the per-row Python work contends for the GIL.)"""
    parts = _read_all(store, chunk)
    vocab = {name: _Codes(CONDITIONS if name == "condition" else ()) for name in TEXT_COLUMNS}
    numeric = ("defense", "call", "score", "prompt_tokens", "completion_tokens", "cost")
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (*TEXT_COLUMNS, *numeric)}
    for part in parts:
        for name in TEXT_COLUMNS:
            cols[name].append(vocab[name].remap(*part[name]))
        for name in numeric:
            cols[name].append(part[name])
    del parts
    dtypes = {"defense": bool, "call": np.int8, "score": np.int8, "prompt_tokens": np.int64,
              "completion_tokens": np.int64, "cost": np.float64}
    cat = {k: (np.concatenate(v) if v else np.empty(0, dtype=dtypes.get(k, np.int32))) for k, v in cols.items()}
    del cols

    # item and probe facts, looked up by code
    item_keys = vocab["item_id"].categories
    item_table = {it.id: (it.source, it.subject, it.answer) for it in suite.items.values()}
    source, subject, gold = _facts(item_keys, item_table, 3)
    probe_keys = vocab["probe_id"].categories
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
        "model": _categorical(cat["model"], vocab["model"].categories).remove_unused_categories(),
        "defense": cat["defense"],
        "scoring": _categorical(cat["scoring"], vocab["scoring"].categories).remove_unused_categories(),
        "item_id": _categorical(icode, item_keys),
        "probe_id": _categorical(pcode, probe_keys),
        "condition": _categorical(cat["condition"], vocab["condition"].categories),
        "source": _lookup(icode, source),
        "subject": _lookup(icode, subject),
        "content_type": _lookup(pcode, content_type),
        "provenance": _lookup(pcode, provenance),
        "target": _lookup(pcode, target),
        "gold": _lookup(icode, gold),
        "label": _categorical(cat["label"], vocab["label"].categories).remove_unused_categories(),
        "status": _categorical(status_code, STATUSES),
        "prompt_tokens": cat["prompt_tokens"],
        "completion_tokens": cat["completion_tokens"],
        "cost": cat["cost"],
    })
    df["correct"] = (status_code == 0) & _same(df["label"].array, df["gold"].array)
    return df[FRAME_COLUMNS]
