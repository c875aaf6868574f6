"""Stopping rules simulated: many seeded runs of known truth, each stopped by a rule looked at after
every item from `min_n` on (or run to `n_max`), and what the interval at the stopping time did.
Two rules side by side on the same simulated runs:

- anytime: stop when the anytime-valid interval (`sequential`) meets the rule; report it;
- naive: stop when the fixed-sample interval (Wilson for a rate, normal for a paired difference)
  meets the rule, and report that interval as if the sample size had been fixed in advance.

The rules: `width` (the interval narrower than a width) for a rate, `decided` (the interval of a
paired difference excludes 0) for a pair of arms. What comes out: how often the interval at the
stopping time covers the truth, and how many items each rule used. The tests and bench/ use it;
everything is vectorised over runs.

May import: nothing of medresilience."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import norm

from .sequential import cs_blocks

__all__ = ["RuleOutcome", "naive_paired", "simulate_decided", "simulate_width", "wilson_bounds"]


@dataclass(frozen=True)
class RuleOutcome:
    """One rule over the simulated runs: the share whose interval at the stopping time covers the
    truth, the mean and median items used, and the share that stopped before `n_max`."""

    coverage: float
    mean_n: float
    median_n: float
    stopped_early: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def wilson_bounds(k: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of k of n, elementwise (n > 0)."""
    z = float(norm.ppf(0.5 + confidence / 2))
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * np.sqrt(k * (n - k) / n + z * z / 4)
    return centre - half, centre + half


def naive_paired(d: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-sample normal interval of the mean paired difference after every item of each
    row of `d` (values in [-1, 1]): mean +- z * sd / sqrt(t)."""
    z = float(norm.ppf(0.5 + confidence / 2))
    t = np.arange(1, d.shape[1] + 1)
    mean = np.cumsum(d, axis=1) / t
    var = np.maximum(np.cumsum(d * d, axis=1) / t - mean**2, 0.0) * t / np.maximum(t - 1, 1)
    half = z * np.sqrt(var / t)
    return mean - half, mean + half


def _stop(meets: np.ndarray, min_n: int) -> np.ndarray:
    """The index of each row's first look (from item `min_n` on) that meets the rule; the last
    index when none does."""
    meets = meets.copy()
    meets[:, : max(0, min_n - 1)] = False
    meets[:, -1] = True
    return np.argmax(meets, axis=1)


def _covered(stop: np.ndarray, lo: np.ndarray, hi: np.ndarray, truth: float) -> np.ndarray:
    rows = np.arange(stop.size)
    return (lo[rows, stop] <= truth) & (truth <= hi[rows, stop])


def _outcome(used: np.ndarray, covered: np.ndarray, n_max: int) -> RuleOutcome:
    return RuleOutcome(float(covered.mean()), float(used.mean()), float(np.median(used)), float((used < n_max).mean()))


def _anytime(blocks: Iterator[tuple[np.ndarray, np.ndarray]], meets, truth: float, n_max: int, min_n: int) -> tuple[np.ndarray, np.ndarray]:
    """(items used, covered) of each row under the anytime rule, reading the sequence a block of
    times at a time and no further than every row's stop."""
    stop: np.ndarray | None = None
    covered: np.ndarray | None = None
    t0 = 0
    for lo, hi in blocks:
        if stop is None or covered is None:
            stop, covered = np.full(lo.shape[0], -1), np.zeros(lo.shape[0], dtype=bool)
        t = np.arange(t0, t0 + lo.shape[1])
        ok = meets(lo, hi) & (t >= min_n - 1)[None, :]
        if t0 + lo.shape[1] == n_max:
            ok[:, -1] = True
        first = np.argmax(ok, axis=1)
        new = np.nonzero((stop < 0) & ok.any(axis=1))[0]
        stop[new] = t0 + first[new]
        covered[new] = (lo[new, first[new]] <= truth) & (truth <= hi[new, first[new]])
        t0 += lo.shape[1]
        if (stop >= 0).all():
            break
    assert stop is not None and covered is not None
    return stop + 1, covered


def _simulate(draw, anytime, naive, truth: float, n_max: int, runs: int, min_n: int, batch: int) -> dict[str, RuleOutcome]:
    """Runs in batches of `batch` rows (memory stays bounded at any suite size): `draw(rows)` gives
    each batch's values; `anytime(values)` the sequence's blocks and the rule on them, `naive(values)`
    the fixed-sample (lower, upper, meets) at every time."""
    got: dict[str, tuple[list, list]] = {"anytime": ([], []), "naive": ([], [])}
    for start in range(0, runs, batch):
        values = draw(min(batch, runs - start))
        blocks, meets = anytime(values)
        used, covered = _anytime(blocks, meets, truth, n_max, min_n)
        got["anytime"][0].append(used)
        got["anytime"][1].append(covered)
        lo, hi, meets = naive(values)
        stop = _stop(meets, min_n)
        got["naive"][0].append(stop + 1)
        got["naive"][1].append(_covered(stop, lo, hi, truth))
    return {name: _outcome(np.concatenate(u), np.concatenate(c), n_max) for name, (u, c) in got.items()}


def simulate_width(
    p: float,
    width: float,
    n_max: int,
    runs: int = 1000,
    seed: int = 0,
    min_n: int = 10,
    confidence: float = 0.95,
    breaks: int = 200,
    batch: int = 1000,
) -> dict[str, RuleOutcome]:
    """`runs` simulated runs of up to `n_max` items, each right with probability `p`, stopped when
    the interval is narrower than `width`: {"anytime": ..., "naive": ...}."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, n_max + 1)[None, :]

    def anytime(x: np.ndarray):
        return cs_blocks(x, 1 - confidence, breaks), lambda lo, hi: hi - lo < width

    def naive(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        wlo, whi = wilson_bounds(np.cumsum(x, axis=1), t, confidence)
        return wlo, whi, whi - wlo < width

    return _simulate(lambda rows: (rng.random((rows, n_max)) < p).astype(float), anytime, naive, p, n_max, runs, min_n, batch)


def simulate_decided(
    p10: float,
    p01: float,
    n_max: int,
    runs: int = 1000,
    seed: int = 0,
    min_n: int = 10,
    confidence: float = 0.95,
    breaks: int = 200,
    batch: int = 1000,
) -> dict[str, RuleOutcome]:
    """`runs` simulated runs of up to `n_max` paired items, discordant one way (arm a right, b
    wrong) with probability `p10` and the other with `p01`, stopped when the interval of the
    difference a - b excludes 0; coverage of the true difference p10 - p01."""
    rng = np.random.default_rng(seed)

    def draw(rows: int) -> np.ndarray:
        u = rng.random((rows, n_max))
        return np.where(u < p10, 1.0, np.where(u < p10 + p01, -1.0, 0.0))

    def anytime(d: np.ndarray):
        # the sequence of (d + 1) / 2 in [0, 1], mapped back to the difference
        blocks = ((2 * lo - 1, 2 * hi - 1) for lo, hi in cs_blocks((d + 1) / 2, 1 - confidence, breaks))
        return blocks, lambda lo, hi: (lo > 0) | (hi < 0)

    def naive(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nlo, nhi = naive_paired(d, confidence)
        return nlo, nhi, (nlo > 0) | (nhi < 0)

    return _simulate(draw, anytime, naive, p10 - p01, n_max, runs, min_n, batch)
