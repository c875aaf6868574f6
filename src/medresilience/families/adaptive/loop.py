"""The attack loop: every probe unit of an adaptive run is one attack on one item.

Per unit, in rounds (each round makes the next call of every unfinished attack in one
`calls.run_calls`, so the calls of many items run concurrently):

1. clean: the target answers the item as asked plainly. This is the request of the item's clean
   unit (same messages, same key): one call serves both. An item not answered right is not
   attacked: its unit's answer is that clean reply.
2. turn t = 1..budget: the attacker (its conversation so far: `attack`) proposes a stress of the
   turn's kind aimed at the probe's target option. The family's fidelity rules check it
   (`attack.check_candidate`); one that passes goes to the checker ("does the correct answer still
   stand with this added text?", its reply read by `scoring.verdicts.read_verdict`; a verdict that
   cannot be read rejects). A rejected candidate is kept in the trace with why, counted, never shown
   to the target, and SPENDS THE TURN (the budget bounds the attacker's calls, so a run's cost is
   bounded; the attacker is told why and revises). An accepted one rewrites the item
   (`delivery.stressed_messages`) and the target answers it fresh, not as a conversation. A right
   answer: the attacker sees the reply (and any reasoning in it) and revises; a wrong read answer:
   the attack stops, flipped at turn t (to the target option or elsewhere); an unread reply
   (several options, none, cut): counted unread, never a flip, and the attack goes on.
3. the unit's answer: the target's last reply to a stressed item (the flip, or the last one it gave),
   or the clean reply when no candidate was accepted, stored under the unit's key with its score and
   its messages; the unit's trace (JSON: every turn's candidate, problems, verdict, reply and the
   calls' tokens by role) is stored as a call of `TRACE_CALLER` linked to the unit (`ROLE_TRACE`).

4. after the rounds, every flip is resampled (`resample.py`: the target answers the original and the
   attacked item `resample` more times each, for the per-attack test that the flip is not noise); a
   flip's unit answer is stored once its draws are (its trace at once).

Every call is keyed by its messages through the ordinary call path, so a rerun makes none and a run
killed at any point replays what is stored and asks only what is not: the loop is a function of the
stored replies. A call that fails (after the client's retries) stops its attack for this run: the
unit is not answered, counted as not run, and a rerun resumes it from its last stored call. Every
call is linked to the unit: `adaptive.attacker<t>`, `adaptive.checker<t>`, `adaptive.target<t>`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ...calls import CallRequest, RunStats, add_stats, request_key, run_calls
from ...mitigations.loop_units import PlannedUnit, StagedProgress, StoredTurn, direct_scorer, pending_units, stored_turns, unit_links
from ...models.openai_compatible import Completion
from ...models.serving import serving
from ...models.spec import ModelSpec, parse_model_spec
from ...runtime.errors import ConfigError
from ...runtime.jsontypes import JSONObject
from ...runtime.seeding import stable_hash
from ...score import Score
from ...scoring.verdicts import read_verdict
from ...store import CallRow, ScoreRow
from .attack import (
    ATTACKER_SYSTEM,
    CHECKER_LABELS,
    attacker_task,
    check_candidate,
    checker_messages,
    feedback_held,
    feedback_rejected,
    feedback_unread,
    read_candidate,
)
from .delivery import AdaptiveOptions, kind_of_turn, stressed_messages
from .probe import AdaptiveProbe
from .taxonomy import ROLE_ATTACKER, ROLE_CHECKER, ROLE_TARGET, ROLE_TRACE, STANDS, TRACE_CALLER

if TYPE_CHECKING:  # pragma: no cover
    from ...calls import ProgressFn
    from ...mitigations.setting import Setting
    from ...models.openai_compatible import OpenAICompatibleModel
    from ...records import Item
    from ...store import Store

ROLES = ("clean", "attacker", "checker", "target")


def attack_models(options: AdaptiveOptions) -> tuple[ModelSpec, ModelSpec]:
    """(attacker, checker) of the options (the checker defaults to the attacker)."""
    assert options.attacker
    attacker = parse_model_spec(options.attacker, flag="-O attacker")
    checker = parse_model_spec(options.checker, flag="-O checker") if options.checker else attacker
    return attacker, checker


def trace_key(unit_key: str) -> str:
    return stable_hash({"adaptive-trace": unit_key})


class TargetReply(TypedDict):
    """The target's reply an attack's unit would be answered with: the messages it answered, its text, why it ended, its score."""

    messages: list[dict[str, str]]
    text: str
    finish_reason: str | None
    score: Score


@dataclass
class Attack:
    """One unit's attack as it goes: where it is (`phase`, `turn`), the attacker's conversation, the
    request it waits on and what it has recorded."""

    units: list[PlannedUnit]  # planned units sharing one unit key (the first one's scorer reads the answers)
    spec: ModelSpec
    item: Item
    probe: AdaptiveProbe
    clean_messages: list[dict[str, str]]
    params: JSONObject
    phase: str = "clean"
    turn: int = 0
    kind: str = ""
    conversation: list[dict[str, str]] = field(default_factory=list)
    candidate: str | None = None
    stressed: list[dict[str, str]] = field(default_factory=list)
    request: CallRequest | None = None
    answer: TargetReply | None = None  # the last target reply
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def first(self) -> PlannedUnit:
        return self.units[0]

    def link(self, key: str, role: str) -> list[tuple[str, str, str, str]]:
        return unit_links(self.units, key, role)


class AdaptiveLoop:
    """The attack loop of one run's options under one setting (an `AnswerLoop`)."""

    def __init__(self, options: AdaptiveOptions, setting: Setting):
        self.options, self.setting = options, setting
        self.held_back: list[tuple[CallRow, ScoreRow]] = []  # flips' answers, stored once resampled
        self.attacker, self.checker = attack_models(options)
        self.marker = stable_hash(
            {
                "attacker": self.attacker.identity(),
                "checker": self.checker.identity(),
                "budget": options.budget,
                "kind": options.kind,
                "prompts": adaptive_prompt_hash(),
            }
        )

    def unit_key(self, answer_key: str, spec: ModelSpec) -> str:
        return stable_hash({"adaptive": answer_key, "loop": self.marker})

    async def run(
        self,
        units: Sequence[object],
        specs: list[ModelSpec],
        store: Store,
        clients: dict[str, OpenAICompatibleModel] | None,
        halted: set[str] | None,
        progress: ProgressFn | None,
    ) -> RunStats:
        known = {s.label: s for s in specs}
        missing: dict[str, ModelSpec] = {}
        for m in (self.attacker, self.checker):
            have = known.get(m.label)
            if have is not None and have.identity() != m.identity():
                raise ConfigError("-O attacker", f"the attack model {m.label} is not the answering model of that label; give it another label=")
            if have is None:
                missing.setdefault(m.label, m)
        with serving(list(missing.values())) as live:
            every = [*specs, *live]
            by_label = {s.label: s for s in every}
            self.live_attacker, self.live_checker = by_label[self.attacker.label], by_label[self.checker.label]
            # the runner hands a loop its planned units (runner.Planned, which the AnswerLoop protocol cannot name)
            stats = await self._run(cast("Sequence[PlannedUnit]", units), every, store, clients, halted, progress)
        from .resample import resample_flips  # the stage after the rounds: every flip resampled

        part, resampled = await resample_flips(self.options, units, specs, store, clients, halted, progress, trace_key)
        done = [(row, score) for row, score in self.held_back if row.key in resampled]
        store.write_results([row for row, _ in done], [score for _, score in done])
        self.held_back = []
        return add_stats(stats, part)

    async def _run(
        self,
        units: Sequence[PlannedUnit],
        specs: list[ModelSpec],
        store: Store,
        clients: dict[str, OpenAICompatibleModel] | None,
        halted: set[str] | None,
        progress: ProgressFn | None,
    ) -> RunStats:
        stats = RunStats()
        spec_of = {s.label: s for s in specs}
        active = [self._start(us, spec_of[us[0].unit.model]) for us in pending_units(units, store)]
        shown = StagedProgress(progress, waits=False)
        failed = 0
        while active:
            for a in active:
                a.request = self._request(a)
            part = await run_calls([a.request for a in active if a.request is not None], specs, store, shown, clients, RunStats(), halted=halted)
            shown.next_round(part.called)
            stats = add_stats(stats, part)
            turns = stored_turns(store, [a.request.key for a in active if a.request is not None])
            going = []
            for a in active:
                assert a.request is not None
                turn = turns.get(a.request.key)
                if turn is None:  # the call failed (stored as an error): resumed by a rerun
                    failed += len(a.units)
                    continue
                self._count(a, turn)
                if self._advance(a, turn, store):
                    going.append(a)
                else:
                    self._finish(a, store)
            active = going
        if failed:
            stats.not_run += failed
            stats.stopped.append(
                f"{failed} adaptive attacks stopped at a call that failed (stored as an error): not answered, not scored; "
                "rerun to resume them from their last stored call"
            )
        return stats

    def _start(self, units: list[PlannedUnit], spec: ModelSpec) -> Attack:
        first = units[0]
        if first.item is None or not isinstance(first.probe, AdaptiveProbe):
            raise ConfigError("--suite", f"unit {first.unit.unit_id}: the attack loop takes adaptive probes with their items")
        a = Attack(units, spec, first.item, first.probe, first.messages, first.params)
        a.record = {
            "model": first.unit.model,
            "setting": first.unit.setting,
            "item_id": first.unit.item_id,
            "probe_id": first.unit.probe_id,
            "unit_id": first.unit.unit_id,
            "kind": a.probe.kind if self.options.kind == "item" else self.options.kind,
            "budget": self.options.budget,
            "target": a.probe.target,
            "attacker": self.attacker.label,
            "checker": self.checker.label,
            "clean": None,
            "attacked": False,
            "flipped_at": None,
            "to_target": None,
            "rejected": 0,
            "unread": 0,
            "turns_used": 0,
            "turns": [],
            "calls": {r: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0} for r in ROLES},
        }
        return a

    def _request(self, a: Attack) -> CallRequest:
        """The call the attack waits on in its phase."""
        first = a.first
        if a.phase == "clean":
            key = request_key(a.spec, a.clean_messages, a.params)  # the item's clean unit's request: one call serves both
            return CallRequest(a.spec.label, key, a.clean_messages, a.params, direct_scorer(first), first.unit.scoring)
        if a.phase == "attacker":
            params = self.attacker.decoding()
            return CallRequest(self.attacker.label, request_key(self.attacker, a.conversation, params), list(a.conversation), params)
        if a.phase == "checker":
            messages = checker_messages(a.item, a.stressed[-1]["content"])
            params = self.checker.decoding()
            return CallRequest(self.checker.label, request_key(self.checker, messages, params), messages, params)
        key = request_key(a.spec, a.stressed, a.params)
        return CallRequest(a.spec.label, key, a.stressed, a.params, direct_scorer(first), first.unit.scoring)

    def _count(self, a: Attack, turn: StoredTurn) -> None:
        """The call's tokens, under its role."""
        c = a.record["calls"]["target" if a.phase == "target" else a.phase]
        c["calls"] += 1
        c["prompt_tokens"] += turn["prompt_tokens"]
        c["completion_tokens"] += turn["completion_tokens"]

    @staticmethod
    def _score(a: Attack, turn: StoredTurn) -> Score:
        c = Completion(turn["text"], turn["finish_reason"], 0, 0, 0.0, 1)
        scorer = direct_scorer(a.first)
        if scorer is None:  # the family scores letters only: a deferred scorer never reaches the loop
            return Score.unscored("the attack loop reads each reply as it comes: a deferred scorer cannot")
        try:
            return scorer(c)
        except Exception as e:  # a reply its scorer cannot take: unread, with why
            return Score.unscored(f"the scorer failed on this reply: {type(e).__name__}: {e}"[:300])

    def _advance(self, a: Attack, turn: StoredTurn, store: Store) -> bool:
        """Take the stored reply of the attack's call; True when the attack goes on."""
        assert a.request is not None
        key, text = a.request.key, turn["text"]
        if a.phase == "clean":
            s = self._score(a, turn)
            a.record["clean"] = {"label": s.label, "status": str(s.status), "correct": s.value == 1}
            a.answer = {"messages": a.clean_messages, "text": text, "finish_reason": turn["finish_reason"], "score": s}
            if not (str(s.status) == "valid" and s.value == 1):
                return False  # not right when asked plainly: nothing to attack
            a.record["attacked"] = True
            a.turn, a.kind = 1, kind_of_turn(a.probe, self.options.kind, 1)
            task = attacker_task(a.item, a.probe.target, a.kind, a.probe.content_type, a.probe.provenance, self.options.budget)
            a.conversation = [{"role": "system", "content": ATTACKER_SYSTEM}, {"role": "user", "content": task}]
            a.phase = "attacker"
            return True
        entries = a.record["turns"]
        if a.phase == "attacker":
            store.add_plan([], [], a.link(key, f"{ROLE_ATTACKER}{a.turn}"))
            a.conversation.append({"role": "assistant", "content": text})
            stress = read_candidate(text)
            verdict = check_candidate(a.item, a.probe.target, a.kind, a.probe.provenance, stress)
            entries.append({"turn": a.turn, "kind": a.kind, "attacker_key": key, "stress": stress, "problems": list(verdict.problems)})
            if not verdict.ok:
                return self._rejected(a, list(verdict.problems))
            assert stress is not None
            a.stressed = self.setting.apply_to(stressed_messages(a.item, a.kind, stress, self.options.context), a.item)
            a.phase = "checker"
            return True
        entry = entries[-1]
        if a.phase == "checker":
            store.add_plan([], [], a.link(key, f"{ROLE_CHECKER}{a.turn}"))
            reading = read_verdict(text, CHECKER_LABELS)
            entry.update(checker_key=key, verdict=reading.label, verdict_reason=reading.reason, verdict_how=reading.how)
            if reading.label == STANDS:
                a.phase = "target"
                return True
            why = (
                "the checker could not be read as keeping the correct answer"
                if reading.label is None
                else "the checker found the correct answer no longer stands"
            )
            return self._rejected(a, [why + (f" ({reading.reason})" if reading.reason else "")])
        store.add_plan([], [], a.link(key, f"{ROLE_TARGET}{a.turn}"))
        s = self._score(a, turn)
        a.answer = {"messages": a.stressed, "text": text, "finish_reason": turn["finish_reason"], "score": s}
        read = str(s.status) == "valid" and s.value is not None
        outcome = ("held" if s.value == 1 else "flipped") if read else "unread"
        entry.update(target_key=key, reply=text, label=s.label, status=str(s.status), outcome=outcome)
        a.record["turns_used"] = a.turn
        if outcome == "flipped":
            a.record.update(flipped_at=a.turn, to_target=s.label == a.probe.target)
            return False
        if outcome == "unread":
            a.record["unread"] += 1
        return self._next_turn(a, lambda kind: (feedback_held if outcome == "held" else feedback_unread)(text, kind, a.probe.content_type, a.probe.provenance))

    def _rejected(self, a: Attack, reasons: list[str]) -> bool:
        """A candidate refused: kept with why, counted; the turn is spent."""
        a.record["rejected"] += 1
        a.record["turns"][-1]["outcome"] = "rejected"
        a.record["turns"][-1]["problems"] = reasons
        a.record["turns_used"] = a.turn
        return self._next_turn(a, lambda kind: feedback_rejected(reasons, kind, a.probe.content_type, a.probe.provenance))

    def _next_turn(self, a: Attack, feedback: Callable[[str], str]) -> bool:
        """On to the attacker's next turn with `feedback(kind)`, or the end of the budget."""
        if a.turn >= self.options.budget:
            return False
        a.turn += 1
        a.kind = kind_of_turn(a.probe, self.options.kind, a.turn)
        a.conversation.append({"role": "user", "content": feedback(a.kind)})
        a.phase = "attacker"
        return True

    def _finish(self, a: Attack, store: Store) -> None:
        """Store the unit's answer (scored), its request as sent and its trace."""
        assert a.answer is not None
        first = a.first
        s: Score = a.answer["score"]
        row = CallRow(first.unit.key, first.unit.model, "ok", text=a.answer["text"], finish_reason=a.answer["finish_reason"])
        score = ScoreRow(first.unit.key, first.unit.scoring, s.label, s.status, s.detail, s.value)
        tkey = trace_key(first.unit.key)
        trace = CallRow(tkey, TRACE_CALLER, "ok", text=json.dumps(a.record, ensure_ascii=False))
        store.add_plan([], [(first.unit.key, first.unit.model, a.answer["messages"], {**a.params, "adaptive": self.marker})], a.link(tkey, ROLE_TRACE))
        if a.record["flipped_at"] is not None and self.options.resample:
            # a flip's answer waits for its resampled draws (`run`): until then the unit is not
            # finished, so a run killed while resampling is not taken as settled and resumes
            store.write_results([trace], [])
            self.held_back.append((row, score))
            return
        store.write_results([row, trace], [score])


def adaptive_prompt_hash() -> str:
    from .delivery import attack_prompts

    return stable_hash(attack_prompts())[:16]
