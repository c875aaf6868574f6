"""Power and sample size of the toolkit's paired tests (stats.power), checked against the tests
themselves: a planned n is simulated 2,000 times (seeded) and the toolkit's own test
(stats.mcnemar_exact, stats.cluster_mcnemar) rejects in the stated share of runs, within 2 points;
the exact power equals the sum over every outcome of n pairs; the reverse plan round-trips; bad
rates are refused with the value named."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from medresilience import stats
from medresilience.stats.power import (
    ClusterDesign,
    clustered_power,
    clustered_size,
    mcnemar_power,
    mcnemar_size,
    paired_rates,
    pilot_rates,
    smallest_effect,
)

RUNS = 2000


def _simulated_mcnemar(n: int, rates, seed: int, alpha: float = 0.05) -> float:
    """The share of RUNS simulated suites of n independent pairs in which stats.mcnemar_exact rejects."""
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, rates.shares(), size=RUNS)  # (both, A only = b, B only = c, neither)
    return float(np.mean([stats.mcnemar_exact(int(b), int(c)) <= alpha for b, c in counts[:, 1:3]]))


@pytest.mark.parametrize(
    "p1,p2,disc",
    [(0.30, 0.20, 0.20), (0.10, 0.18, 0.12), (0.50, 0.45, 0.30)],
    ids=["asr-drop", "small-rates", "large-n"],
)
def test_the_planned_pairs_give_the_stated_power_in_simulation(p1, p2, disc):
    rates = paired_rates(p1, p2, discordance=disc)
    n, power = mcnemar_size(rates, 0.8)
    assert power >= 0.8 and mcnemar_power(n - 1, rates) < 0.8  # the fewest that reach it
    assert abs(_simulated_mcnemar(n, rates, seed=1) - power) < 0.02


def test_exact_power_is_the_sum_over_every_outcome():
    rates = paired_rates(0.4, 0.25, discordance=0.35)
    for n in (1, 7, 30):
        total = 0.0
        for b in range(n + 1):
            for c in range(n + 1 - b):
                pmf = scipy.stats.multinomial.pmf([b, c, n - b - c], n, [rates.p10, rates.p01, 1 - rates.discordance])
                total += pmf * (stats.mcnemar_exact(b, c) <= 0.05)
        assert mcnemar_power(n, rates) == pytest.approx(total, abs=1e-12)


def _simulated_clustered(items: int, rates, design: ClusterDesign, seed: int, alpha: float = 0.05) -> float:
    """The share of RUNS simulated suites in which stats.cluster_mcnemar, on the pairs as the report
    holds them (one row per pair, items as clusters), rejects. Each item's four shares are drawn from
    a Dirichlet with the design's intracluster correlation, then its pairs from them."""
    rng = np.random.default_rng(seed)
    shares = rates.shares()
    m = design.sizes[0]
    kappa = 1 / design.icc - 1
    q = rng.dirichlet(shares * kappa, size=(RUNS, items))
    counts = rng.multinomial(m, q)  # (RUNS, items, 4): both, A only, B only, neither
    pattern = np.array([[True, True], [True, False], [False, True], [False, False]])
    clusters = np.repeat(np.arange(items), m)
    hits = 0
    for run in counts:
        rows = np.concatenate([np.repeat(pattern, k, axis=0) for k in run])
        res = stats.cluster_mcnemar(rows[:, 0], rows[:, 1], clusters)
        hits += res["p"] is not None and res["p"] <= alpha
    return hits / RUNS


@pytest.mark.parametrize("m,icc", [(3, 0.3), (5, 0.7)], ids=["three-probes", "five-epochs-correlated"])
def test_the_planned_items_give_the_stated_power_of_the_clustered_test(m, icc):
    rates = paired_rates(0.25, 0.15, discordance=0.2)
    design = ClusterDesign((m,), icc)
    items, power = clustered_size(rates, design, 0.8, seed=3)
    assert power >= 0.8
    assert abs(_simulated_clustered(items, rates, design, seed=29) - power) < 0.02
    # correlated pairs carry less than independent ones: more pairs than the exact test's n, fewer items
    n_pairs, _ = mcnemar_size(rates, 0.8)
    assert items < n_pairs < items * m


def test_the_smallest_detectable_effect_round_trips():
    found = smallest_effect(400, 0.3, discordance=0.25, power=0.8)
    assert found is not None
    rates, power = found
    assert rates.p1 == 0.3 and rates.discordance == pytest.approx(0.25) and power >= 0.8
    n, _ = mcnemar_size(rates, 0.8)
    assert n <= 400 and mcnemar_size(paired_rates(0.3, rates.p2 - 0.002, discordance=0.25), 0.8)[0] > 400 - 15
    # held correlation instead of discordance, downwards
    down = smallest_effect(400, 0.3, correlation=0.4, power=0.9, direction="down")
    assert down is not None and down[0].p2 < 0.3 and down[0].correlation == pytest.approx(0.4)
    assert mcnemar_size(down[0], 0.9)[0] <= 400


def test_the_clustered_reverse_round_trips():
    design = ClusterDesign((3,), 0.3)
    rates, power = smallest_effect(120, 0.2, discordance=0.2, power=0.8, design=design, sims=4000, seed=5)
    assert power >= 0.8
    items, planned = clustered_size(rates, design, 0.8, sims=4000, seed=5)
    # the plan at that effect asks for the same suite, up to the simulation's noise (its draws differ)
    assert abs(items - 120) <= 6 and planned >= 0.8
    assert abs(clustered_power(120, rates, design, sims=4000, seed=6) - 0.8) < 0.025


def test_no_effect_within_the_rates_reaches_the_power():
    # at most a discordance of 0.02: 20 items cannot detect anything
    assert smallest_effect(20, 0.5, discordance=0.02, power=0.8) is None


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"p1": 1.2, "p2": 0.3, "discordance": 0.2}, "p1 must lie in [0, 1], not 1.2"),
        ({"p1": 0.3, "p2": -0.1, "discordance": 0.2}, "p2 must lie in [0, 1]"),
        ({"p1": 0.3, "p2": 0.2, "discordance": 0.05}, "discordance 0.05 is impossible with p1 = 0.3 and p2 = 0.2: it must lie in [0.1, 0.5]"),
        ({"p1": 0.9, "p2": 0.95, "discordance": 0.3}, "discordance 0.3 is impossible"),
        ({"p1": 0.3, "p2": 0.2, "correlation": -0.9}, "correlation -0.9 is impossible"),
        ({"p1": 0.3, "p2": 0.2}, "give one of discordance"),
        ({"p1": 0.3, "p2": 0.2, "discordance": 0.2, "correlation": 0.1}, "give one of discordance"),
    ],
)
def test_bad_rates_are_refused_with_the_value_named(kwargs, message):
    with pytest.raises(ValueError, match=None) as e:
        paired_rates(**kwargs)
    assert message in str(e.value)


def test_bad_plans_are_refused():
    rates = paired_rates(0.3, 0.3, discordance=0.2)
    with pytest.raises(ValueError, match="the effect p2 - p1 is 0"):
        mcnemar_size(rates)
    with pytest.raises(ValueError, match="power must lie strictly between 0 and 1"):
        mcnemar_size(paired_rates(0.3, 0.2, discordance=0.2), power=1.0)
    with pytest.raises(ValueError, match="alpha must lie strictly between 0 and 1"):
        mcnemar_power(10, paired_rates(0.3, 0.2, discordance=0.2), alpha=0)
    with pytest.raises(ValueError, match="icc"):
        ClusterDesign((3,), 1.0)
    with pytest.raises(ValueError, match="pairs per item"):
        ClusterDesign((0,), 0.1)


def test_pilot_rates_read_the_pairs():
    # three items: 3 pairs (2 A only, 1 both), 1 pair (B only), 2 pairs (neither)
    a = [True, True, True, False, False, False]
    b = [False, False, True, True, False, False]
    est = pilot_rates(a, b, ["x", "x", "x", "y", "z", "z"])
    r = est["rates"]
    assert (r.p1, r.p2, r.p10, r.p01) == pytest.approx((3 / 6, 2 / 6, 2 / 6, 1 / 6))
    assert est["pairs"] == 6 and est["items"] == 3 and sorted(est["sizes"]) == [1, 2, 3]
    assert 0 <= est["icc"] <= 0.99
    with pytest.raises(ValueError, match="no pairs"):
        pilot_rates([], [], [])
