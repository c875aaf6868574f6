"""The store's status words and the numbers its joins read them as, each one named enum.

A call is stored `ok` or `error` (`CallStatus`), a score `valid`, `invalid`, `truncated` or
`unscored` (`ScoreStatus`); both are text in the file and compare equal to their words. The results
frame's join reads them as small integers (`CallCode`, `ScoreCode`), packed with a unit's other
columns; the SQL that turns the words into those numbers is written here from the enums, so a
number means one thing everywhere it is read."""

from __future__ import annotations

import enum


class CallStatus(enum.StrEnum):
    """A stored call's outcome (`calls.status`)."""

    OK = "ok"
    ERROR = "error"


class ScoreStatus(enum.StrEnum):
    """A stored score's status (`scores.status`)."""

    VALID = "valid"
    INVALID = "invalid"
    TRUNCATED = "truncated"
    UNSCORED = "unscored"


#: the score statuses of a reply that was answered and read as far as it could be (no `unscored`):
#: a run whose units all stand at one of them is settled
ANSWERED = (ScoreStatus.VALID, ScoreStatus.INVALID, ScoreStatus.TRUNCATED)


class CallCode(enum.IntEnum):
    """A unit's call in the frame's join: no call row, ok, error, or ok but cut at its token
    budget (finish_reason `length`)."""

    NONE = 0
    OK = 1
    ERROR = 2
    CUT = 3


class ScoreCode(enum.IntEnum):
    """A unit's score in the frame's join: no score row under its scoring, then the score's status."""

    NONE = 0
    VALID = 1
    INVALID = 2
    UNSCORED = 3
    TRUNCATED = 4

    @property
    def status(self) -> ScoreStatus | None:
        """The score's stored status (None: no score row)."""
        return None if self is ScoreCode.NONE else ScoreStatus[self.name]


def _words(values: tuple[str, ...] | list[str]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


#: `CallCode` of the joined call `c`
CALL_CODE_SQL = (
    f"(CASE c.status WHEN '{CallStatus.OK}' THEN (CASE c.finish_reason WHEN 'length' THEN {CallCode.CUT:d} ELSE {CallCode.OK:d} END) "
    f"WHEN '{CallStatus.ERROR}' THEN {CallCode.ERROR:d} ELSE {CallCode.NONE:d} END)"
)
#: `ScoreCode` of the joined score `s`
SCORE_CODE_SQL = (
    "(CASE s.status " + " ".join(f"WHEN '{ScoreStatus[c.name]}' THEN {c:d}" for c in ScoreCode if c is not ScoreCode.NONE) + f" ELSE {ScoreCode.NONE:d} END)"
)
#: the statuses a stored score may have, as the schema's CHECK lists them
SCORE_STATUSES_SQL = _words([s.value for s in ScoreStatus])
CALL_STATUSES_SQL = _words([s.value for s in CallStatus])
ANSWERED_SQL = _words([s.value for s in ANSWERED])
