"""The stored summaries of `team` units (mitigations.team_run), one row per unit of a run: what
results.json, the report and anyone reading a run's store use to say how the teams worked.

A row: model, setting, unit_id, item_id, probe_id, condition, outcome (answered, complexity_unread,
recruitment_unread, over_calls, over_tokens), complexity (basic, intermediate, advanced; None when the
triage was unread), experts (how many were recruited), roles (their specialties, in order), rounds
(of discussion after the first answers), agreed (the experts' last positions all read the same;
None when no expert spoke), calls (model calls, the final decision included) and tokens (prompt and
completion, all calls). Summaries are found through the summary roles settings register
(`mitigations.roles`); a summary that is not a team's (an agent's trajectory) is left out."""

from __future__ import annotations

import json
from typing import TypedDict

from ..store import Store
from .roles import role_names


class TeamUnit(TypedDict):
    model: str
    setting: str
    unit_id: str
    item_id: str
    probe_id: str | None
    condition: str
    outcome: str
    complexity: str | None
    experts: int
    roles: list[str]
    rounds: int
    agreed: bool | None
    calls: int
    tokens: int


def is_team_summary(summary: object) -> bool:
    """Whether a loop summary is a team's (it records the team's mode and its turns)."""
    return isinstance(summary, dict) and "mode" in summary and "turns" in summary


def unit_rows(store: Store, run: str | None = "latest") -> list[TeamUnit]:
    """One row per team unit of a run (default: the latest; None: every unit) with a stored summary."""
    out: list[TeamUnit] = []
    for role in role_names("summary"):
        for r in store.linked_texts(role, run):
            try:
                s = json.loads(r["text"])
            except ValueError:
                continue
            if not is_team_summary(s):
                continue
            experts = s.get("experts") or []
            out.append(
                {
                    "model": r["model"],
                    "setting": r["setting"],
                    "unit_id": r["unit_id"],
                    "item_id": r["item_id"],
                    "probe_id": r["probe_id"],
                    "condition": r["condition"],
                    "outcome": str(s.get("outcome")),
                    "complexity": s.get("complexity"),
                    "experts": len(experts),
                    "roles": [str(e.get("role")) for e in experts if isinstance(e, dict)],
                    "rounds": int(s.get("rounds") or 0),
                    "agreed": s.get("agreed"),
                    "calls": int(s.get("calls") or 0),
                    "tokens": int(s.get("prompt_tokens") or 0) + int(s.get("completion_tokens") or 0),
                }
            )
    return out
