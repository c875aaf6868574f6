"""The categoriser: one structured-output call per candidate question, shown the seven categories
as data (taxonomy.CATEGORIES: key, title, definition), answering with one category key. A reply
that names no known category is asked again with a note; after the retries the question is kept
as `uncategorised` with the reason (never a guessed category)."""

from __future__ import annotations

from ....build.stages import Rejected, Task, parse_object
from ....runtime.jsontypes import JSONObject
from ....runtime.seeding import stable_hash
from ..taxonomy import CATEGORIES, CATEGORY_KEYS, category_key

SCHEMA_NAME = "presupposition_category"
SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "category": {"type": "string", "enum": list(CATEGORY_KEYS)}},
    "required": ["reason", "category"],
    "additionalProperties": False,
}
MAX_TOKENS = 300
UNCATEGORISED = "uncategorised"

SYSTEM = (
    "You sort patient questions by the kind of false belief they take for granted. Each question comes with its "
    "correction: the facts that show what is false in it. Choose the one category that fits the false belief best; "
    "choose `other` only when none of the others fits."
)


def _categories_text() -> str:
    return "\n".join(f"- {c.key} ({c.title}): {c.definition}" for c in CATEGORIES)


def messages(question: str, correction: str) -> list[dict[str, str]]:
    user = (
        f"Categories:\n{_categories_text()}\n\n"
        f"<question>\n{question}\n</question>\n<correction>\n{correction}\n</correction>\n\n"
        'Reply with only a JSON object {"reason": "<one sentence>", "category": "<one category key from the list>"}.'
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse(text: str | None) -> tuple[str, str]:
    """(category key, reason); Rejected when the reply names no known category."""
    obj = parse_object(text)
    raw = obj.get("category")
    if not isinstance(raw, str) or not raw.strip():
        raise Rejected("parse_failed", "no 'category' in the JSON object")
    try:
        key = category_key(raw)
    except ValueError:
        raise Rejected("unknown_category", f"{raw!r} is not a category key ({', '.join(CATEGORY_KEYS)})") from None
    reason = obj.get("reason")
    return str(key), reason.strip() if isinstance(reason, str) else ""


def task(task_id: str, question: str, correction: str, model=None) -> Task:
    return Task(task_id, messages(question, correction), SCHEMA_NAME, SCHEMA, MAX_TOKENS, parse, model=model)


def prompt_hash() -> str:
    return stable_hash(SYSTEM, _categories_text(), SCHEMA_NAME, SCHEMA, "categorise/1")[:16]
