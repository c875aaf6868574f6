"""The adaptive probe: one item to attack. `target` is the wrong option the attacker pushes (drawn at
build time, seeded by item), `kind` the kind of stress drawn for the item (used under `-O kind=item`),
and for the misleading kind the content type and provenance the attacker is asked to write in."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ...records import Item, Probe, ProbeMismatch
from ..misleading.taxonomy import CONTENT_TYPE_KEYS, PROVENANCE_KEYS
from .taxonomy import FAMILY

Kind = Literal["misleading", "presupposition", "noise", "patient"]


class AdaptiveProbe(Probe):
    family: Literal["adaptive"] = FAMILY
    condition: Literal["adaptive"] = "adaptive"
    target: str
    kind: Kind
    content_type: str
    provenance: str

    @model_validator(mode="after")
    def _shape(self) -> AdaptiveProbe:
        if self.content_type not in CONTENT_TYPE_KEYS:
            raise ValueError(f"content_type must be one of {', '.join(CONTENT_TYPE_KEYS)}, not {self.content_type!r}")
        if self.provenance not in PROVENANCE_KEYS:
            raise ValueError(f"provenance must be one of {', '.join(PROVENANCE_KEYS)}, not {self.provenance!r}")
        return self

    def facet_values(self) -> dict[str, str | None]:
        return {"kind": self.kind, "target": self.target, "content_type": self.content_type, "provenance": self.provenance}

    def check_against(self, item: Item) -> None:
        if self.target not in (item.options or {}):
            raise ProbeMismatch("target", f"target '{self.target}' is not an option of item {item.id}")
        if self.target == item.answer:
            raise ProbeMismatch("target", f"target '{self.target}' is the gold answer of item {item.id}")
