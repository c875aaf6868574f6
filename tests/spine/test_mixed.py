"""stats.mixed_logistic against simulated data with known effects: the adjusted odds ratios and
the reviewer ICC come back near the values the data were drawn with, no reviewer effect gives an
ICC near zero, and bad input is a ValueError."""

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
    assert "BinomialBayesMixedGLM" in res.method and "random intercept" in res.method
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
