"""Probe + condition -> chat messages for the pressure family. Turn 1 (the item asked clean) is the
misleading family's clean question, word for word, so the two families' clean answers are the
same requests; a probe renders only its second turn (the spine sends turn 1 and the model's
stored reply before it: `Family.evaluation.follows`). Only letter scoring: the model's first reply is part
of the second request, so it must be a reply, not one token's log-probabilities."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ...records import Item
from ...score import Scorer
from ...scoring.mcq import mcq_scorer
from ...sources.passage import PassageMode
from ..misleading.delivery import DEFAULT_PROMPTS, render_messages
from .probe import PressureProbe
from .taxonomy import CONDITIONS, TURNS


class PressureOptions(BaseModel):
    """context: `item` asks an item that has a passage (PubMedQA's abstract) with it in turn 1,
    as every family does; `none` leaves it out."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    context: PassageMode = "item"


def render(item: Item, probe: PressureProbe | None, scoring: str, options: PressureOptions) -> list[dict[str, str]]:
    if probe is None:
        return render_messages(item, None, scoring, DEFAULT_PROMPTS, options.context)
    return [{"role": "user", "content": probe.turn}]


def scorer(item: Item, probe: PressureProbe | None, scoring: str, options: object) -> Scorer:
    return mcq_scorer(item, scoring)


def follows(probe: PressureProbe) -> str | None:
    """Every pressure probe is a second turn after the item asked clean."""
    return "clean" if probe.condition in CONDITIONS else None


def prompts(options: PressureOptions) -> dict[str, str]:
    """The texts a run sends: the clean question's system prompt and instruction, and each second-turn
    template (the passage setting only when it differs from the default, so earlier runs' hashes stand)."""
    return {
        **({"context": options.context} if options.context != "item" else {}),
        "system": DEFAULT_PROMPTS.system,
        "letter_instruction": DEFAULT_PROMPTS.letter_instruction,
        **{f"turn.{k}": v for k, v in TURNS.items()},
    }
