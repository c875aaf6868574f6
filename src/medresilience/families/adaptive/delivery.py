"""Probe -> chat messages for the adaptive family, and its evaluation options.

The clean question is the misleading family's clean question word for word, so the clean answers of
the two families are the same requests. A probe's unit renders the same clean question: the loop
(`loop.AdaptiveLoop`) starts from it, and each stressed version it sends is the item rewritten as the
static families rewrite it (`stressed_messages`), asked fresh, never as a conversation."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...records import Item
from ...score import Scorer
from ...scoring.judge import JudgeSpecOption
from ...scoring.mcq import mcq_scorer
from ...sources.passage import PassageMode
from ..misleading.delivery import CONTEXT_HEADER_ONE, DEFAULT_PROMPTS, render_messages, render_user
from .probe import AdaptiveProbe
from .taxonomy import KIND_CHOICES, KIND_SPECS, KINDS

MAX_BUDGET = 20
MAX_RESAMPLE = 100


class AdaptiveOptions(BaseModel):
    """The family's evaluation options (`medres eval -O attacker=SPEC -O budget=3`).

    attacker: the model that writes the stresses (a model spec; `medres eval --attacker SPEC` is the
    same). checker: the model asked whether the correct answer still stands with a candidate
    (default: the attacker). budget: attacker turns per item (1..20, default 3). kind: `item` (the
    default: the kind drawn for each item when the suite was built, one kind per item), `turns`
    (every kind in turn: misleading, presupposition, noise, patient, again from the first) or one
    kind for every item. context: `item` asks an item's passage (PubMedQA's abstract) with it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attacker: JudgeSpecOption = None
    checker: JudgeSpecOption = None
    budget: int = Field(3, ge=1, le=MAX_BUDGET)
    kind: Literal["item", "turns", "misleading", "presupposition", "noise", "patient"] = "item"
    context: PassageMode = "item"
    resample: int = Field(5, ge=0, le=MAX_RESAMPLE)
    correction: Literal["holm", "bh"] = "holm"

    @model_validator(mode="after")
    def _needs_attacker(self) -> AdaptiveOptions:
        if not self.attacker:
            raise ValueError("attacker an adaptive run needs an attacker model: --attacker SPEC (or -O attacker=SPEC), e.g. openai/gpt-4o-mini")
        return self


assert set(KIND_CHOICES) == {"item", "turns", *KINDS}


def render(item: Item, probe: AdaptiveProbe | None, scoring: str, options: AdaptiveOptions) -> list[dict[str, str]]:
    """The clean question (a probe's unit starts from it: its loop sends the stressed versions)."""
    return render_messages(item, None, scoring, DEFAULT_PROMPTS, options.context)


def scorer(item: Item, probe: AdaptiveProbe | None, scoring: str, options: object) -> Scorer:
    return mcq_scorer(item, scoring)


def kind_of_turn(probe: AdaptiveProbe, option: str, turn: int) -> str:
    """The kind of stress asked at `turn` (1-based) under the run's `kind` option."""
    if option == "item":
        return probe.kind
    if option == "turns":
        return KINDS[(turn - 1) % len(KINDS)]
    return option


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def stressed_question(question: str, text: str, place: str) -> str:
    """The question with a stress put in: `before` the question, or into the `stem` before its last
    sentence (the question proper); a one-sentence question gets it first."""
    text = " ".join(text.split())
    if place == "before":
        return f"{text} {question.strip()}"
    parts = _SENTENCE_END.split(question.strip())
    if len(parts) < 2:
        return f"{text} {question.strip()}"
    return " ".join([*parts[:-1], text, parts[-1]])


def stressed_messages(item: Item, kind: str, text: str, context: str = "item") -> list[dict[str, str]]:
    """The item rewritten with one stress, as the target is asked it: a misleading sentence after the
    options as added context (as a misleading Type 1 probe shows it), any other kind put into the
    question (`stressed_question`)."""
    place = KIND_SPECS[kind].place
    if place == "context":
        user = render_user(item, None, "letter", DEFAULT_PROMPTS, context)
        # the context block where the misleading family puts it: after the options, before the instruction
        head, sep, instruction = user.rpartition("\n\n")
        user = f"{head}\n\n{CONTEXT_HEADER_ONE}\n{' '.join(text.split())}{sep}{instruction}"
    else:
        changed = item.model_copy(update={"question": stressed_question(item.question, text, place)})
        user = render_user(changed, None, "letter", DEFAULT_PROMPTS, context)
    return [{"role": "system", "content": DEFAULT_PROMPTS.system}, {"role": "user", "content": user}]


def attack_prompts() -> dict[str, str]:
    """The attacker's and checker's texts (recorded with a run, hashed into the loop's unit keys)."""
    from .attack import ATTACKER_SYSTEM, CHECKER_INSTRUCTION, CHECKER_SYSTEM, REPLY_FORMAT

    return {
        "attacker_system": ATTACKER_SYSTEM,
        "reply_format": REPLY_FORMAT,
        "checker_system": CHECKER_SYSTEM,
        "checker_instruction": CHECKER_INSTRUCTION,
        **{f"kind.{k}": v.brief for k, v in KIND_SPECS.items()},
    }


def prompts(options: AdaptiveOptions) -> dict[str, str]:
    """The texts a run sends: the clean question's, the stressed context header, the attack's."""
    return {
        **({"context": options.context} if options.context != "item" else {}),
        "system": DEFAULT_PROMPTS.system,
        "letter_instruction": DEFAULT_PROMPTS.letter_instruction,
        "context_header_one": CONTEXT_HEADER_ONE,
        **attack_prompts(),
    }
