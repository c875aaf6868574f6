"""A name -> thing table extended by registration: `Registry[T]`, the one type behind the families,
the mitigation settings and their factories, the item formats, the providers, the review rubrics
and the extra-usage readers of the trade-off table. Names keep their registration order. Imports
only errors.py (the suggestion for a misspelt name)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Values by name, in registration order. `register(name, value)` refuses a different value
    under a taken name unless `replace=True` (the same value again changes nothing); `get(name)`
    raises `error("unknown NOUN 'name' (known: a, b)")`, the known names in registration order or
    sorted (`sort_known`), `none` when there are none."""

    def __init__(self, noun: str, error: Callable[[str], Exception] = KeyError, sort_known: bool = False) -> None:
        self.noun = noun
        self._error = error
        self._sort_known = sort_known
        self._values: dict[str, T] = {}
        self._lock = threading.Lock()

    def register(self, name: str, value: T, replace: bool = False) -> T:
        with self._lock:
            if name in self._values and not replace:
                held = self._values[name]
                if held is not value and held != value:
                    raise ValueError(f"a {self.noun} named {name!r} is already registered")
            self._values[name] = value
        return value

    def unregister(self, name: str) -> None:
        """Forget a name (nothing happens when it is not registered)."""
        with self._lock:
            self._values.pop(name, None)

    def get(self, name: str) -> T:
        try:
            return self._values[name]
        except KeyError:
            raise self._error(self.unknown(name)) from None

    def unknown(self, name: str) -> str:
        """The error text for a name that is not registered."""
        from .runtime.errors import did_you_mean

        known = sorted(self._values) if self._sort_known else list(self._values)
        return f"unknown {self.noun} '{name}'{did_you_mean(name, known)} (known: {', '.join(known) or 'none'})"

    def names(self) -> list[str]:
        return list(self._values)

    def values(self) -> list[T]:
        return list(self._values.values())

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Registry({self.noun!r}: {', '.join(self._values)})"
