"""Logprob scoring: the option letters' log-probabilities at the first reply position, read from
one call with max_tokens=1 (no free generation). The full distribution is kept. A letter absent
from the top-k list gets no mass; if no letter is in the list the answer is invalid."""

from __future__ import annotations

import math


def choice_from_logprobs(top_logprobs: list[dict[str, float]] | None, letters: str = "ABCD") -> tuple[str | None, dict[str, float]]:
    """(argmax letter or None, normalised distribution over the letters seen)."""
    if not top_logprobs:
        return None, {}
    first = top_logprobs[0]
    best: dict[str, float] = {}
    for token, lp in first.items():
        t = token.strip().strip("(").strip("*").strip()
        if len(t) == 1 and t in letters:
            best[t] = max(best.get(t, -math.inf), lp)
    if not best:
        return None, {}
    m = max(best.values())
    z = sum(math.exp(v - m) for v in best.values())
    dist = {k: math.exp(v - m) / z for k, v in sorted(best.items())}
    return max(best, key=best.__getitem__), dist
