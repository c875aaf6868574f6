"""Scoring: turning a model's reply into a Score. MCQ letters by extraction or by log-probability
(`mcq`), and an LLM judge with its rubric as data (`judge`). An unreadable reply is `invalid`, a
judge that cannot decide is `unscored` with its reason: never a guess, never a default."""

from .letters import extract_letter
from .logprob import choice_from_logprobs
from .mcq import mcq_params, mcq_scorer
from .types import Score, Scorer

__all__ = ["Score", "Scorer", "choice_from_logprobs", "extract_letter", "mcq_params", "mcq_scorer"]
