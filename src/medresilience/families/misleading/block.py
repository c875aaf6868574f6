"""The shape of the misleading-context family's results block (one model and setting of
results.json, as `metrics.misleading_metrics` writes it): the slice of every stratification
(overall, per source dataset, content type and provenance) and the unit counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...run.results import IntervalRate, ResultsBlock


class Accuracy(IntervalRate):
    """A condition's accuracy over its answered units, with the units left unread or in error."""

    invalid: int
    truncated: int
    errors: int


class AttackSuccess(IntervalRate):
    """ASR: the share of clean-correct pairs whose probe is not right, with the flips that were an
    unread reply; `cluster_lo`/`cluster_hi`: the item-clustered interval where items give several pairs."""

    invalid_flips: int
    truncated_flips: int
    cluster_lo: float | None = None
    cluster_hi: float | None = None


class McNemar(BaseModel):
    """The paired test of clean against probe (exact, or Durkalski's clustered one with `clusters`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    b: int
    c: int
    n: int
    p: float | None
    test: str
    clusters: int | None = None
    statistic: float | None = None


class Attack(BaseModel):
    """One delivery's attack numbers: ASR, ASR over read replies only, TASR (Type 1) and the test."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    asr: AttackSuccess
    asr_read: IntervalRate
    tasr: IntervalRate | None = None
    mcnemar: McNemar


class Slice(BaseModel):
    """Every number of one slice (a stratum) of one model and setting; a delivery without
    answered units in the slice is absent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_items: int
    clean_acc: Accuracy
    type1_acc: Accuracy | None = None
    type1: Attack | None = None
    type2_acc: Accuracy | None = None
    type2: Attack | None = None


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    units: int
    errors: int
    invalid: int
    truncated: int
    unscored: int
    missing: int


class MisleadingBlock(ResultsBlock):
    overall: Slice
    by_source: dict[str, Slice]
    by_content_type: dict[str, Slice]
    by_provenance: dict[str, Slice]
    counts: Counts
