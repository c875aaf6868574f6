"""Input checks shared by the rates, tests and agreement modules: counts are integers with
0 <= k <= n, boolean sequences hold only True/False (or 0/1), values are finite. Bad input raises
ValueError; nothing is coerced silently into a score."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeGuard

import numpy as np
import pandas as pd


def is_int(v: object) -> TypeGuard[int | np.integer]:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_nonneg_int(v: object, name: str) -> int:
    if not is_int(v):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return int(v)


def check_counts(k: object, n: object, k_name: str = "k", n_name: str = "n") -> tuple[int, int]:
    count, total = check_nonneg_int(k, k_name), check_nonneg_int(n, n_name)
    if count > total:
        raise ValueError(f"{k_name} ({count}) exceeds {n_name} ({total})")
    return count, total


def check_confidence(confidence: float) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return c


def check_resamples(n_resamples: int) -> int:
    if not is_int(n_resamples) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)


def cluster_codes(clusters: Sequence[Hashable] | np.ndarray) -> np.ndarray:
    """Integer code 0..G-1 per row, in order of first appearance."""
    codes, _ = pd.factorize(pd.Series(list(clusters), dtype=object), sort=False)
    if (codes < 0).any():
        raise ValueError("clusters contains a missing value (None/NaN)")
    return codes


def as_bool_array(values: Sequence[object] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence, got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return arr
    if arr.size == 0:
        return arr.astype(np.bool_)
    if arr.dtype.kind in "iuf" and np.all((arr == 0) | (arr == 1)):
        return arr.astype(np.bool_)
    if arr.dtype.kind == "O" and all(isinstance(v, (bool, np.bool_)) or (is_int(v) and v in (0, 1)) for v in arr):
        return arr.astype(np.bool_)
    raise ValueError(f"{name} must hold only True/False (or 0/1)")


def as_float_array(values: Sequence[object] | np.ndarray, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers: {exc}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds a missing or non-finite value")
    return arr
