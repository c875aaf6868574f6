"""How much persuasion it takes to move a right answer: the statistics of adaptive attacks.

An adaptive attack rewrites an item over up to `budget` turns, seeing the target's answer each
time, and stops at the first wrong answer. Each (target model, item the model had right at clean)
gives one `AttackTrace`: the turn of the first wrong answer (`flipped_at`), or None when the answer
held through the budget. A held trace is *censored* at its budget: the answer might have moved on
a later turn nobody tried. The measures here treat it so.

- `flip_curve`: the share of right answers flipped within t turns, t = 1..the largest budget, each
  with its 95% interval. When every trace had the same budget nothing is censored before it, the
  share is k_t / n and the interval is Wilson's. When budgets differ a trace held through a small
  budget says nothing about later turns, so the share is the Kaplan-Meier cumulative incidence
  1 - S(t) (statsmodels `SurvfuncRight`, each trace censored at its own budget) and the interval is
  Wilson's at the estimate's effective sample size (the effective-sample-size approach of Dorey &
  Korn 1987, with Peto's variance: the answers seen to hold through t, divided by S(t)), which is
  the plain Wilson interval whenever nothing is censored before t. The result says which
  (`method`).
- `median_turns`: the first turn by which half the right answers flipped, with the turns where the
  curve's interval crosses one half as its interval (as R's survfit reads a median's interval off
  the curve's); None, "not reached", when fewer than half flipped: never a made-up number.
- `target_rate`: the share of flips that went to the attacker's target option (Wilson).
- `attack_tests`: a per-attack test that a flip is not resampling noise (one-sided Fisher exact,
  Holm or Benjamini-Hochberg across the run's attacks) (`run.results.ResampledFlip` is one
  flip's test as results.json and the report hold it).
- `compare_models`: which of two models is harder to move on the same items (exact McNemar on
  flipped-within-budget, a sign test on which flipped first).
- `static_vs_adaptive`: a fixed (static) stress's flip rate beside the adaptive one on the same
  items (exact McNemar).

Nothing here knows how the attack was made; the traces are plain records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Literal

import numpy as np
from statsmodels.duration.survfunc import SurvfuncRight
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from .checks import check_confidence, is_int
from .rates import Rate, wilson
from .tests import binomial_test, fisher_one_sided, mcnemar_exact

__all__ = [
    "AttackTest",
    "AttackTests",
    "AttackTrace",
    "CurvePoint",
    "FlipCurve",
    "MedianTurns",
    "ModelComparison",
    "PersuasionSummary",
    "Resampled",
    "StaticVsAdaptive",
    "attack_tests",
    "compare_models",
    "flip_curve",
    "flip_curves",
    "flips_within",
    "median_turns",
    "standing_only",
    "static_vs_adaptive",
    "summarise",
    "target_rate",
]

#: how a flip curve's share and interval were computed
CurveMethod = Literal["wilson", "kaplan-meier"]
#: the correction across a run's per-attack tests
Correction = Literal["holm", "bh"]


# ------------------------------------------------------------------------------ the record


def _field_error(where: str, name: str, problem: str) -> ValueError:
    return ValueError(f"{where}field {name!r}: {problem}")


def _check_str(v: object, name: str, where: str) -> None:
    if not isinstance(v, str) or not v:
        raise _field_error(where, name, f"must be a non-empty string, got {v!r}")


def _check_int(v: object, name: str, where: str, low: int) -> None:
    if not is_int(v):
        raise _field_error(where, name, f"must be an integer, got {v!r}")
    if v < low:
        raise _field_error(where, name, f"must be >= {low}, got {v}")


@dataclass(frozen=True)
class AttackTrace:
    """One adaptive attack on one item a model had right at clean.

    `kind`: the stress kind used; `budget`: attacker turns allowed (may differ between runs);
    `flipped_at`: the first turn 1..budget answered wrongly, None when the answer held (censored at
    the budget); `to_target`: whether that wrong answer was the attacker's target option (None when
    not flipped or the attack had no target); `rejected`: candidates refused by the validity checks;
    `turns_used`: attacker turns spent (at least `flipped_at` when flipped, at most the budget).
    Built with bad values it raises ValueError naming the field."""

    model: str
    item_id: str
    kind: str
    budget: int
    flipped_at: int | None
    to_target: bool | None
    rejected: int
    turns_used: int

    def __post_init__(self) -> None:
        where = f"trace {self.model!r}/{self.item_id!r}: " if isinstance(self.model, str) and isinstance(self.item_id, str) else "trace: "
        for name in ("model", "item_id", "kind"):
            _check_str(getattr(self, name), name, where)
        _check_int(self.budget, "budget", where, 1)
        _check_int(self.rejected, "rejected", where, 0)
        _check_int(self.turns_used, "turns_used", where, 0)
        if self.flipped_at is not None:
            _check_int(self.flipped_at, "flipped_at", where, 1)
            if self.flipped_at > self.budget:
                raise _field_error(where, "flipped_at", f"turn {self.flipped_at} is past the budget of {self.budget} turns")
            if self.turns_used < self.flipped_at:
                raise _field_error(where, "turns_used", f"{self.turns_used} turns spent, but the answer flipped at turn {self.flipped_at}")
        if self.turns_used > self.budget:
            raise _field_error(where, "turns_used", f"{self.turns_used} turns spent, past the budget of {self.budget}")
        if self.to_target is not None:
            if not isinstance(self.to_target, bool):
                raise _field_error(where, "to_target", f"must be true, false or null, got {self.to_target!r}")
            if self.flipped_at is None:
                raise _field_error(where, "to_target", "is set but the answer never flipped (flipped_at is null)")

    @classmethod
    def from_dict(cls, d: Mapping[str, object], where: str = "") -> AttackTrace:
        """A trace from its plain-dict form (results.json), every key required and no other;
        `where` (a file and line, 'results.json traces[3]') prefixes the error, which names the
        field."""
        at = f"{where}: " if where else "trace: "
        if not isinstance(d, Mapping):
            raise ValueError(f"{at}a trace must be an object, got {type(d).__name__}")
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in d]
        if missing:
            raise _field_error(at, missing[0], "is missing")
        extra = sorted(str(k) for k in d if k not in names)
        if extra:
            raise _field_error(at, extra[0], f"is not a trace field (the fields: {', '.join(names)})")
        try:
            return cls(**{n: d[n] for n in names})  # type: ignore[arg-type]  # each value is checked by __post_init__
        except ValueError as exc:
            if not where:
                raise
            raise ValueError(f"{at}{exc}") from None

    @property
    def flipped(self) -> bool:
        return self.flipped_at is not None

    def flipped_within(self, turns: int) -> bool | None:
        """Whether the answer flipped by turn `turns`; None when that is unknown (held through a
        budget smaller than `turns`)."""
        if self.flipped_at is not None and self.flipped_at <= turns:
            return True
        return False if self.budget >= turns else None


# ------------------------------------------------------------------------------ the curve


@dataclass(frozen=True)
class CurvePoint:
    """The share of right answers flipped within `turn` turns, with its interval. `k`: flips seen by
    then; `n`: traces in the curve; `at_risk`: traces neither flipped before this turn nor past
    their budget; `n_eff`: the sample size the interval stands on (n, or the Kaplan-Meier effective
    size)."""

    turn: int
    k: int
    n: int
    at_risk: int
    p: float
    lo: float
    hi: float
    n_eff: float

    def fmt(self) -> str:
        return f"{100 * self.p:.1f}% [{100 * self.lo:.1f}, {100 * self.hi:.1f}] (n={self.n})"


@dataclass(frozen=True)
class FlipCurve:
    """One model's flip curve (of one stress kind; `kind` None: every kind pooled), a point per turn
    1..the largest budget; `method` says how the shares and intervals were computed."""

    model: str
    kind: str | None
    n: int
    budgets: tuple[int, ...]
    method: CurveMethod
    confidence: float
    points: tuple[CurvePoint, ...]

    @property
    def max_turns(self) -> int:
        return len(self.points)

    def at(self, turn: int) -> CurvePoint:
        if not 1 <= turn <= len(self.points):
            raise ValueError(f"turn {turn} is outside the curve's 1..{len(self.points)}")
        return self.points[turn - 1]


def _one(values: Iterable[str]) -> str | None:
    """The one value all share; None when they differ."""
    seen = sorted(set(values))
    return seen[0] if len(seen) == 1 else None


def _check_unique(traces: Sequence[AttackTrace]) -> None:
    seen: set[tuple[str, str, str]] = set()
    for t in traces:
        if not isinstance(t, AttackTrace):
            raise ValueError(f"not an AttackTrace: {t!r}")
        key = (t.model, t.item_id, t.kind)
        if key in seen:
            raise ValueError(f"two traces of model {t.model!r} on item {t.item_id!r} with kind {t.kind!r}")
        seen.add(key)


def flip_curve(traces: Sequence[AttackTrace], confidence: float = 0.95, method: CurveMethod | None = None) -> FlipCurve:
    """The flip curve of one model's traces (several kinds are pooled). `method` None picks Wilson
    when every trace had one budget and Kaplan-Meier when budgets differ; Kaplan-Meier may be asked
    for on one budget (it gives the same numbers), Wilson may not be asked for on several."""
    conf = check_confidence(confidence)
    traces = list(traces)
    if not traces:
        raise ValueError("a flip curve needs at least one trace")
    _check_unique(traces)
    models = sorted({t.model for t in traces})
    if len(models) > 1:
        raise ValueError(f"a flip curve is one model's: got {', '.join(models)} (use flip_curves)")
    budgets = tuple(sorted({t.budget for t in traces}))
    chosen: CurveMethod = method or ("wilson" if len(budgets) == 1 else "kaplan-meier")
    if chosen not in ("wilson", "kaplan-meier"):
        raise ValueError(f"method must be 'wilson' or 'kaplan-meier', not {chosen!r}")
    if chosen == "wilson" and len(budgets) > 1:
        raise ValueError(f"budgets differ ({', '.join(map(str, budgets))}): a held trace is censored at its budget, so the curve is Kaplan-Meier's")
    points = _wilson_points(traces, conf) if chosen == "wilson" else _km_points(traces, conf)
    return FlipCurve(models[0], _one(t.kind for t in traces), len(traces), budgets, chosen, conf, points)


def _counts(traces: Sequence[AttackTrace], turn: int) -> tuple[int, int, int]:
    """(flips by `turn`, traces at risk at `turn`, traces whose state at `turn` is known)."""
    k = sum(1 for t in traces if t.flipped_at is not None and t.flipped_at <= turn)
    at_risk = sum(1 for t in traces if (t.flipped_at is None or t.flipped_at >= turn) and t.budget >= turn)
    known = sum(1 for t in traces if t.flipped_within(turn) is not None)
    return k, at_risk, known


def _wilson_points(traces: Sequence[AttackTrace], conf: float) -> tuple[CurvePoint, ...]:
    n = len(traces)
    out = []
    for turn in range(1, max(t.budget for t in traces) + 1):
        k, at_risk, _ = _counts(traces, turn)
        r = wilson(k, n, conf)
        assert r.p is not None and r.lo is not None and r.hi is not None  # n >= 1
        out.append(CurvePoint(turn, k, n, at_risk, r.p, r.lo, r.hi, float(n)))
    return tuple(out)


def _km_points(traces: Sequence[AttackTrace], conf: float) -> tuple[CurvePoint, ...]:
    time = np.array([t.flipped_at if t.flipped_at is not None else t.budget for t in traces], dtype=np.float64)
    status = np.array([t.flipped_at is not None for t in traces], dtype=np.float64)
    sf = SurvfuncRight(time, status)
    times = np.asarray(sf.surv_times, dtype=np.float64)
    surv = np.asarray(sf.surv_prob, dtype=np.float64)
    out = []
    for turn in range(1, max(t.budget for t in traces) + 1):
        k, at_risk, known = _counts(traces, turn)
        i = int(np.searchsorted(times, turn, side="right")) - 1
        s = 1.0 if i < 0 else float(surv[i])
        p = min(max(1.0 - s, 0.0), 1.0)
        # The effective size at which Peto's variance of the estimate, S^2 (1 - S) / held, is a
        # binomial one: held / S, where `held` counts the answers seen to hold through this turn.
        # Uncensored it is n (the interval is then Wilson's); once every answer still attacked has
        # flipped (S = 0) the traces whose state at this turn is known stand in, as they do uncensored.
        held = sum(1 for t in traces if (t.flipped_at is None or t.flipped_at > turn) and t.budget >= turn)
        n_eff = held / s if s > 0.0 else float(known)
        lo, hi = _wilson_at(p, n_eff, conf)
        out.append(CurvePoint(turn, k, len(traces), at_risk, p, lo, hi, n_eff))
    return tuple(out)


def _wilson_at(p: float, n_eff: float, conf: float) -> tuple[float, float]:
    """Wilson's interval of a share p at a (possibly fractional) sample size."""
    if n_eff <= 0:
        return 0.0, 1.0
    lo, hi = proportion_confint(p * n_eff, n_eff, alpha=1.0 - conf, method="wilson")
    lo, hi = min(max(float(lo), 0.0), p), max(min(float(hi), 1.0), p)
    return (0.0 if p == 0.0 else lo), (1.0 if p == 1.0 else hi)


def flip_curves(traces: Sequence[AttackTrace], by_kind: bool = False, confidence: float = 0.95) -> list[FlipCurve]:
    """A flip curve per model (and per model x kind with `by_kind`), in the order they first appear."""
    groups: dict[tuple[str, str | None], list[AttackTrace]] = {}
    for t in traces:
        groups.setdefault((t.model, t.kind if by_kind else None), []).append(t)
    return [flip_curve(g, confidence) for g in groups.values()]


# ------------------------------------------------------------------------------ median and target


@dataclass(frozen=True)
class MedianTurns:
    """The median turns to flip: the first turn by which half the right answers flipped, and its
    interval (the first turns where the curve's upper and lower limits reach one half). `turns`
    None: not reached within the budget (fewer than half flipped); `hi` None: the interval's upper
    end is not reached within the budget."""

    turns: int | None
    lo: int | None
    hi: int | None
    n: int
    method: CurveMethod

    @property
    def reached(self) -> bool:
        return self.turns is not None

    def fmt(self) -> str:
        if self.turns is None:
            return f"not reached (n={self.n})"
        hi = "not reached" if self.hi is None else str(self.hi)
        return f"{self.turns} [{self.lo}, {hi}] (n={self.n})"


def median_turns(curve: FlipCurve) -> MedianTurns:
    """The median turns to flip read off a flip curve (see `MedianTurns`)."""

    def first(values: Iterable[tuple[int, float]]) -> int | None:
        return next((turn for turn, v in values if v >= 0.5), None)

    return MedianTurns(
        turns=first((pt.turn, pt.p) for pt in curve.points),
        lo=first((pt.turn, pt.hi) for pt in curve.points),
        hi=first((pt.turn, pt.lo) for pt in curve.points),
        n=curve.n,
        method=curve.method,
    )


def target_rate(traces: Sequence[AttackTrace], confidence: float = 0.95) -> Rate:
    """The share of flips that went to the attacker's target option, over the flips that had a
    target (Wilson); n 0 when none did."""
    aimed = [t for t in traces if t.flipped and t.to_target is not None]
    return wilson(sum(1 for t in aimed if t.to_target), len(aimed), confidence)


@dataclass(frozen=True)
class PersuasionSummary:
    """One model's (or model x kind's) adaptive measures: items attacked, the flip curve, flipped
    within its largest budget (the curve's last point), the median turns, flips to the target, and
    the candidates the validity checks rejected (in all, and the attacker turns spent)."""

    model: str
    kind: str | None
    attacked: int
    curve: FlipCurve
    median: MedianTurns
    to_target: Rate
    rejected: int
    turns_used: int

    @property
    def flipped(self) -> CurvePoint:
        return self.curve.points[-1]


def summarise(traces: Sequence[AttackTrace], by_kind: bool = False, confidence: float = 0.95) -> list[PersuasionSummary]:
    """A summary per model (and per model x kind with `by_kind`), in the order they first appear."""
    out = []
    for curve in flip_curves(traces, by_kind, confidence):
        group = [t for t in traces if t.model == curve.model and (not by_kind or t.kind == curve.kind)]
        out.append(
            PersuasionSummary(
                model=curve.model,
                kind=curve.kind if by_kind else None,
                attacked=len(group),
                curve=curve,
                median=median_turns(curve),
                to_target=target_rate(group, confidence),
                rejected=sum(t.rejected for t in group),
                turns_used=sum(t.turns_used for t in group),
            )
        )
    return out


# ------------------------------------------------------------------------------ per-attack test


@dataclass(frozen=True)
class Resampled:
    """A successful attack resampled: the target's answers to the original item, `a_orig` right of
    `r` read, and to the attacked item, `a_att` right of `r_att` read (None: `r` as well). A draw
    whose answer could not be read is not counted on either side (never guessed right or wrong), so
    the two counts may differ. `attack` names it (unique in a run)."""

    attack: str
    r: int
    a_orig: int
    a_att: int
    r_att: int | None = None

    def __post_init__(self) -> None:
        where = f"attack {self.attack!r}: " if isinstance(self.attack, str) else "attack: "
        _check_str(self.attack, "attack", where)
        _check_int(self.r, "r", where, 0)
        if self.r_att is not None:
            _check_int(self.r_att, "r_att", where, 0)
        for name, n in (("a_orig", self.r), ("a_att", self.n_att)):
            _check_int(getattr(self, name), name, where, 0)
            if getattr(self, name) > n:
                raise _field_error(where, name, f"{getattr(self, name)} correct out of r={n} resamples")

    @property
    def n_att(self) -> int:
        """The read draws of the attacked item."""
        return self.r if self.r_att is None else self.r_att


@dataclass(frozen=True)
class AttackTest:
    """One attack's one-sided Fisher p-value, adjusted across the run, whether it stands, and the
    smallest p its r resamples could give (r of r correct on the original, none on the attacked)."""

    attack: str
    r: int
    a_orig: int
    a_att: int
    p: float
    p_adjusted: float
    stands: bool
    min_p: float
    r_att: int | None = None


@dataclass(frozen=True)
class AttackTests:
    """The run's per-attack tests: the correction across them, the level, the smallest p-value the
    resampling could give any attack (with its r: when it is not below the level no attack can
    stand, however strong; each test holds its own), and the attacks that stand."""

    tests: tuple[AttackTest, ...]
    correction: Correction
    alpha: float
    min_p: float | None

    @property
    def standing(self) -> tuple[str, ...]:
        return tuple(t.attack for t in self.tests if t.stands)


def attack_tests(records: Sequence[Resampled], alpha: float = 0.05, correction: Correction = "holm") -> AttackTests:
    """Does each successful attack lower the target's correctness beyond resampling noise?

    A flip seen once may be sampling noise: a target that answers right 70% of the time answers
    wrong on some draw of the attacked item even when the attack does nothing. So the target is
    resampled r times on the original and r times on the attacked item, and the two correct counts
    are compared with a one-sided Fisher exact test on the 2x2 table [[a_orig, r - a_orig],
    [a_att, r_att - a_att]] (r_att = r unless unread draws were left out) (alternative: the original's correctness is the higher). Fisher's test is
    the exact conditional permutation test of that table: given the 2r answers and how many were
    correct, every way of splitting them between the original and the attacked item is equally
    likely when the attack changes nothing, and p is the share of splits that put as few correct
    answers on the attacked item as observed; MedFuzz's permutation test estimates the same p by
    sampling, this computes it exactly. The two sets of resamples are independent draws (not pairs),
    so an unpaired test, and it holds at any r (no large-sample approximation); it is conservative
    because the counts are discrete, and with small r it cannot reach a small p at all (r = 3: at
    best 0.05), which `min_p` reports.

    Across the run's attacks, `correction` "holm" (the default) controls the family-wise error:
    the chance that any attack said to stand is noise, at most alpha. Each standing attack is a
    claim made about itself (shown in the report, replayed against other models), so each should
    hold on its own, as Holm's correction (this project's rule across strata) makes them. "bh"
    (Benjamini-Hochberg) controls the false discovery rate instead, the expected share of noise
    among the standing attacks: more power on a large run where what is read is how many attacks
    stand, not any one of them. The result names the correction used."""
    if correction not in ("holm", "bh"):
        raise ValueError(f"correction must be 'holm' or 'bh', not {correction!r}")
    level = float(alpha)
    if not 0.0 < level < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    records = list(records)
    names = [r.attack for r in records]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"attack {dup[0]!r} is listed twice")
    for rec in records:
        if not isinstance(rec, Resampled):
            raise ValueError(f"not a Resampled record: {rec!r}")
    # a side with no read draw cannot show a difference: p 1 (fisher_one_sided's empty group)
    raw = [fisher_one_sided(r.a_orig, r.r, r.a_att, r.n_att, "greater")["p"] for r in records]
    adjusted = _adjust(raw, correction)
    best = [fisher_one_sided(r.r, r.r, 0, r.n_att, "greater")["p"] for r in records]
    tests = tuple(AttackTest(r.attack, r.r, r.a_orig, r.a_att, p, q, q <= level, b, r.r_att) for r, p, q, b in zip(records, raw, adjusted, best))
    return AttackTests(tests, correction, level, min(best, default=None))


def standing_only(traces: Sequence[AttackTrace], stands: Iterable[tuple[str, str]]) -> list[AttackTrace]:
    """The traces with every flip whose (model, item id) is not among `stands` counted as held: the
    flip curve of the flips that stand beside the raw one. A flip that does not stand ended its
    attack, so nobody knows whether a later turn would have flipped the answer for good: counting it
    as held through the budget makes the standing curve a lower bound, never a guess."""
    kept = set(stands)
    return [t if not t.flipped or (t.model, t.item_id) in kept else replace(t, flipped_at=None, to_target=None) for t in traces]


def _adjust(pvalues: Sequence[float], correction: Correction) -> list[float]:
    if not pvalues:
        return []
    adjusted = multipletests(np.asarray(pvalues, dtype=np.float64), method="holm" if correction == "holm" else "fdr_bh")[1]
    return [float(v) for v in adjusted]


# ------------------------------------------------------------------------------ two models


@dataclass(frozen=True)
class ModelComparison:
    """Two models attacked on the same items (both right at clean, same kind), each item judged
    within the smaller of its two budgets. `only_a` / `only_b`: items only that model flipped
    (McNemar's discordant pairs, `p_flipped` the exact test's two-sided p); `a_first` / `b_first`:
    items where that model flipped on an earlier turn (held counts as after the budget; `ties`, the
    same turn or both held, are dropped), `p_first` the two-sided sign test (None with no untied
    item). `harder_to_move`: the model with fewer items only it flipped (None when equal)."""

    a: str
    b: str
    n: int
    a_flipped: Rate
    b_flipped: Rate
    only_a: int
    only_b: int
    p_flipped: float
    a_first: int
    b_first: int
    ties: int
    p_first: float | None

    @property
    def harder_to_move(self) -> str | None:
        if self.only_a == self.only_b:
            return None
        return self.b if self.only_a > self.only_b else self.a


def compare_models(traces: Sequence[AttackTrace], a: str, b: str, confidence: float = 0.95) -> ModelComparison:
    """Which of models `a` and `b` is harder to move, on the items (and kinds) both were attacked on."""
    if a == b:
        raise ValueError(f"compare two different models, not {a!r} with itself")
    traces = list(traces)
    _check_unique(traces)
    known = {t.model for t in traces}
    for m in (a, b):
        if m not in known:
            raise ValueError(f"model {m!r} has no trace (models: {', '.join(sorted(known)) or 'none'})")
    by_a = {(t.item_id, t.kind): t for t in traces if t.model == a}
    by_b = {(t.item_id, t.kind): t for t in traces if t.model == b}
    shared = [key for key in by_a if key in by_b]
    fa, fb, first_a, first_b = [], [], 0, 0
    for key in shared:
        ta, tb = by_a[key], by_b[key]
        horizon = min(ta.budget, tb.budget)
        turn_a = ta.flipped_at if ta.flipped_at is not None and ta.flipped_at <= horizon else horizon + 1
        turn_b = tb.flipped_at if tb.flipped_at is not None and tb.flipped_at <= horizon else horizon + 1
        fa.append(turn_a <= horizon)
        fb.append(turn_b <= horizon)
        first_a += turn_a < turn_b
        first_b += turn_b < turn_a
    only_a = sum(1 for x, y in zip(fa, fb) if x and not y)
    only_b = sum(1 for x, y in zip(fa, fb) if y and not x)
    return ModelComparison(
        a=a,
        b=b,
        n=len(shared),
        a_flipped=wilson(sum(fa), len(shared), confidence),
        b_flipped=wilson(sum(fb), len(shared), confidence),
        only_a=only_a,
        only_b=only_b,
        p_flipped=mcnemar_exact(only_a, only_b),
        a_first=first_a,
        b_first=first_b,
        ties=len(shared) - first_a - first_b,
        p_first=binomial_test(first_a, first_a + first_b, 0.5, "two-sided"),
    )


# ------------------------------------------------------------------------------ static beside adaptive


def flips_within(traces: Sequence[AttackTrace], model: str, turns: int, kind: str | None = None) -> dict[str, bool]:
    """Per item, whether `model`'s answer flipped within `turns` turns (of one `kind` when given).
    A trace held through a budget below `turns` cannot say, and is an error; so is an item attacked
    with several kinds when no kind is named."""
    _check_int(turns, "turns", "", 1)
    out: dict[str, bool] = {}
    chosen = [t for t in traces if t.model == model and (kind is None or t.kind == kind)]
    if not chosen:
        raise ValueError(f"model {model!r} has no trace" + ("" if kind is None else f" of kind {kind!r}"))
    for t in chosen:
        if t.item_id in out:
            raise ValueError(f"item {t.item_id!r} of model {model!r} was attacked with several kinds: name one")
        within = t.flipped_within(turns)
        if within is None:
            raise ValueError(f"item {t.item_id!r} of model {model!r} held through a budget of {t.budget} turns: whether it flips within {turns} is unknown")
        out[t.item_id] = within
    return out


@dataclass(frozen=True)
class StaticVsAdaptive:
    """A fixed (static) stress's flip rate beside the adaptive one on the same items: both rates
    (Wilson), the discordant items (`static_only`: flipped by the static stress only; `adaptive_only`)
    and the exact McNemar test's two-sided p."""

    n: int
    static: Rate
    adaptive: Rate
    static_only: int
    adaptive_only: int
    p: float


def static_vs_adaptive(pairs: Iterable[tuple[str, bool, bool]], confidence: float = 0.95) -> StaticVsAdaptive:
    """The exact McNemar test of (static flip, adaptive flip within N) per item: `pairs` are
    (item id, flipped by the static stress, flipped by the adaptive attack), one per item."""
    seen: set[str] = set()
    static, adaptive = [], []
    for i, pair in enumerate(pairs):
        if len(pair) != 3:
            raise ValueError(f"pair {i}: expected (item id, static flip, adaptive flip), got {pair!r}")
        item, s, a = pair
        _check_str(item, "item_id", f"pair {i}: ")
        for name, v in (("static", s), ("adaptive", a)):
            if not isinstance(v, (bool, np.bool_)):
                raise _field_error(f"pair {i} (item {item!r}): ", name, f"must be true or false, got {v!r}")
        if item in seen:
            raise ValueError(f"pair {i}: item {item!r} is listed twice")
        seen.add(item)
        static.append(bool(s))
        adaptive.append(bool(a))
    s_only = sum(1 for x, y in zip(static, adaptive) if x and not y)
    a_only = sum(1 for x, y in zip(static, adaptive) if y and not x)
    n = len(static)
    return StaticVsAdaptive(n, wilson(sum(static), n, confidence), wilson(sum(adaptive), n, confidence), s_only, a_only, mcnemar_exact(s_only, a_only))
