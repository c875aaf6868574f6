"""The typed, versioned schema of a run's results.json. The outer shape is the spine's: which run,
which family, per model and setting a block of the family's numbers, the mean across models,
token usage and the last execution's counters. A block's inner shape is the family's; every rate
in it is a `RateValue` (k, n, p and its 95% interval, plus family-specific counts).

    res = Results.load("runs/x/results.json")
    res.headline("embedded-qwen")["clean_acc"].p        # through the family's headline"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import InputError, validation_problem

SCHEMA_VERSION: Final = 2


class RateValue(BaseModel):
    """A proportion k/n with its 95% interval; p, lo, hi are None when n == 0."""

    model_config = ConfigDict(extra="allow", frozen=True)

    k: int
    n: int
    p: float | None
    lo: float | None
    hi: float | None


class Usage(BaseModel):
    model_config = ConfigDict(extra="allow")

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    errors: int = 0


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
    stopping: dict[str, Any] | None = Field(
        default=None,
        description="the run's stopping rule (medres eval --until) and its outcome (stopping.Stopping.record): whether it "
        "stopped early and why, the items run, each anytime-valid interval beside the fixed-sample one",
    )

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

    def block(self, model: str, setting: str = "none") -> dict[str, Any]:
        try:
            return self.models[model][setting]
        except KeyError:
            known = ", ".join(f"{m}/{s}" for m, v in self.models.items() for s in v) or "none"
            raise KeyError(f"no results for model {model!r} under setting {setting!r} (have: {known})") from None

    def headline(self, model: str, setting: str = "none") -> dict[str, RateValue | None]:
        """The family's headline rates of one model and setting, overall."""
        from .family import get

        raw = get(self.family).measures.headline(self.block(model, setting)["overall"])
        return {k: None if v is None else RateValue.model_validate(v) for k, v in raw.items()}
