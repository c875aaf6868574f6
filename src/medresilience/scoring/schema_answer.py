"""Structured answers to a multiple-choice item (`-O answer_format=schema`): the JSON schema a
request asks for through `response_format`, and the reading of a reply given under it.

The schema is OpenAI's strict structured-output shape, which vLLM, SGLang, the llama.cpp server
(and so the embedded model) and Ollama's OpenAI-compatible endpoint also take: an object with
free `reasoning` first (a model that reasons before it commits keeps doing so) and `answer`, one
of the item's option labels as an enum, both required, nothing else. A server that decodes under
the schema can only end the object with one of the labels.

A schema reply is read from its `answer` field alone, never by the free-text rules: the reply must
parse as a JSON object (surrounding whitespace allowed) whose `answer` is exactly one of the
item's labels. Anything else is unread with its reason: not JSON (`truncated` when the reply was
cut at its budget, which is how a cut JSON object looks), not an object, no `answer`, or an answer
outside the labels. Nothing is guessed from the reasoning text."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..runtime.jsontypes import JSONObject
from ..score import Score
from .mcq import CUT, TRUNCATED_REASON

if TYPE_CHECKING:  # pragma: no cover
    from ..models.openai_compatible import Completion
    from ..records import Item

#: the schema's name in the request (`response_format.json_schema.name`)
SCHEMA_NAME = "mcq_answer"
#: how a label read from the answer field is recorded (a score's detail `read`)
READ_HOW = "the answer field of the JSON reply"


def answer_schema(labels: str) -> JSONObject:
    """The JSON schema of an answer to an item with these option labels ("ABCD", "12345")."""
    return {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "answer": {"type": "string", "enum": list(labels)}},
        "required": ["reasoning", "answer"],
        "additionalProperties": False,
    }


def answer_response_format(labels: str) -> JSONObject:
    """The request's `response_format` asking for `answer_schema(labels)` (strict)."""
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": answer_schema(labels)}}


def read_schema_answer(text: str | None, labels: str) -> tuple[str | None, str]:
    """(the label the reply's `answer` field holds, how it was read), or (None, why it is unread)."""
    if not text or not text.strip():
        return None, "empty reply"
    try:
        data = json.loads(text)
    except ValueError:
        return None, "the reply is not a JSON object (it does not parse as JSON)"
    if not isinstance(data, dict):
        return None, f"the reply is JSON but not an object (a {type(data).__name__})"
    if "answer" not in data:
        return None, "the JSON reply has no answer field"
    answer = data["answer"]
    if not isinstance(answer, str) or answer not in tuple(labels):
        shown = json.dumps(answer)[:40]
        return None, f"the answer field ({shown}) is not one of the option labels {', '.join(labels)}"
    return answer, READ_HOW


class SchemaScorer:
    """The reading of one item's schema replies: the label in the `answer` field (`valid`), else
    `truncated` when the reply was cut at its budget, else `invalid`, each unread with its reason."""

    def __init__(self, item: Item):
        self.letters, self.gold = item.letters, item.answer

    def read(self, text: str | None, finish_reason: str | None) -> Score:
        label, how = read_schema_answer(text, self.letters)
        if label is not None:
            return Score(label, "valid", float(label == self.gold), {"read": how, "format": "schema"})
        if finish_reason == CUT:
            return Score(None, "truncated", None, {"reason": TRUNCATED_REASON, "read": how, "format": "schema"})
        return Score(None, "invalid", None, {"reason": how, "read": how, "format": "schema"})

    def __call__(self, c: Completion) -> Score:
        return self.read(c.text, c.finish_reason)
