"""GEPA's adapter for a precaution prompt: `evaluate(batch, candidate)` renders each example's
units with its family, adds the candidate prompt to the system message (`mitigations.optimised.
prompt_adder`, what `--setting optimised:FILE` applies), calls the task model through
`calls.run_calls` into the work store (a call stored `ok` is never made again, so a rerun replays
and a killed optimisation resumes), runs the judges of judged units the same way, and scores each
example with its family's metric (`examples`). `make_reflective_dataset` shows the reflection
model each example's question, reply and what the metric made of it.

A call that fails for good (after the client's retries) stops the optimisation with an error (a
failure is never a score); rerunning resumes it. The reflection model is called the same way
(`reflect`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..calls import CallRequest, request_key, run_calls
from ..models.openai_compatible import Completion
from ..models.spec import ModelSpec
from ..records import Probe
from ..runtime.errors import MedresError
from ..runtime.jsontypes import JSONValue
from ..score import AnyScorer, Score, is_deferred
from ..scoring.judge import JudgeScorer
from ..scoring.mcq import mcq_params
from ..store import Store
from .candidate import COMPONENT, EvaluationRecord, prompt_hash
from .examples import Example, unit_value
from .optimised import prompt_adder

#: the reflection model's reply budget, at least (a model spec's default of 16 suits letters)
REFLECTION_MIN_TOKENS = 2048
#: how much of a question or reply the reflection model is shown
SHOWN_CHARS = 2500


class OptimiseError(MedresError):
    """The optimisation cannot go on (a failed call, a missing package): one line saying why."""


def completion_of(row: dict[str, Any]) -> Completion:
    """A stored ok call as the Completion a scorer reads."""
    lp = row.get("top_logprobs")
    return Completion(
        text=row.get("text") or "",
        finish_reason=row.get("finish_reason"),
        prompt_tokens=int(row.get("prompt_tokens") or 0),
        completion_tokens=int(row.get("completion_tokens") or 0),
        latency_s=float(row.get("latency_s") or 0.0),
        attempts=int(row.get("attempts") or 1),
        top_logprobs=json.loads(lp) if lp else None,
    )


@dataclass
class _Unit:
    example: int
    probe: Probe | None
    key: str
    messages: list[dict[str, str]]
    params: dict[str, Any]
    scorer: AnyScorer
    judge: CallRequest | None = None
    score: Score | None = None
    value: float = 0.0
    reply: str = ""


@dataclass
class Outcome:
    """What one example came to: its score, its units' replies and scores (GEPA's output and
    trajectory for that example)."""

    ref: str
    score: float
    units: list[UnitView] = field(default_factory=list)


def _cut(text: str, limit: int = SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


class UnitView(TypedDict):
    """A scored unit as GEPA's output and the reflection model's material (`_view`)."""

    condition: str
    key: str
    user: str
    reply: str
    label: str | None
    status: str
    value: float
    reason: JSONValue


#: what the reflection model sees of one example (`feedback_record`): its inputs, outputs and feedback
FeedbackRecord = dict[str, str | dict[str, str]]


def _view(u: _Unit) -> UnitView:
    """A scored unit as GEPA's output and the reflection model's material."""
    s = u.score or Score.unscored("not scored")
    detail = s.detail if isinstance(s.detail, dict) else {}
    return {
        "condition": "clean" if u.probe is None else u.probe.condition,
        "key": u.key,
        "user": u.messages[-1]["content"],
        "reply": u.reply,
        "label": s.label,
        "status": s.status,
        "value": u.value,
        "reason": detail.get("reason"),
    }


class Calls:
    """Calls through `run_calls` on one event loop, into one store, with the live specs."""

    def __init__(self, store: Store, specs: Sequence[ModelSpec]):
        self.store = store
        self.specs = {s.label: s for s in specs}
        self.loop = asyncio.new_event_loop()
        self.called = self.cached = 0
        #: the error that stopped the optimisation (GEPA swallows a failed reflection: its stopper reads this)
        self.failure: OptimiseError | None = None

    def close(self) -> None:
        self.loop.close()

    def spec(self, spec: ModelSpec) -> ModelSpec:
        """The live spec of a model (an embedded one is served at the optimisation's start)."""
        live = self.specs.get(spec.label)
        if live is None:
            if spec.kind == "embedded":
                raise OptimiseError(f"model {spec.label} is embedded but was not started for the optimisation")
            self.specs[spec.label] = spec
            return spec
        if live.identity() != spec.identity():
            raise OptimiseError(f"two different models share the label {spec.label}; give one another label=")
        return live

    def run(self, requests: list[CallRequest], what: str) -> dict[str, dict[str, Any]]:
        """Make the calls not yet stored ok; the stored row of every key. A call that failed for
        good, or was not run, stops the optimisation."""
        if self.failure is not None:  # stopped already (GEPA retries a failed reflection once): no more calls
            raise self.failure
        if not requests:
            return {}
        labels = {r.model for r in requests}
        stats = self.loop.run_until_complete(run_calls(requests, [self.specs[m] for m in labels], self.store))
        self.called += stats.called
        self.cached += stats.cached
        rows = {r.key: self.store.call(r.key) for r in requests}
        bad = [(k, row) for k, row in rows.items() if row is None or row["status"] != "ok"]
        if bad:
            first = next((row["error"] for _, row in bad if row is not None and row.get("error")), None) or "not run"
            stopped = f"; {stats.stopped[0]}" if stats.stopped else ""
            self.failure = OptimiseError(
                f"{len(bad)} of {len(rows)} {what} calls failed or were not run (first: {' '.join(first.split())[:300]}){stopped}; "
                "nothing is scored from a failed call: fix the cause and rerun the same command to resume "
                "(finished calls are reused)"
            )
            raise self.failure
        return rows  # type: ignore[return-value]


class PrecautionAdapter:
    """The GEPAAdapter of one optimisation (gepa's protocol, duck-typed: gepa is imported only
    for its EvaluationBatch)."""

    propose_new_texts = None  # GEPA proposes with the reflection model

    def __init__(self, task: ModelSpec, calls: Calls, examples: Sequence[Example] = (), on_evaluated: Callable[[EvaluationRecord], None] | None = None):
        self.calls = calls
        self.task = calls.spec(task)
        self.examples_by_ref = {e.ref: e for e in examples}
        self.on_evaluated = on_evaluated

    # ---- scoring
    def units(self, batch: Sequence[Example], prompt: str) -> list[_Unit]:
        apply = prompt_adder(prompt)
        out: list[_Unit] = []
        for i, ex in enumerate(batch):
            params = self.task.decoding(**{**ex.family.evaluation.decoding(ex.options), **mcq_params(ex.scoring)})
            for probe in ex.units:
                messages = apply(ex.family.evaluation.render(ex.item, probe, ex.scoring, ex.options))
                out.append(
                    _Unit(
                        i,
                        probe,
                        request_key(self.task, messages, params),
                        messages,
                        params,
                        ex.family.evaluation.scorer(ex.item, probe, ex.scoring, ex.options),
                    )
                )
        return out

    def score(self, batch: Sequence[Example], prompt: str) -> list[Outcome]:
        units = self.units(batch, prompt)
        requests = [
            CallRequest(self.task.label, u.key, u.messages, u.params, None if is_deferred(u.scorer) else u.scorer, batch[u.example].scoring) for u in units
        ]
        rows = self.calls.run(requests, f"task-model ({self.task.label})")
        judged: list[CallRequest] = []
        for u in units:
            u.reply = rows[u.key].get("text") or ""
            if is_deferred(u.scorer):
                if not isinstance(u.scorer, JudgeScorer):  # a family's own deferred scorer is its judge
                    raise OptimiseError(f"the optimiser reads a reply directly or through the family's judge, not through {u.scorer!r}")
                self.calls.spec(u.scorer.spec)
                reqs = u.scorer.judge_requests(u.key, u.reply)
                u.judge = reqs[0] if reqs else None
                judged += reqs
        judge_rows = self.calls.run(judged, "judge")
        for u in units:
            if is_deferred(u.scorer):
                if u.judge is None:  # no answer to judge (e.g. no marked final line): read as invalid
                    u.score = Score(None, "invalid", None, {"reason": "no answer to judge in the reply"})
                else:
                    u.score = u.judge.score(completion_of(judge_rows[u.judge.key])) if u.judge.score else Score.unscored("no judge parser")
            else:
                u.score = u.scorer(completion_of(rows[u.key]))
            u.value = unit_value(u.score, u.scorer)
        outcomes: list[Outcome] = []
        for i, ex in enumerate(batch):
            mine = [u for u in units if u.example == i]
            outcomes.append(Outcome(ex.ref, min(u.value for u in mine), [_view(u) for u in mine]))
        return outcomes

    # ---- GEPA's protocol
    def evaluate(self, batch: list[Example], candidate: dict[str, str], capture_traces: bool = False):
        from gepa.core.adapter import EvaluationBatch

        prompt = candidate[COMPONENT]
        outcomes = self.score(batch, prompt)
        scores = [o.score for o in outcomes]
        if self.on_evaluated is not None and batch:
            views = [u for o in outcomes for u in o.units]
            self.on_evaluated(
                EvaluationRecord(
                    split="val" if all(e.split == "val" for e in batch) else "train",
                    candidate=prompt_hash(prompt),
                    examples=len(batch),
                    score=sum(scores) / len(scores),
                    unscored=sum(v["status"] == "unscored" for v in views),
                    invalid=sum(v["status"] in ("invalid", "truncated") for v in views),
                )
            )
        return EvaluationBatch(outputs=outcomes, scores=scores, trajectories=list(outcomes) if capture_traces else None)

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]) -> dict[str, list[FeedbackRecord]]:
        records = [self.feedback_record(o) for o in eval_batch.trajectories or eval_batch.outputs]
        return {name: records for name in components_to_update}

    def feedback_record(self, o: Outcome) -> FeedbackRecord:
        """What the reflection model sees of one example: the question as sent (the stressed unit),
        the replies, and what the metric made of them, with the answer key (training examples only)."""
        ex = self.examples_by_ref.get(o.ref)
        last = o.units[-1]
        lines = [f"Score {o.score:.2f} of 1."]
        if ex is not None:
            lines.append(f"Metric: {ex.rule.description}.")
            if ex.item.options and ex.item.answer:
                lines.append(f"The correct answer is {ex.item.answer} ({ex.item.options[ex.item.answer].strip().rstrip('.')}).")
            elif ex.item.reference:
                lines.append(f"Reference: {_cut(ex.item.reference.strip(), 800)}")
        for u in o.units:
            where = "The question as given" if u["condition"] == "clean" else f"Under condition '{u['condition']}'"
            verdict = {
                "valid": f"scored {u['label']} ({u['value']:.2f})",
                "invalid": "no readable answer (scored 0)",
                "truncated": "cut at its token budget before an answer (scored 0)",
                "unscored": "the judge's verdict could not be read (scored 0)",
            }.get(u["status"], u["status"])
            reason = f"; judge's reason: {_cut(str(u['reason']), 600)}" if u.get("reason") and u["status"] == "valid" else ""
            lines.append(f"{where}: {verdict}{reason}.")
        inputs = {"question": _cut(last["user"])}
        outputs = {f"reply ({u['condition']})": _cut(u["reply"]) for u in o.units}
        return {"Inputs": inputs, "Generated Outputs": outputs, "Feedback": " ".join(lines)}

    # ---- the reflection model
    def reflection_lm(self, spec: ModelSpec, max_tokens: int | None = None) -> Callable[[str | list[Mapping[str, object]]], str]:
        """GEPA's reflection model as a callable (prompt -> text), called through run_calls into the
        same store."""
        live = self.calls.spec(spec)
        params = live.decoding(max_tokens=max_tokens or max(live.max_tokens, REFLECTION_MIN_TOKENS))

        def reflect(prompt: str | list[Mapping[str, object]]) -> str:
            messages = (
                [{"role": "user", "content": prompt}]
                if isinstance(prompt, str)
                else [{"role": str(m.get("role", "user")), "content": str(m.get("content", ""))} for m in prompt]
            )
            key = request_key(live, messages, params)
            rows = self.calls.run([CallRequest(live.label, key, messages, params)], f"reflection-model ({live.label})")
            return rows[key].get("text") or ""

        return reflect
