"""The audit's reader model (`medres audit RUN --reader SPEC`): a second reading of each sampled
reply by another model.

The reader is shown what the extraction model is shown (scoring.extract.Extractor): the item's
options and the reply inside a fence, never the key nor the run's reading; it answers with one
option label or "none" (the reply commits to no single option: no answer, several options left
open, a refusal). The rules this module keeps:

- Its reply is read strictly: one of the item's labels -> that option; "none" -> no option (a
  reading, counted as such); anything else -> `unscored` with the reason, never guessed. A call
  that fails for good is `unscored` with the error; the next audit retries it.
- Its calls are calls like any other (calls.run_calls): keyed by request_key(reader spec,
  messages, params), stored in the run's store and resumed; a killed audit repeats no finished
  call and a rerun makes none. Its readings are scores of the answer's key under the scorer name
  `audit:<label>#<hash of its identity, decoding and prompt>`, so another reader makes other
  readings and none mixes with the run's own scores.
- A reader that is the run's extraction model shares its calls (the same request): its reading of
  an extracted unit is then not a second opinion, and the audit says so."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..calls import CallRequest, RunStats, request_key, run_calls
from ..models.serving import serving
from ..scoring.extract import NONE, Extractor
from ..scoring.types import Score
from ..store import ScoreRow

if TYPE_CHECKING:  # pragma: no cover
    from ..calls import ProgressFn
    from ..models.openai_compatible import ModelCallError
    from ..models.spec import ModelSpec
    from ..records import Item
    from ..store import Store
    from .sample import AuditUnit

#: the reading of a reply that commits to no single option
NO_OPTION = "none"


@dataclass(frozen=True)
class SecondReading:
    """A second reading of one unit: `label` an option, or None with `status` "none" (the reply
    commits to no single option) or "unscored" (no reading: `reason` says why)."""

    label: str | None
    status: str  # read | none | unscored
    reason: str | None = None
    source: str = "model"  # model | people

    @property
    def decided(self) -> bool:
        return self.status in ("read", "none")


class ReaderModel:
    """The audit's reader: the extraction model's prompt and decoding under the scorer name
    `audit:<label>#<hash>`."""

    def __init__(self, spec: ModelSpec):
        self.extractor = Extractor(spec)
        self.spec = spec
        self.name = "audit:" + self.extractor.name.split(":", 1)[1]

    def request(self, unit: AuditUnit, item: Item, reply: str) -> CallRequest:
        ex = self.extractor
        messages = ex.messages(item.options, item.letters, reply, unit.key)
        params = ex.params()
        letters = tuple(item.letters)

        def score(c: Any) -> Score:
            return parse_reading(c.text, letters)

        return CallRequest(self.spec.label, request_key(self.spec, messages, params), messages, params, score, self.name, unit.key, _failed)


def parse_reading(text: str | None, letters: Sequence[str]) -> Score:
    """The reader's reply, read strictly: one label -> valid; "none" -> invalid (no option);
    anything else -> unscored with the reason."""
    raw = (text or "").strip()
    word = raw[:-1].rstrip() if raw.endswith(".") else raw
    if word in letters:
        return Score(word, "valid", None, {"read_by": "audit"})
    if word.casefold() == NONE:
        return Score(None, "invalid", None, {"read_by": "audit", "reading": NO_OPTION})
    return Score.unscored(f"the reader's reply is not one label or none: {raw[:200]!r}", read_by="audit")


def _failed(e: ModelCallError) -> Score:
    return Score.unscored(f"reader call failed: {e}", permanent=bool(getattr(e, "permanent", False)))


def as_reading(score: dict[str, Any] | None) -> SecondReading | None:
    """A stored score under the reader's name as a second reading (None: no score stored)."""
    if score is None:
        return None
    if score["status"] == "valid":
        return SecondReading(score["label"], "read")
    if score["status"] == "invalid":
        return SecondReading(None, NO_OPTION)
    return SecondReading(None, "unscored", (score.get("detail") or {}).get("reason") or "(no reason recorded)")


async def read_sample(
    units: Sequence[AuditUnit], items: dict[str, Item], reader: ReaderModel, store: Store, progress: ProgressFn | None = None
) -> tuple[RunStats, dict[str, SecondReading]]:
    """The reader's reading of each sampled unit (answer key -> reading): a unit already read
    (valid or invalid under the reader's name) is left as it is; the rest are sent through
    run_calls (cached and resumed by key). A call already stored ok without this reader's score
    (made by the same model as the run's extraction) is read from its stored reply."""
    keys = [u.key for u in units]
    done = store.scored(keys, reader.name)
    replies = store.replies(keys)
    todo = {}
    for u in units:
        if done.get(u.key) in ("valid", "invalid") or u.key in todo or u.key not in replies:
            continue
        todo[u.key] = reader.request(u, items[u.item_id], replies[u.key][0])
    stats = RunStats()
    if todo:
        with serving([reader.spec]) as live:
            stats = await run_calls(todo.values(), live, store, progress)
        stored = store.replies(r.key for r in todo.values())
        scored = store.scored(todo, reader.name)
        rows = []
        for answer_key, r in todo.items():
            if answer_key not in scored and r.key in stored:
                s = r.score(_Stored(stored[r.key][0]))  # type: ignore[misc]
                rows.append(ScoreRow(answer_key, reader.name, s.label, s.status, s.detail, s.value))
        if rows:
            store.write_results([], rows)
    readings = {}
    for k in dict.fromkeys(keys):
        r = as_reading(store.score(k, reader.name))
        if r is not None:
            readings[k] = r
    return stats, readings


@dataclass
class _Stored:
    """A stored reply as the scorer reads a completion."""

    text: str
