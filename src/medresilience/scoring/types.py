"""What a scorer returns: a Score with a label (a letter, a verdict), a numeric value (1/0 for
right/wrong, a judge's -1/0/1) and a status. `invalid`: the reply carries no readable answer;
`unscored`: the scorer itself could not decide (a judge outage or an unparseable verdict), with
its reason in `detail`. Neither is ever turned into a default score."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # pragma: no cover
    from ..models.openai_compatible import Completion

ScoreStatus = Literal["valid", "invalid", "unscored"]


@dataclass(frozen=True)
class Score:
    label: str | None
    status: ScoreStatus
    value: float | None = None
    detail: Any = None

    @classmethod
    def unscored(cls, reason: str, **detail: Any) -> Score:
        return cls(None, "unscored", None, {"reason": reason, **detail})


#: A direct scorer: one completion in, one score out (stored with the call, in its transaction).
Scorer = Callable[["Completion"], Score]


def is_deferred(scorer: object) -> bool:
    """A scorer that makes calls of its own (a judge) rather than reading the reply directly."""
    return hasattr(scorer, "judge_requests")
