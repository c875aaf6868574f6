"""Scoring: turning a model's reply into a Score. MCQ letters by extraction (`letters`, with the
option-text readers of `option_texts` and, in `other_items`, the text a reply writes for other
items) or by log-probability (`mcq`), and an LLM judge with its
rubric as data (`judge`: Rubric, Judge, JudgeScorer). An unreadable reply is `invalid`, a judge
that cannot decide is `unscored` with its reason: never a guess, never a default.

May import: calls, models, runtime, score, store."""

from typing import Any

from ..score import Score, Scorer, is_deferred
from .letters import Reading, extract_letter, read_answer
from .logprob import choice_from_logprobs
from .mcq import mcq_params, mcq_scorer

__all__ = [
    "Judge",
    "JudgeScorer",
    "Reading",
    "Rubric",
    "Score",
    "Scorer",
    "choice_from_logprobs",
    "extract_letter",
    "is_deferred",
    "mcq_params",
    "mcq_scorer",
    "read_answer",
]


def __getattr__(name: str) -> Any:
    # the judge makes calls (calls.py imports this package's types): imported on first use
    if name in ("Judge", "JudgeScorer", "Rubric"):
        from . import judge

        return getattr(judge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
