"""One mitigation setting: `Setting` (a name, a description, messages -> messages, the texts
recorded with the run), `NONE` (the setting that leaves the messages as the family renders them)
and `add_to_system`, the change most settings make. Imports nothing of the package."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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


def add_to_system(text: str) -> Callable[[Messages], Messages]:
    """Append a paragraph to the system message (one is added when there is none)."""

    def apply(messages: Messages) -> Messages:
        if messages and messages[0]["role"] == "system":
            return [{**messages[0], "content": messages[0]["content"] + "\n\n" + text}, *messages[1:]]
        return [{"role": "system", "content": text}, *messages]

    return apply
