"""Mitigations as named settings. A setting turns the messages a family renders into the messages
sent; `none` leaves them as they are. Every unit carries its setting's name, so the store, frame,
report and compare pair units across settings by item and probe. A setting's texts are recorded
with the run and hashed (run.json `prompts`); what it changes reaches every request key through
the messages.

A setting is named alone (`none`, `caution`) or, when it needs configuring, as `NAME:ARGS`
(`retrieval:corpus.sqlite,k=3`): a factory registered for NAME reads ARGS and returns the setting,
whose name is the whole text as given, so two configurations of one mitigation are two settings
of one run. `get(text)` resolves either form; `names()` lists what can be asked for.

A setting that needs the item itself (to keep its answer key out of what it adds) gives
`apply_item(messages, item)`; the runner calls `Setting.apply_to(messages, item)`, which uses it
when present and `apply(messages)` otherwise. Each mitigation lives in a module of its own
(caution.py, retrieval.py); this module holds the registry."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from ..records import Item

Messages = list[dict[str, str]]

NONE = "none"


@dataclass(frozen=True)
class Setting:
    """One mitigation: `apply(messages)` -> the messages sent; `texts` are recorded with the run;
    `apply_item(messages, item)`, when given, is used instead of `apply` where the item is known."""

    name: str
    description: str
    apply: Callable[[Messages], Messages]
    texts: dict[str, str] = field(default_factory=dict)
    apply_item: Callable[[Messages, Item], Messages] | None = None

    def apply_to(self, messages: Messages, item: Item | None = None) -> Messages:
        if self.apply_item is not None and item is not None:
            return self.apply_item(messages, item)
        return self.apply(messages)


def _identity(messages: Messages) -> Messages:
    return messages


def add_to_system(text: str) -> Callable[[Messages], Messages]:
    """Append a paragraph to the system message (one is added when there is none)."""

    def apply(messages: Messages) -> Messages:
        if messages and messages[0]["role"] == "system":
            return [{**messages[0], "content": messages[0]["content"] + "\n\n" + text}, *messages[1:]]
        return [{"role": "system", "content": text}, *messages]

    return apply


_SETTINGS: dict[str, Setting] = {}
#: NAME -> (factory(args, full text) -> Setting, usage shown in errors and names(), freshness stamp)
_FACTORIES: dict[str, tuple[Callable[[str, str], Setting], str, Callable[[str], object] | None]] = {}
_MADE: dict[str, tuple[object, Setting]] = {}
_LOCK = threading.Lock()


def register(setting: Setting) -> Setting:
    _SETTINGS[setting.name] = setting
    return setting


def register_factory(name: str, factory: Callable[[str, str], Setting], usage: str, fresh: Callable[[str], object] | None = None) -> None:
    """Settings written `NAME:ARGS`: `factory(ARGS, "NAME:ARGS")` builds one (raising ConfigError
    on bad ARGS). A made setting is kept and reused while `fresh(ARGS)` (e.g. a file's size and
    time) returns the same value, so a run asks the factory once."""
    _FACTORIES[name] = (factory, usage, fresh)


def get(name: str) -> Setting:
    """The setting a `--setting` value names: a registered name, or NAME:ARGS of a factory."""
    name = name.strip()
    if name in _SETTINGS:
        return _SETTINGS[name]
    base, colon, args = name.partition(":")
    made = _FACTORIES.get(base.strip())
    if made is None:
        raise ConfigError("--setting", f"unknown setting '{name}' (known: {', '.join(names())})")
    factory, usage, fresh = made
    if not colon or not args.strip():
        raise ConfigError(f"--setting {name}", f"needs its configuration: {usage}")
    stamp = fresh(args) if fresh is not None else None
    with _LOCK:
        hit = _MADE.get(name)
        if hit is not None and hit[0] == stamp:
            return hit[1]
    setting = factory(args, name)
    with _LOCK:
        _MADE[name] = (stamp, setting)
    return setting


def names() -> list[str]:
    """What `--setting` takes: the registered names, then each factory's usage."""
    return [*_SETTINGS, *(usage for _, usage, _ in _FACTORIES.values())]


register(Setting(NONE, "no mitigation: the messages as the family renders them", _identity))

from .caution import CAUTION_INSTRUCTION  # noqa: E402  (registers caution)
from .monitor import MONITOR  # noqa: E402,F401  (registers monitor and the monitor:SPEC factory)
from .optimised import OptimisedSetting  # noqa: E402,F401  (registers the optimised:FILE factory)
from .retrieval import EVIDENCE_INSTRUCTION  # noqa: E402  (registers the retrieval factory)

__all__ = ["CAUTION_INSTRUCTION", "EVIDENCE_INSTRUCTION", "NONE", "Messages", "Setting", "add_to_system", "get", "names", "register", "register_factory"]
