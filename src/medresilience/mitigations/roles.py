"""The roles of the calls a setting links to its units (the store's unit -> call links, `role`):
each setting module registers the roles it writes (`register_role`), and the spine (the trade-off's
cost counts, the evidence viewer's conversation, the agent report) reads them here by kind, never
imports a setting's role by name. A new setting with calls of its own (a team of agents) registers
its roles and is counted and shown with no change to the spine.

Kinds (`KINDS`):
- `note`: a call made before the answer whose reply the answer sees (a monitor's note);
- `step`: a call of an answer loop that went on (numbered: NAME<n>);
- `answer`: the loop's call that ended in the answer: the unit's own row stands for it, so it is
  not counted again;
- `tool`: a tool's result, stored as a call (numbered NAME<n>.<i>; `caller` is not a model);
- `summary`: the loop's summary of one unit (JSON; `caller` is not a model)."""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import Registry

KINDS = ("note", "step", "answer", "tool", "summary")


@dataclass(frozen=True)
class LinkedRole:
    """One role: `name` (the stored role, or the prefix of numbered ones), its `kind`, whether it
    is `numbered` (NAME<n>, or NAME<n>.<i> for a tool), and the `caller` its rows are stored under
    when they are not a model's calls (tool results, summaries), else None."""

    name: str
    kind: str
    numbered: bool = False
    caller: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a linked role's kind is one of {', '.join(KINDS)}, not {self.kind!r}")

    def numbers(self, stored: str) -> tuple[int, ...] | None:
        """The numbers of a stored role of this one (() when it is not numbered), None when it is not this role."""
        if not self.numbered:
            return () if stored == self.name else None
        if not stored.startswith(self.name):
            return None
        parts = stored[len(self.name) :].split(".")
        if len(parts) != (2 if self.kind == "tool" else 1) or not all(p.isdigit() for p in parts):
            return None
        return tuple(int(p) for p in parts)


_ROLES: Registry[LinkedRole] = Registry("linked role")


def register_role(role: LinkedRole) -> LinkedRole:
    return _ROLES.register(role.name, role)


def roles(kind: str | None = None) -> list[LinkedRole]:
    """The registered roles (of one kind), in registration order."""
    return [r for r in _ROLES.values() if kind is None or r.kind == kind]


def role_names(kind: str) -> list[str]:
    """The stored names of the roles of one kind that are not numbered (an answer, a summary)."""
    return [r.name for r in roles(kind) if not r.numbered]


def not_model_callers() -> list[str]:
    """The labels stored rows are kept under that are not model calls (tool results, summaries)."""
    return list(dict.fromkeys(r.caller for r in roles() if r.caller is not None))


def classify(stored: str) -> tuple[LinkedRole, tuple[int, ...]] | None:
    """The registered role a stored role is, with its numbers; None when none is."""
    for r in _ROLES.values():
        n = r.numbers(stored)
        if n is not None:
            return r, n
    return None
