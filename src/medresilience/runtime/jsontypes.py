"""The JSON types, declared once: a value as `json.loads` gives it and `json.dumps` takes it
(`JSONValue`: pydantic's, so models can hold one), and a JSON object (`JSONObject`). Use them where
a value is data in transit (a request body, a recorded option, a row of a file); a value with a
known shape gets its own model or TypedDict instead."""

from __future__ import annotations

from typing import TypeAlias

from pydantic import JsonValue as JSONValue

JSONObject: TypeAlias = dict[str, JSONValue]

__all__ = ["JSONObject", "JSONValue"]
