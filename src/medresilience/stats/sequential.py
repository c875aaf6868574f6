"""Anytime-valid confidence sequences: intervals that hold at every sample size at once, so a run
may look at them after every item and stop whenever it likes (optional stopping) and the interval
at the stopping time still covers the truth with the stated confidence.

The construction is the hedged-capital betting confidence sequence for the mean of values in
[0, 1] (Waudby-Smith & Ramdas 2023, "Estimating means of bounded random variables by betting",
JRSS-B, Thm 3; the defaults of `confseq.betting.hedged_cs` 0.0.11, Howard et al.): for each
candidate mean m, two gamblers bet for and against m with predictable bets lambda_t (the
predictable-mixture empirical-Bernstein bets, truncated at 1/2m and 1/2(1-m)); their capital
max(K+/2, K-/2) is a nonnegative supermartingale under m, so by Ville's inequality it ever
reaches 1/alpha with probability at most alpha. The sequence at time t is every m on a grid of
`breaks` steps whose capital is below 1/alpha, widened by one grid step, and intersected with
every earlier one (the running intersection, still valid).

- a rate (a Bernoulli mean, or a per-item share in [0, 1]): `rate_cs(values)`;
- a paired difference of two rates on the same items (a - b in [-1, 1]): `paired_cs(a, b)`, the
  rate sequence of (a - b + 1) / 2 mapped back; only discordant items (a != b) move the capital
  away from m = 1/2, the McNemar idea.

Both take one sequence (1-D, in the order the items were run) or many (2-D, one run per row, for
simulation), and return the lower and upper bound at every time. The values must be in the
order they were drawn: the guarantee is for a random order fixed before the outcomes are seen.

May import: nothing of medresilience."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["SequenceInterval", "cs_blocks", "paired_cs", "rate_cs", "running_cs"]

#: grid steps of the candidate means (confseq's default)
BREAKS = 1000
#: about how many floats one step of the grid evaluation holds (rows x times x grid points)
_CELLS = 2_000_000


@dataclass(frozen=True)
class SequenceInterval:
    """The anytime-valid interval at the last time of a sequence: its bounds and how many values
    it stands on (`n`), at `confidence`."""

    lo: float
    hi: float
    n: int
    confidence: float

    @property
    def width(self) -> float:
        return self.hi - self.lo

    def excludes(self, value: float) -> bool:
        return value < self.lo or value > self.hi

    def as_dict(self) -> dict[str, float | int]:
        return {"lo": self.lo, "hi": self.hi, "n": self.n, "confidence": self.confidence, "width": self.width}


def _as_rows(x: np.ndarray | list[float]) -> tuple[np.ndarray, bool]:
    arr = np.asarray(x, dtype=float)
    one = arr.ndim == 1
    arr = np.atleast_2d(arr)
    if arr.ndim != 2:
        raise ValueError("values must be one sequence (1-D) or one sequence per row (2-D)")
    if not np.all(np.isfinite(arr)) or (arr.size and (arr.min() < 0 or arr.max() > 1)):
        raise ValueError("values must be finite and within [0, 1]")
    return arr, one


def _bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable-mixture empirical-Bernstein bets lambda_t of each row (confseq's
    `lambda_predmix_eb` with prior mean 1/2, prior variance 1/4, one fake observation): they use
    the values before t only."""
    t = np.arange(1, x.shape[1] + 1, dtype=float)
    mu = np.minimum((0.5 + np.cumsum(x, axis=1)) / (t + 1), 1.0)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (t + 1)
    before = np.concatenate([np.full((x.shape[0], 1), 0.25), sigma2[:, :-1]], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.sqrt(2 * math.log(1 / alpha) / (t * np.log1p(t) * before))
    return np.nan_to_num(lam, nan=0.0, posinf=0.0)


def running_cs(x: np.ndarray | list[float], alpha: float = 0.05, breaks: int = BREAKS) -> tuple[np.ndarray, np.ndarray]:
    """The hedged-capital confidence sequence (see the module) of the mean of each row of `x`
    (values in [0, 1]): (lower, upper) at every time, of x's shape."""
    arr, one = _as_rows(x)
    if arr.shape[1] == 0:
        lo, hi = np.ones(arr.shape), np.zeros(arr.shape)
    else:
        parts = list(cs_blocks(arr, alpha, breaks, arr.shape[1]))
        lo, hi = np.concatenate([p[0] for p in parts], axis=1), np.concatenate([p[1] for p in parts], axis=1)
    return (lo[0], hi[0]) if one else (lo, hi)


def cs_blocks(x: np.ndarray, alpha: float = 0.05, breaks: int = BREAKS, block: int = 256) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """`running_cs` of the rows of `x` (2-D) a block of `block` times at a time, each (lower,
    upper) of rows x block: a caller that has what it needs (every row stopped) stops asking."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be within (0, 1)")
    arr, _ = _as_rows(x)
    rows, n = arr.shape
    lam = _bets(arr, alpha / 2)  # each gambler at alpha * theta, theta = 1/2
    grid = np.arange(0, breaks + 1) / breaks
    threshold = math.log(1 / alpha) - math.log(0.5)  # capital max(K+, K-) / 2 below 1/alpha
    gain0, loss0 = np.zeros((rows, grid.size)), np.zeros((rows, grid.size))  # log capital before the block
    before_lo, before_hi = np.zeros((rows, 1)), np.ones((rows, 1))  # the running intersection so far
    for t0 in range(0, n, block):
        xb, lb = arr[:, t0 : t0 + block, None], lam[:, t0 : t0 + block, None]
        width = xb.shape[1]
        lo, hi = np.ones((rows, width)), np.zeros((rows, width))
        step = max(1, _CELLS // (rows * width))
        for g0 in range(0, grid.size, step):
            m = grid[None, None, g0 : g0 + step]
            with np.errstate(divide="ignore"):
                # bets for m truncated at 1/2m, against it at 1/2(1-m): every factor is at least 1/2
                up = np.minimum(lb, 0.5 / m)
                down = np.minimum(lb, 0.5 / (1 - m))
            centred = xb - m
            gain = gain0[:, None, g0 : g0 + step] + np.cumsum(np.log1p(up * centred), axis=1)
            loss = loss0[:, None, g0 : g0 + step] + np.cumsum(np.log1p(-down * centred), axis=1)
            gain0[:, g0 : g0 + step], loss0[:, g0 : g0 + step] = gain[:, -1, :], loss[:, -1, :]
            inside = np.maximum(gain, loss) <= threshold
            got = inside.any(axis=2)
            first = m[0, 0, np.argmax(inside, axis=2)]
            last = m[0, 0, inside.shape[2] - 1 - np.argmax(inside[:, :, ::-1], axis=2)]
            lo = np.where(got, np.minimum(lo, first), lo)
            hi = np.where(got, np.maximum(hi, last), hi)
        empty = lo > hi  # no candidate left: the whole range, as confseq does
        lo, hi = np.where(empty, 0.0, lo), np.where(empty, 1.0, hi)
        lo = np.maximum(0.0, lo - 1 / breaks)
        hi = np.minimum(1.0, hi + 1 / breaks)
        lo = np.maximum.accumulate(np.concatenate([before_lo, lo], axis=1), axis=1)[:, 1:]
        hi = np.minimum.accumulate(np.concatenate([before_hi, hi], axis=1), axis=1)[:, 1:]
        before_lo, before_hi = lo[:, -1:], hi[:, -1:]
        yield lo, hi


def rate_cs(values: list[float] | np.ndarray, confidence: float = 0.95, breaks: int = BREAKS) -> SequenceInterval:
    """The anytime-valid interval of a rate (each value one item's outcome in [0, 1], in the order
    run) after the last value; (0, 1) before any."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return SequenceInterval(0.0, 1.0, 0, confidence)
    lo, hi = running_cs(x, 1 - confidence, breaks)
    return SequenceInterval(float(lo[-1]), float(hi[-1]), int(x.size), confidence)


def paired_cs(a: list[float] | np.ndarray, b: list[float] | np.ndarray, confidence: float = 0.95, breaks: int = BREAKS) -> SequenceInterval:
    """The anytime-valid interval of the mean paired difference a - b (each a[i], b[i] one item's
    outcomes in [0, 1] under the two arms, in the order run); (-1, 1) before any pair."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired values must have the same length")
    if a.size == 0:
        return SequenceInterval(-1.0, 1.0, 0, confidence)
    lo, hi = running_cs((a - b + 1) / 2, 1 - confidence, breaks)
    return SequenceInterval(float(2 * lo[-1] - 1), float(2 * hi[-1] - 1), int(a.size), confidence)
