"""Dependent calls: a unit whose messages continue an earlier unit's conversation (a second turn).

A family declares, per probe, the condition of the earlier unit of the same item whose reply the
probe's turn follows (`Family.evaluation.follows`; `clean` for the item asked plainly). Such a follow-up's
messages are the earlier unit's rendered messages, the earlier unit's stored reply as the
assistant's turn, then the follow-up's own rendered turn; the unit's setting is applied to the
whole conversation (a mitigation applies to both turns). Its request key is the hash of those
messages, so it includes the earlier reply and is known only once that reply is stored: the run
answers every earlier unit first, then the follow-ups whose earlier reply is stored ok. The store
is the resume point: a run killed between the turns finds the earlier replies stored and asks
only what is left.

A follow-up whose earlier call failed (or was not sent) is never asked with a missing answer: it
stays planned under a placeholder key no call ever has (the hash of the earlier unit's key and
its own turn), so the results show it `missing`, and the run counts it as not run; a rerun
retries the earlier call, then asks it. One level only: the earlier unit is an independent one."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..calls import request_key
from ..runtime.errors import ConfigError
from ..runtime.seeding import stable_hash

if TYPE_CHECKING:  # pragma: no cover
    from ..mitigations import Setting
    from ..models.spec import ModelSpec
    from ..records import Item
    from ..store import Store
    from .runner import Planned

Messages = list[dict[str, str]]


@dataclass
class FollowUp:
    """What a follow-up unit needs once the earlier reply is stored: the earlier unit's key and
    rendered messages (before any setting), its own rendered turn, and how it is sent (the item,
    setting, model, epoch)."""

    after: str
    earlier: Messages
    turn: Messages
    item: Item
    setting: Setting
    spec: ModelSpec
    epoch: int

    def messages(self, reply: str) -> Messages:
        """The conversation sent: the earlier turn, its reply, this turn; the setting over all of it."""
        conversation = [*self.earlier, {"role": "assistant", "content": reply}, *self.turn]
        return self.setting.apply_to(conversation, self.item)

    def placeholder_key(self, params: Mapping[str, object]) -> str:
        """The unit's key until the earlier reply is stored: no call is ever made under it."""
        return stable_hash({"follows": self.after, "turn": self.turn, "params": params, "epoch": self.epoch})


def epoch_key(key: str, spec: ModelSpec, epoch: int) -> str:
    """A request key as epoch `epoch` stores it: a model that takes no seed sends the same request
    again, stored under its own key."""
    if epoch and not spec.supports("seed"):
        return stable_hash({"answer": key, "epoch": epoch})
    return key


def check_setting(setting: Setting, family_name: str) -> None:
    """A setting that makes a call before each answer (a monitor's note) is not taken by follow-up turns."""
    if setting.precall is not None:
        raise ConfigError("--setting", f"setting {setting.name} makes a call before each answer; family {family_name}'s second turns do not take it")
    if setting.agent is not None:
        raise ConfigError(
            "--setting",
            f"setting {setting.name} answers through calls of its own (an agent's steps, a team's discussion); family {family_name}'s second turns do not take it",
        )


def resolve(later: Sequence[Planned], store: Store) -> tuple[list[Planned], list[Planned]]:
    """(ready, waiting): the follow-ups whose earlier reply is stored ok, with the messages they send
    and their key (the hash of those messages); and those whose earlier call is not stored ok, under
    their placeholder key."""
    replies = store.ok_texts({p.follow.after for p in later if p.follow is not None})
    ready: list[Planned] = []
    waiting: list[Planned] = []
    for p in later:
        f = p.follow
        assert f is not None
        reply = replies.get(f.after)
        if reply is None:
            waiting.append(p)
            continue
        messages = f.messages(reply)
        key = epoch_key(request_key(f.spec, messages, p.params), f.spec, f.epoch)
        ready.append(dataclasses.replace(p, unit=dataclasses.replace(p.unit, key=key), messages=messages, follow=None))
    return ready, waiting
