"""The registry of mitigation settings: `register(setting)` for a setting named alone (`none`,
`caution`), `register_factory(NAME, ...)` for one written `NAME:ARGS`, `get(text)` resolving either
form and `names()` listing what `--setting` takes. `none` is registered here; each mitigation
module registers its own when the package is imported."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..registry import Registry
from ..runtime.errors import ConfigError, did_you_mean
from .setting import NONE, Messages, Setting


@dataclass(frozen=True)
class Factory:
    """How settings written `NAME:ARGS` are made: `make(ARGS, full text) -> Setting`, the usage
    shown in errors and names(), and the freshness stamp of a made one."""

    make: Callable[[str, str], Setting]
    usage: str
    fresh: Callable[[str], object] | None = None


_SETTINGS: Registry[Setting] = Registry("setting")
_FACTORIES: Registry[Factory] = Registry("setting factory")
#: the settings made from `NAME:ARGS` (a cache, not a registry): full text -> (stamp, setting)
_MADE: dict[str, tuple[object, Setting]] = {}
_LOCK = threading.Lock()


def register(setting: Setting) -> Setting:
    return _SETTINGS.register(setting.name, setting)


def register_factory(name: str, factory: Callable[[str, str], Setting], usage: str, fresh: Callable[[str], object] | None = None) -> None:
    """Settings written `NAME:ARGS`: `factory(ARGS, "NAME:ARGS")` builds one (raising ConfigError
    on bad ARGS). A made setting is kept and reused while `fresh(ARGS)` (e.g. a file's size and
    time) returns the same value, so a run asks the factory once."""
    _FACTORIES.register(name, Factory(factory, usage, fresh))


def get(name: str) -> Setting:
    """The setting a `--setting` value names: a registered name, or NAME:ARGS (or NAME,ARGS when ARGS
    holds only KEY=VALUE options) of a factory."""
    name = name.strip()
    if name in _SETTINGS:
        return _SETTINGS.get(name)
    base, colon, args = name.partition(":")
    head, comma, rest = name.partition(",")
    if base.strip() not in _FACTORIES and head.strip() in _FACTORIES:  # NAME,KEY=VALUE: options and no NAME: part
        base, colon, args = head, comma, rest
    if base.strip() not in _FACTORIES:
        hint = did_you_mean(base.strip(), [*_SETTINGS.names(), *_FACTORIES.names()])
        raise ConfigError("--setting", f"unknown setting '{name}'{hint} (known: {', '.join(names())})")
    made = _FACTORIES.get(base.strip())
    if not colon or not args.strip():
        raise ConfigError(f"--setting {name}", f"needs its configuration: {made.usage}")
    stamp = made.fresh(args) if made.fresh is not None else None
    with _LOCK:
        hit = _MADE.get(name)
        if hit is not None and hit[0] == stamp:
            return hit[1]
    setting = made.make(args, name)
    with _LOCK:
        _MADE[name] = (stamp, setting)
    return setting


def forget_made() -> None:
    """Drop the settings made from `NAME:ARGS`: the next `get` makes each again (a benchmark's cold
    start)."""
    with _LOCK:
        _MADE.clear()


def names() -> list[str]:
    """What `--setting` takes: the registered names, then each factory's usage."""
    return [*_SETTINGS.names(), *(f.usage for f in _FACTORIES.values())]


def _identity(messages: Messages) -> Messages:
    return messages


register(Setting(NONE, "no mitigation: the messages as the family renders them", _identity))
