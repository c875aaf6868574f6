"""An attack as the evidence viewer shows it (`family.LoopView`): read from the calls linked to its
unit, the trace (`ROLE_TRACE`, the loop's own record of every turn) and the attacker's replies
(`ROLE_ATTACKER<t>`, shown as given where no stress could be read from one). The turns are the
trace's, in its order: a turn is `used` only when the checker let its stress through to the
answering model; a candidate the rules or the checker refused is shown refused, never used."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...family import LoopTurn, LoopView
from .taxonomy import KIND_SPECS, ROLE_ATTACKER, ROLE_CHECKER, ROLE_TARGET, ROLE_TRACE

#: the roles of a turn's calls, numbered by turn (what the trace holds of each is shown from it)
TURN_ROLES = (ROLE_ATTACKER, ROLE_CHECKER, ROLE_TARGET)


def _ending(trace: Mapping[str, Any]) -> str:
    """How the attack ended, in words."""
    clean = trace.get("clean") or {}
    if not trace.get("attacked"):
        return f"not attacked: the clean answer was not right (read {clean.get('label') or 'as nothing'})"
    at = trace.get("flipped_at")
    if at is None:
        return f"held through {trace.get('turns_used')} of {trace.get('budget')} turns"
    where = "the target" if trace.get("to_target") else "another wrong option"
    return f"flipped at turn {at} (to {where})"


def _turn(t: Mapping[str, Any], replies: Mapping[tuple[str, int], str]) -> LoopTurn:
    n = int(t["turn"])
    outcome = str(t.get("outcome") or "not finished")
    used = outcome in ("held", "flipped", "unread")
    return LoopTurn(
        n=n,
        kind=str(KIND_SPECS[t["kind"]].label if t.get("kind") in KIND_SPECS else t.get("kind") or ""),
        proposal=t.get("stress"),
        proposer_reply=replies.get((ROLE_ATTACKER, n)),
        problems=tuple(str(p) for p in t.get("problems") or ()),
        verdict=t.get("verdict"),
        verdict_reason=t.get("verdict_reason"),
        checker_reply=replies.get((ROLE_CHECKER, n)),
        used=used,
        request=t.get("target_key") if used else None,
        reply=t.get("reply"),
        label=t.get("label"),
        outcome=outcome,
    )


def attack_view(linked: Sequence[Mapping[str, Any]]) -> LoopView | None:
    """The attack of a unit from its linked calls (None: no trace is linked to it)."""
    trace: dict[str, Any] | None = None
    replies: dict[tuple[str, int], str] = {}
    roles: list[str] = []
    for row in linked:
        role, text = str(row.get("role") or ""), row.get("text")
        if role == ROLE_TRACE and isinstance(text, str):
            trace = json.loads(text)
            roles.append(role)
            continue
        of = next((r for r in TURN_ROLES if role.startswith(r) and role[len(r) :].isdigit()), None)
        if of is not None:
            roles.append(role)
            if isinstance(text, str):
                replies[(of, int(role[len(of) :]))] = text
    if trace is None:
        return None
    facts = (
        ("attacker", str(trace.get("attacker"))),
        ("checker", str(trace.get("checker"))),
        ("budget", f"{trace.get('budget')} turns"),
        ("option pushed toward", str(trace.get("target"))),
        ("outcome", _ending(trace)),
        ("rejected candidates", str(trace.get("rejected", 0))),
        ("unread replies", str(trace.get("unread", 0))),
    )
    return LoopView(
        facts=facts,
        target=trace.get("target"),
        flipped_at=trace.get("flipped_at"),
        turns=tuple(_turn(t, replies) for t in trace.get("turns") or ()),
        roles=tuple(roles),
    )
