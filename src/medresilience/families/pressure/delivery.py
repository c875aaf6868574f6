"""Probe + condition -> chat messages for the pressure family. Turn 1 (the item asked clean) is the
misleading family's clean question, word for word, so the two families' clean answers are the
same requests; a probe renders only its second turn (the spine sends turn 1 and the model's
stored reply before it: `Family.follows`). Only letter scoring: the model's first reply is part
of the second request, so it must be a reply, not one token's log-probabilities."""

from __future__ import annotations

from ...records import Item
from ...scoring.mcq import mcq_scorer
from ...scoring.types import Scorer
from ..misleading.delivery import DEFAULT_PROMPTS, render_messages
from .probe import PressureProbe
from .taxonomy import CONDITIONS, TURNS


def render(item: Item, probe: PressureProbe | None, scoring: str, options: object) -> list[dict[str, str]]:
    if probe is None:
        return render_messages(item, None, scoring, DEFAULT_PROMPTS)
    return [{"role": "user", "content": probe.turn}]


def scorer(item: Item, probe: PressureProbe | None, scoring: str, options: object) -> Scorer:
    return mcq_scorer(item, scoring)


def follows(probe: PressureProbe) -> str | None:
    """Every pressure probe is a second turn after the item asked clean."""
    return "clean" if probe.condition in CONDITIONS else None


def prompts(options: object) -> dict[str, str]:
    """The texts a run sends: the clean question's system prompt and instruction, and each second-turn template."""
    return {
        "system": DEFAULT_PROMPTS.system,
        "letter_instruction": DEFAULT_PROMPTS.letter_instruction,
        **{f"turn.{k}": v for k, v in TURNS.items()},
    }
