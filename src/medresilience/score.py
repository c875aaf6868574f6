"""What a scorer returns: a Score with a label (a letter, a verdict), a numeric value (1/0 for
right/wrong, a judge's -1/0/1) and a status. `invalid`: the reply carries no readable answer;
`truncated`: the reply was cut at its token budget (finish_reason "length") before a readable
answer, so it is not an answer at all and is counted apart from `invalid`; `unscored`: the scorer
itself could not decide (a judge or extraction-model outage, an unparseable verdict), with its
reason in `detail`. None of them is ever turned into a default score.

It is vocabulary every layer speaks, so it sits at the root: the call path (calls/) stores a
score with its call, scorers (scoring/, the families) return one, runs and reports count them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from typing_extensions import TypeIs

from .runtime.jsontypes import JSONValue

if TYPE_CHECKING:  # pragma: no cover
    from .models.openai_compatible import Completion

ScoreStatus = Literal["valid", "invalid", "truncated", "unscored"]
#: the statuses of a reply that reached its scorer and carries no answer (the study counts them as not correct)
UNREAD = ("invalid", "truncated")
#: the statuses of a reply that enters a rate: read, or unread (an error, unscored or missing unit does not)
ANSWERED = ("valid", *UNREAD)


@dataclass(frozen=True)
class Score:
    label: str | None
    status: ScoreStatus
    value: float | None = None
    detail: JSONValue = None  # how the label was read, or why there is none (JSON, as stored)

    @classmethod
    def unscored(cls, reason: str, **detail: JSONValue) -> Score:
        return cls(None, "unscored", None, {"reason": reason, **detail})


#: A direct scorer: one completion in, one score out (stored with the call, in its transaction).
Scorer = Callable[["Completion"], Score]


class DeferredScorer:
    """A scorer that makes calls of its own (a judge, an extraction model) rather than reading the
    reply directly: it scores the stored replies once they are all in. Its type declares it: the
    judge (`scoring.judge.JudgeScorer`) and the extraction reading (`scoring.extract.ExtractScorer`)
    are DeferredScorers; every other scorer is a direct one (`Scorer`). `name` is stored with its
    scores (it names the judging model and rubric)."""

    name: str


#: any scorer a unit has: a direct one, or a deferred one
AnyScorer = Scorer | DeferredScorer


def is_deferred(scorer: object) -> TypeIs[DeferredScorer]:
    """Whether a scorer is deferred (its type says so: `DeferredScorer`)."""
    return isinstance(scorer, DeferredScorer)
