"""A scripted search agent for tests: a policy that answers each step of an agent conversation
with the next action of a script, as OpenAI tool calls when the request offers tools and as the
plain-text action lines otherwise (`SEARCH: ...`, `READ: ...`), and any other request (a judge, a
clean call) with a fallback policy.

An action is a tuple: ("search", query), ("read", passage id), ("answer", final text), or
("raw", tool name, arguments text) for a tool call exactly as given (a malformed one, arguments
that are not JSON, an unknown tool). The step is the number of assistant messages already in the
conversation; past the end of the script the last action repeats (an agent that never stops).

A reply with tool calls is a dict {"content": text or None, "tool_calls": [...]}; the stub's
completion sends it with finish_reason "tool_calls"."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .policies import Policy, make_policy

Action = tuple[str, ...]

#: what marks the system message of an agent conversation that uses the text protocol
TEXT_PROTOCOL_MARK = "SEARCH:"


def is_agent_request(messages: Sequence[Mapping[str, object]], body: Mapping[str, object]) -> bool:
    """Whether a request is a step of an agent conversation (it offers tools, or its system
    message describes the text actions)."""
    if body.get("tools"):
        return True
    first = messages[0] if messages else {}
    return first.get("role") == "system" and TEXT_PROTOCOL_MARK in str(first.get("content") or "")


def _tool_call(step: int, i: int, name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call_{step}_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}


def scripted_agent(script: Sequence[Action], fallback: str | Policy = "hash") -> Policy:
    """A policy playing `script` in agent conversations and `fallback` elsewhere."""
    if not script:
        raise ValueError("a scripted agent needs at least one action")
    other = make_policy(fallback)

    def policy(messages: list[dict[str, Any]], body: dict[str, Any]) -> Any:
        if not is_agent_request(messages, body):
            return other(messages, body)
        step = sum(1 for m in messages if m.get("role") == "assistant")
        action = script[min(step, len(script) - 1)]
        kind = action[0]
        if kind == "answer":
            return action[1]
        if body.get("tools"):
            if kind == "raw":
                return {"content": None, "tool_calls": [_tool_call(step, 0, action[1], action[2])]}
            arg = {"search": "query", "read": "id"}[kind]
            return {"content": None, "tool_calls": [_tool_call(step, 0, kind, json.dumps({arg: action[1]}))]}
        if kind == "raw":
            return f"{action[1].upper()}: {action[2]}"
        return f"I will look this up.\n{kind.upper()}: {action[1]}"

    policy.__name__ = "scripted_agent"
    return policy
