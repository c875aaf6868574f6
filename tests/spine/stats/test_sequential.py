"""Anytime-valid confidence sequences (stats.sequential) and stopping rules simulated
(stats.stopping_sim).

References: the hedged-capital confidence sequence of `confseq.betting.hedged_cs` (confseq 0.0.11,
MIT, Howard & Waudby-Smith; Waudby-Smith & Ramdas 2023) at its defaults (alpha 0.05, 1000 grid
breaks, running intersection), computed with confseq on the sequences below; the package is not a
dependency (it ships as a source archive that needs a C++ build), so its values are written here
and, when confseq can be imported, recomputed."""

from __future__ import annotations

import numpy as np
import pytest

from medresilience.stats.sequential import paired_cs, rate_cs, running_cs
from medresilience.stats.stopping_sim import simulate_decided, simulate_width


def _weyl(n: int, p: float, step: float) -> list[float]:
    """A deterministic 0/1 sequence of rate about p (no random generator involved)."""
    return [1.0 if (i * step) % 1.0 < p else 0.0 for i in range(1, n + 1)]


def _ternary() -> list[float]:
    """Values 0, 0.5 and 1 (a paired difference mapped to [0, 1]), deterministic."""
    return [min(max(((i * 0.7548776662) % 1.0 < 0.15) * 1.0 - ((i * 0.5698402910) % 1.0 < 0.05) * 0.5 + 0.5, 0.0), 1.0) for i in range(1, 151)]


#: confseq.betting.hedged_cs(x, alpha=0.05) at items 10, 50 and the last: (lower, upper)
CONFSEQ = {
    "bern30": (_weyl(200, 0.3, 0.6180339887), [9, 49, 199], [0.005, 0.131, 0.192], [0.683, 0.496, 0.406]),
    "bern80": (_weyl(120, 0.8, 0.4142135623), [9, 49, 119], [0.36, 0.622, 0.683], [1.0, 0.932, 0.898]),
    "ternary": (_ternary(), [9, 49, 149], [0.307, 0.484, 0.522], [0.825, 0.667, 0.623]),
}


@pytest.mark.parametrize("name", sorted(CONFSEQ))
def test_matches_confseq_hedged_cs(name):
    x, at, lo, hi = CONFSEQ[name]
    got_lo, got_hi = running_cs(x)
    assert [round(float(got_lo[i]), 3) for i in at] == lo
    assert [round(float(got_hi[i]), 3) for i in at] == hi


def test_matches_confseq_when_installed():
    betting = pytest.importorskip("confseq.betting", reason="confseq is not installed (its values are checked above)")
    x = np.array(_weyl(80, 0.4, 0.3819660113))
    want_lo, want_hi = betting.hedged_cs(x, alpha=0.05)
    lo, hi = running_cs(x)
    np.testing.assert_allclose(lo, want_lo, atol=1e-9)
    np.testing.assert_allclose(hi, want_hi, atol=1e-9)


def test_rows_are_sequences_of_their_own():
    a, b = _weyl(60, 0.3, 0.6180339887), _weyl(60, 0.7, 0.4142135623)
    lo, hi = running_cs(np.array([a, b]))
    for row, x in enumerate((a, b)):
        one_lo, one_hi = running_cs(x)
        np.testing.assert_array_equal(lo[row], one_lo)
        np.testing.assert_array_equal(hi[row], one_hi)


def test_the_sequence_narrows_and_never_widens():
    lo, hi = running_cs(_weyl(300, 0.25, 0.6180339887))
    assert np.all(np.diff(lo) >= 0) and np.all(np.diff(hi) <= 0)
    assert hi[-1] - lo[-1] < hi[20] - lo[20] < 1


def test_rate_and_paired_intervals():
    x = _weyl(200, 0.3, 0.6180339887)
    r = rate_cs(x)
    assert (r.lo, r.hi, r.n) == (0.192, 0.406, 200)
    assert not r.excludes(0.3) and r.excludes(0.5)
    assert rate_cs([]).as_dict() == {"lo": 0.0, "hi": 1.0, "n": 0, "confidence": 0.95, "width": 1.0}
    # a - b with a always right and b right on a third of the items: the difference is decided
    a = [1.0] * 120
    b = _weyl(120, 0.33, 0.6180339887)
    d = paired_cs(a, b)
    assert d.lo > 0 and d.hi <= 1 and d.n == 120
    # the same arms: no difference, an interval around 0
    same = paired_cs(b, b)
    assert same.lo < 0 < same.hi


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match=r"within \[0, 1\]"):
        running_cs([0.5, 1.5])
    with pytest.raises(ValueError, match="same length"):
        paired_cs([1.0], [1.0, 0.0])


def test_width_rule_coverage_anytime_holds_and_naive_falls_short():
    """1,000 seeded runs of up to 200 items right with probability 0.15, stopped as soon as the
    interval is narrower than 0.12 (looked at after every item from the 10th): the anytime-valid
    interval at the stopping time covers the truth in at least 95% of runs; the Wilson interval,
    stopped on and reported as if n were fixed, covers it less often."""
    out = simulate_width(0.15, 0.12, 200, runs=1000, seed=7, breaks=100)
    assert out["anytime"].coverage >= 0.95
    assert out["naive"].coverage < 0.95
    assert out["naive"].stopped_early > 0.9  # the naive rule stops early (that is the point of it)


def test_decided_rule_coverage_anytime_holds_and_naive_falls_short():
    """No true difference (10% discordant each way): the naive rule, stopping as soon as the normal
    interval of the paired difference excludes 0, declares a difference in many runs and its
    interval misses the truth; the anytime-valid one almost never does."""
    out = simulate_decided(0.1, 0.1, 200, runs=1000, seed=7, breaks=100)
    assert out["anytime"].coverage >= 0.95
    assert out["naive"].coverage < 0.85
    # a real difference (15% vs 5% discordant): the anytime rule decides before the end in most runs
    real = simulate_decided(0.15, 0.05, 400, runs=1000, seed=8, breaks=100)
    assert real["anytime"].coverage >= 0.95
    assert real["anytime"].stopped_early > 0.5 and real["anytime"].mean_n < 400
