"""A unit's conversation when it is more than one request and one reply: an agent unit's whole
trajectory (every step's reply and tool calls, the tool results the model read back, the final
cited answer), a team unit's discussion (every call of its conversation in order: the triage, the
monitor's note, the recruitment, each expert's answers round by round, the leads' reports; its
summary says who made each) and a second turn's two turns (turn 1's messages and reply, turn 2's push-back and
reply, with the turn-1 unit it continues).

An agent unit's store rows (see `mitigations.agent_run`): its request holds the whole
conversation (the opening messages, then per step the model's reply and what it read back), and
it is linked to each step's call (`agent.step<n>`, the last one `agent.answer`), to each tool
result (`agent.tool<n>.<i>`, JSON: tool, arg, hits) and to the trajectory's summary
(`agent.trajectory`, JSON: outcome, counts, the citations checked). A second turn's request holds
turn 1's messages, turn 1's reply as the last assistant message, then turn 2's messages."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TypedDict

from ..mitigations.roles import classify
from ..runtime.jsontypes import JSONObject, JSONValue
from ..store import Store

#: what a step's call row shows beside its reply
STEP_FACTS = ("key", "status", "error", "attempts", "finish_reason", "prompt_tokens", "completion_tokens", "cost", "latency_s")


class Trajectory(TypedDict):
    """An agent unit's trajectory as the viewer shows it (see `trajectory`)."""

    opening: int
    steps: list[dict[str, object]]
    summary: JSONObject
    roles: list[str]


class Turn(TypedDict):
    messages: list[Mapping[str, object]]
    reply: object


class Turns(TypedDict):
    """A second turn's two turns (see `turns`)."""

    turn1: Turn
    turn2: Turn
    earlier: Mapping[str, object] | None
    same_reply: bool | None


def _json(text: object) -> JSONValue:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _tool_call(c: object) -> dict[str, str]:
    fn = c.get("function") if isinstance(c, dict) else None
    fn = fn if isinstance(fn, dict) else {}
    arguments = fn.get("arguments")
    return {"name": str(fn.get("name") or "?"), "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}


def _segments(messages: Sequence[Mapping[str, object]]) -> list[list[Mapping[str, object]]]:
    """The messages after the opening cut at each assistant message: [reply, what it read back...]."""
    out: list[list[Mapping[str, object]]] = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "assistant":
            out.append([m])
        elif out:
            out[-1].append(m if isinstance(m, dict) else {"role": "", "content": str(m)})
    return out


def trajectory(store: Store, linked: Sequence[Mapping[str, object]], messages: Sequence[Mapping[str, object]] | None) -> Trajectory | None:
    """An agent unit's trajectory from its linked calls and its stored conversation (None: not an
    agent unit): `opening` (how many messages were sent before the first step), `steps` (n, the
    step's call facts, its reply text, its tool calls, the tool results stored for it, and the
    messages it read back; the last step's tool calls are not carried out when the trajectory ran
    out of steps or tokens), `summary` (outcome, counts, citations checked) and `roles` (the linked
    roles it shows)."""
    steps: dict[int, Mapping[str, object]] = {}
    tools: dict[int, list[tuple[int, JSONValue]]] = {}
    answer: Mapping[str, object] | None = None
    summary: JSONValue = None
    roles: set[str] = set()
    for row in linked:
        role = str(row.get("role") or "")
        known = classify(role)  # the roles settings register (mitigations.roles), by kind
        kind, numbers = (known[0].kind, known[1]) if known is not None else ("", ())
        if kind == "summary":
            summary = _json(row.get("text"))
        elif kind == "answer":
            answer = row
        elif kind == "step":
            steps[numbers[0]] = row
        elif kind == "tool":
            tools.setdefault(numbers[0], []).append((numbers[1], _json(row.get("text"))))
        else:
            continue
        roles.add(role)
    if answer is None and not steps and summary is None:
        return None
    if isinstance(summary, dict) and isinstance(summary.get("turns"), list):  # a team's discussion
        return _discussion(steps, summary, messages, roles)
    ordered = [(n, steps[n]) for n in sorted(steps)]
    if answer is not None:
        ordered.append(((ordered[-1][0] if ordered else 0) + 1, answer))
    conversation = list(messages or [])
    first_key = ordered[0][1].get("key") if ordered else None
    sent_first = store.request_messages([first_key]).get(first_key) if isinstance(first_key, str) else None
    opening = (
        len(sent_first)
        if sent_first is not None
        else next((i for i, m in enumerate(conversation) if isinstance(m, dict) and m.get("role") == "assistant"), len(conversation))
    )
    segments = _segments(conversation[opening:])
    out_steps: list[dict[str, object]] = []
    for j, (n, row) in enumerate(ordered):
        read_back = segments[j][1:] if j < len(segments) else []
        calls = row.get("tool_calls")
        out_steps.append(
            {
                "n": n,
                "role": row.get("role"),
                **{k: row.get(k) for k in STEP_FACTS},
                "text": row.get("text"),
                "tool_calls": [_tool_call(c) for c in calls] if isinstance(calls, list) else [],
                "tools": [rec for _i, rec in sorted(tools.get(n, []), key=lambda t: t[0]) if isinstance(rec, dict)],
                "read_back": [{"role": str(m.get("role", "")), "content": m.get("content")} for m in read_back],
            }
        )
    return {"opening": opening, "steps": out_steps, "summary": summary if isinstance(summary, dict) else {}, "roles": sorted(roles)}


def _discussion(
    steps: Mapping[int, Mapping[str, object]], summary: Mapping[str, JSONValue], messages: Sequence[Mapping[str, object]] | None, roles: set[str]
) -> Trajectory:
    """A team unit's discussion (mitigations.team_run): every linked call in the order made, each
    with who made it, what it was and its round (from the summary's turns); the unit's own request
    is the final decision's, every message of it shown (`opening`)."""
    said = {t["n"]: t for t in summary.get("turns") or [] if isinstance(t, dict) and isinstance(t.get("n"), int)}  # type: ignore[union-attr]
    out_steps: list[dict[str, object]] = []
    for n in sorted(steps):
        row, turn = steps[n], said.get(n) or {}
        out_steps.append(
            {
                "n": n,
                "role": row.get("role"),
                **{k: row.get(k) for k in STEP_FACTS},
                "text": row.get("text"),
                "who": turn.get("who"),
                "what": turn.get("what"),
                "round": turn.get("round"),
                "tool_calls": [],
                "tools": [],
                "read_back": [],
            }
        )
    return {"opening": len(messages or []), "steps": out_steps, "summary": dict(summary), "roles": sorted(roles)}


def turns(messages: Sequence[Mapping[str, object]] | None, reply: str | None, earlier: Mapping[str, object] | None, earlier_reply: str | None) -> Turns | None:
    """A second turn's two turns from its stored conversation (None: it holds no earlier reply):
    `turn1` (messages, reply: the last assistant message), `turn2` (the messages after it, this
    unit's reply), `earlier` (the turn-1 unit's view row, None: not found) and `same_reply` (the
    conversation's turn-1 reply is that unit's stored reply; None: not known)."""
    conversation = list(messages or [])
    cut = next((i for i in range(len(conversation) - 1, -1, -1) if isinstance(conversation[i], dict) and conversation[i].get("role") == "assistant"), None)
    if cut is None:
        return None
    first_reply = conversation[cut].get("content")
    return {
        "turn1": {"messages": conversation[:cut], "reply": first_reply},
        "turn2": {"messages": conversation[cut + 1 :], "reply": reply},
        "earlier": earlier,
        "same_reply": None if earlier_reply is None else earlier_reply == first_reply,
    }
