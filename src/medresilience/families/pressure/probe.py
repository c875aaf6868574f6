"""The pressure probe: one second turn for one item. `turn` is the user's second message as sent;
`target` the wrong option it pushes (claims and insist), `provenance` and `content_type` the
claim's framing and corruption (claims only), `bundle_id` the misleading bundle the claim comes
from and `source_probe` that bundle's Type 1 probe of the same target, so a run can be set beside
a misleading run of the same claims (`versus`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ...records import Item, Probe, ProbeMismatch
from .taxonomy import CLAIM_PROVENANCE, FAMILY, PUSHING

Condition = Literal["repeat", "doubt", "claim-neutral", "claim-patient", "claim-authority", "insist"]


class PressureProbe(Probe):
    family: Literal["pressure"] = FAMILY
    condition: Condition
    turn: str = Field(min_length=1, description="the user's second turn, after the model's first answer")
    target: str | None = None
    provenance: str | None = None
    content_type: str | None = None
    bundle_id: str | None = None
    source_probe: str | None = Field(None, description="claims: the misleading suite's Type 1 probe with the same sentence and target")

    @model_validator(mode="after")
    def _shape(self) -> PressureProbe:
        if self.condition in PUSHING and self.target is None:
            raise ValueError(f"a {self.condition} probe pushes a wrong option: it needs a target")
        if self.condition not in PUSHING and self.target is not None:
            raise ValueError(f"a {self.condition} probe pushes no option: it has no target")
        if (self.condition in CLAIM_PROVENANCE) != (self.provenance is not None):
            raise ValueError("a claim probe, and only a claim probe, has a provenance")
        if self.provenance is not None and CLAIM_PROVENANCE[self.condition] != self.provenance:
            raise ValueError(f"a {self.condition} probe's provenance is {CLAIM_PROVENANCE[self.condition]}, not {self.provenance}")
        return self

    def facet_values(self) -> dict[str, str | None]:
        return {"provenance": self.provenance, "target": self.target, "content_type": self.content_type}

    def check_against(self, item: Item) -> None:
        if self.target is not None:
            if self.target not in (item.options or {}):
                raise ProbeMismatch("target", f"target '{self.target}' is not an option of item {item.id}")
            if self.target == item.answer:
                raise ProbeMismatch("target", f"target '{self.target}' is the gold answer of item {item.id}")
