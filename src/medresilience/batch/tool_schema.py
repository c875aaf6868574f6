"""A JSON-schema request through Anthropic's message batches, which take no `response_format`:
the schema goes as the one tool of the request (`input_schema`) with `tool_choice` naming it, the
way Anthropic documents schema-shaped output, and the reply's `tool_use` input comes back as the
reply's JSON text, so a reader takes it exactly as it takes an OpenAI structured reply.

The tool's input is checked against the schema here (Anthropic does not promise it fits): a reply
with no `tool_use` block of the tool, with several, or whose input does not fit, has no readable
text (an empty reply, unread with the reason counted by the batch); its own text blocks are never
read as the object, so nothing is guessed.

The fit is checked by `jsonschema` (JSON Schema 2020-12, every keyword); the reason names the
first misfit `jsonschema` ranks best, at its JSON path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

from ..calls import CallRequest
from ..models.openai_compatible import Completion
from ..runtime.jsontypes import JSONObject, JSONValue

#: what the tool says it is for (the model reads it with the schema)
TOOL_DESCRIPTION = "Give your reply as this tool's input: one object that fits the input schema."
#: the tool-use system prompt Anthropic adds to a request with tools, in tokens, as its pricing page
#: lists it for `tool_choice` any/tool (235 to 340 for the models listed there): the dry run counts
#: the most, with the tool's own name, description and schema, as prompt tokens of every schema call
TOOL_PROMPT_TOKENS = 350

#: a schema asked for: the tool's name and its JSON schema
Asked = tuple[str, JSONObject]


def schema_of(params: Mapping[str, object]) -> Asked | None:
    """The (name, schema) of a request's `response_format` json_schema, or None (no schema asked)."""
    rf = params.get("response_format")
    if not isinstance(rf, Mapping) or rf.get("type") != "json_schema":
        return None
    js = rf.get("json_schema")
    if not isinstance(js, Mapping) or not isinstance(js.get("schema"), Mapping):
        return None
    return str(js.get("name") or "reply"), dict(js["schema"])


def asked_schema(r: CallRequest) -> Asked | None:
    """The (name, schema) a call asks its reply to fit: its parameters' response format, or the one
    its model's live endpoint takes none of (`CallRequest.schema_format`); None: no schema."""
    return schema_of(r.params) or schema_of({"response_format": r.schema_format or {}})


def schema_tool(name: str, schema: JSONObject) -> JSONObject:
    """The Messages API fields that ask for `schema`: its one tool, and the tool choice forcing it."""
    return {
        "tools": [{"name": name, "description": TOOL_DESCRIPTION, "input_schema": dict(schema)}],
        "tool_choice": {"type": "tool", "name": name},
    }


def tool_prompt_chars(found: Asked | None) -> int:
    """The characters a schema call's tool adds to its prompt (0: no schema asked)."""
    return 0 if found is None else len(json.dumps(schema_tool(*found), separators=(",", ":")))


def tool_reply(found: Asked | None, c: Completion) -> tuple[Completion, str | None]:
    """A reply as the reader takes it, and why it is unread (None: read); `found`: the (name,
    schema) its request asked for (`asked_schema`). Without a schema asked the reply is as it came.
    With one, its text is the forced tool's input (compact JSON) when it fits the schema; otherwise
    empty, with the reason."""
    if found is None:
        return c, None
    name, schema = found
    calls = [t for t in c.tool_calls or [] if (t.get("function") or {}).get("name") == name]
    finish = "stop" if c.finish_reason == "tool_calls" else c.finish_reason
    if len(calls) != 1:
        why = "no tool_use block" if not calls else f"{len(calls)} tool_use blocks"
        return replace(c, text="", tool_calls=None, finish_reason=finish), why
    try:
        value = json.loads(calls[0]["function"]["arguments"])
    except (ValueError, TypeError):
        return replace(c, text="", tool_calls=None, finish_reason=finish), "the tool_use input is not JSON"
    problem = misfit(value, schema)
    if problem is not None:
        return replace(c, text="", tool_calls=None, finish_reason=finish), f"the tool_use input does not fit the schema: {problem}"
    return replace(c, text=json.dumps(value, ensure_ascii=False, separators=(",", ":")), tool_calls=None, finish_reason=finish), None


def misfit(value: JSONValue, schema: JSONObject) -> str | None:
    """Where and how `value` does not fit `schema` (`jsonschema`'s best-ranked error, at its JSON
    path), or None when it fits."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema).iter_errors(value))
    return None if error is None else f"{error.json_path}: {error.message}"
