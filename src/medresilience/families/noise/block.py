"""The shape of the clinical-noise family's results block (one model and setting of results.json,
as `metrics.noise_metrics` writes it): the overall slice (with each variant's accuracy, flip rates
and paired drop under `<variant>_acc`, `_flip`, `_flip_read`, `_drop`), the per-variant tests, the
per-source slices and the unit counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from ...run.results import IntervalRate, ResultsBlock

#: the keys a slice holds per variant, by suffix
VARIANT_SUFFIXES = ("_acc", "_flip", "_flip_read", "_drop")


class Accuracy(IntervalRate):
    """Accuracy over the answered units (case-clustered where cases repeat), with the units left
    unread or in error."""

    invalid: int
    truncated: int
    unscored: int
    errors: int


class EpochRate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    epoch: int
    p: float | None
    k: int
    n: int


class Epochs(BaseModel):
    """Accuracy per epoch and its mean and standard deviation across epochs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    mean: float | None
    sd: float | None
    per_epoch: list[EpochRate]


class Slice(BaseModel):
    """One slice (a model and setting, or one source): the clean accuracy and, per variant, the
    keys of `VARIANT_SUFFIXES` (a rate, or the drop as a number)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    n_items: int
    n_epochs: int
    clean_acc: Accuracy
    clean_epochs: Epochs
    __pydantic_extra__: dict[str, Accuracy | IntervalRate | float | None]

    def rate(self, key: str) -> IntervalRate | None:
        """A rate of the slice by its key: `clean_acc`, or a variant's `<variant>_acc`, `_flip` or
        `_flip_read`; None where the slice has none (or the key is a drop, a number)."""
        if key == "clean_acc":
            return self.clean_acc
        found = (self.__pydantic_extra__ or {}).get(key)
        return found if isinstance(found, IntervalRate) else None

    @model_validator(mode="after")
    def _variant_keys(self) -> Slice:
        for key in self.__pydantic_extra__ or {}:
            if not key.endswith(VARIANT_SUFFIXES):
                raise ValueError(f"{key}: not a variant's key (one ending in {', '.join(VARIANT_SUFFIXES)})")
        return self


class Original(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int
    n: int
    p: float | None


class Drop(BaseModel):
    """The study's unpaired comparison: originals of the same cases against the variant (Fisher)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    diff: float | None
    original: Original
    cases: int
    odds_ratio: float | None
    p_fisher: float | None
    test: str
    design: str


class Paired(BaseModel):
    """The paired drop on the same cases with its clustered interval, and the paired McNemar test."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    b: int
    c: int
    p_mcnemar: float | None
    test: str
    drop: float | None
    lo: float | None
    hi: float | None
    clusters: int
    interval: str


class Variant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    acc: Accuracy
    drop: Drop
    paired: Paired
    flip: IntervalRate
    flip_read: IntervalRate
    epochs: Epochs
    facets: dict[str, str | None]


class Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    units: int
    errors: int
    invalid: int
    truncated: int
    unscored: int
    missing: int


class NoiseBlock(ResultsBlock):
    overall: Slice
    by_variant: dict[str, Variant]
    by_source: dict[str, Slice]
    counts: Counts
