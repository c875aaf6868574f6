"""A scripted clinical team for tests: a policy that recognises each call of a `team` setting's
conversation (mitigations.team) by its prompt and answers it from a script, and any other request
(a `none` answer, a judge) with a fallback policy.

- the triage (its system message asks for basic, intermediate or advanced): `level`, as given (a
  text that names no level, or two, is an unread triage);
- a recruitment: `recruitment` when given (raw text, e.g. an unreadable one), else `EXPERT <n>: <role>
  | <focus>` lines for the number the prompt asks, the roles taken in order from `roles`; for teams,
  `TEAM <t>: <purpose>` and `MEMBER <t>.<m>:` lines;
- the monitor's review: `note`;
- an expert's turn (first answer or a round of discussion): a short reason and `POSITION: <p>`, p
  from `positions[role]`, one per turn of that expert (its number of assistant messages so far; past
  the end the last repeats);
- a team lead's report: `POSITION:` the most common position of the members' answers it reads (ties:
  the first in letter order);
- the final decision: `decision(positions)` of the POSITION lines the moderator reads (default: the
  most common, as `Answer: <p>`); the basic level's lone answer: `basic`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .policies import Policy, make_policy, message_text

# what marks each call of the team's conversation (mitigations.team's prompts)
TRIAGE_MARK = "Reply with exactly one word: basic, intermediate or advanced"
RECRUIT_MARK = re.compile(r"Pick (\d+) specialists")
TEAMS_MARK = re.compile(r"Form (\d+) teams from different services, each of (\d+) clinicians")
MONITOR_MARK = "You review medical questions before another assistant answers them"
EXPERT_MARK = re.compile(r"You are a (.+?) working with other clinicians on a team")
LEAD_MARK = "You lead the team"
DECISION_MARK = "You are the moderator who makes the final decision"
BASIC_MARK = "You are a clinician answering for a clinical team"
_POSITION = re.compile(r"^POSITION:\s*(.+?)\s*$", re.MULTILINE)

ROLES = ("cardiologist", "nephrologist", "pharmacist", "radiologist", "surgeon", "oncologist", "neurologist", "geriatrician", "internist", "nurse")


def _majority(positions: Sequence[str]) -> str:
    counts = Counter(p.strip() for p in positions if p.strip())
    if not counts:
        return "?"
    best = max(counts.values())
    return sorted(p for p, n in counts.items() if n == best)[0]


def _recruitment(k: int, roles: Sequence[str]) -> str:
    return "\n".join(f"EXPERT {i}: {roles[(i - 1) % len(roles)]} | focus {i}" for i in range(1, k + 1))


def _teams(t: int, k: int, roles: Sequence[str]) -> str:
    lines = []
    for a in range(1, t + 1):
        lines.append(f"TEAM {a}: purpose {a}")
        lines += [f"MEMBER {a}.{b}: {roles[((a - 1) * k + b - 1) % len(roles)]} | focus {a}.{b}" for b in range(1, k + 1)]
    return "\n".join(lines)


def scripted_team(
    level: str = "intermediate",
    positions: Mapping[str, Sequence[str]] | None = None,
    roles: Sequence[str] = ROLES,
    recruitment: str | None = None,
    note: str = "No concerns.",
    decision: Callable[[list[str]], str] | None = None,
    basic: str = "Answer: A",
    fallback: str | Policy = "hash",
) -> Policy:
    """A policy playing a team (see the module doc) and `fallback` elsewhere."""
    other = make_policy(fallback)
    positions = positions or {}

    def expert(role: str, messages: list[dict[str, Any]]) -> str:
        said = positions.get(role) or ["A"]
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        p = said[min(turn, len(said) - 1)]
        return f"As the {role}, my reading of the question points to {p}.\nPOSITION: {p}"

    def policy(messages: list[dict[str, Any]], body: dict[str, Any]) -> Any:
        system = message_text(messages[0]) if messages and messages[0].get("role") == "system" else ""
        last = message_text(messages[-1]) if messages else ""
        if TRIAGE_MARK in system:
            return level
        if MONITOR_MARK in system:
            return note
        if (m := TEAMS_MARK.search(system)) is not None:
            return recruitment if recruitment is not None else _teams(int(m.group(1)), int(m.group(2)), roles)
        if (m := RECRUIT_MARK.search(system)) is not None:
            return recruitment if recruitment is not None else _recruitment(int(m.group(1)), roles)
        if DECISION_MARK in system:
            seen = _POSITION.findall(system)
            return decision(seen) if decision is not None else f"Answer: {_majority(seen)}"
        if LEAD_MARK in last:
            return f"Team report.\nPOSITION: {_majority(_POSITION.findall(last))}"
        if (m := EXPERT_MARK.search(system)) is not None:
            return expert(m.group(1), messages)
        if BASIC_MARK in system:
            return basic
        return other(messages, body)

    policy.__name__ = "scripted_team"
    return policy
