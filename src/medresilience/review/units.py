"""A review unit as the sampler sees it (`Candidate`) and the display blocks every rubric's units
share: what review.sample draws and what a family's review rubrics build."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..records import Item, Probe


@dataclass
class Candidate:
    """One unit a rubric may review: its id, item, strata (what a sample is stratified over), the
    blocks a reviewer is shown and the facts kept from them (blinding)."""

    unit_id: str
    item_id: str | None
    strata: dict[str, Any]
    display: list[dict[str, Any]]
    hidden: dict[str, Any]


def item_blocks(item: Item, *, gold: bool = True) -> list[dict[str, object]]:
    blocks: list[dict[str, object]] = [{"kind": "text", "title": "Question", "text": item.question}]
    if item.options:
        blocks.append({"kind": "options", "title": "Options", "options": [[k, v, bool(gold and k == item.answer)] for k, v in item.options.items()]})
    return blocks


def probe_facets(probe: Probe) -> dict[str, object]:
    return {k: v for k, v in probe.facet_values().items() if v is not None}
