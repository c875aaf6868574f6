"""The agent's loop: every unit of an `agent` setting runs as a conversation of steps.

Each round, every unfinished conversation makes its next step: one call through `calls.run_calls`
keyed by the conversation so far (model identity, messages, decoding parameters with the tools),
so a step stored `ok` is never made again and a killed run resumes where it stopped, replaying the
stored steps without calling. A step that fails is retried by the client (backoff, as any call),
then stored as an error: its unit is not answered in this run (counted as not run) and a rerun
resumes it. The tool calls a step asks for are carried out against the search backend and their
results stored as calls of the model `search` keyed by (backend identity, tool, argument, k, the
item's answer-key texts), so a resumed run sees the same results even from a web search.

Every call is linked to its units in the store (`unit_calls`) once its step is taken: the steps
that went on as `agent.step<n>`, the last one as `agent.answer`, the tool results as
`agent.tool<n>.<i>`, and the trajectory's summary as `agent.trajectory`, so a setting's cost counts
every step. The unit's own key holds the final answer (no tokens of its own: they are the steps';
it stands for the `agent.answer` call when calls are counted), scored by the unit's scorer, or, for
an item that used its steps or tokens without one, an error `agent out of steps` / `agent over its
token budget` (not scored).

The trajectory summary (JSON, the `agent.trajectory` call's text): protocol, outcome (answered,
out_of_steps, out_of_tokens), steps, tool_calls, malformed (tool calls that could not be carried
out), searches (queries), reads (ids), cited (id, words, exists: the backend has that passage,
contains: its text holds the cited words as a run of whole words) and the tokens of all steps."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ..calls import CallRequest, ProgressFn, RunStats, add_stats, request_key, run_calls
from ..corpus.query import contains
from ..models.openai_compatible import Completion
from ..runtime.jsontypes import JSONObject
from ..runtime.seeding import stable_hash
from ..score import Score
from ..store import CallRow, ScoreRow, Store
from .agent import (
    ANSWER_ROLE,
    MAX_ACTIONS,
    NOT_MODEL_CALLS,
    SEARCH_MODEL,
    SNIPPET_WORDS,
    STEP_ROLE,
    TOOL_ROLE,
    TRAJECTORY_MODEL,
    TRAJECTORY_ROLE,
    Action,
    AgentConfig,
    Final,
    final_answer,
    text_actions,
    tool_actions,
)
from .loop_units import PlannedUnit, StagedProgress, StoredTurn, direct_scorer, pending_units, stored_turns, unit_links
from .retrieval import gold_texts
from .search import Hit, SearchError

if TYPE_CHECKING:  # pragma: no cover
    from ..models.openai_compatible import OpenAICompatibleModel
    from ..models.spec import ModelSpec

__all__ = ["ANSWER_ROLE", "NOT_MODEL_CALLS", "SEARCH_MODEL", "STEP_ROLE", "TOOL_ROLE", "TRAJECTORY_MODEL", "TRAJECTORY_ROLE", "run_agents"]


class ToolRecord(TypedDict):
    """One action's stored result: the tool, its argument and the passages it gave (`Hit.record`)."""

    tool: str
    arg: str
    hits: list[dict[str, str]]


class CitedPassage(TypedDict):
    """A citation of the final answer, checked: the backend has the passage, it holds the words."""

    id: str
    words: str
    exists: bool
    contains: bool


OUT_OF_STEPS = "agent out of steps"
OUT_OF_TOKENS = "agent over its token budget"


@dataclass
class Trajectory:
    """One conversation: the units it answers (units sharing a key share it), its messages so far."""

    units: list[PlannedUnit]  # the first one's scorer scores the answer
    spec: ModelSpec
    config: AgentConfig
    protocol: str
    messages: list[dict[str, Any]]  # chat messages, and a step's tool calls and their results (not only text)
    params: JSONObject
    exclude: tuple[str, ...]
    step: int = 0
    key: str = ""
    tokens: list[int] = field(default_factory=lambda: [0, 0])
    tool_calls: int = 0
    malformed: int = 0
    searches: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    seen: dict[str, Hit] = field(default_factory=dict)

    def link(self, key: str, role: str) -> list[tuple[str, str, str, str]]:
        return unit_links(self.units, key, role)


def _result_text(action: Action, record: ToolRecord | None) -> str:
    """What the model reads back for one action."""
    if action.problem:
        return f"Error: {action.problem}. Nothing was done."
    assert record is not None
    hits = record["hits"]
    if action.tool == "search":
        if not hits:
            return f'No passage matched "{action.arg}".'
        shown = [f"[{h['id']}] {h['title']}\n{' '.join(h['text'].split()[:SNIPPET_WORDS])} ..." for h in hits]
        return f'Results for "{action.arg}" (read(id) gives a passage in full):\n\n' + "\n\n".join(shown)
    if not hits:
        return f"No passage with id {action.arg} (ids come from search results)."
    h = hits[0]
    return f"[{h['id']}] {h['title']}\n{h['text']}"


async def _carry_out(t: Trajectory, action: Action, store: Store, n: int) -> ToolRecord | None:
    """The stored result of one action (made and stored when not yet stored); None for a malformed one."""
    if action.problem:
        t.malformed += 1
        return None
    backend = t.config.backend
    key = stable_hash({"tool": action.tool, "arg": action.arg, "k": t.config.k, "backend": backend.identity, "exclude": t.exclude})
    stored = store.ok_texts([key]).get(key)
    record: ToolRecord
    if stored is not None:
        record = json.loads(stored)
    else:
        if action.tool == "search":
            hits = await backend.search(action.arg, t.config.k, t.exclude)
        else:
            one = await backend.read(action.arg, t.exclude)
            hits = [] if one is None else [one]
        record = {"tool": action.tool, "arg": action.arg, "hits": [h.record() for h in hits]}
        store.write_results([CallRow(key, SEARCH_MODEL, "ok", text=json.dumps(record, ensure_ascii=False))], [])
    store.add_plan([], [], t.link(key, f"{TOOL_ROLE}{t.step}.{n}"))
    (t.searches if action.tool == "search" else t.reads).append(action.arg)
    for h in record["hits"]:
        t.seen.setdefault(h["id"], Hit(h["id"], h["title"], h["text"]))
    return record


async def _act(t: Trajectory, turn: StoredTurn, actions: list[Action], store: Store) -> None:
    """Carry out a step's actions and add the step and its results to the conversation."""
    results = []
    for n, action in enumerate(actions, 1):
        if n > MAX_ACTIONS:
            action = Action(action.tool, action.arg, action.call_id, f"at most {MAX_ACTIONS} actions a step")
        t.tool_calls += 1
        results.append(_result_text(action, await _carry_out(t, action, store, n)))
    if t.protocol == "tools":
        calls = [{**c, "id": a.call_id} for c, a in zip(turn["tool_calls"] or [], actions)]
        t.messages.append({"role": "assistant", "content": turn["text"] or None, "tool_calls": calls})
        t.messages += [{"role": "tool", "tool_call_id": a.call_id, "content": r} for a, r in zip(actions, results)]
    else:
        t.messages.append({"role": "assistant", "content": turn["text"]})
        t.messages.append({"role": "user", "content": "\n\n---\n\n".join(results)})


async def _cited(t: Trajectory, final: Final) -> list[CitedPassage]:
    """Each citation with whether the backend has that passage and whether it holds the cited words."""
    out: list[CitedPassage] = []
    for c in final.citations:
        hit = t.seen.get(c.id)
        if hit is None:
            try:
                hit = await t.config.backend.read(c.id, t.exclude)
            except SearchError:
                hit = None
        out.append({"id": c.id, "words": c.words, "exists": hit is not None, "contains": bool(hit and c.words and contains(hit.text, c.words))})
    return out


def _summary(t: Trajectory, outcome: str, cited: list[CitedPassage]) -> dict[str, object]:
    return {
        "protocol": t.protocol,
        "outcome": outcome,
        "steps": t.step,
        "tool_calls": t.tool_calls,
        "malformed": t.malformed,
        "searches": t.searches,
        "reads": t.reads,
        "cited": cited,
        "prompt_tokens": t.tokens[0],
        "completion_tokens": t.tokens[1],
    }


async def _finish(t: Trajectory, outcome: str, turn: StoredTurn | None, store: Store, stats: RunStats) -> None:
    """Store the unit's answer (scored) or its shortfall, and the trajectory's summary."""
    first = t.units[0]
    cited: list[CitedPassage] = []
    scores: list[ScoreRow] = []
    if outcome == "answered":
        assert turn is not None
        final = final_answer(turn["text"])
        cited = await _cited(t, final)
        row = CallRow(first.unit.key, first.unit.model, "ok", text=final.answer, finish_reason=turn["finish_reason"])
        scorer = direct_scorer(first)
        if scorer is not None:  # a deferred scorer (a judge) reads the stored answer after the run
            c = Completion(final.answer, turn["finish_reason"], 0, 0, 0.0, 1)
            try:
                s = scorer(c)
            except Exception as e:  # a reply its scorer cannot take: kept, unscored with why
                s = Score.unscored(f"the scorer failed on this reply: {type(e).__name__}: {e}"[:300])
            scores.append(ScoreRow(first.unit.key, first.unit.scoring, s.label, s.status, s.detail, s.value))
    else:
        why = OUT_OF_STEPS if outcome == "out_of_steps" else OUT_OF_TOKENS
        text = f"{why}: {t.step} steps, {sum(t.tokens)} tokens (limits {t.config.steps} steps, {t.config.tokens} tokens), no final answer"
        row = CallRow(first.unit.key, first.unit.model, "error", True, error=text)
        stats.agent_short += len(t.units)
    summary_key = stable_hash({"trajectory": first.unit.key})
    summary = CallRow(summary_key, TRAJECTORY_MODEL, "ok", text=json.dumps(_summary(t, outcome, cited), ensure_ascii=False))
    # the unit's request: the whole conversation, its last reply included (what a reader of the unit sees)
    conversation = t.messages + ([{"role": "assistant", "content": turn["text"]}] if turn is not None else [])
    store.add_plan([], [(first.unit.key, first.unit.model, conversation, {**first.params, "agent": t.config.marker})])
    store.add_plan([], [], t.link(summary_key, TRAJECTORY_ROLE) + t.link(t.key, ANSWER_ROLE))
    store.write_results([row, summary], scores)


async def _advance(t: Trajectory, turn: StoredTurn, store: Store, stats: RunStats) -> bool:
    """Take one stored step: finish the trajectory or carry out its actions. True when it goes on."""
    t.tokens[0] += turn["prompt_tokens"]
    t.tokens[1] += turn["completion_tokens"]
    if t.protocol == "tools":
        actions = tool_actions(turn["tool_calls"] or [])
    else:
        actions = text_actions(turn["text"])
    if not actions:
        await _finish(t, "answered", turn, store, stats)
        return False
    if t.step >= t.config.steps or sum(t.tokens) >= t.config.tokens:
        await _finish(t, "out_of_steps" if t.step >= t.config.steps else "out_of_tokens", None, store, stats)
        return False
    store.add_plan([], [], t.link(t.key, f"{STEP_ROLE}{t.step}"))
    await _act(t, turn, actions, store)
    return True


def _start(units: list[PlannedUnit], spec: ModelSpec) -> Trajectory:
    first = units[0]
    config = first.loop
    assert isinstance(config, AgentConfig)  # the runner hands a loop the units of its own setting
    protocol = config.protocol_for(spec)
    item = first.item
    return Trajectory(
        units, spec, config, protocol, config.opening(first.messages, protocol), config.params(first.params, protocol), gold_texts(item) if item else ()
    )


async def run_agents(
    planned: Sequence[PlannedUnit],
    specs: list[ModelSpec],
    store: Store,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    halted: set[str] | None = None,
    progress: ProgressFn | None = None,
) -> RunStats:
    """Run the conversations of the planned agent units not yet answered (see the module doc).
    `progress(done, todo, waits=)` counts the steps made so far across rounds (a round's steps are
    known only once the round before is taken)."""
    stats = RunStats()
    shown = StagedProgress(progress)
    spec_of = {s.label: s for s in specs}
    active = [_start(units, spec_of[units[0].unit.model]) for units in pending_units(planned, store)]
    failed = 0
    while active:
        requests = []
        for t in active:
            t.step += 1
            t.key = request_key(t.spec, t.messages, t.params)
            epoch = t.units[0].unit.epoch
            if epoch and not t.spec.supports("seed"):  # another epoch's step is another call, as the runner keys answers
                t.key = stable_hash({"answer": t.key, "epoch": epoch})
            requests.append(CallRequest(t.spec.label, t.key, list(t.messages), t.params))
        part = await run_calls(requests, specs, store, shown, clients, RunStats(), halted=halted)
        shown.next_round(part.called)
        stats = add_stats(stats, part)
        turns = stored_turns(store, [t.key for t in active])
        going = []
        for t in active:
            turn = turns.get(t.key)
            if turn is None:  # the step failed (stored as an error): resumed by a rerun
                failed += len(t.units)
                continue
            try:
                if await _advance(t, turn, store, stats):
                    going.append(t)
            except SearchError as e:
                failed += len(t.units)
                if len(stats.error_samples) < 5:
                    stats.error_samples.append(str(e))
        active = going
    if failed:
        stats.not_run += failed
        stats.stopped.append(
            f"{failed} agent units stopped at a step that failed (stored as an error) or a search that failed: not answered, "
            "not scored; rerun to resume them from their last stored step"
        )
    return stats
