"""Rates and their intervals: the Wilson interval of k/n, and the cluster-bootstrap interval of a
pooled rate when one item gives several rows (exact-distribution resampling in bounded memory)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from .checks import as_bool_array, check_confidence, check_counts, check_resamples, cluster_codes

__all__ = ["CLUSTER_RESAMPLES", "Rate", "cluster_bootstrap_rate", "cluster_interval", "clustered_rate", "rate_from_bools", "wilson"]


@dataclass(frozen=True)
class Rate:
    """A proportion k/n with its interval. ``p``, ``lo`` and ``hi`` are None when n == 0."""

    k: int
    n: int
    p: float | None
    lo: float | None
    hi: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"k": self.k, "n": self.n, "p": self.p, "lo": self.lo, "hi": self.hi}

    def fmt(self, pct: bool = True) -> str:
        """``"71.2% [65.4, 76.4] (n=250)"`` (pct) or ``"0.712 [0.654, 0.764] (n=250)"``;
        ``"— (n=0)"`` when there is nothing to report."""
        if self.n == 0 or self.p is None:
            return f"— (n={self.n})"
        if pct:
            point = f"{self.p * 100:.1f}%"
            ival = f" [{self.lo * 100:.1f}, {self.hi * 100:.1f}]" if self.lo is not None and self.hi is not None else ""
        else:
            point = f"{self.p:.3f}"
            ival = f" [{self.lo:.3f}, {self.hi:.3f}]" if self.lo is not None and self.hi is not None else ""
        return f"{point}{ival} (n={self.n})"


def wilson(k: int, n: int, confidence: float = 0.95) -> Rate:
    """k successes out of n with the Wilson score interval (statsmodels ``proportion_confint``,
    ``method="wilson"``; the same as R's ``prop.test(k, n, correct=FALSE)$conf.int``)."""
    k, n = check_counts(k, n)
    alpha = 1.0 - check_confidence(confidence)
    if n == 0:
        return Rate(k=0, n=0, p=None, lo=None, hi=None)
    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    # Clamp float dust (e.g. -1e-17 at k == 0) so the interval always lies in [0, 1] and holds p.
    p = k / n
    lo = min(max(float(lo), 0.0), p)
    hi = max(min(float(hi), 1.0), p)
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return Rate(k=k, n=n, p=p, lo=lo, hi=hi)


def rate_from_bools(values: Sequence[bool] | np.ndarray, confidence: float = 0.95) -> Rate:
    """Wilson rate of the True values in a sequence of booleans (or 0/1)."""
    arr = as_bool_array(values, "values")
    return wilson(int(arr.sum()), int(arr.size), confidence)


def cluster_bootstrap_rate(
    successes: Sequence[bool],
    clusters: Sequence[Hashable],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Rate:
    """A pooled rate whose interval resamples whole clusters.

    Use it when several rows share a source and are not independent (e.g. several probes of one
    question, repeated runs of one vignette). ``p`` is the plain pooled rate k/n; ``lo`` and
    ``hi`` are percentile limits of the pooled rate over ``n_resamples`` resamples of the clusters
    with replacement (the cluster, or "block", bootstrap of a ratio estimator).

    Degenerate cases, where resampling has no variability to show:
    - every row a success (or every row a failure): the Wilson interval with the *clusters* as the
      units (``wilson(G, G)`` or ``wilson(0, G)``), i.e. assuming rows in a cluster agree fully;
    - a single cluster: the Wilson interval on the rows (nothing to resample).

    Vectorised: cluster totals are computed once, and the resamples are drawn as index blocks
    of bounded size, so memory stays at a few tens of MB for any input
    (100k rows in 20k clusters with 2,000 resamples: about a quarter of a second).
    """
    ok = as_bool_array(successes, "successes")
    if len(clusters) != ok.size:
        raise ValueError(f"successes and clusters differ in length ({ok.size} vs {len(clusters)})")
    conf = check_confidence(confidence)
    n_resamples = check_resamples(n_resamples)
    n = int(ok.size)
    k = int(ok.sum())
    if n == 0:
        return Rate(k=0, n=0, p=None, lo=None, hi=None)

    codes = cluster_codes(clusters)
    n_clusters = int(codes.max()) + 1
    p = k / n
    if k == 0 or k == n:
        w = wilson(0 if k == 0 else n_clusters, n_clusters, conf)
        return Rate(k=k, n=n, p=p, lo=w.lo, hi=w.hi)
    if n_clusters == 1:
        w = wilson(k, n, conf)
        return Rate(k=k, n=n, p=p, lo=w.lo, hi=w.hi)

    succ_per = np.bincount(codes, weights=ok, minlength=n_clusters).astype(np.int64)
    size_per = np.bincount(codes, minlength=n_clusters).astype(np.int64)
    # A resample's totals never exceed n_clusters * largest cluster. When that fits in 31 bits,
    # pack (successes, size) of a cluster into one int64 so each resample is a single gather + sum.
    packed = None
    if n_clusters * int(size_per.max()) < 2**31:
        packed = (succ_per << 32) | size_per

    rng = np.random.default_rng(seed)
    rates = np.empty(n_resamples, dtype=np.float64)
    # Draw resamples in blocks of about 1M cluster indices: fast and memory-bounded.
    block = max(1, 1_000_000 // n_clusters)
    idx_dtype = np.int32 if n_clusters < 2**31 else np.int64
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        idx = rng.integers(0, n_clusters, size=(stop - start, n_clusters), dtype=idx_dtype)
        if packed is not None:
            tot = packed[idx].sum(axis=1)
            rates[start:stop] = (tot >> 32) / (tot & 0xFFFFFFFF)
        else:
            rates[start:stop] = succ_per[idx].sum(axis=1) / size_per[idx].sum(axis=1)
    alpha = 1.0 - conf
    lo, hi = np.quantile(rates, [alpha / 2, 1 - alpha / 2])
    return Rate(k=k, n=n, p=p, lo=min(float(lo), p), hi=max(float(hi), p))


# --------------------------------------------------------------------------------------------
# Exact-distribution cluster bootstraps in bounded memory (reports on millions of rows)
# --------------------------------------------------------------------------------------------

CLUSTER_RESAMPLES = 2000


def cluster_interval(
    succ: np.ndarray, size: np.ndarray, confidence: float = 0.95, n_resamples: int = CLUSTER_RESAMPLES, seed: int = 0
) -> tuple[float | None, float | None]:
    """Cluster-bootstrap percentile interval of a pooled rate from per-cluster (successes, size).

    The same estimator and degenerate-case rules as ``stats.cluster_bootstrap_rate``, drawn in
    O(patterns) per resample instead of O(clusters): clusters with equal (successes, size) are
    exchangeable, so the number of draws that land on each pattern in a resample of G clusters is
    Multinomial(G, pattern share) - the same distribution of resampled rates, at any G."""
    succ = np.asarray(succ, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    g = int(succ.size)
    k, n = int(succ.sum()), int(size.sum())
    if n == 0:
        return None, None
    if k == 0 or k == n:
        w = wilson(0 if k == 0 else g, g, confidence)
        return w.lo, w.hi
    if g == 1:
        w = wilson(k, n, confidence)
        return w.lo, w.hi
    width = int(size.max()) + 1
    keys, weights = np.unique(succ * width + size, return_counts=True)  # distinct (successes, size)
    ps, pn = keys // width, keys % width
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(g, weights / weights.sum(), size=n_resamples)
    rates = (draws @ ps) / (draws @ pn)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(rates, [alpha / 2, 1 - alpha / 2])
    p = k / n
    return min(float(lo), p), max(float(hi), p)


def clustered_rate(
    successes: Sequence[bool] | np.ndarray,
    clusters: Sequence[Hashable] | np.ndarray,
    confidence: float = 0.95,
    n_resamples: int = CLUSTER_RESAMPLES,
    seed: int = 0,
) -> Rate:
    """A pooled rate of rows grouped in clusters (items): the Wilson interval when every cluster
    holds one row, else the cluster-bootstrap interval of ``cluster_interval``, so several rows of
    one item are never counted as independent items."""
    ok = as_bool_array(successes, "successes")
    if len(clusters) != ok.size:
        raise ValueError(f"successes and clusters differ in length ({ok.size} vs {len(clusters)})")
    rate = wilson(int(ok.sum()), int(ok.size), confidence)
    if ok.size == 0:
        return rate
    codes = cluster_codes(clusters)
    g = int(codes.max()) + 1
    if g == ok.size:
        return rate
    succ = np.bincount(codes, weights=ok, minlength=g).astype(np.int64)
    lo, hi = cluster_interval(succ, np.bincount(codes, minlength=g), confidence, n_resamples, seed)
    return Rate(k=rate.k, n=rate.n, p=rate.p, lo=lo, hi=hi)
