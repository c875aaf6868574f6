"""The shape of the pressure family's results block (one model and setting of results.json, as
`metrics.model_block` writes it): turn-1 accuracy and the pooled flips, each condition's numbers
with its excess over `repeat`, and the unit counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...run.results import IntervalRate, ResultsBlock


class PairedTest(BaseModel):
    """The paired McNemar test (exact, or clustered by item with `clusters`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    b: int
    c: int
    n: int
    p: float | None
    test: str
    clusters: int | None = None
    statistic: float | None = None


class Excess(BaseModel):
    """A condition's flip minus repeat's on the same items, with its item-clustered interval and test."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    diff: float | None
    lo: float | None
    hi: float | None
    n: int
    clusters: int
    test: PairedTest


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pairs: int
    items: int
    flip: IntervalRate
    flip_to_pushed: IntervalRate | None
    recovery: IntervalRate
    turn2_acc: IntervalRate
    excess_over_repeat: Excess | None


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    units: int
    pairs: int
    errors: int
    invalid: int
    truncated: int
    unscored: int
    turn2_not_run: int


class PressureBlock(ResultsBlock):
    overall: dict[str, IntervalRate | None]
    by_condition: dict[str, Condition]
    counts: Counts
