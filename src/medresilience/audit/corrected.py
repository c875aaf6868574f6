"""Headline rates corrected for label error (prediction-powered inference: stats.ppi_mean, a
two-phase PPI++ mean over the audit's strata). The run's reading labels every unit of the
population; the audit's second reading labels a stratified sample of them. Per (model, setting,
condition) the accuracy (a unit is right when its reading is the key; an unread reply is not
right, the study's rule) is estimated from both, each unit's stratum the audit's (its tier inside
the cell), its cluster the item (several probes of one item are not independent). Beside it: the
plain rate on the run's reading alone, and one line on how much wider label error makes the
interval. A unit whose second reading is unscored counts as not audited; a stratum left with
fewer than stats.MIN_AUDITED_PER_STRATUM audited units (and not fully audited) refuses the
estimate, with the reason."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .. import stats
from .reader import SecondReading
from .sample import AuditUnit


def _right(label: str | None, gold: str | None) -> float:
    return float(label is not None and label == gold)


def ppi_accuracy(pop: Sequence[AuditUnit], readings: dict[str, SecondReading]) -> stats.PPIRate:
    """The label-corrected accuracy of one cell's population (see the module)."""
    machine = [_right(u.rule_label, u.gold) for u in pop]
    human: list[float | None] = []
    for u in pop:
        r = readings.get(u.key)
        human.append(_right(r.label, u.gold) if r is not None and r.decided else None)
    return stats.ppi_mean(machine, human, strata=[u.tier for u in pop], clusters=[u.item_id for u in pop])


def corrected_rates(pop: Sequence[AuditUnit], units: Sequence[AuditUnit], readings: dict[str, SecondReading]) -> list[dict[str, Any]]:
    """Per (model, setting, condition): the accuracy, plain and label-corrected, with its line."""
    sampled = {u.key for u in units}
    mine = {k: r for k, r in readings.items() if k in sampled}
    cells: dict[tuple[str, str, str], list[AuditUnit]] = defaultdict(list)
    for u in pop:
        cells[u.cell].append(u)
    out = []
    for (m, st, c), members in sorted(cells.items()):
        rate = ppi_accuracy(members, mine)
        out.append({"model": m, "setting": st, "condition": c, "metric": "accuracy", **rate.as_dict(), "line": rate.label_error_line()})
    return out
