"""The typed, versioned schema of a run's results.json. The outer shape is the spine's: which run,
which family, per model and setting a block of the family's numbers, the mean across models,
token usage and the last execution's counters. A block's inner shape is the family's, declared by
its `Family.measures.results_block` (a `ResultsBlock`); every rate in it is a `RateValue` (k, n, p and its 95%
interval, plus family-specific counts). The spine's own blocks (how replies were read, the label
audit, the stopping rule, the means across models) are declared here; the last execution's counters
are `runtime.counters.RunStats` itself, the one declaration the call path counts into.

Every block is validated against its declared shape when results are built, written and loaded:
a block that does not match names its model, setting and field. The family's blocks are kept as
its models (`typed_models`, `typed_block`) beside the JSON objects they were read from (`models`,
for readers of the file's shape), and results.json's blocks are written from the models
(`written_block`: the fields given, none added by a default, in the order the metrics wrote them).

    res = Results.load("runs/x/results.json")
    res.headline("embedded-qwen")["clean_acc"].p        # through the family's headline
    res.typed_block("embedded-qwen").overall            # the family's block model"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from ..runtime.counters import RunStats
from ..runtime.errors import InputError, validation_problem
from ..runtime.jsontypes import JSONObject, JSONValue

SCHEMA_VERSION: Final = 2


class RateValue(BaseModel):
    """A proportion k/n with its 95% interval; p, lo, hi are None when n == 0."""

    model_config = ConfigDict(extra="allow", frozen=True)

    k: int
    n: int
    p: float | None
    lo: float | None
    hi: float | None


class IntervalRate(RateValue):
    """A rate in a results block: k/n with its interval, and where the units are clustered (several
    per item or case) the name of the clustered interval (`interval`), the Wilson one kept beside
    it (wilson_lo, wilson_hi)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    interval: str | None = None
    wilson_lo: float | None = None
    wilson_hi: float | None = None


@dataclass(frozen=True)
class ResampledFlip:
    """One flip of an attack, resampled and tested, as results.json and the report hold it: the item
    it flipped, the turn it flipped at, the draws asked per side, the right and read ones on the
    original and on the attacked item (an unread draw is in neither count), the one-sided Fisher p
    (`AttackTest.p`), adjusted across the model's flips, and whether the flip stands."""

    item_id: str
    flipped_at: int
    asked: int
    orig_right: int
    orig_read: int
    att_right: int
    att_read: int
    p: float
    p_adjusted: float
    stands: bool


class ResultsBlock(BaseModel):
    """The base of a family's results block (`Family.measures.results_block`): the declared shape of one
    model and setting's numbers. Every key a family writes is declared (an undeclared key is
    refused), so a block read back is the block the family's metrics wrote."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class UndeclaredBlock(ResultsBlock):
    """The block of a family that declares no shape (or is not registered here): its keys as written,
    unchecked, so a reader of blocks reads every family's alike."""

    model_config = ConfigDict(extra="allow", frozen=True)


class Spread(BaseModel):
    """One rate's unweighted mean, min and max over the models that have it (`models` of them);
    `unit` where a family's means mix scores and rates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mean: float
    min: float
    max: float
    models: int
    unit: str | None = None


class ReadingSummary(BaseModel):
    """How one model's replies under one setting were read (`reading.reading_summary`): the replies
    (units whose call is stored ok), those that got a label (`read`; `extracted` of them by an
    extraction model, with its share), those left unread (invalid, truncated with its share of the
    replies, unscored) and the unread ones by the reason the reader gave."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replies: int
    read: int
    extracted: int
    invalid: int
    truncated: int
    unscored: int
    budget: int | None = None
    unread_why: dict[str, int] = Field(default_factory=dict)
    extracted_share: RateValue
    truncated_share: RateValue


class StopRuleRecord(BaseModel):
    """A stopping rule as recorded (`stopping.StopRule.as_dict`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    width: float | None
    decided: bool
    rate: str | None
    versus: str | None
    confidence: float


class StoppingInterval(BaseModel):
    """One rate (or difference) a stopping rule read at its last look: the anytime-valid interval
    and the fixed-sample one beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    what: str
    anytime: JSONObject
    fixed: JSONObject


class StoppingRecord(BaseModel):
    """A run's stopping rule and its outcome (`stopping.Stopping.record`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: StopRuleRecord
    description: str
    stopped_early: bool
    reason: str
    items_run: int
    items_planned: int
    looks: int
    at: str
    intervals: list[StoppingInterval]


class AuditRecord(BaseModel):
    """The label audit of a run (`audit.run`): the sample's design, its strata, and per second
    reader what it found (agreement, wrong-letter and unread rates, disagreements, corrected rates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str | None
    seed: int
    n_requested: int
    n_sampled: int
    population: int
    design: str
    tier_weight: dict[str, float]
    reference_condition: str | None
    strata: list[JSONObject]
    readers: dict[str, JSONObject]
    notes: list[str]


#: setting -> rate -> its spread over the models
MeansAcrossModels = dict[str, dict[str, Spread]]
#: setting -> stratum kind -> stratum -> rate -> its spread over the models
MeansByStratum = dict[str, dict[str, dict[str, dict[str, Spread]]]]
#: model -> setting -> how its replies were read
READINGS: Final = TypeAdapter(dict[str, dict[str, ReadingSummary]])
MEANS: Final = TypeAdapter(MeansAcrossModels)
#: the declared shape of each of the spine's blocks, by the Results field that holds it
_SPINE_BLOCKS: Final[dict[str, Callable[[object], object]]] = {
    "mean_across_models": MEANS.validate_python,
    "mean_by_stratum": TypeAdapter(MeansByStratum).validate_python,
    "reading": READINGS.validate_python,
    "audit": TypeAdapter(AuditRecord | None).validate_python,
    "stopping": TypeAdapter(StoppingRecord | None).validate_python,
    "last_execution": TypeAdapter(RunStats | None).validate_python,
}


class Usage(BaseModel):
    model_config = ConfigDict(extra="allow")

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    errors: int = 0
    batch_calls: int = Field(0, description="replies that came through a batch (at the batch rate)")
    live_calls: int | None = Field(None, description="replies made live (None: results from before it was counted)")
    cost_live: float | None = Field(None, description="what every reply would have cost live")
    cost_batch: float | None = Field(None, description="what every reply would have cost as a batch (None: no batch rate known)")

    @model_serializer(mode="wrap")
    def _as_recorded(self, handler: SerializerFunctionWrapHandler) -> JSONObject:
        """The split of calls and costs by how they were made is written only where the run recorded
        it: a results.json from before it was counted is written back as it was read."""
        out: JSONObject = handler(self)
        for name in _USAGE_SPLIT - self.model_fields_set:
            out.pop(name, None)
        return out


#: the results' fields written only where the run that made them gave them (the team setting's and
#: a family loop's blocks)
_WRITTEN_WHEN_GIVEN = frozenset({"teams", "loop"})
#: the usage fields that say how replies came (through a batch or live) and what each way costs
_USAGE_SPLIT = frozenset({"batch_calls", "live_calls", "cost_live", "cost_batch"})


class RunInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    run_id: str | None = None
    suite: str | None = None
    family: str
    models: list[str]
    settings: list[str]
    scoring: str
    options: dict[str, Any] = Field(default_factory=dict)
    prompt_hash: str | None = None


#: the validation context's key for the family's results block as a run resolved it
BLOCK: Final = "results_block"


class Results(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[2] = SCHEMA_VERSION
    family: str
    run: RunInfo
    models: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict, description="model -> setting -> the family's block")
    mean_across_models: dict[str, Any] = Field(default_factory=dict)
    mean_by_stratum: dict[str, Any] = Field(default_factory=dict, description="setting -> stratum kind -> stratum -> means")
    usage: dict[str, Usage] = Field(default_factory=dict)
    reading: dict[str, dict[str, dict[str, Any]]] = Field(
        default_factory=dict,
        description="model -> setting -> how the replies were read (reading.reading_summary): read, "
        "extracted (by an extraction model), invalid, truncated, unscored, and their shares",
    )
    warnings: list[str] = Field(default_factory=list, description="what qualifies the numbers (replies cut at their budget)")
    audit: dict[str, Any] | None = Field(
        default=None,
        description="the label audit (medres audit): the sample's design and strata, and per second reader the run's "
        "agreement, wrong-letter and unread rates per model, setting and condition, the disagreements, the label-corrected rates",
    )
    last_execution: dict[str, Any] | None = None
    teams: dict[str, dict[str, dict[str, Any]]] = Field(
        default_factory=dict,
        description="model -> team setting -> how its units worked (run.teams): complexity chosen, experts recruited, "
        "rounds, agreement, calls and tokens per unit, units not answered and why",
    )
    loop: dict[str, Any] | None = Field(
        default=None,
        description="what a family that answers its probes through a loop of its own calls recorded of them "
        "(family.ProbeLoop.record: per-unit records and counts, by setting); None for every other family",
    )
    stopping: dict[str, Any] | None = Field(
        default=None,
        description="the run's stopping rule (medres eval --until) and its outcome (stopping.Stopping.record): whether it "
        "stopped early and why, the items run, each anytime-valid interval beside the fixed-sample one",
    )

    #: `models` as their family's block models (validated with the results), and the blocks they were
    #: validated from: a copy made with other blocks is validated again when its typed blocks are read
    _typed: dict[str, dict[str, ResultsBlock]] = PrivateAttr(default_factory=dict)
    _typed_from: object = PrivateAttr(default=None)

    @classmethod
    def load(cls, path: Path | str) -> Results:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(path, None, None, "file not found") from None
        except json.JSONDecodeError as e:
            raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg})") from None
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            field, msg = validation_problem(e)
            hint = "" if data.get("schema_version") == SCHEMA_VERSION else " (written by an older medresilience; rerun `medres report` on its run directory)"
            raise InputError(path, None, field, msg + hint) from None

    @model_validator(mode="after")
    def _blocks_in_their_shape(self, info: ValidationInfo) -> Results:
        """Every block validates against its declared shape: the family's block as the validation
        context names it (`BLOCK`: a run passes its resolved family's, so nothing is looked up again),
        else the registered family's; the family's blocks are kept as its models (`typed_models`)."""
        for name, validate in _SPINE_BLOCKS.items():
            _check(validate, getattr(self, name), name)
        context = info.context if isinstance(info.context, dict) else {}
        self._typed_with(context.get(BLOCK))
        return self

    def _typed_with(self, shape: type[BaseModel] | None) -> dict[str, dict[str, ResultsBlock]]:
        """`models` validated into `shape` (the family's block as resolved; None: the registered
        family's), kept with the blocks they came from; ValueError naming the field of a block out of
        shape. A shape that is no ResultsBlock is read as the registry reads it (`_block_shape`)."""
        declared = shape if isinstance(shape, type) and issubclass(shape, ResultsBlock) else _block_shape(self.family)
        self._typed = _as_blocks(declared or UndeclaredBlock, self.models)
        self._typed_from = self.models
        return self._typed

    def json_text(self, block: type[BaseModel] | None = None) -> str:
        """results.json's text, checked to load back as these results (so a file that would not
        load is never written); `block`: the family's results block as resolved (else looked up).
        The family's blocks are written from their models (`written_block`: no key a model does
        not hold, no default it was not given), in the order the blocks were written in."""
        typed = self._typed_with(block)  # validated as written, whatever was put in since they were read
        data = self.model_dump(mode="json")
        for name in _WRITTEN_WHEN_GIVEN - self.model_fields_set:
            data.pop(name, None)  # a results.json from before the field existed is written back as read
        data["models"] = {m: {s: written_block(b, self.models[m][s]) for s, b in per.items()} for m, per in typed.items()}
        text = _JSON_OBJECT.dump_json(data, indent=2).decode("utf-8")
        type(self).model_validate_json(text, context=None if block is None else {BLOCK: block})
        return text

    def typed_block(self, model: str, setting: str = "none") -> ResultsBlock:
        """One model and setting's block as its family's model (`Family.measures.results_block`; an
        `UndeclaredBlock` where the family declares none)."""
        self.block(model, setting)  # a KeyError naming the blocks there are
        return self.typed_models()[model][setting]

    def typed_models(self) -> dict[str, dict[str, ResultsBlock]]:
        """`models` with every block as its family's model: model -> setting -> block (as validated
        with the results; validated now where `models` was replaced after)."""
        return self._typed if self._typed_from is self.models else self._typed_with(None)

    def typed_reading(self) -> dict[str, dict[str, ReadingSummary]]:
        """`reading` typed: model -> setting -> how its replies were read."""
        return READINGS.validate_python(self.reading)

    def typed_means(self) -> MeansAcrossModels:
        """`mean_across_models` typed: setting -> rate -> its spread over the models."""
        return MEANS.validate_python(self.mean_across_models)

    def block(self, model: str, setting: str = "none") -> dict[str, Any]:
        try:
            return self.models[model][setting]
        except KeyError:
            known = ", ".join(f"{m}/{s}" for m, v in self.models.items() for s in v) or "none"
            raise KeyError(f"no results for model {model!r} under setting {setting!r} (have: {known})") from None

    def headline(self, model: str, setting: str = "none") -> dict[str, RateValue | None]:
        """The family's headline rates of one model and setting, overall."""
        from ..family import get

        return headline_rates(get(self.family).measures.headline, self.typed_block(model, setting))


#: results.json's writer (the serializer `model_dump_json` uses, over the results as JSON data)
_JSON_OBJECT: Final = TypeAdapter(dict[str, Any])


def written_block(block: BaseModel, written: Mapping[str, object]) -> JSONObject:
    """A results block as results.json holds it: its model's fields that were given (none added by
    a default), as JSON, each object's keys in the order of `written` (the block as the family's
    metrics wrote it, or as it was read). The order is the writer's, not the model's: a rate's
    model declares the interval fields it inherits before its own, and the metrics write them after."""
    return _object_in_order_of(block.model_dump(mode="json", exclude_unset=True), written)


def _object_in_order_of(value: JSONObject, like: Mapping[str, object]) -> JSONObject:
    keys = [k for k in like if k in value] + [k for k in value if k not in like]
    return {k: _in_order_of(value[k], like.get(k)) for k in keys}


def _in_order_of(value: JSONValue, like: object) -> JSONValue:
    if isinstance(value, dict) and isinstance(like, Mapping):
        return _object_in_order_of(value, like)
    if isinstance(value, list) and isinstance(like, list) and len(value) == len(like):
        return [_in_order_of(v, w) for v, w in zip(value, like, strict=True)]
    return value


def _check(validate: Callable[[object], object], value: object, where: str) -> None:
    """`validate(value)`, its first problem raised as a ValueError naming the field under `where`."""
    try:
        validate(value)
    except ValidationError as e:
        field, msg = validation_problem(e)
        raise ValueError(f"{where}{'.' + field if field else ''}: {msg}") from None


def headline_rates(headline: Callable[[dict[str, Any]], Mapping[str, Mapping[str, object] | None]], block: ResultsBlock) -> dict[str, RateValue | None]:
    """A family's headline (`Family.measures.headline`, which reads a block's `overall` as written)
    of a typed block, each rate as a `RateValue` (a mean score keeps its `unit` among the extras)."""
    raw = headline(block.model_dump().get("overall", {}))
    return {k: None if v is None else RateValue.model_validate(v) for k, v in raw.items()}


def typed_blocks(family: str, models: Mapping[str, Mapping[str, Mapping[str, object]]]) -> dict[str, dict[str, ResultsBlock]]:
    """model -> setting -> block of a family's results (results.json's `models`), each block as the
    family's model (`Family.measures.results_block`; an `UndeclaredBlock` for a family that declares
    none or is not registered here); ValueError naming the field of a block out of shape
    (`models.MODEL.SETTING.FIELD`)."""
    return _as_blocks(_block_shape(family) or UndeclaredBlock, models)


def _as_blocks(shape: type[ResultsBlock], models: Mapping[str, Mapping[str, Mapping[str, object]]]) -> dict[str, dict[str, ResultsBlock]]:
    out: dict[str, dict[str, ResultsBlock]] = {}
    for model, per_setting in models.items():
        for setting, block in per_setting.items():
            try:
                out.setdefault(model, {})[setting] = shape.model_validate(block)
            except ValidationError as e:
                field, msg = validation_problem(e)
                raise ValueError(f"models.{model}.{setting}{'.' + field if field else ''}: {msg}") from None
    return out


def _block_shape(family: str) -> type[ResultsBlock] | None:
    """The results block a family declares, None for a family not registered here or declaring none."""
    from ..family import get

    try:
        shape = get(family).measures.results_block
    except KeyError:
        return None
    return shape if isinstance(shape, type) and issubclass(shape, ResultsBlock) else None
