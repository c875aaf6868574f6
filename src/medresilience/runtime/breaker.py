"""The circuit breaker of everything a run calls over the network (a model endpoint, the agent's
search service): after `limit` failures in a row of a kind that would repeat, a target is stopped
and nothing more is sent to it; a success resets its count. `limit` is MEDRES_STOP_AFTER_AUTH_ERRORS
(default `STOP_AFTER`) unless given; 0 never stops. It imports only fileio."""

from __future__ import annotations

from typing import Any

from .fileio import env_number

__all__ = ["STOP_AFTER", "Breaker", "stop_limit"]

#: The default of MEDRES_STOP_AFTER_AUTH_ERRORS: consecutive failures that stop a target.
STOP_AFTER = 5


def stop_limit() -> int:
    """MEDRES_STOP_AFTER_AUTH_ERRORS, or `STOP_AFTER`."""
    return int(env_number("MEDRES_STOP_AFTER_AUTH_ERRORS", STOP_AFTER, integer=True))


class Breaker:
    """Consecutive failures per target; `stopped` holds each stopped target's (why, last error)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.streak: dict[str, int] = {}
        self.stopped: dict[str, tuple[str, Any]] = {}

    def failed(self, target: str, why: str | None, error: object = None) -> bool:
        """Count a failure (`why`: the kind that stops a target; None: one that does not, which
        breaks the streak); whether the target is now stopped."""
        self.streak[target] = self.streak.get(target, 0) + 1 if why else 0
        if why and self.limit and self.streak[target] >= self.limit and target not in self.stopped:
            self.stopped[target] = (why, error)
        return target in self.stopped

    def succeeded(self, target: str) -> None:
        self.streak[target] = 0

    def is_stopped(self, target: str) -> bool:
        return target in self.stopped
