"""Scoring a multiple-choice reply against an item's gold letter: by extracting the letter from the
generated text (`letter`) or by reading the option letters' log-probabilities (`logprob`). The
value is 1 for the gold letter, 0 for another, none when the reply names no letter (`invalid`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .letters import read_answer
from .logprob import choice_from_logprobs
from .types import Score, Scorer

if TYPE_CHECKING:  # pragma: no cover
    from ..models.openai_compatible import Completion
    from ..records import Item

#: top-k log-probabilities asked for with `logprob` scoring
LOGPROB_TOP_K = 20
SCORINGS = ("letter", "logprob")


def mcq_params(scoring: str) -> dict[str, int]:
    """Decoding overrides a scoring mode needs (logprob: one token, top-k log-probabilities)."""
    return {"max_tokens": 1, "logprobs": LOGPROB_TOP_K} if scoring == "logprob" else {}


def mcq_scorer(item: Item, scoring: str) -> Scorer:
    letters, gold = item.letters, item.answer

    def value(label: str | None) -> float | None:
        return None if label is None else float(label == gold)

    if scoring == "logprob":
        def score_lp(c: Completion) -> Score:
            label, dist = choice_from_logprobs(c.top_logprobs, letters)
            return Score(label, "valid" if label else "invalid", value(label), {"dist": dist, "text": c.text})

        return score_lp

    def score_letter(c: Completion) -> Score:
        reading = read_answer(c.text, letters, item.options)
        return Score(reading.label, "valid" if reading.label else "invalid", value(reading.label), {"read": reading.how})

    return score_letter
