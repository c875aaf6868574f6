"""Scoring a multiple-choice reply against an item's gold letter: by extracting the letter from the
generated text (`letter`) or by reading the option letters' log-probabilities (`logprob`). The
value is 1 for the gold letter, 0 for another, none when the reply names no letter: `invalid`, or
`truncated` when the reply was cut at its token budget (finish_reason "length") before a readable
answer. A one-token logprob reply is cut by design and is never `truncated`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime.jsontypes import JSONValue
from ..score import Score, Scorer
from .letters import read_answer
from .logprob import choice_from_logprobs

if TYPE_CHECKING:  # pragma: no cover
    from ..models.openai_compatible import Completion
    from ..records import Item

#: top-k log-probabilities asked for with `logprob` scoring
LOGPROB_TOP_K = 20
SCORINGS = ("letter", "logprob")
#: the finish reason of a reply cut at its token budget
CUT = "length"
TRUNCATED_REASON = "the reply was cut at its token budget (max_tokens) before a readable answer"


def mcq_params(scoring: str) -> dict[str, int]:
    """Decoding overrides a scoring mode needs (logprob: one token, top-k log-probabilities)."""
    return {"max_tokens": 1, "logprobs": LOGPROB_TOP_K} if scoring == "logprob" else {}


class LetterScorer:
    """The rule reading of one item's replies (letters.read_answer, which records how each label
    was read or why none was): a direct Scorer, and the
    reading an extraction model may complete (scoring.extract), which needs the item's labels."""

    def __init__(self, item: Item):
        self.letters, self.gold, self.options, self.question = item.letters, item.answer, item.options, item.question

    def value(self, label: str | None) -> float | None:
        return None if label is None else float(label == self.gold)

    def read(self, text: str | None, finish_reason: str | None) -> Score:
        """A reply's rule reading: its label (`valid`), else `truncated` when it was cut at its
        budget, else `invalid`."""
        reading = read_answer(text, self.letters, self.options, self.question)
        if reading.label is not None:
            return Score(reading.label, "valid", self.value(reading.label), {"read": reading.how})
        if finish_reason == CUT:
            return Score(None, "truncated", None, {"reason": TRUNCATED_REASON, "read": reading.how, "unread": reading.unread})
        return Score(None, "invalid", None, {"read": reading.how, "unread": reading.unread})

    def __call__(self, c: Completion) -> Score:
        return self.read(c.text, c.finish_reason)


def mcq_scorer(item: Item, scoring: str) -> Scorer:
    if scoring == "logprob":
        letters, gold = item.letters, item.answer

        def score_lp(c: Completion) -> Score:
            label, dist = choice_from_logprobs(c.top_logprobs, letters)
            value = None if label is None else float(label == gold)
            return Score(label, "valid" if label else "invalid", value, {"dist": dict[str, JSONValue](dist), "text": c.text})

        return score_lp
    return LetterScorer(item)
