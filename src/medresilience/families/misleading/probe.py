"""The misleading family's probe: Type 1 carries one wrong option's sentence (`target` is that
option), Type 2 carries the whole option-aligned bundle in a seeded order. Its facets (the strata
it is reported under) are the content type, the provenance and the target."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal, cast

from pydantic import Field, field_validator, model_validator

from ...records import Item, Probe, ProbeMismatch, Record
from .taxonomy import content_type_key, provenance_key

if TYPE_CHECKING:  # pragma: no cover
    from ...suite import Suite

FAMILY: Final = "misleading"
CONDITIONS = ("type1", "type2")
FACETS = ("content_type", "provenance", "target")


class ContextSentence(Record):
    """One option-aligned sentence of a bundle: true for the gold option, misleading otherwise."""

    option: str
    text: str = Field(min_length=1)


class MisleadingProbe(Probe):
    family: Literal["misleading"] = FAMILY
    condition: Literal["type1", "type2"]
    bundle_id: str = Field(min_length=1, description="the generation this probe's sentences come from")
    content_type: str
    provenance: str
    target: str | None = None
    sampled: bool = Field(False, description="Type 1 only: the item's one seeded target (-O type1=sample)")
    context: tuple[ContextSentence, ...]

    @field_validator("content_type")
    @classmethod
    def _ct(cls, v: str) -> str:
        return content_type_key(v)

    @field_validator("provenance")
    @classmethod
    def _pv(cls, v: str) -> str:
        return provenance_key(v)

    @model_validator(mode="after")
    def _shape(self) -> MisleadingProbe:
        if not self.context:
            raise ValueError("a probe needs at least one context sentence")
        if self.condition == "type1":
            if self.target is None:
                raise ValueError("a type1 probe needs a target option")
            if len(self.context) != 1 or self.context[0].option != self.target:
                raise ValueError("a type1 probe carries exactly the target option's sentence")
        else:
            if self.target is not None or self.sampled:
                raise ValueError("a type2 probe has no target")
        return self

    def facet_values(self) -> dict[str, str | None]:
        return {"content_type": self.content_type, "provenance": self.provenance, "target": self.target}

    def check_against(self, item: Item) -> None:
        options = item.options or {}
        for s in self.context:
            if s.option not in options:
                raise ProbeMismatch("context", f"context option '{s.option}' is not an option of item {item.id}")
        if self.target is not None:
            if self.target not in options:
                raise ProbeMismatch("target", f"target '{self.target}' is not an option of item {item.id}")
            if self.target == item.answer:
                raise ProbeMismatch("target", f"target '{self.target}' is the gold answer of item {item.id}")
        if self.condition == "type2" and {s.option for s in self.context} != set(options):
            raise ProbeMismatch("context", f"a type2 bundle must have one sentence per option of item {item.id}")


def probes_of(suite: Suite) -> list[MisleadingProbe]:
    """A misleading suite's probes as this family's probe type (a suite is read with its family's
    probe model)."""
    return cast(list[MisleadingProbe], suite.probes)
