"""Power of the paired tests the toolkit reports, and the sample size a target power needs.

A paired comparison counts one event (a right answer, a flip) on the same units under A and B. Its
joint law per pair is four shares: both (p11), A only (p10: the test's b), B only (p01: its c),
neither; it is given as the two rates p1 = p11 + p10 and p2 = p11 + p01 and either the discordance
p10 + p01 or the correlation (phi) of the two outcomes. The effect is p2 - p1 = p01 - p10.

- One pair per item: the exact McNemar test (``tests.mcnemar_exact``). Its power is exact: the
  discordant count m is Binomial(n, p10 + p01), b given m is Binomial(m, p10 / (p10 + p01)), and
  the test rejects when 2 * P[Binomial(m, 1/2) <= min(b, c)] <= alpha, as statsmodels computes it.
- Several pairs per item (several probes of one item, or epochs): Durkalski's clustered McNemar
  (``tests.durkalski``), whose power has no closed form; it is simulated (seeded). Items are drawn
  with their pairs from a Dirichlet-multinomial: each item's own shares (q11, q10, q01, q00) are
  Dirichlet around the four shares with intracluster correlation ``icc`` (0: its pairs are
  independent; near 1: they all agree), and its pairs are drawn from them. Every simulated run
  draws its items once and reads the test at every number of items from their running sums, so the
  power curve over items comes from one simulation (and is smooth in the number of items).

The exact test's power is not monotone in n (a saw-tooth: the critical count moves in steps): the
planned n is the smallest that reaches the power, found by bisection and then stepped down while the
one below still reaches it; the power stated is the power at that n.

Bad input (a rate outside [0, 1], a discordance the two rates cannot have, a zero effect) raises
ValueError saying which value and why."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import scipy.stats

__all__ = [
    "ClusterDesign",
    "PairedRates",
    "clustered_power",
    "clustered_power_curve",
    "clustered_size",
    "fitted_power",
    "mcnemar_power",
    "mcnemar_size",
    "paired_rates",
    "pilot_rates",
    "smallest_effect",
]

#: the default number of simulated runs behind a clustered power (Monte Carlo standard error of a
#: power near 0.8: 0.004)
SIMULATIONS = 10_000
#: the largest number of pairs or items a plan searches
MAX_N = 5_000_000
_TOL = 1e-12


def _check_share(v: float, name: str) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], not {v!r}") from None
    if not (0.0 <= x <= 1.0) or math.isnan(x):
        raise ValueError(f"{name} must lie in [0, 1], not {v!r}")
    return x


def _check_level(v: float, name: str) -> float:
    x = _check_share(v, name)
    if not 0.0 < x < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, not {v!r}")
    return x


@dataclass(frozen=True)
class PairedRates:
    """The joint law of one paired comparison: the event's rate under A (p1) and B (p2), and the
    discordant shares p10 (A only: the test's b) and p01 (B only: its c)."""

    p1: float
    p2: float
    p10: float
    p01: float

    @property
    def discordance(self) -> float:
        return self.p10 + self.p01

    @property
    def effect(self) -> float:
        return self.p2 - self.p1

    @property
    def p11(self) -> float:
        return max(0.0, self.p1 - self.p10)

    @property
    def correlation(self) -> float | None:
        """The phi coefficient of the two outcomes (None when a rate is 0 or 1)."""
        v = self.p1 * (1 - self.p1) * self.p2 * (1 - self.p2)
        return None if v <= 0 else (self.p11 - self.p1 * self.p2) / math.sqrt(v)

    def shares(self) -> np.ndarray:
        """(p11, p10, p01, p00), summing to 1."""
        s = np.array([self.p11, self.p10, self.p01, max(0.0, 1.0 - self.p11 - self.p10 - self.p01)])
        return s / s.sum()

    def as_dict(self) -> dict[str, object]:
        return {
            "p1": self.p1,
            "p2": self.p2,
            "effect": self.effect,
            "discordance": self.discordance,
            "p10": self.p10,
            "p01": self.p01,
            "correlation": self.correlation,
        }


def paired_rates(p1: float, p2: float, discordance: float | None = None, correlation: float | None = None) -> PairedRates:
    """The joint law from the two rates and one of the discordance (p10 + p01) or the correlation
    (phi). The discordance must lie in [|p2 - p1|, min(p1 + p2, 2 - p1 - p2)] (the shares of both
    and neither cannot be negative); the correlation must give shares in [0, 1]."""
    p1, p2 = _check_share(p1, "p1"), _check_share(p2, "p2")
    if (discordance is None) == (correlation is None):
        raise ValueError("give one of discordance (the share of discordant pairs) or correlation (phi of the paired outcomes)")
    if discordance is not None:
        d = _check_share(discordance, "discordance")
        lo, hi = abs(p2 - p1), min(p1 + p2, 2.0 - p1 - p2)
        if not lo - _TOL <= d <= hi + _TOL:
            raise ValueError(
                f"discordance {d:g} is impossible with p1 = {p1:g} and p2 = {p2:g}: it must lie in [{lo:g}, {hi:g}]"
                " (at least |p2 - p1|, and no more than both rates, or both complements, allow)"
            )
        d = min(max(d, lo), hi)
        p10, p01 = (d - (p2 - p1)) / 2, (d + (p2 - p1)) / 2
    else:
        r = float(correlation)  # type: ignore[arg-type]
        if not -1.0 <= r <= 1.0 or math.isnan(r):
            raise ValueError(f"correlation must lie in [-1, 1], not {correlation!r}")
        p11 = p1 * p2 + r * math.sqrt(p1 * (1 - p1) * p2 * (1 - p2))
        lo, hi = max(0.0, p1 + p2 - 1), min(p1, p2)
        if not lo - _TOL <= p11 <= hi + _TOL:
            raise ValueError(
                f"correlation {r:g} is impossible with p1 = {p1:g} and p2 = {p2:g}: the share where both hold would be {p11:.4g}, outside [{lo:g}, {hi:g}]"
            )
        p11 = min(max(p11, lo), hi)
        p10, p01 = p1 - p11, p2 - p11
    return PairedRates(p1, p2, max(0.0, p10), max(0.0, p01))


def _alpha(alpha: float) -> float:
    return _check_level(alpha, "alpha")


def _critical(m: np.ndarray, alpha: float) -> np.ndarray:
    """The largest k with 2 * P[Binomial(m, 1/2) <= k] <= alpha, per m (-1: none); the exact
    McNemar test of b + c = m discordant pairs rejects when min(b, c) <= k."""
    k = np.asarray(scipy.stats.binom.ppf(alpha / 2, m, 0.5)).astype(np.int64)
    for _ in range(3):  # ppf and cdf may disagree by one at the boundary: settle on cdf's answer
        k = np.where((k >= 0) & (2 * scipy.stats.binom.cdf(k, m, 0.5) > alpha), k - 1, k)
        up = 2 * scipy.stats.binom.cdf(k + 1, m, 0.5) <= alpha
        k = np.where(up, k + 1, k)
    return np.maximum(k, -1)


def mcnemar_power(n: int, rates: PairedRates, alpha: float = 0.05) -> float:
    """The exact power of the two-sided exact McNemar test on n independent pairs."""
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a whole number >= 0, not {n!r}")
    alpha, n = _alpha(alpha), int(n)
    pd_ = rates.discordance
    if n == 0 or pd_ <= 0:
        return 0.0
    m = np.arange(n + 1)
    weight = scipy.stats.binom.pmf(m, n, min(pd_, 1.0))
    k = _critical(m, alpha)
    q = rates.p10 / pd_
    reject = np.where(k >= 0, scipy.stats.binom.cdf(k, m, q) + scipy.stats.binom.sf(m - k - 1, m, q), 0.0)
    return float(min(1.0, np.sum(weight * reject)))


def _check_target(power: float) -> float:
    return _check_level(power, "power")


def _check_effect(rates: PairedRates) -> None:
    if abs(rates.effect) <= _TOL:
        raise ValueError(f"the effect p2 - p1 is 0 (p1 = p2 = {rates.p1:g}): no number of items detects it")


def _smallest(power_at, target: float, start: int, limit: int) -> tuple[int, float]:
    """The smallest n in [1, limit] with power_at(n) >= target (bisection from `start`, then
    stepped down while the one below still reaches it)."""
    hi = max(1, start)
    while power_at(hi) < target:
        if hi >= limit:
            raise ValueError(f"no sample size up to {limit:,} reaches power {target:g}: the effect is too small for the discordance")
        hi = min(limit, hi * 2)
    lo = 0  # power_at(lo) < target (power at 0 is 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power_at(mid) >= target:
            hi = mid
        else:
            lo = mid
    while hi > 1 and power_at(hi - 1) >= target:
        hi -= 1
    return hi, power_at(hi)


def _normal_pairs(rates: PairedRates, power: float, alpha: float) -> int:
    """Connor's (1987) normal approximation of the pairs the McNemar test needs (a starting point)."""
    za, zb = scipy.stats.norm.isf(alpha / 2), scipy.stats.norm.ppf(power)
    d, pd_ = abs(rates.effect), rates.discordance
    return max(1, math.ceil(((za * math.sqrt(pd_) + zb * math.sqrt(max(pd_ - d * d, 0.0))) / d) ** 2))


def mcnemar_size(rates: PairedRates, power: float = 0.8, alpha: float = 0.05) -> tuple[int, float]:
    """(n, its power): the fewest independent pairs at which the exact McNemar test reaches `power`."""
    power, alpha = _check_target(power), _alpha(alpha)
    _check_effect(rates)
    start = _normal_pairs(rates, power, alpha)
    return _smallest(lambda n: mcnemar_power(n, rates, alpha), power, start, MAX_N)


@dataclass(frozen=True)
class ClusterDesign:
    """Pairs per item (each item's count drawn uniformly from `sizes`: one value for a fixed design,
    a pilot's observed counts otherwise) and the intracluster correlation of an item's pairs."""

    sizes: tuple[int, ...] = (1,)
    icc: float = 0.0

    def __post_init__(self) -> None:
        if not self.sizes or any(int(s) != s or s < 1 for s in self.sizes):
            raise ValueError(f"pairs per item must be whole numbers >= 1, not {list(self.sizes)!r}")
        if not 0.0 <= float(self.icc) < 1.0 or math.isnan(float(self.icc)):
            raise ValueError(f"icc (the intracluster correlation of an item's pairs) must lie in [0, 1), not {self.icc!r}")

    @property
    def clustered(self) -> bool:
        """The toolkit's rule (``tests.several_pairs``): the clustered test where an item gives several pairs."""
        return max(self.sizes) > 1

    @property
    def mean_pairs(self) -> float:
        return float(np.mean(self.sizes))

    def variance_factor(self) -> float:
        """E[(1 + (m - 1) icc) / m] over the sizes: the variance of an item's (b - c) / m over that of one pair."""
        m = np.asarray(self.sizes, dtype=np.float64)
        return float(np.mean((1 + (m - 1) * self.icc) / m))


def _item_differences(rng: np.random.Generator, runs: int, items: int, rates: PairedRates, design: ClusterDesign) -> np.ndarray:
    """(runs, items) of each simulated item's (b_j - c_j) / m_j."""
    shares = rates.shares()
    sizes = np.asarray(design.sizes, dtype=np.int64)
    m = sizes[rng.integers(0, sizes.size, size=(runs, items))] if sizes.size > 1 else np.full((runs, items), sizes[0])
    if design.icc > 0 and m.max() > 1:
        kappa = 1.0 / design.icc - 1.0
        alpha_ = np.maximum(shares * kappa, 1e-300)
        q = rng.dirichlet(alpha_, size=(runs, items))
    else:
        q = np.broadcast_to(shares, (runs, items, 4))
    top = int(m.max())
    u = rng.random((runs, items, top))
    lo_b = q[..., 0:1]
    lo_c = lo_b + q[..., 1:2]
    hi_c = lo_c + q[..., 2:3]
    live = np.arange(top) < m[..., None]
    b = np.count_nonzero(live & (u >= lo_b) & (u < lo_c), axis=-1)
    c = np.count_nonzero(live & (u >= lo_c) & (u < hi_c), axis=-1)
    return (b - c) / m


def clustered_power_curve(items: int, rates: PairedRates, design: ClusterDesign, alpha: float = 0.05, sims: int = SIMULATIONS, seed: int = 0) -> np.ndarray:
    """The simulated power of Durkalski's clustered McNemar test at 0..items items (index = items):
    each run's items are drawn once and the test read from their running sums."""
    alpha = _alpha(alpha)
    if int(sims) != sims or sims < 1:
        raise ValueError(f"sims must be a whole number >= 1, not {sims!r}")
    items = int(items)
    crit = float(scipy.stats.chi2.isf(alpha, 1))
    rng = np.random.default_rng(seed)
    hits = np.zeros(items + 1)
    chunk = max(1, min(int(sims), 4_000_000 // max(1, items * max(design.sizes))))
    done = 0
    while done < sims:
        runs = min(chunk, int(sims) - done)
        d = _item_differences(rng, runs, items, rates, design)
        s, q = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            stat = np.where(q > 0, s * s / np.where(q > 0, q, 1.0), 0.0)
        reject = stat >= crit
        reject[:, 0] = False  # one item: the test is undefined (p None), never a rejection
        hits[1:] += reject.sum(axis=0)
        done += runs
    return hits / float(sims)


def clustered_power(items: int, rates: PairedRates, design: ClusterDesign, alpha: float = 0.05, sims: int = SIMULATIONS, seed: int = 0) -> float:
    """The simulated power of Durkalski's clustered McNemar test with `items` items."""
    if int(items) != items or items < 0:
        raise ValueError(f"items must be a whole number >= 0, not {items!r}")
    if items == 0:
        return 0.0
    return float(clustered_power_curve(int(items), rates, design, alpha, sims, seed)[int(items)])


def _normal_items(rates: PairedRates, design: ClusterDesign, power: float, alpha: float) -> int:
    """The normal approximation of the items Durkalski's test needs: an item's d_j = (b_j - c_j) /
    m_j has mean -effect and variance f * (discordance - effect^2) (f: ``variance_factor``), and
    sum(d) / sqrt(sum(d^2)) is then about N(sqrt(G) mu / r, sigma^2 / r^2), r^2 = sigma^2 + mu^2."""
    mu = abs(rates.effect)
    var = design.variance_factor() * max(rates.discordance - mu * mu, 0.0)
    za, zb = scipy.stats.norm.isf(alpha / 2), scipy.stats.norm.ppf(power)
    return max(2, math.ceil(((za * math.sqrt(var + mu * mu) + zb * math.sqrt(var)) / mu) ** 2))


def _smoothed(curve: np.ndarray, sims: int, target: float) -> tuple[float, float] | None:
    """(a, b) of probit(power) = a + b * sqrt(items), fitted by weighted least squares to the
    simulated curve where it lies near the target (0.3 .. 0.99), each point weighted by the inverse
    variance of its probit; None when too few points lie there or the fit does not rise."""
    g = np.arange(curve.size)
    p = curve
    near = (g >= 2) & (p >= max(0.3, target - 0.3)) & (p <= min(0.99, target + 0.15))
    if np.count_nonzero(near) < 5:
        return None
    z = scipy.stats.norm.ppf(p[near])
    w = sims * scipy.stats.norm.pdf(z) ** 2 / (p[near] * (1 - p[near]))
    x = np.sqrt(g[near].astype(np.float64))
    design = np.stack([np.ones_like(x), x], axis=1) * np.sqrt(w)[:, None]
    (a, b), *_ = np.linalg.lstsq(design, z * np.sqrt(w), rcond=None)
    return (float(a), float(b)) if b > 0 else None


def clustered_size(
    rates: PairedRates, design: ClusterDesign, power: float = 0.8, alpha: float = 0.05, sims: int = SIMULATIONS, seed: int = 0
) -> tuple[int, float]:
    """(items, their power): the fewest items at which Durkalski's clustered McNemar test reaches
    `power`. The simulated power curve over items (one simulation, see the module) is smoothed near
    the target by a probit fit in sqrt(items) (the normal approximation's shape), so that the first
    crossing of a noisy curve does not plan too few items; the power given is the fitted one at that
    number (the raw simulated curve where the fit cannot be made)."""
    power, alpha = _check_target(power), _alpha(alpha)
    _check_effect(rates)
    top = int(1.5 * _normal_items(rates, design, power, alpha)) + 20
    while True:
        curve = clustered_power_curve(top, rates, design, alpha, sims, seed)
        fit = _smoothed(curve, int(sims), power)
        if fit is not None:
            a, b = fit
            g = max(2, math.ceil(((scipy.stats.norm.ppf(power) - a) / b) ** 2 - 1e-9))
            if g <= top:
                return g, float(scipy.stats.norm.cdf(a + b * math.sqrt(g)))
        reached = np.nonzero(curve >= power)[0]
        if fit is None and reached.size and curve[-1] >= min(0.99, power + 0.15):
            g = int(reached[0])
            return g, float(curve[g])
        if top * max(design.sizes) >= MAX_N:
            raise ValueError(f"no number of items up to {top:,} reaches power {power:g}: the effect is too small for the discordance")
        top *= 2


def fitted_power(items: int, rates: PairedRates, design: ClusterDesign, target: float, alpha: float = 0.05, sims: int = SIMULATIONS, seed: int = 0) -> float:
    """The clustered test's power at `items` as `clustered_size` reads it: the probit fit to the
    simulated curve near `target` (the raw simulated power where the curve gives no fit there)."""
    curve = clustered_power_curve(int(1.5 * items) + 20, rates, design, alpha, sims, seed)
    fit = _smoothed(curve, int(sims), target)
    if fit is None:
        return float(curve[int(items)])
    return float(scipy.stats.norm.cdf(fit[0] + fit[1] * math.sqrt(items)))


def _rates_at(p1: float, effect: float, discordance: float | None, correlation: float | None) -> PairedRates | None:
    try:
        return paired_rates(p1, p1 + effect, discordance, correlation)
    except ValueError:
        return None


def smallest_effect(
    n: int,
    p1: float,
    discordance: float | None = None,
    correlation: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    design: ClusterDesign | None = None,
    direction: str = "up",
    sims: int = SIMULATIONS,
    seed: int = 0,
) -> tuple[PairedRates, float] | None:
    """The smallest effect |p2 - p1| that n items detect with `power` (p2 above p1 with direction
    "up", below with "down"), holding p1 and the discordance (or the correlation) fixed: (the rates
    at that effect, the power there), None when no effect the rates allow reaches it. The test is
    the one the design picks (exact McNemar with one pair per item, else clustered, simulated with
    the same seed at every effect tried)."""
    p1 = _check_share(p1, "p1")
    power, alpha = _check_target(power), _alpha(alpha)
    if int(n) != n or n < 1:
        raise ValueError(f"items must be a whole number >= 1, not {n!r}")
    if direction not in ("up", "down"):
        raise ValueError(f"direction must be 'up' or 'down', not {direction!r}")
    sign = 1.0 if direction == "up" else -1.0
    design = design or ClusterDesign()
    if discordance is None and correlation is None:
        raise ValueError("give one of discordance or correlation")

    def power_at(r: PairedRates) -> float:
        if design.clustered:
            return fitted_power(int(n), r, design, power, alpha, sims, seed)
        return mcnemar_power(int(n), r, alpha)

    room = (1.0 - p1) if sign > 0 else p1
    grid = [room * i / 256 for i in range(1, 257)]
    feasible = [e for e in grid if (r := _rates_at(p1, sign * e, discordance, correlation)) is not None and abs(r.effect) > _TOL]
    if not feasible:
        return None
    floor = feasible[0]  # the effects below it are impossible with these rates
    lo, hi = max(0.0, floor - room / 256), feasible[-1]
    if design.clustered:  # a bracket from the normal approximation, so that few simulated steps remain
        lo, hi = _bracket(int(n), p1, sign, feasible, discordance, correlation, design, power, alpha, power_at, (lo, hi))
    best = _rates_at(p1, sign * hi, discordance, correlation)
    assert best is not None
    if power_at(best) < power:
        return None
    tol = 5e-4 if design.clustered else 1e-5  # a simulated power moves in steps of 1 / sims: 0.05 points is its resolution
    while hi - lo > tol:  # bisection: power rises with the effect
        mid = (lo + hi) / 2
        r = _rates_at(p1, sign * mid, discordance, correlation)
        if r is not None and abs(r.effect) > _TOL and power_at(r) >= power:
            hi, best = mid, r
        else:
            lo = mid
    return best, power_at(best)


def _normal_power(items: int, rates: PairedRates, design: ClusterDesign, alpha: float) -> float:
    """The normal approximation of the clustered test's power (see `_normal_items`)."""
    mu = abs(rates.effect)
    var = design.variance_factor() * max(rates.discordance - mu * mu, 0.0)
    r = math.sqrt(var + mu * mu)
    if r == 0:
        return 0.0
    z, mean, sd = scipy.stats.norm.isf(alpha / 2), math.sqrt(items) * mu / r, math.sqrt(var) / r
    if sd == 0:
        return 1.0 if mean > z else 0.0
    return float(scipy.stats.norm.sf((z - mean) / sd) + scipy.stats.norm.cdf((-z - mean) / sd))


def _bracket(n, p1, sign, feasible, discordance, correlation, design, power, alpha, power_at, whole) -> tuple[float, float]:
    """(lo, hi) effects around the normal approximation's smallest effect (x0.8, x1.25) whose
    simulated powers fall short of and reach the target; the whole feasible range where they do not."""
    approx = next((e for e in feasible if (r := _rates_at(p1, sign * e, discordance, correlation)) and _normal_power(n, r, design, alpha) >= power), None)
    if approx is None:
        return whole
    lo, hi = max(whole[0], 0.8 * approx), min(whole[1], 1.25 * approx)
    r_lo, r_hi = _rates_at(p1, sign * lo, discordance, correlation), _rates_at(p1, sign * hi, discordance, correlation)
    if r_lo is None or r_hi is None or power_at(r_hi) < power or power_at(r_lo) >= power:
        return whole
    return lo, hi


class PilotRates(TypedDict):
    """What a pilot's pairs say for planning (`pilot_rates`)."""

    rates: PairedRates
    pairs: int
    items: int
    sizes: tuple[int, ...]  # pairs per item
    icc: float


def pilot_rates(a: Sequence[bool] | np.ndarray, b: Sequence[bool] | np.ndarray, clusters: Sequence[Hashable]) -> PilotRates:
    """What a pilot's pairs say for planning: the rates, the discordant shares, the pairs per item
    and the intracluster correlation of the items' (b_j - c_j) / m_j, by the method of moments
    (sum_j m_j (d_j - mean)^2 / (discordance - effect^2) = sum_j (1 + (m_j - 1) icc), clipped to
    [0, 0.99]; 0 when every item gives one pair)."""
    xa, xb = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if not (xa.size == xb.size == len(clusters)):
        raise ValueError(f"a, b and clusters differ in length ({xa.size}, {xb.size}, {len(clusters)})")
    if xa.size == 0:
        raise ValueError("the pilot has no pairs for this comparison")
    codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)[1]
    g = int(codes.max()) + 1
    m = np.bincount(codes, minlength=g)
    diff = (xa & ~xb).astype(np.float64) - (~xa & xb).astype(np.float64)
    d = np.bincount(codes, weights=diff, minlength=g) / m
    p10, p01 = float(np.mean(xa & ~xb)), float(np.mean(~xa & xb))
    v = p10 + p01 - (p01 - p10) ** 2
    icc = 0.0
    if m.max() > 1 and v > 0:
        mu = float(np.sum(d * m) / m.sum())
        icc = float((np.sum(m * (d - mu) ** 2) / v - g) / max(1, int(np.sum(m - 1))))
        icc = min(max(icc, 0.0), 0.99)
    rates = PairedRates(float(xa.mean()), float(xb.mean()), p10, p01)
    return {"rates": rates, "pairs": int(xa.size), "items": g, "sizes": tuple(int(s) for s in m), "icc": icc}
