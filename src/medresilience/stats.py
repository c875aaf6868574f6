"""Intervals and tests for the numbers medresilience reports.

Every rate carries an interval, every clean-vs-stressed comparison on the same items gets a paired
test, and families of tests across strata get a multiplicity correction. Where scipy or statsmodels
already implement a procedure we call them; the only code written here is the glue (input checks,
edge cases, plain-Python results that serialise to JSON) and the cluster bootstrap, which neither
library offers in vectorised form.

Conventions
- Booleans in, plain Python numbers out (no numpy scalars), so results go straight into JSON.
- Inputs are checked: counts must be integers with 0 <= k <= n, boolean sequences must hold only
  True/False (or 0/1), values must be finite. Bad input raises ValueError; nothing is coerced
  silently into a score.
- Randomness is seeded (``seed``), so the same call gives the same interval on any machine with
  the same numpy/scipy.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import math
import warnings
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.stats
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

__all__ = [
    "Rate",
    "bootstrap_mean",
    "cluster_bootstrap_rate",
    "cluster_mcnemar",
    "fisher_one_sided",
    "holm",
    "mcnemar_exact",
    "mcnemar_from_pairs",
    "paired_bootstrap_diff",
    "rate_from_bools",
    "wilson",
]

# scipy >= 1.15 takes `rng`; older versions (the project allows scipy >= 1.11) take `random_state`.
_BOOTSTRAP_RNG_KW = (
    "rng" if "rng" in inspect.signature(scipy.stats.bootstrap).parameters else "random_state"
)


# --------------------------------------------------------------------------------------------
# Rates
# --------------------------------------------------------------------------------------------


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
            ival = (
                f" [{self.lo * 100:.1f}, {self.hi * 100:.1f}]"
                if self.lo is not None and self.hi is not None
                else ""
            )
        else:
            point = f"{self.p:.3f}"
            ival = (
                f" [{self.lo:.3f}, {self.hi:.3f}]"
                if self.lo is not None and self.hi is not None
                else ""
            )
        return f"{point}{ival} (n={self.n})"


def wilson(k: int, n: int, confidence: float = 0.95) -> Rate:
    """k successes out of n with the Wilson score interval (statsmodels ``proportion_confint``,
    ``method="wilson"``; the same as R's ``prop.test(k, n, correct=FALSE)$conf.int``)."""
    k, n = _check_counts(k, n)
    alpha = 1.0 - _check_confidence(confidence)
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


def rate_from_bools(values: Sequence[bool], confidence: float = 0.95) -> Rate:
    """Wilson rate of the True values in a sequence of booleans (or 0/1)."""
    arr = _as_bool_array(values, "values")
    return wilson(int(arr.sum()), int(arr.size), confidence)


def cluster_bootstrap_rate(
    successes: Sequence[bool],
    clusters: Sequence[Hashable],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Rate:
    """A pooled rate whose interval resamples whole clusters.

    Use it when several rows share a source and are not independent (e.g. several Type 1 probes
    of one question, repeated runs of one vignette). ``p`` is the plain pooled rate k/n; ``lo`` and
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
    ok = _as_bool_array(successes, "successes")
    if len(clusters) != ok.size:
        raise ValueError(
            f"successes and clusters differ in length ({ok.size} vs {len(clusters)})"
        )
    conf = _check_confidence(confidence)
    n_resamples = _check_resamples(n_resamples)
    n = int(ok.size)
    k = int(ok.sum())
    if n == 0:
        return Rate(k=0, n=0, p=None, lo=None, hi=None)

    codes = _cluster_codes(clusters)
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
# Paired and two-group tests
# --------------------------------------------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts.

    ``b`` = pairs correct -> wrong, ``c`` = pairs wrong -> correct. The exact (conditional) test is
    the binomial test of b out of b + c at 1/2: p = min(1, 2 * P[X <= min(b, c)]), as statsmodels'
    ``mcnemar(exact=True)`` and R's ``binom.test`` compute it. 1.0 when b + c == 0.
    """
    b, c = _check_nonneg_int(b, "b"), _check_nonneg_int(c, "c")
    if b + c == 0:
        return 1.0
    return float(_sm_mcnemar([[0, b], [c, 0]], exact=True).pvalue)


def mcnemar_from_pairs(before: Sequence[bool], after: Sequence[bool]) -> dict[str, Any]:
    """Exact McNemar test on paired outcomes (e.g. clean-correct vs stressed-correct per item).

    Returns ``{"b", "c", "n", "p"}`` where b counts True -> False (correct -> wrong), c counts
    False -> True, n is the number of pairs and p the two-sided exact p-value.
    """
    x = _as_bool_array(before, "before")
    y = _as_bool_array(after, "after")
    if x.size != y.size:
        raise ValueError(f"before and after differ in length ({x.size} vs {y.size})")
    b = int(np.count_nonzero(x & ~y))
    c = int(np.count_nonzero(~x & y))
    return {"b": b, "c": c, "n": int(x.size), "p": mcnemar_exact(b, c)}


def cluster_mcnemar(
    before: Sequence[bool], after: Sequence[bool], clusters: Sequence[Hashable]
) -> dict[str, Any]:
    """McNemar test for paired outcomes that come in clusters (Durkalski et al., Stat Med 2003).

    For cluster j with n_j pairs, b_j (True -> False) and c_j (False -> True) discordant pairs,
    ``X2 = (sum_j (b_j - c_j) / n_j)^2 / sum_j ((b_j - c_j) / n_j)^2`` ~ chi-square(1). It makes no
    assumption about the within-cluster correlation; with one pair per cluster it reduces to the
    uncorrected McNemar chi-square (b - c)^2 / (b + c). Recommended when the clusters are few
    or of unequal size. (Same as ``durkalski.test`` in the R package clust.bin.pair.)

    Returns ``{"b", "c", "n", "clusters", "statistic", "p"}``; statistic 0 and p 1.0 when no
    cluster has b_j != c_j.
    """
    x = _as_bool_array(before, "before")
    y = _as_bool_array(after, "after")
    if not (x.size == y.size == len(clusters)):
        raise ValueError(
            f"before, after and clusters differ in length ({x.size}, {y.size}, {len(clusters)})"
        )
    b = int(np.count_nonzero(x & ~y))
    c = int(np.count_nonzero(~x & y))
    out: dict[str, Any] = {"b": b, "c": c, "n": int(x.size), "clusters": 0,
                           "statistic": 0.0, "p": 1.0}
    if x.size == 0:
        return out
    codes = _cluster_codes(clusters)
    g = int(codes.max()) + 1
    out["clusters"] = g
    diff = (x & ~y).astype(np.float64) - (~x & y).astype(np.float64)
    per = np.bincount(codes, weights=diff, minlength=g) / np.bincount(codes, minlength=g)
    denom = float(np.sum(per**2))
    if denom == 0.0:
        return out
    stat = float(np.sum(per)) ** 2 / denom
    out["statistic"] = stat
    out["p"] = float(scipy.stats.chi2.sf(stat, 1))
    return out


def fisher_one_sided(
    a_k: int,
    a_n: int,
    b_k: int,
    b_n: int,
    alternative: Literal["greater", "less", "two-sided"] = "greater",
) -> dict[str, float]:
    """Fisher's exact test of rate A against rate B (``"greater"``: is A's rate the higher?).

    ``scipy.stats.fisher_exact`` on [[a_k, a_n - a_k], [b_k, b_n - b_k]]. Returns
    ``{"odds_ratio", "p"}``; the odds ratio is the sample (cross-product) one, so it can be
    ``inf`` or ``nan`` with zero cells (and p is 1.0 when a group is empty).
    """
    a_k, a_n = _check_counts(a_k, a_n, "a_k", "a_n")
    b_k, b_n = _check_counts(b_k, b_n, "b_k", "b_n")
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(
            f"alternative must be 'greater', 'less' or 'two-sided', not {alternative!r}"
        )
    res = scipy.stats.fisher_exact([[a_k, a_n - a_k], [b_k, b_n - b_k]], alternative=alternative)
    return {"odds_ratio": float(res.statistic), "p": float(res.pvalue)}


def holm(pvalues: Sequence[float | None]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order (statsmodels ``multipletests``).

    Missing entries (None or NaN) come back as NaN and are not counted as tests, as in R's
    ``p.adjust``.
    """
    raw = [math.nan if v is None else float(v) for v in pvalues]
    arr = np.asarray(raw, dtype=np.float64)
    present = ~np.isnan(arr)
    if np.any((arr[present] < 0) | (arr[present] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    out = np.full(arr.shape, np.nan)
    if present.any():
        with cheap_gc():  # multipletests calls gc.collect() on every use
            out[present] = multipletests(arr[present], method="holm")[1]
    return [float(v) for v in out]


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


def bootstrap_mean(
    values: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    method: Literal["percentile", "bca", "basic"] = "percentile",
) -> dict[str, Any]:
    """Mean with a bootstrap interval (``scipy.stats.bootstrap``), e.g. PCS on -1/0/1 scores.

    Returns ``{"mean", "lo", "hi", "n"}``; mean is None when n == 0, lo/hi are None when n < 2.
    Constant data gives lo == hi == mean. If BCa yields no finite limits (near-degenerate data),
    the percentile limits of the same resamples are returned instead.
    """
    x = _as_float_array(values, "values")
    conf = _check_confidence(confidence)
    n_resamples = _check_resamples(n_resamples)
    method_l = method.lower()
    if method_l not in ("percentile", "bca", "basic"):
        raise ValueError(f"method must be 'percentile', 'bca' or 'basic', not {method!r}")
    n = int(x.size)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    mean = float(np.mean(x))
    if n < 2:
        return {"mean": mean, "lo": None, "hi": None, "n": n}
    if np.all(x == x[0]):
        return {"mean": mean, "lo": mean, "hi": mean, "n": n}
    res = _scipy_bootstrap(x, conf, n_resamples, seed, method_l)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        # BCa can fail on near-degenerate resamples; fall back to the percentile limits of the
        # same bootstrap distribution rather than report NaN.
        alpha = 1.0 - conf
        q = np.quantile(res.bootstrap_distribution, [alpha / 2, 1 - alpha / 2])
        lo, hi = float(q[0]), float(q[1])
    return {"mean": mean, "lo": lo, "hi": hi, "n": n}


def _bootstrap_p(diff: float, dist: np.ndarray) -> float:
    """Two-sided bootstrap p-value for a difference of 0: the share of resampled differences on
    the other side of 0 from the observed one, doubled, as (1 + count) / (1 + R), capped at 1."""
    if diff > 0:
        other = int(np.count_nonzero(dist <= 0))
    elif diff < 0:
        other = int(np.count_nonzero(dist >= 0))
    else:
        other = dist.size
    return min(1.0, 2.0 * (1 + other) / (1 + dist.size))


def paired_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Mean paired difference mean(b - a) with a percentile bootstrap interval and p-value.

    ``a`` and ``b`` are per-unit values on the same units (e.g. clean and stressed correctness or
    scores per item), so resampling units keeps the pairing. The p-value for diff == 0 is the
    two-sided bootstrap p: the share of resampled differences on the other side of 0 from the
    observed one (ties with 0 count), doubled and capped at 1, computed as (1 + count) /
    (1 + n_resamples) so that it is never reported as exactly 0 (the smallest possible value is
    2 / (n_resamples + 1)). p is 1.0 when the observed difference is exactly 0.

    Returns ``{"diff", "lo", "hi", "p", "n"}``; diff is None when n == 0, lo/hi/p None when n < 2.
    """
    xa = _as_float_array(a, "a")
    xb = _as_float_array(b, "b")
    if xa.size != xb.size:
        raise ValueError(f"a and b differ in length ({xa.size} vs {xb.size})")
    conf = _check_confidence(confidence)
    n_resamples = _check_resamples(n_resamples)
    d = xb - xa
    n = int(d.size)
    if n == 0:
        return {"diff": None, "lo": None, "hi": None, "p": None, "n": 0}
    diff = float(np.mean(d))
    if n < 2:
        return {"diff": diff, "lo": None, "hi": None, "p": None, "n": n}
    if np.all(d == d[0]):
        # Every resample equals the observed difference: no resample crosses 0.
        p = 1.0 if diff == 0 else min(1.0, 2.0 / (n_resamples + 1))
        return {"diff": diff, "lo": diff, "hi": diff, "p": p, "n": n}
    res = _scipy_bootstrap(d, conf, n_resamples, seed, "percentile")
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    p = _bootstrap_p(diff, dist)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return {"diff": diff, "lo": lo, "hi": hi, "p": p, "n": n}


def _scipy_bootstrap(x: np.ndarray, conf: float, n_resamples: int, seed: int, method: str):
    with warnings.catch_warnings():
        # BCa on near-degenerate data warns and returns NaN limits; the caller sees the NaN.
        warnings.simplefilter("ignore", category=getattr(scipy.stats, "DegenerateDataWarning",
                                                         RuntimeWarning))
        return scipy.stats.bootstrap(
            (x,),
            np.mean,
            n_resamples=n_resamples,
            confidence_level=conf,
            method=method,
            vectorized=True,
            **{_BOOTSTRAP_RNG_KW: np.random.default_rng(seed)},
        )


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_nonneg_int(v: Any, name: str) -> int:
    if not _is_int(v):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return int(v)


def _check_counts(k: Any, n: Any, k_name: str = "k", n_name: str = "n") -> tuple[int, int]:
    k = _check_nonneg_int(k, k_name)
    n = _check_nonneg_int(n, n_name)
    if k > n:
        raise ValueError(f"{k_name} ({k}) exceeds {n_name} ({n})")
    return k, n


def _check_confidence(confidence: float) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return c


def _check_resamples(n_resamples: int) -> int:
    if not _is_int(n_resamples) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)


def _cluster_codes(clusters: Sequence[Hashable]) -> np.ndarray:
    """Integer code 0..G-1 per row, in order of first appearance."""
    codes, _ = pd.factorize(pd.Series(list(clusters), dtype=object), sort=False)
    if (codes < 0).any():
        raise ValueError("clusters contains a missing value (None/NaN)")
    return codes


def _as_bool_array(values: Sequence[Any], name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence, got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return arr
    if arr.size == 0:
        return arr.astype(np.bool_)
    if arr.dtype.kind in "iuf" and np.all((arr == 0) | (arr == 1)):
        return arr.astype(np.bool_)
    if arr.dtype.kind == "O" and all(
        isinstance(v, (bool, np.bool_)) or (_is_int(v) and v in (0, 1)) for v in arr
    ):
        return arr.astype(np.bool_)
    raise ValueError(f"{name} must hold only True/False (or 0/1)")


def _as_float_array(values: Sequence[Any], name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers: {exc}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds a missing or non-finite value")
    return arr


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


def paired_cluster_diff(
    d_sum: Sequence[float],
    size: Sequence[int],
    confidence: float = 0.95,
    n_resamples: int = CLUSTER_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired difference of pooled rates, B - A = sum(d_j) / sum(n_j), over clusters j with
    d_j = (B successes - A successes) and n_j pairs, with a cluster-bootstrap percentile interval
    and two-sided bootstrap p-value.

    The p-value rule is that of ``stats.paired_bootstrap_diff`` (share of resampled differences on
    the other side of 0, doubled, as (1 + count) / (1 + n_resamples), capped at 1; 1.0 when the
    difference is 0); with one pair per cluster the estimator *is* that function's mean paired
    difference. Resampling is exact but cheap: clusters with equal (d_j, n_j) are exchangeable, so
    the draws per distinct pattern are Multinomial(G, pattern share), which gives the bootstrap
    distribution in O(patterns) per resample and bounded memory for any number of items.

    Returns ``{"diff", "lo", "hi", "p", "n", "clusters"}``; diff None when n == 0, lo/hi/p None
    with fewer than two clusters."""
    d = np.asarray(d_sum, dtype=np.float64)
    m = np.asarray(size, dtype=np.float64)
    if d.size != m.size:
        raise ValueError(f"d_sum and size differ in length ({d.size} vs {m.size})")
    if np.any(m < 1):
        raise ValueError("every cluster needs at least one pair")
    g, n = int(d.size), int(m.sum())
    out: dict[str, Any] = {"diff": None, "lo": None, "hi": None, "p": None, "n": n, "clusters": g}
    if g == 0:
        return out
    diff = float(d.sum() / m.sum())
    out["diff"] = diff
    if g < 2:
        return out
    pats, weights = _patterns(d, m)
    if len(pats) == 1 or np.allclose(pats[:, 0] / pats[:, 1], diff):
        out.update(lo=diff, hi=diff, p=1.0 if diff == 0 else min(1.0, 2.0 / (n_resamples + 1)))
        return out
    rng = np.random.default_rng(seed)
    shares = weights / weights.sum()
    dist = np.empty(n_resamples)
    block = max(1, 1_000_000 // len(pats))
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        draws = rng.multinomial(g, shares, size=stop - start)
        dist[start:stop] = (draws @ pats[:, 0]) / (draws @ pats[:, 1])
    alpha = 1.0 - confidence
    lo, hi = np.quantile(dist, [alpha / 2, 1 - alpha / 2])
    out.update(lo=float(lo), hi=float(hi), p=_bootstrap_p(diff, dist))
    return out


def _patterns(d: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (d, m) rows and their counts."""
    if np.all(d == np.round(d)) and d.size and np.abs(d).max() < 2**20 and m.max() < 2**20:
        key = (d.astype(np.int64) + 2**20) * 2**21 + m.astype(np.int64)
        u, counts = np.unique(key, return_counts=True)
        return np.stack([(u // 2**21 - 2**20).astype(np.float64), (u % 2**21).astype(np.float64)], axis=1), counts
    return np.unique(np.stack([d, m], axis=1), axis=0, return_counts=True)


@contextlib.contextmanager
def cheap_gc() -> Iterator[None]:
    """Freeze the objects alive now for the duration, so that a library's explicit gc.collect()
    (statsmodels' Holm calls it on every use) scans only what is new instead of the whole heap
    (0.1 s per call with pandas, scipy and matplotlib loaded, and more with a large frame)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
