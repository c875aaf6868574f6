"""What every answer loop (an `AnswerLoop`: an agent's steps, a team's turns, a family's probe loop)
does around its rounds, declared once:

- `pending_units(planned, store)`: the planned units it still has to answer, grouped by unit key
  (units sharing a key share one loop; the first one's scorer reads its answer), in plan order,
  without the keys whose answer is stored `ok` (a rerun makes none of their calls);
- `StagedProgress`: one progress over all its rounds. Each round is one `calls.run_calls`, whose
  progress counts that round's calls only (a round's calls are known once the round before is
  taken); this adds the calls made in the rounds before, so the count the caller sees only rises;
- `unit_links(units, key, role)`: the store's links of one call to every unit of a loop;
- `stored_turns(store, keys)`: the stored replies a round waits on, typed (`StoredTurn`);
- `PlannedUnit`: what a loop reads of a planned unit (runner.Planned, which this layer cannot name),
  and `direct_scorer(unit)`: its scorer when it reads a reply as it is stored (None: a deferred one).

Each loop keeps its own keys (the unit key and its calls' keys decide what is stored and resumed);
nothing here makes or changes a key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar

from ..runtime.jsontypes import JSONObject
from ..score import DeferredScorer

if TYPE_CHECKING:  # pragma: no cover
    from ..calls import ProgressFn
    from ..records import Item, Probe
    from ..score import AnyScorer, Scorer
    from ..store import Store, UnitRow
    from .setting import AnswerLoop, Messages


class LoopUnit(Protocol):
    """A unit as the helpers here read it: its identity and plan."""

    @property
    def unit(self) -> UnitRow: ...


class PlannedUnit(LoopUnit, Protocol):
    """A planned unit as an answer loop reads it (runner.Planned): its messages and decoding
    parameters, its scorer, the setting's loop, and its item and probe (None where not known)."""

    @property
    def messages(self) -> Messages: ...

    @property
    def params(self) -> JSONObject: ...

    @property
    def score(self) -> AnyScorer: ...

    @property
    def loop(self) -> AnswerLoop | None: ...

    @property
    def item(self) -> Item | None: ...

    @property
    def probe(self) -> Probe | None: ...


class StoredTurn(TypedDict):
    """A call's stored `ok` reply as a loop reads it (`Store.turns`)."""

    text: str
    tool_calls: list[JSONObject] | None  # the tools an agent's step called
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


U = TypeVar("U", bound=LoopUnit)


def pending_units(planned: Iterable[U], store: Store) -> list[list[U]]:
    """The units of `planned` not yet answered, grouped by unit key in plan order; a key whose call
    the store holds `ok` is left out."""
    by_key: dict[str, list[U]] = {}
    for p in planned:
        by_key.setdefault(p.unit.key, []).append(p)
    done = store.finished_keys(by_key)
    return [units for key, units in by_key.items() if key not in done]


def direct_scorer(p: PlannedUnit) -> Scorer | None:
    """The unit's scorer when it reads a reply directly (its score is stored with the call); None for
    a deferred one (a judge, an extraction model), which scores the stored reply after the run."""
    scorer = p.score
    return None if isinstance(scorer, DeferredScorer) else scorer


def stored_turns(store: Store, keys: Iterable[str]) -> dict[str, StoredTurn]:
    """key -> the stored reply of each of `keys` whose call is stored `ok`."""
    return {
        k: StoredTurn(
            text=t["text"],
            tool_calls=t["tool_calls"],
            finish_reason=t["finish_reason"],
            prompt_tokens=t["prompt_tokens"],
            completion_tokens=t["completion_tokens"],
        )
        for k, t in store.turns(keys).items()
    }


def unit_links(units: Iterable[LoopUnit], key: str, role: str) -> list[tuple[str, str, str, str]]:
    """The store's links (model, unit id, call key, role) of the call `key` to each of `units`."""
    return [(p.unit.model, p.unit.unit_id, key, role) for p in units]


class StagedProgress:
    """A `calls.run_calls` progress that counts across a loop's rounds: `(done, todo)` of a round are
    shown after the `made` calls of the rounds before (`next_round(called)` adds a round's calls).
    With `waits`, the count of retry waits is passed on as `waits=` (the caller's progress takes
    it); without, the caller's progress gets (done, todo) alone. Nothing is shown without one."""

    def __init__(self, progress: ProgressFn | None, waits: bool = True):
        self.progress, self.waits = progress, waits
        self.made = 0

    def __call__(self, done: int, todo: int, waits: int = 0) -> None:
        if self.progress is None:
            return
        if self.waits:
            self.progress(self.made + done, self.made + todo, waits=waits)  # type: ignore[call-arg]
        else:
            self.progress(self.made + done, self.made + todo)

    def next_round(self, called: int) -> None:
        """A round's `called` calls are made: the next round's are counted after them."""
        self.made += called
