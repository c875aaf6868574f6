"""Paired and two-group tests (exact McNemar, Durkalski's clustered McNemar, Fisher's exact test,
the exact paired permutation / sign test, Holm's correction) and the bootstraps of means and
paired differences, which give intervals, never a p-value."""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any, Literal, TypedDict

import numpy as np
import scipy.stats
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar

from .checks import as_bool_array, as_float_array, check_confidence, check_counts, check_nonneg_int, check_resamples, cluster_codes
from .rates import CLUSTER_RESAMPLES


class HypothesisTest(TypedDict, total=False):
    """A test's result, as every test here gives it (each gives the keys its docstring names): the
    discordant pairs b and c of n pairs, the clusters, the statistic, p and the test's name."""

    b: int
    c: int
    n: int
    clusters: int
    statistic: float | None
    p: float | None
    test: str


class DurkalskiResult(TypedDict):
    statistic: float | None
    p: float | None


class MeanInterval(TypedDict):
    mean: float | None
    lo: float | None
    hi: float | None
    n: int


class DiffInterval(TypedDict, total=False):
    """A paired difference with its interval (``clusters`` from ``paired_cluster_diff``)."""

    diff: float | None
    lo: float | None
    hi: float | None
    n: int
    clusters: int


__all__ = [
    "PERMUTATION_ENUMERATE",
    "PERMUTATION_RESAMPLES",
    "bootstrap_mean",
    "cluster_mcnemar",
    "durkalski",
    "fisher_one_sided",
    "holm",
    "mcnemar_exact",
    "mcnemar_from_pairs",
    "paired_bootstrap_diff",
    "paired_cluster_diff",
    "paired_permutation_test",
    "sign_flip_test",
]

# scipy >= 1.15 takes `rng`; older versions (the project allows scipy >= 1.11) take `random_state`.
_BOOTSTRAP_RNG_KW = "rng" if "rng" in inspect.signature(scipy.stats.bootstrap).parameters else "random_state"


# --------------------------------------------------------------------------------------------
# Paired and two-group tests
# --------------------------------------------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts.

    ``b`` = pairs correct -> wrong, ``c`` = pairs wrong -> correct. The exact (conditional) test is
    the binomial test of b out of b + c at 1/2: p = min(1, 2 * P[X <= min(b, c)]), as statsmodels'
    ``mcnemar(exact=True)`` and R's ``binom.test`` compute it. 1.0 when b + c == 0.
    """
    b, c = check_nonneg_int(b, "b"), check_nonneg_int(c, "c")
    if b + c == 0:
        return 1.0
    return float(_sm_mcnemar([[0, b], [c, 0]], exact=True).pvalue)


def mcnemar_from_pairs(before: Sequence[bool] | np.ndarray, after: Sequence[bool] | np.ndarray) -> HypothesisTest:
    """Exact McNemar test on paired outcomes (e.g. clean-correct vs stressed-correct per item).

    Returns ``{"b", "c", "n", "p"}`` where b counts True -> False (correct -> wrong), c counts
    False -> True, n is the number of pairs and p the two-sided exact p-value.
    """
    x = as_bool_array(before, "before")
    y = as_bool_array(after, "after")
    if x.size != y.size:
        raise ValueError(f"before and after differ in length ({x.size} vs {y.size})")
    b = int(np.count_nonzero(x & ~y))
    c = int(np.count_nonzero(~x & y))
    return {"b": b, "c": c, "n": int(x.size), "p": mcnemar_exact(b, c)}


def cluster_mcnemar(before: Sequence[bool] | np.ndarray, after: Sequence[bool] | np.ndarray, clusters: Sequence[Hashable] | np.ndarray) -> HypothesisTest:
    """McNemar test for paired outcomes that come in clusters (Durkalski et al., Stat Med 2003).

    For cluster j with n_j pairs, b_j (True -> False) and c_j (False -> True) discordant pairs,
    ``X2 = (sum_j (b_j - c_j) / n_j)^2 / sum_j ((b_j - c_j) / n_j)^2`` ~ chi-square(1). It makes no
    assumption about the within-cluster correlation; with one pair per cluster it reduces to the
    uncorrected McNemar chi-square (b - c)^2 / (b + c). Recommended when the clusters are few
    or of unequal size. (Same as ``durkalski.test`` in the R package clust.bin.pair.)

    Returns ``{"b", "c", "n", "clusters", "statistic", "p", "test"}`` (test "cluster_mcnemar");
    see ``durkalski`` for the statistic and when p is None.
    """
    x = as_bool_array(before, "before")
    y = as_bool_array(after, "after")
    if not (x.size == y.size == len(clusters)):
        raise ValueError(f"before, after and clusters differ in length ({x.size}, {y.size}, {len(clusters)})")
    b = int(np.count_nonzero(x & ~y))
    c = int(np.count_nonzero(~x & y))
    g, per = 0, np.zeros(0)
    if x.size:
        codes = cluster_codes(clusters)
        g = int(codes.max()) + 1
        diff = (x & ~y).astype(np.float64) - (~x & y).astype(np.float64)
        per = np.bincount(codes, weights=diff, minlength=g) / np.bincount(codes, minlength=g)
    test = durkalski(per)
    return {"b": b, "c": c, "n": int(x.size), "clusters": g, "test": "cluster_mcnemar", "statistic": test["statistic"], "p": test["p"]}


def several_pairs(pairs_per_cluster: Sequence[int] | np.ndarray) -> bool:
    """The rule that picks the paired test: Durkalski's clustered McNemar only where some cluster
    (an item) gives several pairs; with one pair per cluster the exact McNemar (Durkalski's
    statistic would be the uncorrected asymptotic McNemar then: b=0, c=2 gives 0.157, exact 0.5)."""
    return bool(len(pairs_per_cluster)) and int(np.max(np.asarray(pairs_per_cluster))) > 1


def paired_mcnemar(before: Sequence[bool] | np.ndarray, after: Sequence[bool] | np.ndarray, clusters: Sequence[Hashable]) -> HypothesisTest:
    """The paired test of clean-vs-stressed outcomes under the rule of ``several_pairs``: the
    exact McNemar (test "mcnemar_exact", with ``clusters``) when every cluster gives one pair,
    else ``cluster_mcnemar``. Returns ``{"b", "c", "n", "clusters", "p", "test"}`` (and the
    clustered test's statistic)."""
    if len(clusters) != len(before):
        raise ValueError(f"before and clusters differ in length ({len(before)}, {len(clusters)})")
    codes = cluster_codes(clusters) if len(clusters) else np.zeros(0, dtype=np.int64)
    if several_pairs(np.bincount(codes)):
        return cluster_mcnemar(before, after, clusters)
    exact = mcnemar_from_pairs(before, after)
    return {"b": exact["b"], "c": exact["c"], "n": exact["n"], "p": exact["p"], "clusters": int(codes.size), "test": "mcnemar_exact"}


def durkalski(per_cluster: Sequence[float] | np.ndarray) -> DurkalskiResult:
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


def binomial_test(k: int, n: int, p: float = 0.5, alternative: Literal["greater", "less", "two-sided"] = "greater") -> float | None:
    """The exact binomial test of k successes in n trials against success probability p
    (``scipy.stats.binomtest``); "greater": the chance of k or more. None when n == 0."""
    k, n = check_counts(k, n)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be strictly between 0 and 1, not {p}")
    if n == 0:
        return None
    return float(scipy.stats.binomtest(k, n, p, alternative=alternative).pvalue)


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
    a_k, a_n = check_counts(a_k, a_n, "a_k", "a_n")
    b_k, b_n = check_counts(b_k, b_n, "b_k", "b_n")
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', not {alternative!r}")
    res = scipy.stats.fisher_exact(np.array([[a_k, a_n - a_k], [b_k, b_n - b_k]]), alternative=alternative)
    return {"odds_ratio": float(res.statistic), "p": float(res.pvalue)}


def holm(pvalues: Sequence[float | None]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order: the i-th smallest of m times (m - i + 1),
    made non-decreasing in that order, capped at 1 (statsmodels ``multipletests(method="holm")``'s
    arithmetic, here without the full garbage collection that function runs on every call).

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
        p = arr[present]
        order = np.argsort(p)
        adjusted = np.empty_like(p)
        adjusted[order] = np.minimum(np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)), 1.0)
        out[present] = adjusted
    return [float(v) for v in out]


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


def bootstrap_mean(
    values: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    method: Literal["percentile", "bca", "basic"] = "percentile",
) -> MeanInterval:
    """Mean with a bootstrap interval (``scipy.stats.bootstrap``), e.g. PCS on -1/0/1 scores.

    Returns ``{"mean", "lo", "hi", "n"}``; mean is None when n == 0, lo/hi are None when n < 2.
    Constant data gives lo == hi == mean. If BCa yields no finite limits (near-degenerate data),
    the percentile limits of the same resamples are returned instead.
    """
    x = as_float_array(values, "values")
    conf = check_confidence(confidence)
    n_resamples = check_resamples(n_resamples)
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
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> DiffInterval:
    """Mean paired difference mean(b - a) with a percentile bootstrap interval.

    ``a`` and ``b`` are per-unit values on the same units (e.g. clean and stressed correctness or
    scores per item), so resampling units keeps the pairing. The bootstrap gives the interval only:
    a p-value comes from an exact or clustered test (``paired_permutation_test``,
    ``mcnemar_exact``, ``cluster_mcnemar``), which holds at every sample size.

    Returns ``{"diff", "lo", "hi", "n"}``; diff is None when n == 0, lo/hi None when n < 2.
    """
    xa = as_float_array(a, "a")
    xb = as_float_array(b, "b")
    if xa.size != xb.size:
        raise ValueError(f"a and b differ in length ({xa.size} vs {xb.size})")
    conf = check_confidence(confidence)
    n_resamples = check_resamples(n_resamples)
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


def sign_flip_test(d_sum: Sequence[float], seed: int = 0) -> HypothesisTest:
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
    d = as_float_array(d_sum, "d_sum")
    out: HypothesisTest = {"statistic": float(d.sum()) if d.size else 0.0, "p": None, "clusters": int(d.size), "test": "permutation_exact"}
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
            if dist.size * part.size > 10_000_000:
                from scipy.signal import fftconvolve  # imported only here: 0.06 s no other test needs

                dist = fftconvolve(dist, part)
            else:
                dist = np.convolve(dist, part)
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
    out["p"], out["test"] = min(1.0, (1 + count) / (1 + PERMUTATION_RESAMPLES)), "permutation_sampled"
    return out


def paired_permutation_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, clusters: Sequence[Hashable] | np.ndarray | None = None, seed: int = 0
) -> HypothesisTest:
    """The paired permutation (sign-flip) test of ``sign_flip_test`` on per-unit values a and b
    (B - A), with units grouped by ``clusters`` when one item gives several pairs (the signs then
    flip whole clusters). Returns ``{"n", "clusters", "statistic", "p", "test"}`` ("cluster_" is
    prefixed to the test's name when a cluster holds several pairs)."""
    xa = as_float_array(a, "a")
    xb = as_float_array(b, "b")
    if xa.size != xb.size:
        raise ValueError(f"a and b differ in length ({xa.size} vs {xb.size})")
    d = xb - xa
    if clusters is None:
        sums, g = d, int(d.size)
    else:
        if len(clusters) != d.size:
            raise ValueError(f"a and clusters differ in length ({d.size} vs {len(clusters)})")
        codes = cluster_codes(clusters) if d.size else np.zeros(0, dtype=np.int64)
        g = int(codes.max()) + 1 if d.size else 0
        sums = np.bincount(codes, weights=d, minlength=g)
    out = sign_flip_test(sums, seed=seed)
    if g < d.size:
        out["test"] = "cluster_" + out["test"]
    res: HypothesisTest = {"n": int(d.size)}
    res.update(out)
    return res


#: the most resampled values one vectorised batch of a bootstrap holds (memory O(batch * n): 32 MiB
#: of float64 and as much of indices), so a bootstrap over 100,000 items does not take gigabytes
BOOTSTRAP_BATCH_VALUES = 4_000_000


def _scipy_bootstrap(x: np.ndarray, conf: float, n_resamples: int, seed: int, method: str):
    with warnings.catch_warnings():
        # BCa on near-degenerate data warns and returns NaN limits; the caller sees the NaN.
        warnings.simplefilter("ignore", category=getattr(scipy.stats, "DegenerateDataWarning", RuntimeWarning))
        # the generator's keyword is the installed scipy's (rng or random_state); `method` is one of
        # scipy's names, passed through as the caller gave it
        varying: dict[str, Any] = {_BOOTSTRAP_RNG_KW: np.random.default_rng(seed), "method": method}
        return scipy.stats.bootstrap(
            (x,),
            np.mean,
            n_resamples=n_resamples,
            confidence_level=conf,
            vectorized=True,
            batch=max(1, min(n_resamples, BOOTSTRAP_BATCH_VALUES // max(1, x.size))),
            **varying,
        )


def paired_cluster_diff(
    d_sum: Sequence[float] | np.ndarray,
    size: Sequence[int] | np.ndarray,
    confidence: float = 0.95,
    n_resamples: int = CLUSTER_RESAMPLES,
    seed: int = 0,
) -> DiffInterval:
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
    out: DiffInterval = {"diff": None, "lo": None, "hi": None, "n": n, "clusters": g}
    if g == 0:
        return out
    diff = float(d.sum() / m.sum())
    out["diff"] = diff
    if g < 2:
        return out
    pats, weights = _patterns(d, m)
    if len(pats) == 1 or np.allclose(pats[:, 0] / pats[:, 1], diff):
        out["lo"], out["hi"] = diff, diff
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
    out["lo"], out["hi"] = float(lo), float(hi)
    return out


def _patterns(d: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (d, m) rows and their counts."""
    if np.all(d == np.round(d)) and d.size and np.abs(d).max() < 2**20 and m.max() < 2**20:
        key = (d.astype(np.int64) + 2**20) * 2**21 + m.astype(np.int64)
        u, counts = np.unique(key, return_counts=True)
        return np.stack([(u // 2**21 - 2**20).astype(np.float64), (u % 2**21).astype(np.float64)], axis=1), counts
    return np.unique(np.stack([d, m], axis=1), axis=0, return_counts=True)
