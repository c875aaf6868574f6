"""The audit's sample: which of a run's read units get a second reading.

The population is every unit of the run's latest execution whose reply was read as an option
label: its item has options, its scoring reads letters from the reply (`letter`, with or without an
extraction model), its call is stored ok and its reading is settled (`valid`, `invalid` or
`truncated`; an unscored unit has no reading to audit). The run's reading of a unit is its label,
or no option when it was left unread.

A unit scored by a judge (`judged`: the family's scorer of the unit is a judge) is in the
population when the judge gave a verdict (`valid`): the run's reading is the verdict, with its
value. A judged unit whose reply got no verdict because it had nothing to judge (`invalid` or
`truncated`: no judge call was made) is `fixed`: no second reader is asked, and a rate over
answered units counts it with its own reading (it is never sampled). A judged unit the judge left
unscored is not in the population.

Design (stratified, weighted toward the units a headline number turns on):

- Strata are (model, setting, condition, tier). A unit's tier is the first that holds of
  `unread` (the run read no option), `extracted` (an extraction model supplied the label), `flip`
  (a stressed unit whose right/wrong differs from the same model's unit of the item under the
  family's reference condition, same setting and repeat), `stressed` (any other unit outside the
  reference condition) and `reference`.
- The n units are allocated over the strata in proportion to TIER_WEIGHT[tier] x N_h (N_h: the
  stratum's units), by largest remainders with ties broken by a seeded hash, each stratum capped
  at N_h. First every stratum gets a floor: min(N_h, stats.MIN_AUDITED_PER_STRATUM) units when n
  allows it for all (the least a label-corrected rate needs to measure a stratum's label error),
  else one unit each when n reaches the number of strata, so every cell of the table is measured.
- Inside a stratum the n_h units are drawn without replacement in the order of a hash of (run,
  seed, model, unit id): the same run and seed give the same sample on any machine, and a larger n
  extends a smaller one's draw within each stratum.
- Every sampled unit keeps its stratum, N_h, n_h and its inclusion probability n_h / N_h: the
  estimates of the audit and the label-corrected rates weight each unit by N_h / n_h."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from ..records import CLEAN, Item
from ..runtime.seeding import stable_hash
from ..stats import MIN_AUDITED_PER_STRATUM
from ..store import CallCode, ScoreStatus, UnitRecord

#: how much more a unit of each tier weighs in the allocation than a reference unit
TIER_WEIGHT = {"unread": 4.0, "extracted": 4.0, "flip": 4.0, "stressed": 2.0, "reference": 1.0}
TIERS = tuple(TIER_WEIGHT)
#: the tier of a judged unit whose reply had nothing to judge: never sampled, its reading certain
FIXED = "fixed"
#: the statuses of a settled reading (the population); unread: no option
READ_STATUSES = (ScoreStatus.VALID, ScoreStatus.INVALID, ScoreStatus.TRUNCATED)


@dataclass(frozen=True)
class AuditUnit:
    """One unit of the population with the run's reading of it (`rule_label`: None when unread)
    and, once sampled, its stratum's size `N_h`, its sample size `n_h` and `pi` = n_h / N_h."""

    model: str
    unit_id: str
    item_id: str
    condition: str
    setting: str
    epoch: int
    key: str
    tier: str
    rule_label: str | None
    rule_status: str
    extracted: bool
    gold: str | None
    N_h: int = 0
    n_h: int = 0
    value: float | None = None  # a judged unit's verdict value (None: read by letter)
    target: str | None = None  # the label the stress pushes toward (the family's target facet)
    judged: bool = False

    @property
    def stratum(self) -> tuple[str, str, str, str]:
        return (self.model, self.setting, self.condition, self.tier)

    @property
    def cell(self) -> tuple[str, str, str]:
        """The (model, setting, condition) the audit reports on."""
        return (self.model, self.setting, self.condition)

    @property
    def pi(self) -> float:
        return self.n_h / self.N_h if self.N_h else 0.0

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "pi": self.pi, "stratum": list(self.stratum)}


def _letter_scoring(scoring: str) -> bool:
    return scoring.split("+", 1)[0] == "letter"


def _read_by_extract(detail: str | None) -> bool:
    try:
        d = json.loads(detail) if detail else None
    except ValueError:
        return False
    return isinstance(d, dict) and d.get("read_by") == "extract"


def settled_status(r: UnitRecord) -> ScoreStatus | None:
    """A unit's status as the results frame gives it (frame.status_codes): a stored reply with no
    score row had nothing in it to score (`invalid`; `truncated` when cut at its budget)."""
    status = r.score.status
    if status is None and r.call in (CallCode.OK, CallCode.CUT):
        return ScoreStatus.TRUNCATED if r.call == CallCode.CUT else ScoreStatus.INVALID
    return status


def _right(label: str | None, value: float | None, gold: str | None) -> bool:
    """A reading is right: a verdict's value at least 1, a letter the key."""
    return value >= 1.0 if value is not None else label is not None and label == gold


def population(
    records: Iterable[UnitRecord],
    items: dict[str, Item],
    reference: str | None = CLEAN,
    *,
    targets: Mapping[str, str | None] | None = None,
    judged: Callable[[UnitRecord], bool] | None = None,
) -> list[AuditUnit]:
    """The units of a run the audit may sample, each with its tier (see the module's design), and
    the judged units whose reading is `fixed`. `targets`: probe id -> the label its stress pushes
    toward; `judged(record)`: whether the family scores the unit by a judge."""
    rows = []
    for r in records:
        item = items.get(r.item_id)
        status = settled_status(r)
        if item is None or r.call not in (CallCode.OK, CallCode.CUT) or status not in READ_STATUSES:
            continue
        by_judge = judged is not None and judged(r)
        if not by_judge and (not item.options or not _letter_scoring(r.scoring)):
            continue
        label = r.label if status == ScoreStatus.VALID else None
        value = r.value if by_judge and label is not None else None
        rows.append((r, item, label, value, status, by_judge))
    right = {(r.model, r.setting, r.item_id, r.epoch, r.condition): _right(label, value, item.answer) for r, item, label, value, _, _ in rows}
    out = []
    for r, item, label, value, status, by_judge in rows:
        extracted = label is not None and not by_judge and _read_by_extract(r.detail)
        if by_judge and label is None:
            tier = FIXED
        elif label is None:
            tier = "unread"
        elif extracted:
            tier = "extracted"
        elif reference is not None and r.condition != reference:
            ref = right.get((r.model, r.setting, r.item_id, r.epoch, reference))
            tier = "flip" if ref is not None and ref != _right(label, value, item.answer) else "stressed"
        else:
            tier = "reference"
        target = (targets or {}).get(r.probe_id) if r.probe_id else None
        unit = AuditUnit(r.model, r.unit_id, r.item_id, r.condition, r.setting, r.epoch, r.key, tier, label, status, extracted, item.answer)
        out.append(replace(unit, value=value, target=target, judged=by_judge))
    return out


def allocate(sizes: dict[tuple[str, ...], int], n: int, seed: object) -> dict[tuple[str, ...], int]:
    """n units over strata of the given sizes, in proportion to TIER_WEIGHT[tier] x N_h (the tier is
    a stratum's last part), capped at N_h, above a floor (see the module): a stratum whose share
    falls below its floor or above its size is fixed there and the rest shared again."""
    n = max(0, min(n, sum(sizes.values())))
    strata = [k for k, size in sizes.items() if size > 0]
    floor = {k: min(sizes[k], MIN_AUDITED_PER_STRATUM) for k in strata}
    if n < sum(floor.values()):
        floor = dict.fromkeys(strata, 1 if n >= len(strata) else 0)
    fixed: dict[tuple[str, ...], int] = {}
    quota: dict[tuple[str, ...], float] = {}
    while True:
        free = [k for k in strata if k not in fixed]
        left = n - sum(fixed.values())
        total = sum(TIER_WEIGHT.get(k[-1], 1.0) * sizes[k] for k in free)
        quota = {k: left * TIER_WEIGHT.get(k[-1], 1.0) * sizes[k] / total for k in free} if total else {}
        pinned = {k: sizes[k] for k, q in quota.items() if q > sizes[k]} or {k: floor[k] for k, q in quota.items() if q < floor[k]}
        if not pinned:
            break
        fixed.update(pinned)
    alloc = dict.fromkeys(sizes, 0)
    alloc.update(fixed)
    alloc.update({k: int(math.floor(q)) for k, q in quota.items()})
    rest = n - sum(alloc.values())
    for k in sorted(quota, key=lambda k: (-(quota[k] - alloc[k]), stable_hash(seed, "audit-stratum", k)))[:rest]:
        alloc[k] += 1
    for k in sorted(strata, key=lambda k: stable_hash(seed, "audit-fill", k)):  # what pinning left over, where there is room
        more = min(sizes[k] - alloc[k], n - sum(alloc.values()))
        alloc[k] += max(0, more)
    return alloc


def draw(units: Sequence[AuditUnit], n: int, run: str, seed: int) -> list[AuditUnit]:
    """The audit's sample of `units`: n allocated over the strata (`allocate`), drawn inside each
    in seeded-hash order; each unit carries N_h and n_h. Ordered by stratum, then draw order."""
    groups: dict[tuple[str, ...], list[AuditUnit]] = defaultdict(list)
    for u in units:
        groups[u.stratum].append(u)
    alloc = allocate({k: len(v) for k, v in groups.items()}, n, (run, seed))
    out = []
    for k in sorted(groups):
        members = sorted(groups[k], key=lambda u: stable_hash(run, seed, "audit", u.model, u.unit_id))
        size, take = len(members), alloc[k]
        out += [_with_sizes(u, size, take) for u in members[:take]]
    return out


def strata_sizes(units: Iterable[AuditUnit]) -> dict[tuple[str, ...], int]:
    sizes: dict[tuple[str, ...], int] = defaultdict(int)
    for u in units:
        sizes[u.stratum] += 1
    return dict(sizes)


def _with_sizes(u: AuditUnit, N_h: int, n_h: int) -> AuditUnit:
    return replace(u, N_h=N_h, n_h=n_h)


def reference_pairs(units: Iterable[AuditUnit], reference: str | None) -> dict[str, AuditUnit]:
    """stressed unit's key -> the unit of the same model, setting, item and repeat under the
    reference condition (the pair a flip is read against); empty without a reference condition."""
    if reference is None:
        return {}
    units = list(units)
    ref = {(u.model, u.setting, u.item_id, u.epoch): u for u in units if u.condition == reference}
    return {u.key: r for u in units if u.condition != reference and (r := ref.get((u.model, u.setting, u.item_id, u.epoch))) is not None}
