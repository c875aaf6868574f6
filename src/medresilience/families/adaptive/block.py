"""The shape of the adaptive family's results block (one model and setting of results.json, as
`metrics.model_block` writes it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...run.results import IntervalRate, ResultsBlock


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    items: int
    pairs: int
    errors: int
    invalid: int
    truncated: int
    unscored: int
    not_run: int


class AdaptiveBlock(ResultsBlock):
    overall: dict[str, IntervalRate | None]
    by_kind: dict[str, dict[str, IntervalRate | None]]
    counts: Counts
