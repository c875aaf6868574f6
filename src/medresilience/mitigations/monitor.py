"""`monitor` and `monitor:SPEC`: before the answer, a monitor model reads the question and any context
given with it and writes a short note on claims that may be false and premises that may be wrong;
the answer call then sees the note in its system message.

    medres eval --setting none --setting monitor ...                         (each model monitors itself)
    medres eval --setting none --setting monitor:openai/gpt-4o-mini ...      (another model monitors)
    medres eval --setting monitor:openai:m,base_url=URL,label=mon ...        (any model spec after `monitor:`)

Two calls per unit, both stored and costed. This is the general shape of a setting that makes a
call before the answer (a pre-call), which the setting declares in its type (`Setting` fields):

- `precall` (`PreCallStep`): `make(messages, answering_spec) -> PreCall`, the call to make first (its
  model, messages, decoding parameters and role), from the messages `apply` gives; and
  `with_note(messages, text) -> messages`, the messages sent to the answering model once the
  pre-call's reply `text` is stored;
- `models`: the models the setting calls besides the answering ones (to serve and check), and
  `marker`: what besides the pre-call's own key decides the noted messages (its texts).

The unit's request key is known at plan time: hash(request key of the answer over `apply`'s
messages, the pre-call's key, the marker). A stored `ok` reply is never replaced, so that key
always stands for the same noted messages; those are stored under it when the answer is made.

The monitor sees the text of every user message (the question with whatever context the family
or another setting put there), never the family's system prompt, and gets a short output budget
(`MONITOR_TOKENS`). A monitor spec whose base URL carries credentials is refused: the setting's
name is stored with every unit (use api_key_env=VAR, or give the spec as a file, monitor:@m.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..models.spec import ModelSpec, parse_model_spec
from ..models.urls import redact_url
from ..runtime.errors import ConfigError
from ..runtime.seeding import stable_hash
from .registry import register, register_factory
from .roles import LinkedRole, register_role
from .setting import Messages, PreCall, PreCallStep, Setting, add_to_system

NAME = "monitor"
USAGE = "monitor[:MODEL_SPEC] (the answering model monitors itself; or any model spec, e.g. monitor:openai/gpt-4o-mini)"
ROLE = "monitor"
#: the monitor's reply budget (tokens): a note, not an answer
MONITOR_TOKENS = 200
#: a note longer than this (a monitor that ignores the budget) is cut before it reaches the answer
NOTE_CHARS = 2000

MONITOR_INSTRUCTION = (
    "You review medical questions before another assistant answers them. Read the question and any context given with "
    "it. Do not answer the question. In at most three short bullet points, point out any statement in it that may be "
    "false or misleading by established medical knowledge, and any assumption the question takes for granted that may "
    "be wrong, each with a few words on why. If nothing looks wrong, write only: No concerns."
)
MONITOR_REQUEST = "The text to review (the question as it will be put, with any context given with it):\n\n<text>\n{text}\n</text>"
NOTE_HEAD = (
    "A reviewer's notes on this question (written before you answer; they may be incomplete or wrong: weigh them "
    "against established medical knowledge, and keep to the reply format the question asks for):"
)
NO_NOTE = "(the reviewer wrote nothing)"
SELF = "the answering model (each model monitors the questions put to it)"


@dataclass(frozen=True)
class PreCallSetting(Setting):
    """A setting that makes a call before the answer (see the module docstring): its `precall` is set."""


def user_text(messages: Messages) -> str:
    """What the monitor reviews: the text of every user message, in order."""
    return "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def monitor_messages(messages: Messages) -> Messages:
    return [{"role": "system", "content": MONITOR_INSTRUCTION}, {"role": "user", "content": MONITOR_REQUEST.format(text=user_text(messages))}]


def with_note(messages: Messages, note: str) -> Messages:
    """The answering messages with the monitor's note added to the system message."""
    note = note.strip()[:NOTE_CHARS] or NO_NOTE
    return add_to_system(f"{NOTE_HEAD}\n{note}")(messages)


def _identity_text(spec: ModelSpec | None) -> str:
    if spec is None:
        return SELF
    return json.dumps({"label": spec.label, **spec.identity()}, sort_keys=True)


def _setting(name: str, spec: ModelSpec | None) -> PreCallSetting:
    texts = {
        "instruction": MONITOR_INSTRUCTION,
        "request": MONITOR_REQUEST,
        "note": NOTE_HEAD,
        "no_note": NO_NOTE,
        "max_tokens": str(MONITOR_TOKENS),
        "model": _identity_text(spec),
    }

    def precall(messages: Messages, answering: ModelSpec) -> PreCall:
        mon = spec or answering
        return PreCall(ROLE, mon, monitor_messages(messages), mon.decoding(max_tokens=MONITOR_TOKENS))

    who = "the answering model" if spec is None else f"the model {spec.label}"
    return PreCallSetting(
        name,
        f"before the answer, {who} notes claims that may be false and premises that may be wrong; the answer sees the note",
        lambda m: m,
        texts,
        precall=PreCallStep(precall, with_note),
        models=() if spec is None else (spec,),
        marker=stable_hash(NOTE_HEAD, NO_NOTE, NOTE_CHARS)[:16],
    )


def make(args: str, name: str) -> PreCallSetting:
    where = f"--setting {name}"
    try:
        spec = parse_model_spec(args)
    except ConfigError as e:
        raise ConfigError(where, f"the monitor model {e.setting}: {str(e).split(': ', 1)[-1]}") from None
    if any(redact_url(u) != u for u in spec.base_urls):
        raise ConfigError(
            where,
            "the monitor's base URL carries credentials or a query string, and a setting's name is stored with "
            "every unit: give the key through api_key_env=VAR, or the spec as a file (monitor:@monitor.json)",
        )
    return _setting(name, spec)


register_role(LinkedRole(ROLE, "note"))  # the monitor's note, linked to each unit it was written for
MONITOR = register(_setting(NAME, None))
register_factory(NAME, make, USAGE)

__all__ = ["MONITOR", "MONITOR_INSTRUCTION", "MONITOR_TOKENS", "NOTE_HEAD", "PreCall", "PreCallSetting", "monitor_messages", "with_note"]
