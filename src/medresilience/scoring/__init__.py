"""Scoring: turning a model's reply into a verdict. MCQ letters by extraction or by log-probability;
judges for free-text families come later. An unreadable reply is `invalid`, never a guess."""

from .letters import extract_letter
from .logprob import choice_from_logprobs

__all__ = ["extract_letter", "choice_from_logprobs"]
