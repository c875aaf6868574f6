"""The shape of the false-presupposition family's results block (one model and setting of
results.json, as `metrics.presupposition_metrics` writes it): the overall slice, the slices per
myth category and per generator, and the unit counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...run.results import IntervalRate, ResultsBlock


class Score(IntervalRate):
    """PCS: the mean verifier score (-1..1) with its bootstrap interval; `unit` is "score"."""

    unit: str


class Unscored(IntervalRate):
    """The judged units the verifier could not score, with how many per condition."""

    presupposition: int
    nfp: int


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    units: int
    scored: int
    unscored: int
    invalid: int
    errors: int
    missing: int


class Slice(BaseModel):
    """Every number of one slice: PCS, PCR, the score distribution, over-caution and NFP answered on
    the control set, the unscored share, and the counts per condition."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_items: int
    pcs: Score
    pcr: IntervalRate
    distribution: dict[str, IntervalRate]
    overcaution: IntervalRate
    nfp_answered: IntervalRate
    unscored: Unscored
    presupposition: Counts
    nfp: Counts


class PresuppositionBlock(ResultsBlock):
    overall: Slice
    by_category: dict[str, Slice]
    by_generator: dict[str, Slice]
    counts: Counts
