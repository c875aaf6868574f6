"""Headline rates corrected for label error (prediction-powered inference: stats.ppi_mean and
stats.ppi_ratio, two-phase PPI++ estimates over the audit's strata). The run's reading labels every
unit of the population; the audit's second reading labels a stratified sample of them.

Which rates: the family's own headline rates as functions of labels (`Family.measures.rates`, each a
`label_rates.LabelRate`: a numerator, and for a ratio a denominator, over a unit's reading and its
reference pair's). A family that declares none gets each condition's accuracy and, with a reference
condition, each other condition's flip rate. Per (model, setting) and rate, the rate is evaluated
on every unit of its conditions with the run's reading ("machine") and, on the audited units, with
the second reading ("human"); each unit's stratum is the audit's (model, setting, condition,
tier), its cluster the item (several probes of one item are not independent). Beside the
corrected rate: the plain one on the run's reading alone, and one line on how much wider label
error makes the interval.

When a unit counts as audited:
- a sampled unit with a decided second reading (a letter read as `unscored`, a verdict the second
  judge could not give: not audited); for a paired rate, its reference pair's reading decided too
  (the audit reads a sampled stressed unit's pair with it: the pair's reading counts beside the
  sampled unit, so the unit's inclusion is its own);
- a judged unit whose reply had nothing to judge (tier `fixed`: no second reader is asked) is
  certain: its second reading is its own. Alone or with a certain pair it is audited in a stratum
  of its own (read in full); with a pair that is not certain it is audited when the pair was
  sampled, in a stratum of the pair's stratum (its inclusion is the pair's).

A stratum left with fewer than stats.MIN_AUDITED_PER_STRATUM audited units (and not read in full)
refuses the estimate, with the reason."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from .. import stats
from ..run.label_rates import LabelRate, UnitReading, accuracy, flip
from .reader import SecondReading
from .sample import FIXED, AuditUnit


def default_rates(units: Sequence[AuditUnit], reference: str | None) -> tuple[LabelRate, ...]:
    """A family without label rates of its own: each condition's accuracy, and each other
    condition's flip rate against the reference condition."""
    conditions = sorted({u.condition for u in units}, key=lambda c: (c != reference, c))
    out = [accuracy("accuracy", f"{c} accuracy", (c,)) for c in conditions]
    out += [flip("flip_rate", f"{c} flip rate", (c,)) for c in conditions if reference is not None and c != reference]
    return tuple(out)


def _machine(u: AuditUnit) -> UnitReading:
    return UnitReading(u.rule_label, u.value, u.gold, u.target)


def _second(u: AuditUnit, r: SecondReading) -> UnitReading:
    return UnitReading(r.label, r.value if u.judged else None, u.gold, u.target)


class _Audit:
    """The second readings of one reader, as a rate's units need them."""

    def __init__(self, units: Sequence[AuditUnit], readings: dict[str, SecondReading], pairs: dict[str, AuditUnit]):
        self.sampled = {u.key for u in units}
        self.readings = readings
        self.pairs = pairs

    def decided(self, u: AuditUnit) -> UnitReading | None:
        """A unit's second reading (a certain unit's own reading), None when it has none."""
        if u.tier == FIXED:
            return _machine(u)
        r = self.readings.get(u.key)
        return _second(u, r) if r is not None and r.decided else None

    def unit(self, u: AuditUnit, paired: bool) -> tuple[UnitReading | None, UnitReading | None, Hashable]:
        """(its second reading, its pair's, its stratum); the readings None when not audited."""
        ref = self.pairs.get(u.key) if paired else None
        if u.tier == FIXED:
            if ref is None or ref.tier == FIXED:
                return _machine(u), None if ref is None else _machine(ref), (FIXED,)
            audited = ref.key in self.sampled and (h := self.decided(ref)) is not None
            return (_machine(u), h, (FIXED, *ref.stratum)) if audited else (None, None, (FIXED, *ref.stratum))
        if u.key not in self.sampled:
            return None, None, u.stratum
        mine = self.decided(u)
        theirs = self.decided(ref) if ref is not None else None
        if mine is None or (ref is not None and theirs is None):
            return None, None, u.stratum
        return mine, theirs, u.stratum


def label_rate(rate: LabelRate, members: Sequence[AuditUnit], audit: _Audit) -> stats.PPIRate | None:
    """One rate of one (model, setting)'s units, plain and label-corrected; None when no unit is
    in it."""
    chosen = [u for u in members if u.condition in rate.conditions and (rate.over == "answered" or u.rule_label is not None)]
    if rate.paired:
        chosen = [u for u in chosen if u.key in audit.pairs]
    if not chosen:
        return None
    mn, md, hn, hd, strata = [], [], [], [], []
    for u in chosen:
        ref = audit.pairs.get(u.key) if rate.paired else None
        m, mref = _machine(u), None if ref is None else _machine(ref)
        h, href, stratum = audit.unit(u, rate.paired)
        mn.append(rate.numerator(m, mref))
        hn.append(None if h is None else rate.numerator(h, href))
        if rate.denominator is not None:
            md.append(rate.denominator(m, mref))
            hd.append(None if h is None else rate.denominator(h, href))
        strata.append(stratum)
    clusters = [u.item_id for u in chosen]
    if rate.denominator is None:
        return stats.ppi_mean(mn, hn, strata=strata, clusters=clusters)
    return stats.ppi_ratio(mn, md, hn, hd, strata=strata, clusters=clusters)


def corrected_rates(
    pop: Sequence[AuditUnit],
    units: Sequence[AuditUnit],
    readings: dict[str, SecondReading],
    pairs: dict[str, AuditUnit] | None = None,
    rates: Sequence[LabelRate] = (),
    fixed: Sequence[AuditUnit] = (),
) -> list[dict[str, Any]]:
    """Per (model, setting) and label rate (the family's, else `default_rates`): the rate, plain
    and label-corrected, with its line. `pop`: the sampled population; `fixed`: the certain units;
    `pairs`: each stressed unit's reference pair (over both)."""
    audit = _Audit(units, readings, pairs or {})
    rates = tuple(rates) or default_rates([*pop, *fixed], _reference(pop, pairs or {}))
    cells: dict[tuple[str, str], list[AuditUnit]] = defaultdict(list)
    for u in [*pop, *fixed]:
        cells[(u.model, u.setting)].append(u)
    out = []
    for (m, st), members in sorted(cells.items()):
        for rate in rates:
            r = label_rate(rate, members, audit)
            if r is None:
                continue
            row = {"model": m, "setting": st, "condition": ",".join(rate.conditions), "metric": rate.key, "title": rate.title}
            out.append({**row, **r.as_dict(), "line": r.label_error_line()})
    return out


def _reference(pop: Sequence[AuditUnit], pairs: dict[str, AuditUnit]) -> str | None:
    return next((r.condition for r in pairs.values()), None)
