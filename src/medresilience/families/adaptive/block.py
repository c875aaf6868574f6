"""The shape of the adaptive family's results block (one model and setting of results.json, as
`metrics.model_block` writes it, with the persuasion measures of its attacks that
`persuasion.loop_measures` adds from the run's traces and, where it holds any, its attack reviews)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ...run.results import IntervalRate, ResampledFlip, ResultsBlock


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    items: int
    pairs: int
    errors: int
    invalid: int
    truncated: int
    unscored: int
    not_run: int


class CurvePointValue(BaseModel):
    """The share of right answers flipped within `turn` turns: k of n, its interval, the attacks
    still at risk and the sample size the interval stands on (`stats.persuasion.CurvePoint`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int
    k: int
    n: int
    at_risk: int
    p: float
    lo: float
    hi: float
    n_eff: float


class MedianValue(BaseModel):
    """The median turns to flip and its interval; `turns` None: not reached within the budget."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: int | None
    lo: int | None
    hi: int | None
    n: int
    reached: bool


class PersuasionValue(BaseModel):
    """One model's (or model x kind's) persuasion summary (`stats.persuasion.PersuasionSummary`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attacked: int
    method: str
    budgets: list[int]
    curve: list[CurvePointValue]
    median_turns: MedianValue
    to_target: IntervalRate
    rejected: int
    turns_used: int


class AttackTestsValue(BaseModel):
    """A model's per-attack tests (`stats.persuasion.AttackTests`): draws per side (`r`), the
    correction and level, the smallest p r draws could give, the target's temperature, the flips,
    those resampled (`tested`) and those that stand after the correction, and each flip's test
    (`tests`, checked as this block's own fields are: every key declared, none other)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    r: int
    correction: str
    alpha: float
    min_p: float | None
    temperature: float | None
    flipped: int
    tested: int
    standing: int
    tests: list[ResampledFlip]


class ReviewedValue(BaseModel):
    """A model's successful attacks as clinicians reviewed them (`review.reviewed_by_model`): the
    run directory's attack reviews (`reviews`), the attacks that flipped, those rated, judged valid
    and invalid (valid + invalid = reviewed), those whose reviewers split (a yes and a no: counted in
    valid or invalid by the rule), those unreviewed (still counted as flips); the share of right
    answers flipped within the budget with the attacks judged invalid censored (`flipped`: an
    unreviewed flip counts), and that persuasion summary with its curve (None when every attack
    left the measure)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reviews: list[str]
    successful: int
    reviewed: int
    valid: int
    invalid: int
    split: int
    unreviewed: int
    flipped: CurvePointValue | None
    persuasion: PersuasionValue | None


class AdaptiveBlock(ResultsBlock):
    overall: dict[str, IntervalRate | None]
    by_kind: dict[str, dict[str, IntervalRate | None]]
    counts: Counts
    #: None where the model had no item right at clean to attack (or the run kept no traces)
    persuasion: PersuasionValue | None = None
    persuasion_by_kind: dict[str, PersuasionValue] = Field(default_factory=dict)
    #: where the run resampled its flips: the per-attack tests, and the persuasion summary counting
    #: only the flips that stand (a flip that does not stand counts as held)
    attack_tests: AttackTestsValue | None = None
    standing: PersuasionValue | None = None
    #: where the run directory holds reviews of its successful attacks: the flip measures counting
    #: only the attacks not judged invalid
    reviewed: ReviewedValue | None = None
