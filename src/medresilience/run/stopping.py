"""Stopping a run early without cheating (`medres eval --until WIDTH`, `--until-decided`).

The items run in a seeded random order (the run's `--sample-seed` order, `selection.run_items`),
a round of items at a time; between rounds the rule is looked at on every item finished so far,
and the run stops once it is met. The interval looked at is an anytime-valid confidence sequence
(`stats.sequential`): it holds at every number of items at once, so looking after every round and
stopping when it looks good keeps its stated 95%. A fixed-sample interval (Wilson) looked at the
same way does not: stopping when it happens to be narrow, or to exclude 0, picks the runs where
chance made it so (optional stopping). The fixed-sample interval is shown beside the anytime one,
said to hold only for a sample size fixed in advance.

Rules:
- `width`: stop when the anytime interval of the chosen rate is narrower than WIDTH for every
  model and setting of the run;
- `decided`: stop when the anytime interval of the chosen paired difference excludes 0: the rate
  of the first model minus the second's on the same items (two models or more), else of the
  second setting minus the first's (usually `none`), else of the family's two declared rates of
  one model (a stressed condition against clean).

Which rate: a label rate of the family (`Family.measures.rates`, `label_rates.LabelRate`) by its
headline key (`--until-rate`), by default the rate of its headline comparison (the first of
`Family.measures.comparisons`, `family.HeadlineComparison`) for a width, and for a decision in a
run of one model and one setting the first comparison of two rates of one model (`harm`: the
versus rate minus this one for an accuracy, this one minus the versus rate for a flip).

The sequence is one value per item, in the run's order: the item's mean of the rate's numerator
over its units of the rate's conditions (all its probes of a condition and epochs), counting the
units the rate counts (for a ratio rate, those whose denominator is 1: a flip rate's clean-right
items). An item enters the sequence once every unit it needs is settled (answered and read; an
item whose call failed waits for the rerun that retries it). The interval is of the mean over
items of that per-item value: the reported pooled rate when every item gives the same number of
units, as a suite with one probe per condition does.

The outcome of the looks (`Stopping.record()`) is kept in results.json (`stopping`), run.json and
the store's run record: the rule, whether and when it stopped, the items run and the suite's, and
each interval. A rerun in the same order (the same --sample-seed) reuses every stored call: with
the same rule it stops where it stopped, with a stricter rule or none it continues.

May import: family, records, runtime, stats, store."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ..records import Item, Probe
from ..runtime.errors import ConfigError
from .label_rates import LabelRate, UnitReading

if TYPE_CHECKING:  # pragma: no cover
    from ..family import Family
    from ..stats.sequential import SequenceInterval
    from ..store import Store
    from ..store.rows import UnitResult

__all__ = ["LOOK_MIN_ITEMS", "StopRule", "Stopping", "describe", "stopping_lines"]

#: the fewest items between two looks (a round is as many items as the models take calls at once)
LOOK_MIN_ITEMS = 10
_SETTLED = ("valid", "invalid", "truncated")


@dataclass(frozen=True)
class StopRule:
    """A stopping rule as asked: `width` (--until WIDTH) or `decided` (--until-decided), the rate
    (--until-rate; None: the family's) and, for a decision in a run of one model and one setting,
    the rate it is compared against (--until-versus)."""

    width: float | None = None
    decided: bool = False
    rate: str | None = None
    versus: str | None = None
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if (self.width is None) == (not self.decided):
            raise ConfigError("--until", "give one stopping rule: --until WIDTH or --until-decided")
        if self.width is not None and not 0 < self.width < 1:
            raise ConfigError("--until", f"the width is a share between 0 and 1 (0.1 = 10 points), not {self.width}")
        if self.versus is not None and not self.decided:
            raise ConfigError("--until-versus", "a rate to compare against is for --until-decided")

    def as_dict(self) -> dict[str, float | bool | str | None]:
        return {"width": self.width, "decided": self.decided, "rate": self.rate, "versus": self.versus, "confidence": self.confidence}


@dataclass(frozen=True)
class _Arm:
    """One sequence the rule reads: a rate of one model under one setting."""

    model: str
    setting: str
    rate: LabelRate

    @property
    def label(self) -> str:
        return f"{self.rate.title}, {self.model}" + ("" if self.setting == "none" else f" ({self.setting})")


def _rate(family: Family, key: str, flag: str) -> LabelRate:
    rates = {r.key: r for r in family.measures.rates}
    if key not in rates:
        known = ", ".join(rates) or "none"
        raise ConfigError(flag, f"the {family.title} family has no rate {key!r} to stop on (its rates: {known})")
    return rates[key]


def _arms(rule: StopRule, family: Family, models: Sequence[str], settings: Sequence[str]) -> tuple[_Arm, ...]:
    """The arms the rule reads: for a width, the rate of every model and setting; for a decision,
    the two arms whose paired difference it settles (see the module)."""
    comparisons = family.measures.comparisons
    if not comparisons and rule.rate is None:
        raise ConfigError("--until-rate", f"the {family.title} family declares no rate to stop on: name one of its rates")
    rate = _rate(family, rule.rate, "--until-rate") if rule.rate is not None else comparisons[0].rate
    if not rule.decided:
        return tuple(_Arm(m, s, rate) for m in models for s in settings)
    if len(models) > 1:
        return (_Arm(models[0], settings[0], rate), _Arm(models[1], settings[0], rate))
    if len(settings) > 1:
        return (_Arm(models[0], settings[1], rate), _Arm(models[0], settings[0], rate))
    if rule.versus is not None:
        return (_Arm(models[0], settings[0], rate), _Arm(models[0], settings[0], _rate(family, rule.versus, "--until-versus")))
    # the family's first comparison of two rates of one model that holds the rate asked (any, when none is asked)
    pair = next((h for c in comparisons if (h := c.harm) is not None and rule.rate in (None, *(r.key for r in h))), None)
    if pair is None:
        raise ConfigError("--until-versus", "a decision in a run of one model and one setting compares two rates: name the other with --until-versus")
    return tuple(_Arm(models[0], settings[0], r) for r in pair)


class FixedInterval(TypedDict, total=False):
    """The fixed-sample interval of a look's values (`method`: wilson or normal; none when n == 0)."""

    p: float | None
    lo: float | None
    hi: float | None
    n: int
    method: str


class ShownInterval(TypedDict):
    """One rate (or difference) a look read: its anytime-valid interval and the fixed-sample one."""

    what: str
    anytime: dict[str, float | int]
    fixed: FixedInterval


class Look(TypedDict):
    items_run: int
    intervals: list[ShownInterval]


class StopRecord(TypedDict):
    """What a run keeps of its looks (`Stopping.record`; its shape in results.json: `results.StoppingRecord`)."""

    rule: dict[str, float | bool | str | None]
    description: str
    stopped_early: bool
    reason: str
    items_run: int
    items_planned: int
    looks: int
    at: str
    intervals: list[ShownInterval]


def _fixed(values: Sequence[float], paired: bool, confidence: float) -> FixedInterval:
    """The fixed-sample interval of the same values (Wilson for 0/1 values of a rate, else the normal
    interval of their mean), as if their number had been fixed in advance."""
    from ..stats import wilson
    from ..stats.stopping_sim import naive_paired

    n = len(values)
    if n == 0:
        return {"p": None, "lo": None, "hi": None, "n": 0}
    if not paired and all(v in (0.0, 1.0) for v in values):
        w = wilson(int(sum(values)), n, confidence)
        return {"p": w.p, "lo": w.lo, "hi": w.hi, "n": n, "method": "wilson"}
    import numpy as np

    lo, hi = naive_paired(np.asarray([values], dtype=float), confidence)
    return {"p": sum(values) / n, "lo": float(lo[0, -1]), "hi": float(hi[0, -1]), "n": n, "method": "normal"}


@dataclass
class Stopping:
    """The looks of one run at its rule (see the module): `add` the items of each round as it is
    planned, `look(store)` after it has run; `record()` is what the run keeps."""

    rule: StopRule
    family: Family
    arms: tuple[_Arm, ...]
    suite_items: int
    order: list[str] = field(default_factory=list)
    gold: dict[str, str | None] = field(default_factory=dict)
    targets: dict[str, str | None] = field(default_factory=dict)
    looks: int = 0
    met: bool = False
    last: Look | None = None

    @classmethod
    def of(cls, rule: StopRule, family: Family, models: Sequence[str], settings: Sequence[str], suite_items: int) -> Stopping:
        return cls(rule, family, _arms(rule, family, models, settings), suite_items)

    def add(self, pairs: Iterable[tuple[Item, Probe | None]]) -> None:
        """The items (in run order) and probes of a round about to run."""
        facet = self.family.outcomes.target
        for item, probe in pairs:
            if item.id not in self.gold:
                self.order.append(item.id)
                self.gold[item.id] = item.answer
            if probe is not None and facet is not None:
                self.targets[probe.id] = probe.facet_values().get(facet)

    def look(self, store: Store) -> bool:
        """Look at the rule on the items run so far (the store's units of this run); True when it
        is met (the run stops)."""
        from ..stats.sequential import paired_cs, rate_cs  # numpy: loaded when a run looks

        self.looks += 1
        units = _by_item(store.unit_results(store.run_id))
        series = [self._values(arm, units) for arm in self.arms]
        conf = self.rule.confidence
        shown: list[ShownInterval] = []
        if self.rule.decided:
            a, b = series
            both = [i for i in a if i in b]
            av, bv = [a[i] for i in both], [b[i] for i in both]
            cs = paired_cs(av, bv, conf)
            diffs = [x - y for x, y in zip(av, bv, strict=True)]
            shown.append(self._shown(f"{self.arms[0].label} minus {self.arms[1].label}", cs, _fixed(diffs, True, conf)))
            met = cs.n > 0 and cs.excludes(0.0)
        else:
            met = True
            for arm, vals in zip(self.arms, series, strict=True):
                cs = rate_cs(list(vals.values()), conf)
                shown.append(self._shown(arm.label, cs, _fixed(list(vals.values()), False, conf)))
                met = met and cs.n > 0 and cs.width < (self.rule.width or 0.0)
        run_items = sum(1 for i in self.order if i in units)
        self.met = met
        self.last = {"items_run": run_items, "intervals": shown}
        return met

    def _shown(self, label: str, cs: SequenceInterval, fixed: FixedInterval) -> ShownInterval:
        return {"what": label, "anytime": cs.as_dict(), "fixed": fixed}

    def _values(self, arm: _Arm, units: dict[str, list[UnitResult]]) -> dict[str, float]:
        """item id -> the item's value of the arm's rate, for the items run whose units are settled,
        in run order (see the module)."""
        rate, reference = arm.rate, self.family.outcomes.reference
        out: dict[str, float] = {}
        for item_id in self.order:
            mine = [u for u in units.get(item_id, ()) if u.model == arm.model and u.setting == arm.setting]
            if not mine:
                continue
            wanted = [u for u in mine if u.condition in rate.conditions]
            refs = {u.epoch: u for u in mine if u.condition == reference} if rate.paired else {}
            if not wanted or not all(_settled(u) for u in wanted) or not all(_settled(u) for u in refs.values()):
                continue
            num = den = 0.0
            for u in wanted:
                read = self._reading(u)
                if rate.over == "scored" and read.label is None:
                    continue
                ref = refs.get(u.epoch)
                if rate.paired and ref is None:
                    continue
                pair = None if ref is None else self._reading(ref)
                d = 1.0 if rate.denominator is None else rate.denominator(read, pair)
                if d:
                    num += rate.numerator(read, pair)
                    den += d
            if den:
                out[item_id] = min(max(num / den, 0.0), 1.0)
        return out

    def _reading(self, u: UnitResult) -> UnitReading:
        label = u.label if u.status == "valid" else None
        value = u.value if label is not None and u.scoring.startswith("judge:") else None
        return UnitReading(label, value, self.gold.get(u.item_id), self.targets.get(u.probe_id) if u.probe_id else None)

    def record(self) -> StopRecord:
        """What the run keeps of its looks (results.json `stopping`, run.json, the store's run)."""
        last: Look = self.last or {"items_run": 0, "intervals": []}
        return {
            "rule": self.rule.as_dict(),
            "description": describe(self.rule, self.arms),
            "stopped_early": self.met and last["items_run"] < self.suite_items,
            "reason": self._reason(last["items_run"]),
            "items_run": last["items_run"],
            "items_planned": self.suite_items,
            "looks": self.looks,
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "intervals": last["intervals"],
        }

    def _reason(self, run_items: int) -> str:
        if self.met and run_items < self.suite_items:
            what = "excludes 0" if self.rule.decided else f"is narrower than {self.rule.width:g} for every model and setting"
            return f"the rule was met after {run_items} of {self.suite_items} items: the anytime-valid interval {what}"
        if self.met:
            return f"the rule was met at the last of the {self.suite_items} items"
        return f"the rule was not met: all {run_items} items were run"


def describe(rule: StopRule, arms: Sequence[_Arm]) -> str:
    level = f"{100 * rule.confidence:g}%"
    if rule.decided:
        return f"stop when the anytime-valid {level} interval of {arms[0].label} minus {arms[1].label} (paired, same items) excludes 0"
    rates = "; ".join(a.label for a in arms)
    return f"stop when the anytime-valid {level} interval of {rates} is narrower than {rule.width:g}"


def _settled(u: UnitResult) -> bool:
    """A unit answered and read as far as it can be (a reply with no score row had nothing to read)."""
    return u.call_status == "ok" and (u.status is None or u.status in _SETTLED)


def _by_item(units: Iterable[UnitResult]) -> dict[str, list[UnitResult]]:
    out: dict[str, list[UnitResult]] = {}
    for u in units:
        out.setdefault(u.item_id, []).append(u)
    return out


def _pct(lo: float | None, hi: float | None, scale: float = 100.0) -> str:
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "—"
    return f"[{scale * lo:.1f}, {scale * hi:.1f}]"


def stopping_lines(record: dict[str, Any] | None) -> list[str]:
    """The lines a report gives a run's stopping (results.md, the HTML report's notes, the CLI):
    whether it stopped early and why, and each anytime-valid interval beside the fixed-sample one;
    none for a run without a rule."""
    if not record:
        return []
    early = record.get("stopped_early")
    head = "stopped early: " if early else "stopping rule: "
    lines = [f"{head}{record.get('reason', '')} ({record.get('description', '')})."]
    if early:
        lines.append(
            "The other intervals of these results are fixed-sample intervals: the number of items was chosen by the rule as the "
            "run went, so read the anytime-valid intervals below for the rule's rates."
        )
    for s in record.get("intervals", []):
        a, f = s["anytime"], s["fixed"]
        lines.append(
            f"{s['what']}: anytime-valid 95% interval {_pct(a['lo'], a['hi'])} n={a['n']}; the fixed-sample interval "
            f"{_pct(f.get('lo'), f.get('hi'))} would hold only had n been fixed in advance, which a stopped run's was not."
        )
    return lines
