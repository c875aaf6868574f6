"""The false-presupposition probe: one per question item. Its condition says whether the question
holds a false presupposition (`presupposition`) or none (`nfp`, the control); its facets are the
question's category and the model that generated it. A presupposition probe's item carries the
correction (item.reference) the judge compares answers with."""

from __future__ import annotations

from typing import Literal

from ...records import GenericProbe, Item, ProbeMismatch
from .taxonomy import CATEGORY_KEYS, CONDITIONS, FAMILY, PRESUPPOSITION


class PresuppositionProbe(GenericProbe):
    family: Literal["presupposition"] = FAMILY

    def check_against(self, item: Item) -> None:
        if self.condition not in CONDITIONS:
            raise ProbeMismatch("condition", f"{self.condition!r} is not one of {', '.join(CONDITIONS)}")
        if self.condition == PRESUPPOSITION and not (item.reference or "").strip():
            raise ProbeMismatch("item.reference", f"item {item.id} holds a false presupposition but no correction to judge against")
        category = self.facets.get("category")
        if category is not None and category not in CATEGORY_KEYS:
            raise ProbeMismatch("facets.category", f"{category!r} is not a category key ({', '.join(CATEGORY_KEYS)})")


def probe_id(item_id: str, condition: str) -> str:
    return f"{item_id}:{condition}"
