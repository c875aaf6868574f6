"""The optional checker (`--verify SPEC`): a model reads each selected question with its correction
and says whether the correction is medically sound and deals with the false belief the question
holds (the study's physicians' second criterion, asked of a model). Structured yes/no with a
reason; an unsound correction drops the question with the checker's reason, and a reply that
cannot be read after the retries drops it as unchecked (never passed by default)."""

from __future__ import annotations

from ....build.stages import Rejected, Task, parse_object
from ....runtime.jsontypes import JSONObject
from ....runtime.seeding import stable_hash

SCHEMA_NAME = "correction_check"
SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "sound": {"type": "boolean"}},
    "required": ["reason", "sound"],
    "additionalProperties": False,
}
MAX_TOKENS = 400

SYSTEM = (
    "You are a careful oncologist reviewing test material. A patient question takes a false belief for granted, and "
    "a correction states what a good answer must tell the patient. Decide whether the correction is medically sound "
    "(accurate by current practice, not overstated, not itself misleading) and whether it addresses the false belief "
    "the question holds."
)


def messages(question: str, correction: str, cancer: str) -> list[dict[str, str]]:
    user = (
        f"Cancer: {cancer}\n\n<question>\n{question}\n</question>\n<correction>\n{correction}\n</correction>\n\n"
        'Reply with only a JSON object {"reason": "<one or two sentences>", "sound": true or false}: '
        "true only when the correction is medically sound and addresses the question's false belief."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse(text: str | None) -> tuple[bool, str]:
    obj = parse_object(text)
    sound = obj.get("sound")
    if not isinstance(sound, bool):
        raise Rejected("parse_failed", "'sound' must be true or false")
    reason = obj.get("reason")
    return sound, reason.strip() if isinstance(reason, str) else ""


def task(task_id: str, question: str, correction: str, cancer: str, model=None) -> Task:
    return Task(task_id, messages(question, correction, cancer), SCHEMA_NAME, SCHEMA, MAX_TOKENS, parse, model=model)


def prompt_hash() -> str:
    return stable_hash(SYSTEM, SCHEMA_NAME, SCHEMA, "verify/1")[:16]
