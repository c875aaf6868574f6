"""One mitigation setting: `Setting` (a name, a description, messages -> messages, the texts
recorded with the run, and every capability the runner uses besides, declared as typed optional
fields), `NONE` (the setting that leaves the messages as the family renders them) and
`add_to_system`, the change most settings make. Imports nothing of the package at run time.

What a setting can do is declared here, never asked of it (no attribute tests in the spine):

- `apply` / `apply_item`: the messages sent (`apply_to`);
- `precall` (`PreCallStep`): a call made before the answer, whose stored reply becomes a note in the
  answer's messages (mitigations.monitor); `marker` is what besides the pre-call's own key decides
  the noted messages (its texts);
- `agent` (`AnswerLoop`): the setting obtains the answer itself through calls of its own (a search
  agent's steps; a team's turns), keyed by `unit_key` and run by `run`;
- `models`: the models it calls besides the answering ones (served, checked and recorded with the run);
- `suite_warnings(suite)`: what it says about the suite it is run on (an optimised prompt tuned on
  these items);
- the roles of the calls it links to its units are registered with `mitigations.roles`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..runtime.jsontypes import JSONObject

if TYPE_CHECKING:  # pragma: no cover
    from ..calls import ProgressFn, RunStats
    from ..models.openai_compatible import OpenAICompatibleModel
    from ..models.spec import ModelSpec
    from ..records import Item
    from ..store import Store
    from ..suite import Suite

Messages = list[dict[str, str]]

NONE = "none"


@dataclass(frozen=True)
class PreCall:
    """A call a setting makes before the answer: the model, its messages and decoding parameters;
    `role` names it in the store's unit -> call links (`Store.linked_usage`)."""

    role: str
    spec: ModelSpec
    messages: Messages
    params: JSONObject


@dataclass(frozen=True)
class PreCallStep:
    """A setting's call before each answer: `make(messages, answering model)` gives the call (from
    the messages `apply` gives); `with_note(messages, reply)` the messages the answer is sent once
    the call's reply is stored."""

    make: Callable[[Messages, ModelSpec], PreCall]
    with_note: Callable[[Messages, str], Messages]


class AnswerLoop(Protocol):
    """How a setting obtains the answer itself (an agent's steps): `unit_key(answer key, model)` is
    the unit's key (the answer's request key and what decides the loop's calls); `run(units, ...)`
    makes the loop's calls for those planned units (runner.Planned), storing each unit's final
    answer under its key (scored by its scorer, or left to its deferred scorer), and returns the
    calls' figures."""

    def unit_key(self, answer_key: str, spec: ModelSpec) -> str: ...

    async def run(
        self,
        units: Sequence[object],
        specs: list[ModelSpec],
        store: Store,
        clients: dict[str, OpenAICompatibleModel] | None,
        halted: set[str] | None,
        progress: ProgressFn | None,
    ) -> RunStats: ...


@dataclass(frozen=True)
class Setting:
    """One mitigation: `apply(messages)` -> the messages sent; `texts` are recorded with the run;
    `apply_item(messages, item)`, when given, is used instead of `apply` where the item is known;
    the capabilities the module docstring lists, each None (or empty) when the setting has none."""

    name: str
    description: str
    apply: Callable[[Messages], Messages]
    texts: dict[str, str] = field(default_factory=dict)
    apply_item: Callable[[Messages, Item], Messages] | None = None
    precall: PreCallStep | None = None
    agent: AnswerLoop | None = None
    marker: str = ""
    models: tuple[ModelSpec, ...] = ()
    suite_warnings: Callable[[Suite], list[str]] | None = field(default=None, compare=False, repr=False)

    def apply_to(self, messages: Messages, item: Item | None = None) -> Messages:
        if self.apply_item is not None and item is not None:
            return self.apply_item(messages, item)
        return self.apply(messages)

    def warnings_about(self, suite: Suite) -> list[str]:
        """What the setting says about `suite` (none when it declares no `suite_warnings`)."""
        return [] if self.suite_warnings is None else self.suite_warnings(suite)


def add_to_system(text: str) -> Callable[[Messages], Messages]:
    """Append a paragraph to the system message (one is added when there is none)."""

    def apply(messages: Messages) -> Messages:
        if messages and messages[0]["role"] == "system":
            return [{**messages[0], "content": messages[0]["content"] + "\n\n" + text}, *messages[1:]]
        return [{"role": "system", "content": text}, *messages]

    return apply
