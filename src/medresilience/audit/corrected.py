"""Headline rates corrected for label error (prediction-powered inference, Angelopoulos et al.,
Science 2023): the run's reading labels every unit of the population; the audit's second reading
labels a stratified sample of them. Per (model, setting, condition) the accuracy (a unit is right
when its reading is the key; an unread reply is not right, the study's rule) is estimated as

    theta = sum_h W_h [ mean of the run's right over the N_h units of stratum h
                        + mean of (second reading's right - run's right) over its n_h audited units ]

with W_h = N_h / N, and its 95% interval from var = sum_h W_h^2 (s2_run,h / N_h + s2_diff,h / n_h).
Beside it: the plain rate (the run's reading alone, k of N with Wilson's interval) and how much
wider the label error makes the interval. A stratum with no decided second reading is left
uncorrected (its rectifier is unknown) and counted in `uncorrected_strata`."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .. import stats
from .estimates import Z95
from .reader import SecondReading
from .sample import AuditUnit


def _var(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _right(label: str | None, gold: str | None) -> float:
    return float(label is not None and label == gold)


def ppi_accuracy(pop: Sequence[AuditUnit], audited: Sequence[tuple[AuditUnit, SecondReading]]) -> dict[str, Any]:
    """The label-corrected accuracy of one cell's population (see the module)."""
    strata: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for u in pop:
        strata[u.stratum].append(_right(u.rule_label, u.gold))
    diffs: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for u, s in audited:
        diffs[u.stratum].append(_right(s.label, u.gold) - _right(u.rule_label, u.gold))
    N = sum(len(v) for v in strata.values())
    theta = var = 0.0
    uncorrected = 0
    for h, ys in strata.items():
        w = len(ys) / N
        d = diffs.get(h, [])
        theta += w * (sum(ys) / len(ys) + (sum(d) / len(d) if d else 0.0))
        var += w * w * (_var(ys) / len(ys) + (_var(d) / len(d) if d else 0.0))
        uncorrected += 0 if d else 1
    k = int(sum(sum(v) for v in strata.values()))
    plain = stats.wilson(k, N).as_dict()
    half = Z95 * math.sqrt(var)
    lo, hi = max(0.0, theta - half), min(1.0, theta + half)
    width = (plain["hi"] - plain["lo"]) if plain["p"] is not None else None
    return {
        "plain": plain,
        "corrected": {"p": theta, "lo": lo, "hi": hi, "n": N, "audited": len(audited)},
        "widening": None if not width else (hi - lo) / width,
        "uncorrected_strata": uncorrected,
    }


def corrected_rates(pop: Sequence[AuditUnit], units: Sequence[AuditUnit], readings: dict[str, SecondReading]) -> list[dict[str, Any]]:
    """Per (model, setting, condition): the accuracy, plain and label-corrected."""
    cells: dict[tuple[str, str, str], list[AuditUnit]] = defaultdict(list)
    for u in pop:
        cells[u.cell].append(u)
    audited: dict[tuple[str, str, str], list[tuple[AuditUnit, SecondReading]]] = defaultdict(list)
    for u in units:
        r = readings.get(u.key)
        if r is not None and r.decided:
            audited[u.cell].append((u, r))
    out = []
    for (m, st, c), members in sorted(cells.items()):
        row = ppi_accuracy(members, audited.get((m, st, c), []))
        out.append({"model": m, "setting": st, "condition": c, "metric": "accuracy", **row, "line": widening_line(row)})
    return out


def widening_line(row: dict[str, Any]) -> str:
    """One line: how much wider label error makes the interval (or narrower, when the audit finds none)."""
    w = row.get("widening")
    if w is None:
        return "no interval to compare"
    if w >= 1:
        return f"label error makes the interval {100 * (w - 1):.0f}% wider"
    return f"the corrected interval is {100 * (1 - w):.0f}% narrower than the plain one"
