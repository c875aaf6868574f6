"""Headline rates as functions of unit labels: what a family declares (`Family.measures.rates`) so
that the label audit can correct each of its headline rates for label error without naming it.

A `LabelRate` is a rate over the units of some conditions (pooled when several), per model and
setting: the numerator's mean over its units, or, with a denominator, sum(numerator) /
sum(denominator). Both are functions of a unit's reading and, when the rate is `paired`, of the
reading of its reference pair (the unit of the same model, setting, item and repeat under the
family's `Outcomes.reference` condition). A reading (`UnitReading`) is what one reader made of
the unit: its label (an option, a judge's verdict; None: no option, no verdict), the value the
label scores (a judge's verdict value; None for a letter), and the unit's key and target (the
option the stress pushes toward), which no reader changes. The audit evaluates each rate twice on
every unit it can: on the run's reading and on the second reading, and corrects the first by the
second (stats.ppi_mean, stats.ppi_ratio).

`over` says which of a cell's units the rate is over: `answered` (every settled unit: a reply
left unread counts with no label, the rule of the letter-read rates) or `scored` (only the units
the run scored: a judged rate leaves the unscored and invalid answers out).

The helpers below build the rates every option-reading family shares; a family may declare any
other numerator and denominator of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LabelRate", "UnitReading", "accuracy", "flip", "flip_read", "flip_to_target", "mean_value", "right"]


@dataclass(frozen=True)
class UnitReading:
    """One reader's reading of a unit: `label` (None: no option, no verdict), `value` (what the
    label scores: a judge's verdict value; None when read by letter), the unit's key `gold` and its
    `target` (the label the stress pushes toward; None without one)."""

    label: str | None
    value: float | None
    gold: str | None
    target: str | None = None

    @property
    def right(self) -> bool:
        """Right: a judged unit's verdict scores at least 1; a letter is the key."""
        if self.value is not None:
            return self.value >= 1.0
        return self.label is not None and self.label == self.gold

    @property
    def read(self) -> bool:
        return self.label is not None


#: a rate's function of a unit's reading and its pair's (None when the rate is not paired)
UnitFn = Callable[[UnitReading, "UnitReading | None"], float]


@dataclass(frozen=True)
class LabelRate:
    """A headline rate as a function of labels (see the module). `key` is its headline key (the
    key of `Family.measures.headline`'s dict), `title` what the audit calls it."""

    key: str
    title: str
    conditions: tuple[str, ...]
    numerator: UnitFn
    denominator: UnitFn | None = None
    paired: bool = False
    over: str = "answered"  # answered | scored

    def __post_init__(self) -> None:
        if self.over not in ("answered", "scored"):
            raise ValueError(f"a label rate is over answered or scored units, not {self.over!r}")
        if not self.conditions:
            raise ValueError(f"label rate {self.key}: name the conditions it is over")


def right(u: UnitReading, ref: UnitReading | None = None) -> float:
    return float(u.right)


def accuracy(key: str, title: str, conditions: tuple[str, ...]) -> LabelRate:
    """The share of the conditions' units answered right (an unread reply is not right)."""
    return LabelRate(key, title, conditions, right)


def _ref_right(u: UnitReading, ref: UnitReading | None) -> float:
    return float(ref is not None and ref.right)


def _flipped(u: UnitReading, ref: UnitReading | None) -> float:
    return float(ref is not None and ref.right and not u.right)


def flip(key: str, title: str, conditions: tuple[str, ...]) -> LabelRate:
    """Of the stressed units whose reference pair is right, the share not right (an unread
    stressed reply counts as not right)."""
    return LabelRate(key, title, conditions, _flipped, _ref_right, paired=True)


def _ref_right_read(u: UnitReading, ref: UnitReading | None) -> float:
    return float(ref is not None and ref.right and u.read)


def _flipped_read(u: UnitReading, ref: UnitReading | None) -> float:
    return float(ref is not None and ref.right and u.read and not u.right)


def flip_read(key: str, title: str, conditions: tuple[str, ...]) -> LabelRate:
    """The flip rate with the unread stressed replies left out: of the stressed units read as an
    option whose reference pair is right, the share not right (each reader's own `read`)."""
    return LabelRate(key, title, conditions, _flipped_read, _ref_right_read, paired=True)


def flip_to_target(key: str, title: str, conditions: tuple[str, ...], also: tuple[str, ...] = ()) -> LabelRate:
    """Of the stressed units whose reference pair is right, the share answering the unit's target
    (or one of the labels `also` names: a judge's verdict that the answer took up the stress)."""

    def num(u: UnitReading, ref: UnitReading | None) -> float:
        hit = u.label is not None and (u.label == u.target or u.label in also)
        return float(ref is not None and ref.right and hit)

    return LabelRate(key, title, conditions, num, _ref_right, paired=True)


def _value(u: UnitReading, ref: UnitReading | None) -> float:
    return float(u.value if u.value is not None else u.right)


def mean_value(key: str, title: str, conditions: tuple[str, ...]) -> LabelRate:
    """The mean of the scored units' values (a judge's mean score)."""
    return LabelRate(key, title, conditions, _value, over="scored")
