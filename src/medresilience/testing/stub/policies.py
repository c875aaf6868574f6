"""The stub's answers: a policy maps (messages, request body) to the reply text; the named built-in
policies and the prompt readers they share (option letters, the answer letter of a text)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .bodies import canonical_body

#: (messages, request body) -> the reply text, or a dict: {"content", "tool_calls"} (agent_policy), or
#: {"content", "reasoning_content", "reasoning_tokens"} (either of the last two may be left out): a
#: thinking model's reply, its reasoning text in the message and its count in the usage as the
#: policy gives them (an absent one is not sent; the stub never derives one from the other)
Policy = Callable[[list[dict[str, Any]], dict[str, Any]], object]

DEFAULT_LETTERS = ("A", "B", "C", "D")
_OPTION_RE = re.compile(r"^([A-J])[.)]\s", re.MULTILINE)
_MARKER_RE = re.compile(r"\[\[ANSWER:\s*([A-Z])\s*\]\]")
_ANSWER_RE = re.compile(r"\banswer\b(?:\s+is)?\s*[:\-]?\s*\(?([A-J])\b", re.IGNORECASE)
_BARE_RE = re.compile(r"^\s*\(?([A-J])\)?[.):]?\s*$")


def message_text(message: Mapping[str, object]) -> str:
    """The text of one chat message (string content or a list of text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _last_user_text(messages: Sequence[Mapping[str, object]]) -> str:
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            return message_text(m)
    return ""


def option_letters(messages: Sequence[Mapping[str, object]]) -> list[str]:
    """Option letters of the last user message: lines matching ^([A-J])[.)]\\s, in order, unique."""
    seen: list[str] = []
    for letter in _OPTION_RE.findall(_last_user_text(messages)):
        if letter not in seen:
            seen.append(letter)
    return seen


def messages_digest(messages: Sequence[Mapping[str, object]]) -> bytes:
    return hashlib.sha256(canonical_body(list(messages))).digest()


def hash_letter(messages: Sequence[Mapping[str, object]], letters: Sequence[str] | None = None) -> str:
    """The "hash" policy's letter: chosen among `letters` (default: the prompt's option letters,
    or A-D when the prompt has none) by a SHA-256 of the canonical messages."""
    letters = list(letters) if letters else (option_letters(messages) or list(DEFAULT_LETTERS))
    return letters[int.from_bytes(messages_digest(messages)[:8], "big") % len(letters)]


def answer_letter(text: str) -> str | None:
    """The letter an answer text gives ("Answer: C", "answer is (C)", or a bare "C"), or None."""
    m = _ANSWER_RE.search(text) or _BARE_RE.match(text)
    return m.group(1).upper() if m else None


def _policy_hash(messages: Sequence[Mapping[str, object]], request: Mapping[str, object]) -> str:
    return f"Answer: {hash_letter(messages)}"


def _policy_first(messages: Sequence[Mapping[str, object]], request: Mapping[str, object]) -> str:
    letters = option_letters(messages)
    return f"Answer: {letters[0] if letters else DEFAULT_LETTERS[0]}"


def _policy_gullible(messages: Sequence[Mapping[str, object]], request: Mapping[str, object]) -> str:
    for m in messages:
        if isinstance(m, dict):
            found = _MARKER_RE.search(message_text(m))
            if found:
                return f"Answer: {found.group(1)}"
    return _policy_hash(messages, request)


def _policy_echo(messages: Sequence[Mapping[str, object]], request: Mapping[str, object]) -> str:
    return _last_user_text(messages)


#: What the stub does with a request's `response_format` json_schema: `ignore` it (the policy's text
#: is sent as is, like a server that drops the parameter), `honour` it (the reply is a JSON object
#: of the schema: `fit_to_schema`), or `reject` it (400, as a server without structured output answers).
RESPONSE_FORMAT_MODES = ("ignore", "honour", "reject")
#: the error a rejecting stub gives (the words OpenAI's API uses for a model without structured output)
REJECT_MESSAGE = "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."


def fit_to_schema(text: str, schema: dict[str, Any]) -> str:
    """The policy's reply as a server decoding under `schema` would send it: a reply that is
    already a JSON object as is; otherwise an object of the schema's properties: an enum property
    gets the letter the text gives ("Answer: C") when the enum has it, else the enum's first value
    (guided decoding can only emit an allowed value); a string property the text; a number 0, a
    boolean false, anything else null."""
    try:
        if isinstance(json.loads(text), dict):
            return text
    except ValueError:
        pass
    out: dict[str, object] = {}
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        enum, kind = prop.get("enum"), prop.get("type")
        if enum:
            letter = answer_letter(text)
            out[name] = letter if letter in enum else enum[0]
        elif kind == "string":
            out[name] = text
        elif kind in ("number", "integer"):
            out[name] = 0
        else:
            out[name] = False if kind == "boolean" else None
    return json.dumps(out)


#: Named built-in policies.
POLICIES = ("hash", "first", "gullible", "echo", "json_fixed")


def make_policy(policy: str | Policy, *, json_text: str = "{}") -> Policy:
    """A policy callable from a name in POLICIES or a callable (returned as is).

    hash: "Answer: X", X chosen by a hash of the messages among the prompt's option letters.
    first: "Answer: X" for the first option letter. gullible: "Answer: X" when any message
    contains the marker [[ANSWER:X]], else as hash. echo: the last user message. json_fixed:
    `json_text` for every request (for structured-output / response_format calls)."""
    if callable(policy):
        return policy
    if policy == "hash":
        return _policy_hash
    if policy == "first":
        return _policy_first
    if policy == "gullible":
        return _policy_gullible
    if policy == "echo":
        return _policy_echo
    if policy == "json_fixed":
        text = str(json_text)

        def _policy_json_fixed(messages: Sequence[Mapping[str, object]], request: Mapping[str, object]) -> str:
            return text

        return _policy_json_fixed
    raise ValueError(f"unknown stub policy {policy!r}; expected one of {', '.join(POLICIES)} or a callable")
