"""Tests for medresilience.stats against known reference values.

References used:
- Newcombe RG (1998) "Two-sided confidence intervals for the single proportion: comparison of
  seven methods", Stat Med 17:857-872, Table I, method 3 (Wilson score, no continuity correction).
- Armitage & Berry (1994, p. 127) culture-media example, b=12, c=2: exact McNemar p = 0.0129
  (as reported by StatsDirect after Liddell 1983).
- Fisher's tea-tasting table [[3, 1], [1, 3]]: one-sided p = 17/70 = 0.2429 (R ?fisher.test),
  two-sided p = 34/70 = 0.4857.
- Holm (1979) step-down, worked by hand; R ``p.adjust(c(.01,.02,.03,.04,.05), "holm")``.
- Independent computations in the test: the closed-form Wilson formula, exact binomial test
  (scipy.stats.binomtest), the hypergeometric tail (scipy.stats.hypergeom), the uncorrected
  McNemar chi-square, Student-t intervals / paired t-test p-values, and the cluster-robust
  standard error of a mean (statsmodels OLS with cov_type="cluster").
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import scipy.stats as st
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from medresilience import stats
from medresilience.stats import (
    Rate,
    bootstrap_mean,
    cluster_bootstrap_rate,
    cluster_mcnemar,
    fisher_one_sided,
    holm,
    mcnemar_exact,
    mcnemar_from_pairs,
    paired_bootstrap_diff,
    rate_from_bools,
    wilson,
)

Z95 = st.norm.ppf(0.975)


# ------------------------------------------------------------------------------------ Rate


def test_rate_fmt_matches_documented_examples():
    r = Rate(k=178, n=250, p=0.712, lo=0.650, hi=0.768)
    assert r.fmt() == "71.2% [65.0, 76.8] (n=250)"
    assert r.fmt(pct=False) == "0.712 [0.650, 0.768] (n=250)"
    assert Rate(k=0, n=0, p=None, lo=None, hi=None).fmt() == "— (n=0)"
    assert wilson(0, 0).fmt(pct=False) == "— (n=0)"


def test_rate_as_dict_and_frozen():
    r = wilson(81, 263)
    d = r.as_dict()
    assert list(d) == ["k", "n", "p", "lo", "hi"]
    assert d["k"] == 81 and d["n"] == 263 and d["p"] == pytest.approx(81 / 263)
    assert all(type(d[key]) is float for key in ("p", "lo", "hi"))  # JSON-ready, no numpy scalars
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.k = 3  # type: ignore[misc]


# ------------------------------------------------------------------------------------ Wilson


@pytest.mark.parametrize(
    "k, n, lo, hi",
    [  # Newcombe (1998), Table I, method 3 (Wilson score interval)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe_1998(k, n, lo, hi):
    r = wilson(k, n)
    assert r.k == k and r.n == n
    assert r.p == pytest.approx(k / n)
    assert r.lo == pytest.approx(lo, abs=6e-5)
    assert r.hi == pytest.approx(hi, abs=6e-5)


def _wilson_closed_form(k, n, conf):
    z = st.norm.ppf(1 - (1 - conf) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("conf", [0.90, 0.95, 0.99])
@pytest.mark.parametrize("k, n", [(1, 1), (3, 10), (50, 100), (99, 100), (7, 1000), (2, 3)])
def test_wilson_equals_closed_form_score_interval(k, n, conf):
    lo, hi = _wilson_closed_form(k, n, conf)
    r = wilson(k, n, conf)
    assert r.lo == pytest.approx(max(lo, 0.0), abs=1e-12)
    assert r.hi == pytest.approx(min(hi, 1.0), abs=1e-12)


def test_wilson_edge_cases():
    empty = wilson(0, 0)
    assert (empty.k, empty.n, empty.p, empty.lo, empty.hi) == (0, 0, None, None, None)

    none_right = wilson(0, 20)
    assert none_right.p == 0.0 and none_right.lo == 0.0 and 0 < none_right.hi < 1
    # upper limit for k = 0 is z^2 / (n + z^2)
    assert none_right.hi == pytest.approx(Z95**2 / (20 + Z95**2), abs=1e-12)

    all_right = wilson(20, 20)
    assert all_right.p == 1.0 and all_right.hi == 1.0
    assert all_right.lo == pytest.approx(1 - none_right.hi, abs=1e-12)  # symmetry

    for k, n in [(0, 1), (1, 1), (5, 7), (0, 5000), (5000, 5000)]:
        r = wilson(k, n)
        assert 0.0 <= r.lo <= r.p <= r.hi <= 1.0
    # wider at higher confidence
    assert wilson(30, 100, 0.99).hi > wilson(30, 100, 0.95).hi > wilson(30, 100, 0.80).hi


@pytest.mark.parametrize("args", [(5, 3), (-1, 3), (1, -2), (1.5, 3), (True, 3), ("1", 3)])
def test_wilson_rejects_bad_counts(args):
    with pytest.raises(ValueError):
        wilson(*args)


@pytest.mark.parametrize("conf", [0, 1, 1.5, -0.1])
def test_wilson_rejects_bad_confidence(conf):
    with pytest.raises(ValueError):
        wilson(1, 2, conf)


def test_rate_from_bools():
    vals = [True] * 81 + [False] * 182
    assert rate_from_bools(vals) == wilson(81, 263)
    assert rate_from_bools(np.array(vals)) == wilson(81, 263)
    assert rate_from_bools([1, 0, 1]) == wilson(2, 3)
    assert rate_from_bools([]) == wilson(0, 0)
    assert rate_from_bools(np.array([True, False, np.True_], dtype=object)) == wilson(2, 3)
    with pytest.raises(ValueError):
        rate_from_bools([True, None, False])
    with pytest.raises(ValueError):
        rate_from_bools([1, 2, 0])
    with pytest.raises(ValueError):
        rate_from_bools(["yes", "no"])


# ------------------------------------------------------------------------------------ McNemar


def test_mcnemar_exact_hand_value():
    # 2 * P[X <= 1 | Bin(10, 1/2)] = 2 * 11 / 1024
    assert mcnemar_exact(1, 9) == pytest.approx(0.021484375, abs=1e-15)
    assert mcnemar_exact(9, 1) == pytest.approx(0.021484375, abs=1e-15)


def test_mcnemar_exact_armitage_berry_example():
    # 50 sputum specimens on two media: discordant 12 and 2; published exact p = 0.0129
    p = mcnemar_exact(12, 2)
    assert p == pytest.approx(0.0129, abs=5e-5)
    assert p == pytest.approx(2 * (1 + 14 + 91) / 2**14, abs=1e-15)


@pytest.mark.parametrize("b, c", [(0, 1), (0, 5), (3, 4), (10, 2), (25, 40), (7, 7), (0, 30), (100, 130)])
def test_mcnemar_exact_equals_binomial_test(b, c):
    p = mcnemar_exact(b, c)
    assert p == pytest.approx(min(1.0, 2 * st.binom.cdf(min(b, c), b + c, 0.5)), rel=1e-12)
    assert p == pytest.approx(st.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)
    assert type(p) is float


def test_mcnemar_exact_no_discordant_pairs_and_ties():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(6, 6) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)
    with pytest.raises(ValueError):
        mcnemar_exact(1.0, 3)


def test_mcnemar_from_pairs_builds_the_table():
    # Armitage & Berry: a=20 (both growth), b=12, c=2, d=16
    before = [True] * 20 + [True] * 12 + [False] * 2 + [False] * 16
    after = [True] * 20 + [False] * 12 + [True] * 2 + [False] * 16
    out = mcnemar_from_pairs(before, after)
    assert out["b"] == 12 and out["c"] == 2 and out["n"] == 50
    assert out["p"] == pytest.approx(mcnemar_exact(12, 2))
    assert mcnemar_from_pairs([], []) == {"b": 0, "c": 0, "n": 0, "p": 1.0}
    with pytest.raises(ValueError):
        mcnemar_from_pairs([True, False], [True])


def test_cluster_mcnemar_singletons_reduce_to_uncorrected_mcnemar():
    rng = np.random.default_rng(5)
    before = rng.random(300) < 0.7
    after = np.where(rng.random(300) < 0.25, ~before, before)
    out = cluster_mcnemar(before, after, list(range(300)))
    b = int(np.sum(before & ~after))
    c = int(np.sum(~before & after))
    ref = sm_mcnemar([[0, b], [c, 0]], exact=False, correction=False)
    assert (out["b"], out["c"], out["n"], out["clusters"]) == (b, c, 300, 300)
    assert out["statistic"] == pytest.approx((b - c) ** 2 / (b + c), rel=1e-12)
    assert out["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
    assert out["p"] == pytest.approx(ref.pvalue, rel=1e-9)


def test_cluster_mcnemar_hand_example():
    # cluster A: 3 pairs, 2 correct->wrong  -> (2-0)/3
    # cluster B: 2 pairs, 1 wrong->correct  -> (0-1)/2
    # cluster C: 4 pairs, 2 correct->wrong, 1 wrong->correct -> (2-1)/4
    before = [1, 1, 1, 0, 1, 1, 1, 0, 0]
    after = [0, 0, 1, 1, 1, 0, 0, 1, 0]
    clusters = ["A", "A", "A", "B", "B", "C", "C", "C", "C"]
    d = [2 / 3, -1 / 2, 1 / 4]
    stat = sum(d) ** 2 / sum(x * x for x in d)
    out = cluster_mcnemar(before, after, clusters)
    assert (out["b"], out["c"], out["clusters"]) == (4, 2, 3)
    assert out["statistic"] == pytest.approx(stat, rel=1e-12)
    assert out["p"] == pytest.approx(st.chi2.sf(stat, 1), rel=1e-12)


def test_cluster_mcnemar_is_not_fooled_by_duplicated_pairs():
    # Copying each pair 5 times inside its own cluster adds no information: the cluster statistic
    # is unchanged, while the naive McNemar on the copies is 5 times larger.
    before = np.array([1, 1, 1, 1, 0, 1, 0, 1, 1, 1], bool)
    after = np.array([0, 0, 0, 1, 1, 1, 0, 0, 1, 0], bool)
    one = cluster_mcnemar(before, after, list(range(10)))
    five = cluster_mcnemar(np.repeat(before, 5), np.repeat(after, 5), np.repeat(np.arange(10), 5))
    assert five["statistic"] == pytest.approx(one["statistic"], rel=1e-12)
    naive = sm_mcnemar([[0, five["b"]], [five["c"], 0]], exact=False, correction=False)
    assert naive.statistic == pytest.approx(5 * one["statistic"], rel=1e-12)


def test_cluster_mcnemar_degenerate():
    out = cluster_mcnemar([True, False], [True, False], ["q1", "q2"])
    assert out["statistic"] == 0.0 and out["p"] == 1.0 and out["test"] == "cluster_mcnemar"
    assert cluster_mcnemar([], [], [])["p"] is None
    with pytest.raises(ValueError):
        cluster_mcnemar([True], [False], ["a", "b"])


@pytest.mark.parametrize("after", [[0, 0, 0], [0, 1, 1], [1, 1, 0]])
def test_cluster_mcnemar_with_one_cluster_is_undefined(after):
    # One cluster gives X2 = 1 (p 0.317) whatever the data: the test is undefined, not a number.
    out = cluster_mcnemar([1, 1, 0], after, ["a", "a", "a"])
    assert out["clusters"] == 1 and out["p"] is None and out["statistic"] is None
    assert stats.durkalski([0.5])["p"] is None and stats.durkalski([0.5, -0.5])["p"] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------ Fisher


def test_fisher_tea_tasting():
    out = fisher_one_sided(3, 4, 1, 4)  # [[3, 1], [1, 3]]
    assert out["p"] == pytest.approx(17 / 70, abs=1e-12)  # 0.2428571
    assert out["odds_ratio"] == pytest.approx(9.0)
    assert fisher_one_sided(3, 4, 1, 4, alternative="two-sided")["p"] == pytest.approx(34 / 70)
    assert fisher_one_sided(3, 4, 1, 4, alternative="less")["p"] == pytest.approx(69 / 70)


@pytest.mark.parametrize(
    "a_k, a_n, b_k, b_n",
    [(10, 20, 3, 20), (0, 5, 4, 9), (12, 15, 12, 15), (7, 40, 2, 38), (30, 30, 25, 30)],
)
def test_fisher_greater_equals_hypergeometric_tail(a_k, a_n, b_k, b_n):
    # P[X >= a_k] with X ~ Hypergeom(total, successes, draws = a_n)
    ref = st.hypergeom.sf(a_k - 1, a_n + b_n, a_k + b_k, a_n)
    assert fisher_one_sided(a_k, a_n, b_k, b_n)["p"] == pytest.approx(ref, rel=1e-9)


def test_fisher_edges_and_validation():
    out = fisher_one_sided(3, 3, 1, 4)  # zero cell: infinite sample odds ratio
    assert math.isinf(out["odds_ratio"])
    assert fisher_one_sided(0, 0, 1, 4)["p"] == 1.0  # empty group: no evidence
    with pytest.raises(ValueError):
        fisher_one_sided(5, 4, 1, 4)
    with pytest.raises(ValueError):
        fisher_one_sided(3, 4, 1, 4, alternative="bigger")


# ------------------------------------------------------------------------------------ Holm


def test_holm_hand_worked():
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> monotone .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # R: p.adjust(c(.01, .02, .03, .04, .05), "holm")
    assert holm([0.01, 0.02, 0.03, 0.04, 0.05]) == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])


def test_holm_caps_at_one_and_keeps_order():
    assert holm([0.5, 0.6, 0.001]) == pytest.approx([1.0, 1.0, 0.003])
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


def test_holm_is_statsmodels_holm_to_the_last_bit():
    """The same numbers as statsmodels' multipletests(method="holm") on random p-values, with ties
    (several strata of one test often share a p of 1.0 or an exact binomial value)."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for m in (1, 2, 3, 7, 20, 64):
        for _ in range(4):  # statsmodels collects garbage on each call: slow in a big test process
            p = rng.choice([*rng.uniform(0, 1, 8), 1.0, 0.0, 0.5, 0.03125], size=m)
            assert holm(p.tolist()) == multipletests(p, method="holm")[1].tolist(), p


def test_holm_missing_values_are_not_counted():
    out = holm([0.01, None, 0.04, float("nan")])
    assert out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.04)
    assert math.isnan(out[1]) and math.isnan(out[3])
    with pytest.raises(ValueError):
        holm([0.1, 1.2])


# ------------------------------------------------------------------------------------ bootstrap


def test_bootstrap_mean_covers_mean_and_is_reproducible():
    x = [-1, 0, 1, 1, 0, 1, -1, 1, 1, 0, 1, 1]  # PCS-style scores
    r = bootstrap_mean(x, seed=3)
    assert r["n"] == 12 and r["mean"] == pytest.approx(5 / 12)
    assert r["lo"] < r["mean"] < r["hi"]
    assert r["lo"] >= -1 and r["hi"] <= 1
    assert bootstrap_mean(x, seed=3) == r
    assert bootstrap_mean(x, seed=4) != r
    rb = bootstrap_mean(x, seed=3, method="bca")
    assert rb["lo"] < rb["mean"] < rb["hi"]


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_mean_close_to_t_interval_for_large_normal_sample(method):
    x = np.random.default_rng(42).normal(10.0, 2.0, 2000)
    lo, hi = st.t.interval(0.95, x.size - 1, loc=x.mean(), scale=st.sem(x))
    r = bootstrap_mean(x, method=method)
    assert r["mean"] == pytest.approx(x.mean())
    tol = 0.05 * (hi - lo)
    assert r["lo"] == pytest.approx(lo, abs=tol)
    assert r["hi"] == pytest.approx(hi, abs=tol)
    r90 = bootstrap_mean(x, confidence=0.90, method=method)
    assert r90["hi"] - r90["lo"] < r["hi"] - r["lo"]


def test_bootstrap_mean_small_and_degenerate():
    assert bootstrap_mean([]) == {"mean": None, "lo": None, "hi": None, "n": 0}
    assert bootstrap_mean([0.5]) == {"mean": 0.5, "lo": None, "hi": None, "n": 1}
    assert bootstrap_mean([1, 1, 1]) == {"mean": 1.0, "lo": 1.0, "hi": 1.0, "n": 3}
    with pytest.raises(ValueError):
        bootstrap_mean([1.0, float("nan")])
    with pytest.raises(ValueError):
        bootstrap_mean([1.0, 2.0], method="studentized")


def test_paired_bootstrap_diff_known_pair():
    a = [0, 0, 1, 1, 0]
    b = [1, 0, 1, 1, 1]
    r = paired_bootstrap_diff(a, b)
    assert r["n"] == 5 and r["diff"] == pytest.approx(0.4)
    assert r["lo"] <= r["diff"] <= r["hi"]
    assert paired_bootstrap_diff(a, b) == r  # fixed seed -> same answer
    assert paired_bootstrap_diff(b, a)["diff"] == pytest.approx(-0.4)


@pytest.mark.parametrize("shift", [0.1, 0.05, 0.0])
def test_paired_bootstrap_interval_matches_t_interval(shift):
    # For n = 500 roughly normal differences the bootstrap interval approximates the t interval.
    rng = np.random.default_rng(7)
    a = rng.normal(0, 1, 500)
    b = a + rng.normal(shift, 1, 500)
    r = paired_bootstrap_diff(a, b)
    assert r["diff"] == pytest.approx(np.mean(b - a))
    lo, hi = st.t.interval(0.95, 499, loc=np.mean(b - a), scale=st.sem(b - a))
    assert r["lo"] == pytest.approx(lo, abs=0.05 * (hi - lo))
    assert r["hi"] == pytest.approx(hi, abs=0.05 * (hi - lo))


def test_the_bootstrap_gives_intervals_and_no_p_value():
    # 6 of 6 pairs one way: the bootstrap used to say p = 2/2001 = 0.0010; the exact test says 0.031.
    r = paired_bootstrap_diff([1] * 6, [0] * 6)
    assert "p" not in r and (r["diff"], r["lo"], r["hi"]) == (-1.0, -1.0, -1.0)
    assert stats.paired_permutation_test([1] * 6, [0] * 6)["p"] == pytest.approx(mcnemar_exact(6, 0)) == pytest.approx(0.03125)
    # a 3-item run: +100 pp [+100, +100] and an exact p of 0.25, not 0.0010
    c = stats.paired_cluster_diff(np.ones(3), np.ones(3))
    assert "p" not in c and (c["diff"], c["lo"], c["hi"]) == (1.0, 1.0, 1.0)
    assert stats.sign_flip_test(np.ones(3))["p"] == pytest.approx(0.25) == pytest.approx(mcnemar_exact(3, 0))


def test_paired_bootstrap_clear_shift_and_no_shift():
    rng = np.random.default_rng(11)
    a = rng.random(300) < 0.8  # clean correct
    b = a & (rng.random(300) < 0.6)  # stressed: some correct answers lost, none gained
    r = paired_bootstrap_diff(a, b)
    assert r["diff"] < 0 and r["hi"] < 0

    # exactly balanced changes: diff 0, an interval around it
    a0 = [1, 0] * 50
    b0 = [0, 1] * 50
    r0 = paired_bootstrap_diff(a0, b0)
    assert r0["diff"] == 0.0 and r0["lo"] < 0 < r0["hi"]


def test_paired_bootstrap_edges():
    assert paired_bootstrap_diff([], [])["diff"] is None
    one = paired_bootstrap_diff([1], [0])
    assert one == {"diff": -1.0, "lo": None, "hi": None, "n": 1}
    same = paired_bootstrap_diff([0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    assert same["diff"] == 0.0 and same["lo"] == same["hi"] == 0.0
    with pytest.raises(ValueError):
        paired_bootstrap_diff([1, 2], [1])


# ------------------------------------------------------------------------ paired permutation test


@pytest.mark.parametrize("b,c,ties", [(0, 0, 3), (6, 0, 0), (12, 2, 5), (7, 9, 0), (30, 14, 40), (1, 0, 0)])
def test_sign_flip_test_on_plus_minus_one_is_the_exact_mcnemar_test(b, c, ties):
    d = [1] * b + [-1] * c + [0] * ties
    got = stats.sign_flip_test(d)
    assert got["test"] == "permutation_exact" and got["clusters"] == b + c + ties
    assert got["p"] == pytest.approx(mcnemar_exact(b, c), rel=1e-12)


def _brute_force_sign_flip(d):
    d = np.asarray(d, dtype=float)
    signs = np.array(np.meshgrid(*[[-1, 1]] * d.size)).reshape(d.size, -1).T
    return float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-9))


def test_sign_flip_test_with_a_wide_distribution_convolves_by_fft_and_stays_exact():
    # |d| = 1000 a thousand times and 7 twice: the second convolution (1,000,001 x 15 values) is
    # past the direct-convolution limit, so it goes through scipy.signal.fftconvolve.
    d = [1000] * 520 + [-1000] * 480 + [7, 7]
    total, t = 1000 * 1000 + 14, abs(sum(d))
    x, y = np.arange(1001)[:, None], np.arange(3)[None, :]
    s = 1000 * x + 7 * y  # the sum of the |d_j| that keep a + sign
    mass = st.binom.pmf(x, 1000, 0.5) * st.binom.pmf(y, 2, 0.5)
    expected = float(mass[np.abs(2 * s - total) >= t].sum())
    assert 0.1 < expected < 0.3
    assert stats.sign_flip_test(d)["p"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_test_matches_enumerating_every_sign_pattern(seed):
    rng = np.random.default_rng(seed)
    ints = rng.integers(-3, 4, size=12)  # scores and cluster sums: exact by convolution
    assert stats.sign_flip_test(ints)["p"] == pytest.approx(_brute_force_sign_flip(ints), rel=1e-12)
    reals = rng.normal(0.4, 1, size=10)  # non-integer: enumerated
    assert stats.sign_flip_test(reals)["p"] == pytest.approx(_brute_force_sign_flip(reals), rel=1e-12)


def test_sign_flip_test_at_scale_and_sampled():
    rng = np.random.default_rng(3)
    d = rng.integers(-2, 3, size=200_000)  # PCS differences of 200k questions: exact, fast
    got = stats.sign_flip_test(d)
    z = d.sum() / math.sqrt((d.astype(float) ** 2).sum())
    assert got["p"] == pytest.approx(2 * st.norm.sf(abs(z)), abs=0.01)
    x = rng.normal(0.3, 1, size=60)  # too many non-integer clusters to enumerate: sampled, seeded
    s = stats.sign_flip_test(x)
    assert s["test"] == "permutation_sampled" and s == stats.sign_flip_test(x)
    assert s["p"] == pytest.approx(st.ttest_1samp(x, 0).pvalue, abs=0.01)
    assert stats.sign_flip_test([])["p"] is None and stats.sign_flip_test([0, 0])["p"] == 1.0


def test_clustered_rate_is_wilson_for_singletons_and_resamples_clusters_otherwise():
    ok = [True, False, True, True, False, True]
    assert stats.clustered_rate(ok, list("abcdef")) == wilson(4, 6)
    items = ["a", "a", "b", "b", "c", "c"]
    got = stats.clustered_rate(ok, items)
    assert (got.k, got.n, got.p) == (4, 6, 4 / 6)
    assert (got.lo, got.hi) == stats.cluster_interval(np.array([1, 2, 1]), np.array([2, 2, 2]))
    assert stats.clustered_rate([], []).p is None


def test_paired_permutation_test_flips_whole_clusters():
    # 4 items, each giving 3 pairs that all move one way: 4 independent units, not 12
    a, b = [1] * 12, [0] * 12
    items = np.repeat(np.arange(4), 3)
    clustered = stats.paired_permutation_test(a, b, items)
    assert clustered["test"] == "cluster_permutation_exact" and clustered["clusters"] == 4 and clustered["n"] == 12
    assert clustered["p"] == pytest.approx(mcnemar_exact(4, 0))  # 0.125
    assert stats.paired_permutation_test(a, b)["p"] == pytest.approx(mcnemar_exact(12, 0))


# ---------------------------------------------------------------------------- cluster bootstrap


def test_cluster_bootstrap_perfectly_correlated_clusters_widen_by_sqrt_m():
    # 200 questions, 5 probes each, probes of a question always agree: the effective sample size
    # is 200, not 1000, so the interval is about sqrt(5) times the naive Wilson width.
    per_question = np.array([True] * 100 + [False] * 100)
    succ = np.repeat(per_question, 5)
    clusters = np.repeat(np.arange(200), 5)
    r = cluster_bootstrap_rate(succ, clusters)
    w = wilson(500, 1000)
    assert (r.k, r.n, r.p) == (500, 1000, 0.5)
    ratio = (r.hi - r.lo) / (w.hi - w.lo)
    assert ratio == pytest.approx(math.sqrt(5), rel=0.15)
    # and it agrees with Wilson on the 200 questions
    wq = wilson(100, 200)
    assert r.hi - r.lo == pytest.approx(wq.hi - wq.lo, rel=0.1)


def test_cluster_bootstrap_singletons_agree_with_wilson():
    succ = np.array([True] * 300 + [False] * 700)
    r = cluster_bootstrap_rate(succ, [f"q{i}" for i in range(1000)])
    w = wilson(300, 1000)
    assert r.p == w.p
    assert r.lo == pytest.approx(w.lo, abs=0.006)
    assert r.hi == pytest.approx(w.hi, abs=0.006)


def test_cluster_bootstrap_matches_cluster_robust_standard_error():
    # Unequal clusters with a question-level difficulty: the bootstrap half-width should match
    # 1.96 * the cluster-robust (sandwich) SE of the pooled mean from statsmodels.
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, 400)
    difficulty = rng.beta(2, 2, 400)
    clusters = np.repeat(np.arange(400), sizes)
    succ = rng.random(clusters.size) < difficulty[clusters]
    r = cluster_bootstrap_rate(succ, clusters)
    fit = sm.OLS(succ.astype(float), np.ones(succ.size)).fit(cov_type="cluster", cov_kwds={"groups": clusters})
    assert r.p == pytest.approx(succ.mean())
    assert r.hi - r.lo == pytest.approx(2 * Z95 * fit.bse[0], rel=0.15)
    assert r.lo < r.p < r.hi
    naive = wilson(int(succ.sum()), succ.size)
    assert r.hi - r.lo > naive.hi - naive.lo


def test_cluster_bootstrap_reproducible_and_accepts_any_hashable():
    succ = [True, False, True, True, False, True, False, False]
    clusters = [("medqa", 1), ("medqa", 1), "x", "x", 3, 3, ("medqa", 2), ("medqa", 2)]
    r1 = cluster_bootstrap_rate(succ, clusters, seed=1)
    assert r1 == cluster_bootstrap_rate(succ, clusters, seed=1)
    assert r1.k == 4 and r1.n == 8 and r1.p == 0.5
    assert 0 <= r1.lo <= r1.p <= r1.hi <= 1


def test_cluster_bootstrap_edges():
    assert cluster_bootstrap_rate([], []) == Rate(0, 0, None, None, None)
    # all correct: Wilson with the clusters as the units
    r = cluster_bootstrap_rate([True] * 12, [i // 3 for i in range(12)])
    w = wilson(4, 4)
    assert (r.p, r.lo, r.hi) == (1.0, w.lo, w.hi)
    r0 = cluster_bootstrap_rate([False] * 12, [i // 3 for i in range(12)])
    assert (r0.p, r0.lo, r0.hi) == (0.0, 0.0, wilson(0, 4).hi)
    # a single cluster: nothing to resample, Wilson on the rows
    assert cluster_bootstrap_rate([True, False, True], ["q", "q", "q"]) == wilson(2, 3)
    with pytest.raises(ValueError):
        cluster_bootstrap_rate([True, False], ["a"])
    with pytest.raises(ValueError):
        cluster_bootstrap_rate([True, False], ["a", None])


def test_cluster_bootstrap_at_scale():
    # speed is a benchmark's business, not a unit test's: this checks the result at 100,000 rows
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 20_000, 100_000)
    clusters = [f"item-{c}" for c in codes]
    succ = rng.random(100_000) < 0.6
    r = cluster_bootstrap_rate(succ, clusters)
    assert r.n == 100_000 and r.lo < r.p < r.hi
    assert r.p == pytest.approx(succ.mean())


# ---- exact-distribution cluster bootstraps (used by metrics and compare)


def test_paired_cluster_diff_matches_paired_bootstrap_without_clusters():
    rng = np.random.default_rng(1)
    a = (rng.random(400) < 0.7).astype(float)
    b = (rng.random(400) < 0.55).astype(float)
    ref = stats.paired_bootstrap_diff(a, b, n_resamples=4000, seed=3)
    got = stats.paired_cluster_diff(b - a, np.ones(400), n_resamples=4000, seed=3)
    assert math.isclose(got["diff"], ref["diff"])
    assert abs(got["lo"] - ref["lo"]) < 0.012 and abs(got["hi"] - ref["hi"]) < 0.012
    # no difference: a zero-width interval
    z = stats.paired_cluster_diff(np.zeros(50), np.ones(50))
    assert z["diff"] == 0 and z["lo"] == z["hi"] == 0
    # constant non-zero difference: the interval is the point, and no p-value is made up
    c = stats.paired_cluster_diff(np.ones(30), np.ones(30), n_resamples=999)
    assert c["lo"] == c["hi"] == 1.0 and "p" not in c
    assert stats.paired_cluster_diff([], [])["diff"] is None and stats.paired_cluster_diff([1.0], [2])["lo"] is None
    with pytest.raises(ValueError):
        stats.paired_cluster_diff([1.0], [0])


def test_paired_cluster_diff_matches_brute_force_cluster_bootstrap():
    rng = np.random.default_rng(7)
    g = 300
    size = rng.integers(1, 5, size=g)
    d = np.array([rng.integers(-s, s + 1) for s in size], dtype=float)
    got = stats.paired_cluster_diff(d, size, n_resamples=6000, seed=1)
    idx = rng.integers(0, g, size=(6000, g))
    dist = d[idx].sum(1) / size[idx].sum(1)
    lo, hi = np.quantile(dist, [0.025, 0.975])
    assert math.isclose(got["diff"], d.sum() / size.sum())
    assert abs(got["lo"] - lo) < 0.01 and abs(got["hi"] - hi) < 0.01


def test_cluster_interval_matches_stats_cluster_bootstrap():
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(500), 3)
    p_item = rng.random(500)
    ok = rng.random(1500) < p_item[clusters]
    ref = stats.cluster_bootstrap_rate(ok, clusters, n_resamples=5000, seed=2)
    succ = np.bincount(clusters, weights=ok).astype(int)
    lo, hi = stats.cluster_interval(succ, np.full(500, 3), n_resamples=5000, seed=2)
    assert abs(lo - ref.lo) < 0.008 and abs(hi - ref.hi) < 0.008
    # degenerate cases follow stats.cluster_bootstrap_rate
    assert stats.cluster_interval(np.zeros(4, int), np.full(4, 2)) == (0.0, stats.wilson(0, 4).hi)
    assert stats.cluster_interval(np.array([3]), np.array([5])) == (stats.wilson(3, 5).lo, stats.wilson(3, 5).hi)


# ------------------------------------------------------------------------------ metrics (vectorised)


def test_one_pair_per_item_gets_the_exact_mcnemar_several_get_durkalski():
    # b=0, c=2 on two items: the exact test gives 0.5 (Durkalski would give the asymptotic 0.157)
    one = stats.paired_mcnemar([False, False], [True, True], ["q1", "q2"])
    assert (one["test"], one["b"], one["c"], one["clusters"]) == ("mcnemar_exact", 0, 2, 2) and one["p"] == pytest.approx(0.5)
    assert stats.cluster_mcnemar([False, False], [True, True], ["q1", "q2"])["p"] == pytest.approx(0.1573, abs=1e-4)
    several = stats.paired_mcnemar([False, False, False], [True, True, True], ["q1", "q1", "q2"])
    assert several["test"] == "cluster_mcnemar" and several == stats.cluster_mcnemar([False, False, False], [True, True, True], ["q1", "q1", "q2"])
    assert stats.paired_mcnemar([], [], [])["p"] == 1.0
    assert (stats.several_pairs([1, 1, 1]), stats.several_pairs([1, 2]), stats.several_pairs([])) == (False, True, False)
