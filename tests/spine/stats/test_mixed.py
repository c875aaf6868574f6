"""stats.mixed_logistic against simulated data with known effects: the adjusted odds ratios and
the reviewer ICC come back near the values the data were drawn with, no reviewer effect gives an
ICC near zero, and bad input is a ValueError. Against a known result: lme4's glmer on its cbpp
example (Laplace). The quadrature against direct numerical integration. A level with no events
gets no odds ratio (separation), with a note. The intervals' coverage: at least 93% of 500
simulated reviews shaped like MedMisBench's (14 reviewers, 153 ratings, ICC 0.1) cover each true
odds ratio at nominal 95% (the variational fit this replaced covered 80-86%: bench/bench_mixed_coverage.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from medresilience import stats

TRUE_OR = {("content_type", "exception"): 2.0, ("provenance", "patient"): 0.5, ("provenance", "authority"): 1.0}
SD = 0.7  # reviewer random-intercept SD: latent ICC 0.49 / (0.49 + pi^2 / 3) = 0.130


def _simulate(seed: int, sd: float = SD, reviewers: int = 30, per: int = 60):
    rng = np.random.default_rng(seed)
    u = rng.normal(0, sd, reviewers)
    rev = np.repeat(np.arange(reviewers), per)
    ct = rng.choice(["cue", "exception"], size=rev.size)
    pv = rng.choice(["neutral", "patient", "authority"], size=rev.size)
    eta = -0.5 + math.log(2.0) * (ct == "exception") + math.log(0.5) * (pv == "patient") + u[rev]
    y = rng.random(rev.size) < 1 / (1 + np.exp(-eta))
    return y, {"content_type": ct, "provenance": pv}, [f"r{i}" for i in rev]


@pytest.mark.parametrize("seed", [0, 1])
def test_known_effects_come_back(seed):
    y, factors, groups = _simulate(seed)
    res = stats.mixed_logistic(y, factors, groups, references={"content_type": "cue", "provenance": "neutral"})
    assert "maximum-likelihood" in res.method and "adaptive Gauss-Hermite" in res.method and "random intercept" in res.method
    assert (res.n, res.groups, res.events) == (1800, 30, int(np.sum(y)))
    assert res.references == {"content_type": "cue", "provenance": "neutral"}
    got = {(o.factor, o.level): o for o in res.odds_ratios}
    assert set(got) == set(TRUE_OR)
    for key, truth in TRUE_OR.items():
        o = got[key]
        assert abs(math.log(o.odds_ratio) - math.log(truth)) < 0.2, (key, o)
        assert o.lo < o.odds_ratio < o.hi
        assert o.reference == ("cue" if key[0] == "content_type" else "neutral")
    truth_icc = SD**2 / (SD**2 + math.pi**2 / 3)
    assert abs(res.icc - truth_icc) < 0.06, res.icc
    assert res.icc == pytest.approx(res.group_sd**2 / (res.group_sd**2 + math.pi**2 / 3))


def test_no_reviewer_effect_gives_an_icc_near_zero():
    y, factors, groups = _simulate(3, sd=0.0)
    res = stats.mixed_logistic(y, factors, groups)
    assert res.icc < 0.03
    # the default reference is the most frequent level
    assert res.references["provenance"] == max(set(factors["provenance"]), key=list(factors["provenance"]).count)


def test_bad_input():
    with pytest.raises(ValueError, match="same for every observation"):
        stats.mixed_logistic([True, True], {"a": ["x", "y"]}, ["r1", "r2"])
    with pytest.raises(ValueError, match="same length"):
        stats.mixed_logistic([True, False], {"a": ["x"]}, ["r1", "r2"])
    with pytest.raises(ValueError, match="does not occur"):
        stats.mixed_logistic([True, False], {"a": ["x", "y"]}, ["r1", "r2"], references={"a": "z"})
    with pytest.raises(ValueError, match="collinear"):
        stats.mixed_logistic([True, False, True], {"a": ["x", "y", "x"], "b": ["p", "q", "p"]}, ["r1", "r2", "r1"])


# lme4's cbpp (Lesnoff et al. 2004, Preventive Veterinary Medicine 64: 27-40): herd, incidence, size, period
CBPP = [
    (1, 2, 14, 1), (1, 3, 12, 2), (1, 4, 9, 3), (1, 0, 5, 4), (2, 3, 22, 1), (2, 1, 18, 2), (2, 1, 21, 3), (3, 8, 22, 1),
    (3, 2, 16, 2), (3, 0, 16, 3), (3, 2, 20, 4), (4, 2, 10, 1), (4, 0, 10, 2), (4, 2, 9, 3), (4, 0, 6, 4), (5, 5, 18, 1),
    (5, 0, 25, 2), (5, 0, 24, 3), (5, 1, 4, 4), (6, 3, 17, 1), (6, 0, 17, 2), (6, 0, 18, 3), (6, 1, 20, 4), (7, 8, 16, 1),
    (7, 1, 10, 2), (7, 3, 9, 3), (7, 0, 5, 4), (8, 12, 34, 1), (9, 2, 9, 1), (9, 0, 6, 2), (9, 0, 8, 3), (9, 0, 6, 4),
    (10, 1, 22, 1), (10, 1, 22, 2), (10, 0, 18, 3), (10, 2, 22, 4), (11, 0, 25, 1), (11, 5, 27, 2), (11, 3, 22, 3), (11, 1, 22, 4),
    (12, 2, 10, 1), (12, 1, 8, 2), (12, 0, 6, 3), (12, 0, 5, 4), (13, 1, 21, 1), (13, 2, 24, 2), (13, 0, 19, 3), (13, 0, 23, 4),
    (14, 11, 19, 1), (14, 0, 2, 2), (14, 0, 3, 3), (14, 0, 2, 4), (15, 1, 19, 1), (15, 1, 15, 2), (15, 1, 15, 3), (15, 0, 15, 4),
]  # fmt: skip
# glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), family = binomial, data = cbpp), Laplace:
# herd sd 0.6421; (Intercept) -1.3983 (0.2312), period2 -0.9919 (0.3032), period3 -1.1282 (0.3228),
# period4 -1.5797 (0.4220); logLik of the 842 Bernoulli rows -277.5
LME4 = {"2": (-0.9919, 0.3032), "3": (-1.1282, 0.3228), "4": (-1.5797, 0.4220)}


def _cbpp():
    y, period, herd = [], [], []
    for h, k, n, p in CBPP:
        y += [True] * k + [False] * (n - k)
        period += [str(p)] * n
        herd += [h] * n
    return y, {"period": period}, herd


def test_the_laplace_fit_reproduces_lme4_on_cbpp():
    y, factors, herd = _cbpp()
    res = stats.mixed_logistic(y, factors, herd, references={"period": "1"}, nodes=1)
    assert "Laplace" in res.method and (res.n, res.events, res.groups) == (842, sum(k for _, k, _, _ in CBPP), 15)
    assert res.intercept == pytest.approx(-1.3983, abs=1e-3) and res.group_sd == pytest.approx(0.6421, abs=1e-3)
    assert res.loglik == pytest.approx(-277.50, abs=0.01)
    z = 1.959964
    for o in res.odds_ratios:
        est, se = LME4[o.level]
        assert math.log(o.odds_ratio) == pytest.approx(est, abs=1e-3)
        # Wald from the observed information of the Laplace likelihood: within 1.5% of lme4's printed errors
        assert (math.log(o.hi) - math.log(o.lo)) / (2 * z) == pytest.approx(se, rel=0.015)
    agq = stats.mixed_logistic(y, factors, herd, references={"period": "1"})
    assert agq.loglik >= res.loglik - 0.1 and agq.group_sd == pytest.approx(0.6421, abs=0.01)


def test_the_quadrature_is_the_integral():
    from scipy import integrate

    from medresilience.stats.mixed import RandomInterceptLogit

    rng = np.random.default_rng(5)
    n, groups = 120, 9
    exog = np.column_stack([np.ones(n), rng.random(n) < 0.4]).astype(float)
    codes = rng.integers(0, groups, n)
    y = (rng.random(n) < 0.35).astype(float)
    beta, s = np.array([-0.6, 0.8]), 1.3
    eta = exog @ beta
    direct = 0.0
    for g in range(groups):
        at = codes == g

        def f(z, at=at):
            lin = eta[at] + s * z
            return math.exp(float(np.sum(y[at] * lin - np.logaddexp(0, lin))) - z * z / 2) / math.sqrt(2 * math.pi)

        direct += math.log(integrate.quad(f, -12, 12, epsabs=0, epsrel=1e-12, limit=200)[0])
    assert RandomInterceptLogit(y, exog, codes, 15).loglik(np.append(beta, s)) == pytest.approx(direct, abs=1e-7)
    assert RandomInterceptLogit(y, exog, codes, 1).loglik(np.append(beta, s)) == pytest.approx(direct, abs=0.2)  # Laplace: close, not exact


def test_a_level_without_events_has_no_odds_ratio():
    y, factors, groups = _simulate(4, reviewers=14, per=12)
    y = np.array(y)
    pv = np.array(factors["provenance"])
    y[pv == "patient"] = False  # separation: no event at this level
    res = stats.mixed_logistic(y, factors, groups, references={"content_type": "cue", "provenance": "neutral"})
    got = {(o.factor, o.level): o for o in res.odds_ratios}
    sep = got[("provenance", "patient")]
    assert (sep.odds_ratio, sep.lo, sep.hi, sep.events) == (None, None, None, 0) and "separation" in sep.note
    assert sep.n == int((pv == "patient").sum()) and res.n == len(y) - sep.n
    assert any("provenance patient" in n and "no finite odds ratio" in n for n in res.notes)
    other = got[("content_type", "exception")]
    assert other.odds_ratio is not None and other.lo < other.odds_ratio < other.hi and not other.note
    with pytest.raises(ValueError, match="reference level 'patient' of provenance has no events"):
        stats.mixed_logistic(y, factors, groups, references={"provenance": "patient"})


# --------------------------------------------------------------------------- coverage

COVERAGE_OR = {("provenance", "patient"): 0.5, ("provenance", "authority"): 1.0, ("model", "claude"): 0.4, ("model", "gpt"): 1.5}
COVERAGE_SD = 0.6  # latent ICC 0.36 / (0.36 + pi^2 / 3) = 0.099


def simulated_review(rng: np.random.Generator, ratings: int = 153, reviewers: int = 14):
    """One review shaped like MedMisBench's response review: each rating by one of 14 reviewers,
    a provenance and a model drawn uniformly, worst-case odds from COVERAGE_OR and the reviewer."""
    u = rng.normal(0, COVERAGE_SD, reviewers)
    rev = rng.integers(0, reviewers, ratings)
    factors = {"provenance": rng.choice(["neutral", "patient", "authority"], ratings), "model": rng.choice(["gemini", "claude", "gpt"], ratings)}
    eta = -0.4 + u[rev] + sum(math.log(v) * (factors[f] == lv) for (f, lv), v in COVERAGE_OR.items())
    return rng.random(ratings) < 1 / (1 + np.exp(-eta)), factors, [f"r{i}" for i in rev]


@pytest.mark.slow
def test_intervals_cover_the_true_odds_ratios():
    rng = np.random.default_rng(1)
    covered = dict.fromkeys(COVERAGE_OR, 0)
    sims = 500
    for _ in range(sims):
        y, factors, groups = simulated_review(rng)
        res = stats.mixed_logistic(y, factors, groups, references={"provenance": "neutral", "model": "gemini"})
        for o in res.odds_ratios:  # a level without a finite odds ratio (separation) counts as not covered
            covered[(o.factor, o.level)] += o.lo is not None and o.lo <= COVERAGE_OR[(o.factor, o.level)] <= o.hi
    shares = {k: v / sims for k, v in covered.items()}
    assert all(v >= 0.93 for v in shares.values()), shares
