"""A JSON-schema request through Anthropic's message batches, which take no `response_format`:
the schema goes as the one tool of the request (`input_schema`) with `tool_choice` naming it, the
way Anthropic documents schema-shaped output, and the reply's `tool_use` input comes back as the
reply's JSON text, so a reader takes it exactly as it takes an OpenAI structured reply.

The tool's input is checked against the schema here (Anthropic does not promise it fits): a reply
with no `tool_use` block of the tool, with several, or whose input does not fit, has no readable
text (an empty reply, unread with the reason counted by the batch); its own text blocks are never
read as the object, so nothing is guessed.

The fit check covers the JSON-schema keywords structured output uses (type, properties, required,
additionalProperties, enum, const, items, min/maxItems, min/maxLength, minimum/maximum, anyOf);
a keyword outside them is not checked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..calls import CallRequest
from ..models.openai_compatible import Completion

#: what the tool says it is for (the model reads it with the schema)
TOOL_DESCRIPTION = "Give your reply as this tool's input: one object that fits the input schema."
#: the tool-use system prompt Anthropic adds to a request with tools, in tokens, as its pricing page
#: lists it for `tool_choice` any/tool (235 to 340 for the models listed there): the dry run counts
#: the most, with the tool's own name, description and schema, as prompt tokens of every schema call
TOOL_PROMPT_TOKENS = 350

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_of(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The (name, schema) of a request's `response_format` json_schema, or None (no schema asked)."""
    rf = params.get("response_format")
    if not isinstance(rf, Mapping) or rf.get("type") != "json_schema":
        return None
    js = rf.get("json_schema")
    if not isinstance(js, Mapping) or not isinstance(js.get("schema"), Mapping):
        return None
    return str(js.get("name") or "reply"), dict(js["schema"])


def asked_schema(r: CallRequest) -> tuple[str, dict[str, Any]] | None:
    """The (name, schema) a call asks its reply to fit: its parameters' response format, or the one
    its model's live endpoint takes none of (`CallRequest.schema_format`); None: no schema."""
    return schema_of(r.params) or schema_of({"response_format": r.schema_format or {}})


def schema_tool(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API fields that ask for `schema`: its one tool, and the tool choice forcing it."""
    return {
        "tools": [{"name": name, "description": TOOL_DESCRIPTION, "input_schema": dict(schema)}],
        "tool_choice": {"type": "tool", "name": name},
    }


def tool_prompt_chars(found: tuple[str, dict[str, Any]] | None) -> int:
    """The characters a schema call's tool adds to its prompt (0: no schema asked)."""
    return 0 if found is None else len(json.dumps(schema_tool(*found), separators=(",", ":")))


def tool_reply(found: tuple[str, dict[str, Any]] | None, c: Completion) -> tuple[Completion, str | None]:
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


def misfit(value: Any, schema: Mapping[str, Any], at: str = "input") -> str | None:
    """Where and how `value` does not fit `schema` (the first place found), or None when it fits."""
    if "anyOf" in schema and all(misfit(value, s, at) is not None for s in schema["anyOf"] if isinstance(s, Mapping)):
        return f"{at} fits none of anyOf"
    problem = _type_misfit(value, schema, at)
    if problem is not None:
        return problem
    if "enum" in schema and value not in schema["enum"]:
        return f"{at} is not one of {schema['enum']}"
    if "const" in schema and value != schema["const"]:
        return f"{at} is not {schema['const']!r}"
    if isinstance(value, dict):
        return _object_misfit(value, schema, at)
    if isinstance(value, list):
        return _array_misfit(value, schema, at)
    return _scalar_misfit(value, schema, at)


def _type_misfit(value: Any, schema: Mapping[str, Any], at: str) -> str | None:
    kind = schema.get("type")
    if kind is None:
        return None
    kinds = kind if isinstance(kind, list) else [kind]
    for k in kinds:
        allowed = _TYPES.get(str(k))
        if allowed is None:
            return None  # a type name outside JSON schema's: not checked
        if isinstance(value, allowed) and not (isinstance(value, bool) and k in ("integer", "number")):
            return None
    return f"{at} is not of type {'/'.join(str(k) for k in kinds)}"


def _object_misfit(value: dict[str, Any], schema: Mapping[str, Any], at: str) -> str | None:
    props = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value:
            return f"{at} lacks {name!r}"
    if schema.get("additionalProperties") is False:
        extra = sorted(set(value) - set(props))
        if extra:
            return f"{at} has {extra[0]!r}, which the schema does not name"
    for name, sub in props.items():
        if name in value and isinstance(sub, Mapping):
            problem = misfit(value[name], sub, f"{at}.{name}")
            if problem is not None:
                return problem
    return None


def _array_misfit(value: list[Any], schema: Mapping[str, Any], at: str) -> str | None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        return f"{at} has {len(value)} items, fewer than {schema['minItems']}"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return f"{at} has {len(value)} items, more than {schema['maxItems']}"
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, x in enumerate(value):
            problem = misfit(x, items, f"{at}[{i}]")
            if problem is not None:
                return problem
    return None


def _scalar_misfit(value: Any, schema: Mapping[str, Any], at: str) -> str | None:
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{at} is shorter than {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{at} is longer than {schema['maxLength']} characters"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{at} is below {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{at} is above {schema['maximum']}"
    return None
