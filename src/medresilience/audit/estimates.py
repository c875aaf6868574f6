"""Shares over the audit's weighted sample: each audited unit stands for N_h / n_h units of its
stratum, so a share of a cell is the weighted ratio sum(w x event) / sum(w x counted), and its 95%
interval is Wilson's at Kish's effective sample size n_eff = (sum w)^2 / sum(w^2) (with k_eff =
p x n_eff). When every unit of a cell has the same weight (one stratum, or a census) this is the
plain Wilson interval of k of n. Each share also carries the unweighted k and n it counts."""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy.stats import norm

from ..runtime.jsontypes import JSONObject

Z95 = float(norm.ppf(0.975))


def wilson_interval(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a share p over a (possibly effective, non-integer) n > 0."""
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def weighted_share(events: Sequence[bool], weights: Sequence[float]) -> JSONObject:
    """{k, n, p, lo, hi, n_eff}: the weighted share of the events among the counted units (their
    weights), with the unweighted k and n; p, lo, hi and n_eff None when n is 0."""
    n, k = len(events), sum(1 for e in events if e)
    if n == 0:
        return {"k": 0, "n": 0, "p": None, "lo": None, "hi": None, "n_eff": None}
    total = sum(weights)
    p = sum(w for e, w in zip(events, weights) if e) / total
    n_eff = total * total / sum(w * w for w in weights)
    lo, hi = wilson_interval(p, n_eff)
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return {"k": k, "n": n, "p": p, "lo": lo, "hi": hi, "n_eff": n_eff}
