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
- p-values come only from exact or clustered tests (exact McNemar, Durkalski's clustered McNemar,
  Fisher's exact test, the exact paired permutation / sign test), which hold at every sample
  size; Holm's correction is applied to those. The bootstraps give intervals, never a p-value.
- A statistic the data cannot define (no units, one cluster) is None, not an error and not a
  default number.
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
import scipy.signal
import scipy.stats
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

__all__ = [
    "Rate",
    "bootstrap_mean",
    "cluster_bootstrap_rate",
    "cluster_mcnemar",
    "clustered_rate",
    "durkalski",
    "fisher_one_sided",
    "holm",
    "mcnemar_exact",
    "mcnemar_from_pairs",
    "paired_bootstrap_diff",
    "paired_permutation_test",
    "rate_from_bools",
    "sign_flip_test",
    "wilson",
]

# scipy >= 1.15 takes `rng`; older versions (the project allows scipy >= 1.11) take `random_state`.
_BOOTSTRAP_RNG_KW = "rng" if "rng" in inspect.signature(scipy.stats.bootstrap).parameters else "random_state"


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
            ival = f" [{self.lo * 100:.1f}, {self.hi * 100:.1f}]" if self.lo is not None and self.hi is not None else ""
        else:
            point = f"{self.p:.3f}"
            ival = f" [{self.lo:.3f}, {self.hi:.3f}]" if self.lo is not None and self.hi is not None else ""
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
    ok = _as_bool_array(successes, "successes")
    if len(clusters) != ok.size:
        raise ValueError(f"successes and clusters differ in length ({ok.size} vs {len(clusters)})")
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


def cluster_mcnemar(before: Sequence[bool], after: Sequence[bool], clusters: Sequence[Hashable]) -> dict[str, Any]:
    """McNemar test for paired outcomes that come in clusters (Durkalski et al., Stat Med 2003).

    For cluster j with n_j pairs, b_j (True -> False) and c_j (False -> True) discordant pairs,
    ``X2 = (sum_j (b_j - c_j) / n_j)^2 / sum_j ((b_j - c_j) / n_j)^2`` ~ chi-square(1). It makes no
    assumption about the within-cluster correlation; with one pair per cluster it reduces to the
    uncorrected McNemar chi-square (b - c)^2 / (b + c). Recommended when the clusters are few
    or of unequal size. (Same as ``durkalski.test`` in the R package clust.bin.pair.)

    Returns ``{"b", "c", "n", "clusters", "statistic", "p", "test"}`` (test "cluster_mcnemar");
    see ``durkalski`` for the statistic and when p is None.
    """
    x = _as_bool_array(before, "before")
    y = _as_bool_array(after, "after")
    if not (x.size == y.size == len(clusters)):
        raise ValueError(f"before, after and clusters differ in length ({x.size}, {y.size}, {len(clusters)})")
    b = int(np.count_nonzero(x & ~y))
    c = int(np.count_nonzero(~x & y))
    out: dict[str, Any] = {"b": b, "c": c, "n": int(x.size), "clusters": 0, "test": "cluster_mcnemar"}
    per = np.zeros(0)
    if x.size:
        codes = _cluster_codes(clusters)
        g = int(codes.max()) + 1
        out["clusters"] = g
        diff = (x & ~y).astype(np.float64) - (~x & y).astype(np.float64)
        per = np.bincount(codes, weights=diff, minlength=g) / np.bincount(codes, minlength=g)
    out.update(durkalski(per))
    return out


def durkalski(per_cluster: Sequence[float]) -> dict[str, Any]:
    """Durkalski's clustered McNemar statistic from each cluster's (b_j - c_j) / n_j:
    ``{"statistic", "p"}``. The test needs two clusters or more (with one, X2 is 1 whatever the
    data): p is None then. Statistic 0 and p 1.0 when no cluster has b_j != c_j."""
    d = np.asarray(per_cluster, dtype=np.float64)
    if d.size < 2:
        return {"statistic": None, "p": None}
    denom = float(np.sum(d**2))
    if denom == 0.0:
        return {"statistic": 0.0, "p": 1.0}
    stat = float(np.sum(d)) ** 2 / denom
    return {"statistic": stat, "p": float(scipy.stats.chi2.sf(stat, 1))}


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
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', not {alternative!r}")
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


def paired_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Mean paired difference mean(b - a) with a percentile bootstrap interval.

    ``a`` and ``b`` are per-unit values on the same units (e.g. clean and stressed correctness or
    scores per item), so resampling units keeps the pairing. The bootstrap gives the interval only:
    a p-value comes from an exact or clustered test (``paired_permutation_test``,
    ``mcnemar_exact``, ``cluster_mcnemar``), which holds at every sample size.

    Returns ``{"diff", "lo", "hi", "n"}``; diff is None when n == 0, lo/hi None when n < 2.
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
        return {"diff": None, "lo": None, "hi": None, "n": 0}
    diff = float(np.mean(d))
    if n < 2:
        return {"diff": diff, "lo": None, "hi": None, "n": n}
    if np.all(d == d[0]):
        return {"diff": diff, "lo": diff, "hi": diff, "n": n}
    res = _scipy_bootstrap(d, conf, n_resamples, seed, "percentile")
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return {"diff": diff, "lo": lo, "hi": hi, "n": n}


# Above this many nonzero clusters with non-integer differences, the sign-flip distribution is
# sampled instead of enumerated (2^16 sign patterns are enumerated exactly).
PERMUTATION_ENUMERATE = 16
PERMUTATION_RESAMPLES = 20000


def sign_flip_test(d_sum: Sequence[float], seed: int = 0) -> dict[str, Any]:
    """Two-sided paired permutation (sign-flip) test of a zero paired difference, from the
    per-cluster sums of the differences (one cluster per unit when pairs are independent).

    Under the null hypothesis A and B are exchangeable within a cluster, so each cluster's sum
    d_j is as likely to be +d_j as -d_j; the test statistic is T = sum_j d_j and
    p = P(|T*| >= |T|) over the 2^G sign patterns. With integer differences (score differences
    such as PCS on -1/0/1, counts of correct answers) the distribution is computed exactly by
    convolution at any G (``test`` "permutation_exact"); with a difference of +-1 per cluster this
    *is* the exact sign test, i.e. the exact McNemar test. Non-integer differences are enumerated
    exactly up to ``PERMUTATION_ENUMERATE`` nonzero clusters and sampled beyond
    (``PERMUTATION_RESAMPLES`` seeded draws, "permutation_sampled", p = (1 + count) / (1 + R)).

    Returns ``{"statistic", "p", "clusters", "test"}``; p is 1.0 when every d_j is 0 and None
    when there is no cluster.
    """
    d = _as_float_array(d_sum, "d_sum")
    out: dict[str, Any] = {"statistic": float(d.sum()) if d.size else 0.0, "p": None, "clusters": int(d.size), "test": "permutation_exact"}
    if d.size == 0:
        return out
    a = np.abs(d[d != 0])
    t = abs(float(d.sum()))
    if a.size == 0:
        out["p"] = 1.0
        return out
    tol = 1e-9 * max(1.0, float(a.sum()))
    if np.all(a == np.round(a)) and a.sum() <= 2_000_000:
        # S = the sum of the |d_j| that keep their sign, T = 2S - sum |d_j|: S is a sum over the
        # distinct values v of v * Binomial(m_v, 1/2), convolved value by value.
        values, counts = np.unique(a.astype(np.int64), return_counts=True)
        total = int((values * counts).sum())
        dist = np.ones(1)
        for v, m in zip(values.tolist(), counts.tolist()):
            part = np.zeros(m * v + 1)
            part[::v] = scipy.stats.binom.pmf(np.arange(m + 1), m, 0.5)
            big = dist.size * part.size > 10_000_000
            dist = scipy.signal.fftconvolve(dist, part) if big else np.convolve(dist, part)
        dist = np.clip(dist, 0.0, None)
        stat = np.abs(2.0 * np.arange(total + 1) - total)
        out["p"] = float(min(1.0, dist[stat >= t - tol].sum()))
        return out
    if a.size <= PERMUTATION_ENUMERATE:
        signs = 1 - 2 * ((np.arange(2**a.size)[:, None] >> np.arange(a.size)) & 1)
        stats_ = np.abs(signs @ a)
        out["p"] = float(np.mean(stats_ >= t - tol))
        return out
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, PERMUTATION_RESAMPLES, 1000):
        m = min(1000, PERMUTATION_RESAMPLES - start)
        signs = rng.integers(0, 2, size=(m, a.size)) * 2 - 1
        count += int(np.count_nonzero(np.abs(signs @ a) >= t - tol))
    out.update(p=min(1.0, (1 + count) / (1 + PERMUTATION_RESAMPLES)), test="permutation_sampled")
    return out


def paired_permutation_test(a: Sequence[float], b: Sequence[float], clusters: Sequence[Hashable] | None = None, seed: int = 0) -> dict[str, Any]:
    """The paired permutation (sign-flip) test of ``sign_flip_test`` on per-unit values a and b
    (B - A), with units grouped by ``clusters`` when one item gives several pairs (the signs then
    flip whole clusters). Returns ``{"n", "clusters", "statistic", "p", "test"}`` ("cluster_" is
    prefixed to the test's name when a cluster holds several pairs)."""
    xa = _as_float_array(a, "a")
    xb = _as_float_array(b, "b")
    if xa.size != xb.size:
        raise ValueError(f"a and b differ in length ({xa.size} vs {xb.size})")
    d = xb - xa
    if clusters is None:
        sums, g = d, int(d.size)
    else:
        if len(clusters) != d.size:
            raise ValueError(f"a and clusters differ in length ({d.size} vs {len(clusters)})")
        codes = _cluster_codes(clusters) if d.size else np.zeros(0, dtype=np.int64)
        g = int(codes.max()) + 1 if d.size else 0
        sums = np.bincount(codes, weights=d, minlength=g)
    out = sign_flip_test(sums, seed=seed)
    if g < d.size:
        out["test"] = "cluster_" + out["test"]
    return {"n": int(d.size), **out}


def _scipy_bootstrap(x: np.ndarray, conf: float, n_resamples: int, seed: int, method: str):
    with warnings.catch_warnings():
        # BCa on near-degenerate data warns and returns NaN limits; the caller sees the NaN.
        warnings.simplefilter("ignore", category=getattr(scipy.stats, "DegenerateDataWarning", RuntimeWarning))
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
    if arr.dtype.kind == "O" and all(isinstance(v, (bool, np.bool_)) or (_is_int(v) and v in (0, 1)) for v in arr):
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


def clustered_rate(
    successes: Sequence[bool], clusters: Sequence[Hashable], confidence: float = 0.95, n_resamples: int = CLUSTER_RESAMPLES, seed: int = 0
) -> Rate:
    """A pooled rate of rows grouped in clusters (items): the Wilson interval when every cluster
    holds one row, else the cluster-bootstrap interval of ``cluster_interval``, so several rows of
    one item are never counted as independent items."""
    ok = _as_bool_array(successes, "successes")
    if len(clusters) != ok.size:
        raise ValueError(f"successes and clusters differ in length ({ok.size} vs {len(clusters)})")
    rate = wilson(int(ok.sum()), int(ok.size), confidence)
    if ok.size == 0:
        return rate
    codes = _cluster_codes(clusters)
    g = int(codes.max()) + 1
    if g == ok.size:
        return rate
    succ = np.bincount(codes, weights=ok, minlength=g).astype(np.int64)
    lo, hi = cluster_interval(succ, np.bincount(codes, minlength=g), confidence, n_resamples, seed)
    return Rate(k=rate.k, n=rate.n, p=rate.p, lo=lo, hi=hi)


def paired_cluster_diff(
    d_sum: Sequence[float],
    size: Sequence[int],
    confidence: float = 0.95,
    n_resamples: int = CLUSTER_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired difference of pooled rates, B - A = sum(d_j) / sum(n_j), over clusters j with
    d_j = (B successes - A successes) and n_j pairs, with a cluster-bootstrap percentile interval.

    The bootstrap gives the interval only; the p-value comes from the exact or clustered test
    beside it (``mcnemar_exact``, ``cluster_mcnemar``, ``sign_flip_test``). With one pair per
    cluster the estimator *is* ``paired_bootstrap_diff``'s mean paired difference. Resampling is
    exact but cheap: clusters with equal (d_j, n_j) are exchangeable, so the draws per distinct
    pattern are Multinomial(G, pattern share), which gives the bootstrap distribution in
    O(patterns) per resample and bounded memory for any number of items.

    Returns ``{"diff", "lo", "hi", "n", "clusters"}``; diff None when n == 0, lo/hi None with
    fewer than two clusters."""
    d = np.asarray(d_sum, dtype=np.float64)
    m = np.asarray(size, dtype=np.float64)
    if d.size != m.size:
        raise ValueError(f"d_sum and size differ in length ({d.size} vs {m.size})")
    if np.any(m < 1):
        raise ValueError("every cluster needs at least one pair")
    g, n = int(d.size), int(m.sum())
    out: dict[str, Any] = {"diff": None, "lo": None, "hi": None, "n": n, "clusters": g}
    if g == 0:
        return out
    diff = float(d.sum() / m.sum())
    out["diff"] = diff
    if g < 2:
        return out
    pats, weights = _patterns(d, m)
    if len(pats) == 1 or np.allclose(pats[:, 0] / pats[:, 1], diff):
        out.update(lo=diff, hi=diff)
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
    out.update(lo=float(lo), hi=float(hi))
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


# --------------------------------------------------------------------------------------------
# Inter-rater agreement (clinician review): percent agreement, Cohen's and Fleiss' kappa,
# Gwet's AC1/AC2 and Krippendorff's alpha, each with a bootstrap interval over units
# --------------------------------------------------------------------------------------------
#
# Ratings are a units x raters table (rows: the rated things, columns: the raters); a missing
# rating is None, NaN or pd.NA. The Gwet-family coefficients follow Gwet (2014), Handbook of
# Inter-Rater Reliability, 4th ed., chapter 2 and 3 (the formulas of his irrCAC package, missing
# ratings included): percent agreement is averaged over units with two or more ratings, the
# category shares over units with at least one. Krippendorff's alpha is computed from the
# coincidence matrix of pairable values (units with two or more ratings), with his nominal,
# ordinal (rank-based on the pooled marginals), interval and ratio difference functions.
#
# Every coefficient here is a function of per-unit sums, so a bootstrap resample of units is a
# vector of multiplicities (how often each unit was drawn): all resamples are computed at once
# as matrix products. Intervals are percentile intervals of the resamples in which the
# coefficient is defined (a resample in which every rating falls in one category has no kappa).

AGREEMENT_COEFFICIENTS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "gwet_ac1", "gwet_ac2", "krippendorff_alpha")
AGREEMENT_WEIGHTS = ("identity", "linear", "quadratic", "ordinal")
KRIPPENDORFF_LEVELS = ("nominal", "ordinal", "interval", "ratio")

__all__ += [
    "AGREEMENT_COEFFICIENTS",
    "Agreement",
    "agreement",
    "agreement_weights",
    "cohen_kappa",
    "fleiss_kappa",
    "gwet_ac1",
    "gwet_ac2",
    "krippendorff_alpha",
    "percent_agreement",
]


@dataclass(frozen=True)
class Agreement:
    """One agreement coefficient with its bootstrap interval. ``value`` is None when the
    coefficient is undefined on the data (no unit with two ratings, or chance agreement of 1);
    ``lo``/``hi`` are None with fewer than two units or when too few resamples define it.
    ``pa``/``pe``: observed and chance agreement (for alpha: 1 - observed and expected
    disagreement's ratio terms, ``pa`` = 1 - D_o, ``pe`` = 1 - D_e)."""

    coefficient: str
    value: float | None
    lo: float | None
    hi: float | None
    units: int  # units that carry information (two ratings or more; for Cohen's kappa: both raters)
    ratings: int
    pa: float | None
    pe: float | None
    weights: str | None = None
    confidence: float = 0.95
    resamples: int = 0  # resamples in which the coefficient was defined
    reason: str | None = None  # why value is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "coefficient": self.coefficient,
            "value": self.value,
            "lo": self.lo,
            "hi": self.hi,
            "units": self.units,
            "ratings": self.ratings,
            "pa": self.pa,
            "pe": self.pe,
            "weights": self.weights,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "reason": self.reason,
        }

    def fmt(self, digits: int = 3) -> str:
        """``"0.775 [0.52, 0.95] (n=12)"``; ``"— (n=0)"`` when undefined."""
        if self.value is None:
            return f"— (n={self.units})"
        ival = f" [{self.lo:.{digits}f}, {self.hi:.{digits}f}]" if self.lo is not None and self.hi is not None else ""
        return f"{self.value:.{digits}f}{ival} (n={self.units})"


def _is_missing(v: Any) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(isinstance(v, (float, np.floating)) and math.isnan(v))
    except TypeError:  # pragma: no cover - exotic scalars
        return False


def _norm_cat(v: Any) -> Any:
    """A rating as a category key: numbers compare by value (1 == 1.0), numpy scalars unwrapped."""
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _rating_rows(ratings: Any) -> list[list[Any]]:
    if isinstance(ratings, pd.DataFrame):
        rows = ratings.astype(object).values.tolist()
    else:
        arr = ratings.tolist() if isinstance(ratings, np.ndarray) else ratings
        rows = [list(r) for r in arr]
    if rows and len({len(r) for r in rows}) != 1:
        raise ValueError("ratings must be a units x raters table (every row the same length)")
    return rows


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, float(v)) if isinstance(v, (int, float)) else (1, str(v))


def _categories_of(rows: list[list[Any]], categories: Sequence[Any] | None) -> tuple[Any, ...]:
    seen = {_norm_cat(v) for r in rows for v in r if not _is_missing(v)}
    if categories is None:
        return tuple(sorted(seen, key=_sort_key))
    cats = tuple(_norm_cat(c) for c in categories)
    if len(set(cats)) != len(cats):
        raise ValueError(f"categories repeat a value: {list(categories)!r}")
    unknown = seen - set(cats)
    if unknown:
        raise ValueError(f"ratings outside the categories {list(cats)!r}: {sorted(map(str, unknown))}")
    return cats


def _codes(ratings: Any, categories: Sequence[Any] | None) -> tuple[np.ndarray, tuple[Any, ...]]:
    """(units x raters integer codes, -1 for a missing rating; the categories in order)."""
    rows = _rating_rows(ratings)
    cats = _categories_of(rows, categories)
    index = {c: i for i, c in enumerate(cats)}
    codes = np.array([[-1 if _is_missing(v) else index[_norm_cat(v)] for v in r] for r in rows], dtype=np.int64)
    return codes.reshape(len(rows), len(rows[0]) if rows else 0), cats


def _count_matrix(codes: np.ndarray, q: int) -> np.ndarray:
    """units x categories: how many raters put each unit in each category."""
    counts = np.zeros((codes.shape[0], q), dtype=np.float64)
    for j in range(codes.shape[1]):
        col = codes[:, j]
        ok = col >= 0
        np.add.at(counts, (np.nonzero(ok)[0], col[ok]), 1.0)
    return counts


def _category_values(cats: Sequence[Any]) -> np.ndarray:
    """Numeric positions of the categories: their values when all are numbers, else ranks 1..q."""
    if cats and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in cats):
        return np.asarray(cats, dtype=np.float64)
    return np.arange(1, len(cats) + 1, dtype=np.float64)


def agreement_weights(categories: Sequence[Any], kind: str | None = "identity") -> np.ndarray:
    """Gwet's agreement weights (q x q, 1 on the diagonal) for ordered categories: ``identity``
    (unweighted), ``linear`` 1 - |k - l| / (max - min), ``quadratic`` 1 - (k - l)^2 / (max - min)^2
    (on the category values when all are numbers, else on their ranks) and ``ordinal`` (ranks:
    1 - C(|k - l| + 1, 2) / max)."""
    q = len(categories)
    kind = (kind or "identity").lower()
    if kind in ("identity", "unweighted", "nominal"):
        return np.eye(q)
    if kind not in AGREEMENT_WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(AGREEMENT_WEIGHTS)}, not {kind!r}")
    if q < 2:
        return np.ones((q, q))
    if kind == "ordinal":
        ranks = np.arange(1, q + 1, dtype=np.float64)
        nkl = np.abs(ranks[:, None] - ranks[None, :]) + 1
        m = nkl * (nkl - 1) / 2
        return 1.0 - m / m.max()
    v = _category_values(categories)
    span = float(v.max() - v.min())
    d = np.abs(v[:, None] - v[None, :]) / span
    return 1.0 - (d if kind == "linear" else d**2)


def _weights_matrix(cats: Sequence[Any], weights: str | np.ndarray | None) -> tuple[np.ndarray, str]:
    if isinstance(weights, np.ndarray) or (weights is not None and not isinstance(weights, str)):
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(cats), len(cats)):
            raise ValueError(f"a weight matrix must be {len(cats)} x {len(cats)} (one row per category), got {w.shape}")
        return w, "custom"
    kind = (weights or "identity").lower()
    return agreement_weights(cats, kind), ("identity" if kind in ("unweighted", "nominal") else kind)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    out[~np.isfinite(out) | (np.abs(den) < 1e-12)] = np.nan
    return out


class _Gwet:
    """Percent agreement, Fleiss' kappa and Gwet's AC1/AC2 from a count matrix, for any
    multiplicities of the units (rows of F: one resample each)."""

    def __init__(self, counts: np.ndarray, w: np.ndarray):
        self.q = counts.shape[1]
        self.w = w
        r = counts.sum(axis=1)
        self.m2 = (r >= 2).astype(np.float64)
        self.m1 = (r >= 1).astype(np.float64)
        star = counts @ w.T
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (counts * (star - 1.0)).sum(axis=1) / (r * (r - 1.0))
            shares = counts / r[:, None]
        self.a = np.where(r >= 2, a, 0.0)
        self.shares = np.where((r >= 1)[:, None], shares, 0.0)

    def pa(self, f: np.ndarray) -> np.ndarray:
        return _ratio(f @ (self.a * self.m2), f @ self.m2)

    def pi(self, f: np.ndarray) -> np.ndarray:
        return (f @ self.shares) / np.maximum(f @ self.m1, 1e-300)[:, None]

    def pe(self, f: np.ndarray, kind: str) -> np.ndarray:
        pi = self.pi(f)
        if kind == "fleiss":
            return np.einsum("rk,kl,rl->r", pi, self.w, pi)
        if kind == "gwet":
            if self.q < 2:
                return np.zeros(f.shape[0])
            return self.w.sum() / (self.q * (self.q - 1)) * (pi * (1.0 - pi)).sum(axis=1)
        return np.zeros(f.shape[0])  # percent agreement


def _chance_corrected(pa: np.ndarray, pe: np.ndarray) -> np.ndarray:
    out = _ratio(pa - pe, 1.0 - pe)
    out[np.isnan(pa)] = np.nan
    return out


def _krippendorff_delta(cats: Sequence[Any], level: str, nc: np.ndarray) -> np.ndarray:
    """Squared differences delta^2 (R x q x q; nc: R x q pooled category totals)."""
    q = len(cats)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(q), (nc.shape[0], q, q))
    if level == "ordinal":
        cum = np.cumsum(nc, axis=1)
        lo = np.minimum(np.arange(q)[:, None], np.arange(q)[None, :])
        hi = np.maximum(np.arange(q)[:, None], np.arange(q)[None, :])
        between = cum[:, hi] - cum[:, lo] + nc[:, lo]  # sum of n_g for g from lo to hi
        d = between - (nc[:, :, None] + nc[:, None, :]) / 2.0
        return d**2
    v = _category_values(cats)
    if not (cats and all(isinstance(c, (int, float)) for c in cats)):
        raise ValueError(f"Krippendorff's alpha at the {level} level needs numeric ratings")
    if level == "interval":
        d = (v[:, None] - v[None, :]) ** 2
    else:  # ratio
        with np.errstate(divide="ignore", invalid="ignore"):
            d = ((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2
        d = np.nan_to_num(d)
    return np.broadcast_to(d, (nc.shape[0], q, q))


class _Krippendorff:
    def __init__(self, counts: np.ndarray, cats: Sequence[Any], level: str):
        r = counts.sum(axis=1)
        keep = r >= 2
        c = counts[keep]
        q = counts.shape[1]
        per = (c[:, :, None] * c[:, None, :] - np.einsum("uk,kl->ukl", c, np.eye(q))) / (r[keep] - 1.0)[:, None, None]
        self.o = np.zeros((counts.shape[0], q * q))
        if per.size:
            self.o[keep] = per.reshape(-1, q * q)
        self.q, self.cats, self.level = q, cats, level

    def parts(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(alpha, 1 - D_o, 1 - D_e) per row of f."""
        q = self.q
        o = (f @ self.o).reshape(-1, q, q)
        nc = o.sum(axis=2)
        n = nc.sum(axis=1)
        delta = _krippendorff_delta(self.cats, self.level, nc)
        with np.errstate(divide="ignore", invalid="ignore"):
            do = (o * delta).sum(axis=(1, 2)) / n
            de = (nc[:, :, None] * nc[:, None, :] * delta).sum(axis=(1, 2)) / (n * (n - 1.0))
        alpha = 1.0 - _ratio(do, de)
        bad = ~np.isfinite(do) | (n < 2)
        alpha[bad] = np.nan
        return alpha, 1.0 - do, 1.0 - de


def _cohen_parts(codes: np.ndarray, q: int, w: np.ndarray):
    """Cohen's kappa as a function of the multiplicities of the units both raters rated."""
    both = (codes[:, 0] >= 0) & (codes[:, 1] >= 0)
    cells = np.zeros((codes.shape[0], q * q))
    idx = np.nonzero(both)[0]
    cells[idx, codes[idx, 0] * q + codes[idx, 1]] = 1.0

    def fn(f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = f @ cells
        tot = t.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = (t / tot[:, None]).reshape(-1, q, q)
        pa = (p * w).sum(axis=(1, 2))
        pe = np.einsum("rk,kl,rl->r", p.sum(axis=2), w, p.sum(axis=1))
        pa[tot == 0] = np.nan
        return _chance_corrected(pa, pe), pa, pe

    return fn


def _coefficient(ratings: Any, coefficient: str, weights: str | np.ndarray | None, level: str | None, categories: Sequence[Any] | None):
    """(function of multiplicities -> (value, pa, pe), units kept, informative units, ratings,
    weights name)."""
    if coefficient not in AGREEMENT_COEFFICIENTS:
        raise ValueError(f"coefficient must be one of {', '.join(AGREEMENT_COEFFICIENTS)}, not {coefficient!r}")
    codes, cats = _codes(ratings, categories)
    q = len(cats)
    if coefficient == "krippendorff_alpha":
        lvl = (level or "nominal").lower()
        if lvl not in KRIPPENDORFF_LEVELS:
            raise ValueError(f"level must be one of {', '.join(KRIPPENDORFF_LEVELS)}, not {level!r}")
        counts = _count_matrix(codes, q)
        keep = counts.sum(axis=1) >= 2
        k = _Krippendorff(counts[keep], cats, lvl)
        return k.parts, int(keep.sum()), int(keep.sum()), int(counts[keep].sum()), lvl
    if coefficient == "gwet_ac2" and weights is None:
        weights = "quadratic"
    if coefficient == "gwet_ac1":
        weights = None
    w, wname = _weights_matrix(cats, weights)
    if coefficient == "cohen_kappa":
        if not codes.size:
            codes = codes.reshape(0, 2)
        if codes.shape[1] != 2:
            raise ValueError(f"Cohen's kappa takes two raters (two columns), got {codes.shape[1]}")
        both = (codes[:, 0] >= 0) & (codes[:, 1] >= 0)
        fn = _cohen_parts(codes[both], q, w)
        return fn, int(both.sum()), int(both.sum()), int(2 * both.sum()), wname
    counts = _count_matrix(codes, q)
    r = counts.sum(axis=1)
    keep = r >= 1
    g = _Gwet(counts[keep], w)
    kind = {"percent_agreement": "none", "fleiss_kappa": "fleiss"}.get(coefficient, "gwet")

    def fn2(f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pa, pe = g.pa(f), g.pe(f, kind)
        value = pa.copy() if kind == "none" else _chance_corrected(pa, pe)
        return value, pa, pe

    return fn2, int(keep.sum()), int((r >= 2).sum()), int(r.sum()), wname


def _point(ratings: Any, coefficient: str, weights: Any = None, level: str | None = None, categories: Sequence[Any] | None = None) -> float | None:
    fn, n_keep, informative, _, _ = _coefficient(ratings, coefficient, weights, level, categories)
    if informative == 0:
        return None
    value = float(fn(np.ones((1, n_keep)))[0][0])
    return value if math.isfinite(value) else None


def percent_agreement(ratings: Any, *, weights: str | np.ndarray | None = None, categories: Sequence[Any] | None = None) -> float | None:
    """Share of agreeing rater pairs, averaged over units with two or more ratings (Gwet's p_a;
    weighted with ``weights``). None when no unit has two ratings."""
    return _point(ratings, "percent_agreement", weights, None, categories)


def cohen_kappa(
    rater_a: Sequence[Any], rater_b: Sequence[Any], *, weights: str | np.ndarray | None = None, categories: Sequence[Any] | None = None
) -> float | None:
    """Cohen's kappa of two raters on the units both rated (weighted with ``weights``: linear,
    quadratic, ordinal or a matrix). None when undefined (no shared unit, or chance agreement 1)."""
    a, b = list(rater_a), list(rater_b)
    if len(a) != len(b):
        raise ValueError(f"the two raters rate different numbers of units ({len(a)} vs {len(b)})")
    return _point([[x, y] for x, y in zip(a, b)], "cohen_kappa", weights, None, categories)


def fleiss_kappa(ratings: Any, *, weights: str | np.ndarray | None = None, categories: Sequence[Any] | None = None) -> float | None:
    """Fleiss' kappa for any number of raters, missing ratings allowed (Gwet's generalisation)."""
    return _point(ratings, "fleiss_kappa", weights, None, categories)


def gwet_ac1(ratings: Any, *, categories: Sequence[Any] | None = None) -> float | None:
    """Gwet's AC1 (unweighted), any number of raters, missing ratings allowed."""
    return _point(ratings, "gwet_ac1", None, None, categories)


def gwet_ac2(ratings: Any, *, weights: str | np.ndarray = "quadratic", categories: Sequence[Any] | None = None) -> float | None:
    """Gwet's AC2: AC1 with agreement weights for ordered categories (ordinal, linear, quadratic
    or a matrix). Pass ``categories`` to count scale points nobody used."""
    return _point(ratings, "gwet_ac2", weights, None, categories)


def krippendorff_alpha(ratings: Any, *, level: str = "nominal", categories: Sequence[Any] | None = None) -> float | None:
    """Krippendorff's alpha (nominal, ordinal, interval or ratio) from the coincidence matrix of
    pairable values; units with fewer than two ratings carry no information."""
    return _point(ratings, "krippendorff_alpha", None, level, categories)


def agreement(
    ratings: Any,
    coefficient: str,
    *,
    weights: str | np.ndarray | None = None,
    level: str | None = None,
    categories: Sequence[Any] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Agreement:
    """One coefficient (``AGREEMENT_COEFFICIENTS``) with a percentile bootstrap interval that
    resamples units (rows) with replacement. ``weights`` for the Gwet family, Fleiss' and Cohen's
    kappa (AC2 defaults to quadratic), ``level`` for Krippendorff's alpha. Cohen's kappa takes a
    two-column table (units rated by both)."""
    conf = _check_confidence(confidence)
    n_resamples = _check_resamples(n_resamples)
    fn, n_keep, informative, n_ratings, wname = _coefficient(ratings, coefficient, weights, level, categories)
    base = {"coefficient": coefficient, "units": informative, "ratings": n_ratings, "weights": wname, "confidence": conf}
    if informative == 0:
        rated = bool((_codes(ratings, categories)[0] >= 0).any())
        why = "no ratings" if not rated else ("no unit rated by both raters" if coefficient == "cohen_kappa" else "no unit has two ratings")
        return Agreement(value=None, lo=None, hi=None, pa=None, pe=None, reason=why, **base)
    value, pa, pe = (float(x[0]) for x in fn(np.ones((1, n_keep))))

    def clean(x: float) -> float | None:
        return x if math.isfinite(x) else None

    if not math.isfinite(value) or informative < 2:
        why = None if math.isfinite(value) else "undefined on these ratings (chance agreement is 1: one category throughout)"
        return Agreement(value=clean(value), lo=None, hi=None, pa=clean(pa), pe=clean(pe), reason=why, **base)
    rng = np.random.default_rng(seed)
    block = max(1, 2_000_000 // n_keep)
    parts = []
    for start in range(0, n_resamples, block):
        m = min(block, n_resamples - start)
        f = rng.multinomial(n_keep, np.full(n_keep, 1.0 / n_keep), size=m).astype(np.float64)
        parts.append(fn(f)[0])
    dist = np.concatenate(parts)
    dist = dist[np.isfinite(dist)]
    lo = hi = None
    if dist.size >= max(10, n_resamples // 2):
        alpha = 1.0 - conf
        q = np.quantile(dist, [alpha / 2, 1 - alpha / 2])
        lo, hi = min(float(q[0]), value), max(float(q[1]), value)
    return Agreement(value=value, lo=lo, hi=hi, pa=clean(pa), pe=clean(pe), resamples=int(dist.size), **base)
