"""The registry of mitigation settings: `register(setting)` for a setting named alone (`none`,
`caution`), `register_factory(NAME, ...)` for one written `NAME:ARGS`, `get(text)` resolving either
form and `names()` listing what `--setting` takes. `none` is registered here; each mitigation
module registers its own when the package is imported."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..errors import ConfigError
from .setting import NONE, Messages, Setting

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


def _identity(messages: Messages) -> Messages:
    return messages


register(Setting(NONE, "no mitigation: the messages as the family renders them", _identity))
