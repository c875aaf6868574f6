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
  an extracted unit is then not a second opinion, and the audit says so.

A judged unit (its score a judge's verdict) is read a second time by the reader as a judge: the
family's own judge of the unit (its rubric, the fields it is shown, its verdict reader: the run's
scorer of the unit) with the reader model in place of the run's judge (`second_judge`). Its calls
and verdicts are stored and resumed like the run's own judge calls, under the judge name of that
model and rubric; a verdict it cannot give is `unscored` with the reason. A reader that is the run's
judge model gives the run's own verdicts back (the same calls): no second opinion, and the audit
says so."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..calls import BatchWaiting, CallRequest, RunStats, request_key, run_calls
from ..models.serving import serving
from ..score import Score
from ..scoring.extract import NONE, Extractor
from ..scoring.judge import Judge, JudgeScorer
from ..store import ScoreRow
from ..store.rows import StoredScore

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
    value: float | None = None  # a verdict's value (None: a letter)

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


def second_judge(run_scorer: JudgeScorer, spec: ModelSpec) -> JudgeScorer:
    """The run's judge of a unit with the model `spec` in its place: the same rubric, structured
    verdicts, fields and verdict reader (the run's scorer's own class)."""
    j = run_scorer.judge
    return type(run_scorer)(Judge(spec, j.rubric, structured=j.structured), run_scorer.fields)


def as_reading(score: StoredScore | None, judged: bool = False) -> SecondReading | None:
    """A stored score under the reader's name as a second reading (None: no score stored); a
    judged unit's reading is the verdict with its value."""
    if score is None:
        return None
    if score["status"] == "valid":
        return SecondReading(score["label"], "read", value=score.get("value") if judged else None)
    if score["status"] == "invalid":
        return SecondReading(None, NO_OPTION)
    detail = score.get("detail")
    reason = detail.get("reason") if isinstance(detail, dict) else None
    return SecondReading(None, "unscored", reason if isinstance(reason, str) and reason else "(no reason recorded)")


def _plan(
    units: Sequence[AuditUnit], items: dict[str, Item], reader: ReaderModel, judges: dict[str, JudgeScorer], replies: dict[str, tuple[str, str | None]]
) -> dict[str, tuple[str, CallRequest | None]]:
    """answer key -> (the scorer name its second reading is stored under, the call that makes it;
    None when the unit has nothing to send)."""
    plan: dict[str, tuple[str, CallRequest | None]] = {}
    for u in units:
        if u.key in plan:
            continue
        reply = replies.get(u.key)
        if u.judged:
            sc = second_judge(judges[u.key], reader.spec)
            reqs = sc.judge_requests(u.key, reply[0]) if reply is not None else []
            plan[u.key] = (sc.name, reqs[0] if reqs else None)
        else:
            plan[u.key] = (reader.name, None if reply is None else reader.request(u, items[u.item_id], reply[0]))
    return plan


async def read_sample(
    units: Sequence[AuditUnit],
    items: dict[str, Item],
    reader: ReaderModel,
    store: Store,
    progress: ProgressFn | None = None,
    judges: dict[str, JudgeScorer] | None = None,
) -> tuple[RunStats, dict[str, SecondReading]]:
    """The reader's reading of each sampled unit (answer key -> reading): a unit already read
    (valid or invalid under the reader's name; a judged unit: its second judge's) is left as it is;
    the rest are sent through run_calls (cached and resumed by key). A call already stored ok
    without this reader's score (made by the same model as the run's extraction or judge) is read
    from its stored reply. `judges`: the run's judge scorer of each judged unit."""
    keys = [u.key for u in units]
    plan = _plan(units, items, reader, judges or {}, store.replies(keys))
    todo: dict[str, CallRequest] = {}
    for name in {n for n, _ in plan.values()}:
        mine = [k for k, (n, _) in plan.items() if n == name]
        done = store.scored(mine, name)
        todo.update({k: r for k in mine if done.get(k) not in ("valid", "invalid") and (r := plan[k][1]) is not None})
    stats = RunStats()
    if todo:
        with serving([reader.spec]) as live:
            stats = await run_calls(todo.values(), live, store, progress)
        if stats.batch_waiting:  # a batch mode: the readings are not all back yet
            raise BatchWaiting(stats)
        _score_stored(todo, store)
    judged = {u.key for u in units if u.judged}
    readings: dict[str, SecondReading] = {}
    for k in dict.fromkeys(keys):
        reading = as_reading(store.score(k, plan[k][0]), k in judged)
        if reading is not None:
            readings[k] = reading
    return stats, readings


def _score_stored(todo: dict[str, CallRequest], store: Store) -> None:
    """Score the calls that were stored ok before without a score under their scorer's name."""
    stored = store.replies(r.key for r in todo.values())
    rows = []
    for name in {r.scorer for r in todo.values()}:
        mine = {k: r for k, r in todo.items() if r.scorer == name}
        scored = store.scored(mine, name)
        for answer_key, r in mine.items():
            if answer_key not in scored and r.key in stored and r.score is not None:
                s = r.score(_Stored(stored[r.key][0]))  # type: ignore[arg-type]  # a second reading's scorer reads only the reply's text
                rows.append(ScoreRow(answer_key, name, s.label, s.status, s.detail, s.value))
    if rows:
        store.write_results([], rows)


@dataclass
class _Stored:
    """A stored reply as the scorer reads a completion."""

    text: str
