"""Headline rates corrected for label error (prediction-powered inference: stats.ppi_mean, a
two-phase PPI++ mean over the audit's strata). The run's reading labels every unit of the
population; the audit's second reading labels a stratified sample of them. Per (model, setting,
condition) the accuracy (a unit is right when its reading is the key; an unread reply is not
right, the study's rule) is estimated from both, each unit's stratum the audit's (its tier inside
the cell), its cluster the item (several probes of one item are not independent). Beside it: the
plain rate on the run's reading alone, and one line on how much wider label error makes the
interval. A unit whose second reading is unscored counts as not audited; a stratum left with
fewer than stats.MIN_AUDITED_PER_STRATUM audited units (and not fully audited) refuses the
estimate, with the reason.

Per stressed condition, the flip rate too: of the stressed units whose reference pair (the same
model, setting, item and repeat under the reference condition) is right, the share answered wrong,
a ratio (stats.ppi_ratio: numerator reference right and stressed wrong, denominator reference
right). A stressed unit counts as audited when it was sampled and both it and its pair have a
decided second reading (the audit reads a sampled stressed unit's pair with it, so the pair is in
the audit exactly when the stressed unit is)."""

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


def _decided(readings: dict[str, SecondReading], key: str) -> SecondReading | None:
    r = readings.get(key)
    return r if r is not None and r.decided else None


def ppi_flips(stressed: Sequence[AuditUnit], pairs: dict[str, AuditUnit], readings: dict[str, SecondReading]) -> stats.PPIRate:
    """The label-corrected flip rate of one stressed cell (see the module); `readings` holds the
    sampled units' readings and their pairs'."""
    mn, md, hn, hd = [], [], [], []
    for u in stressed:
        ref = pairs[u.key]
        rr, sr = _right(ref.rule_label, ref.gold), _right(u.rule_label, u.gold)
        mn.append(rr * (1 - sr))
        md.append(rr)
        a, b = _decided(readings, u.key), _decided(readings, ref.key)
        if a is None or b is None:
            hn.append(None)
            hd.append(None)
        else:
            hr, hs = _right(b.label, ref.gold), _right(a.label, u.gold)
            hn.append(hr * (1 - hs))
            hd.append(hr)
    return stats.ppi_ratio(mn, md, hn, hd, strata=[u.tier for u in stressed], clusters=[u.item_id for u in stressed])


def corrected_rates(
    pop: Sequence[AuditUnit], units: Sequence[AuditUnit], readings: dict[str, SecondReading], pairs: dict[str, AuditUnit] | None = None
) -> list[dict[str, Any]]:
    """Per (model, setting, condition): the accuracy, plain and label-corrected, with its line;
    per stressed condition with reference pairs, the flip rate likewise."""
    sampled = {u.key for u in units}
    mine = {k: r for k, r in readings.items() if k in sampled}
    pairs = pairs or {}
    cells: dict[tuple[str, str, str], list[AuditUnit]] = defaultdict(list)
    for u in pop:
        cells[u.cell].append(u)
    out = []
    for (m, st, c), members in sorted(cells.items()):
        rate = ppi_accuracy(members, mine)
        out.append({"model": m, "setting": st, "condition": c, "metric": "accuracy", **rate.as_dict(), "line": rate.label_error_line()})
        stressed = [u for u in members if u.key in pairs]
        if stressed:
            rate = ppi_flips(stressed, pairs, _sampled_pairs(stressed, pairs, readings, sampled))
            out.append({"model": m, "setting": st, "condition": c, "metric": "flip_rate", **rate.as_dict(), "line": rate.label_error_line()})
    return out


def _sampled_pairs(
    stressed: Sequence[AuditUnit], pairs: dict[str, AuditUnit], readings: dict[str, SecondReading], sampled: set[str]
) -> dict[str, SecondReading]:
    """The readings of the sampled stressed units and of their pairs: a pair's reading counts only
    beside a sampled stressed unit (its inclusion is the stressed unit's)."""
    out = {}
    for u in stressed:
        if u.key in sampled and u.key in readings:
            out[u.key] = readings[u.key]
            ref = pairs[u.key].key
            if ref in readings:
                out[ref] = readings[ref]
    return out
