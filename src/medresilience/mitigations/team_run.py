"""The team's conversations: every unit of a `team` setting runs its protocol (mitigations.team) as a
sequence of stages, each a set of calls that can be made together (the triage and the monitor's
note; the recruitment; the experts' answers; each round of discussion; the leads' reports), then
the final decision.

All units advance together: each round, every unfinished conversation's next stage goes into one
`calls.run_calls` (deduplicated, bounded concurrency per model, one writer), each call keyed by its
request key (model identity, messages, decoding parameters), so a call stored `ok` is never made
again and a killed run resumes where it stopped, replaying the stored calls without making them. A
call that fails is retried by the client, then stored as an error: its unit is not answered in this
run (counted as not run) and a rerun resumes it.

The final decision is the unit's own call: made through `run_calls` under the unit's key with the
unit's decoding parameters and scorer, so the family's reader scores it as it is stored (a judged
family's judge runs after, on the stored reply, like any other). Every other call is linked to its
units in the store as `team.turn<n>` (n counts the unit's calls in the order made) once its stage is
taken, and the conversation's summary (JSON, `team.summary`, stored under the label `team`) says:
mode, complexity (the level used; None when the triage was unread), experts (team, role, focus),
recruitment (the reply, when unread), rounds (of discussion after the first answers), agreed,
positions (per stage), outcome (answered, complexity_unread, recruitment_unread, over_calls,
over_tokens), calls (model calls, the final decision included), prompt and completion tokens, and
turns (n, what, who, round, key: the conversation in order; the decision's key is the unit's).

A unit whose next stage would pass its call limit, or whose calls so far reached its token budget,
stops there with an error under its key (`team over its call limit` / `team over its token budget`),
as does one whose triage or recruitment is unread (`team triage unread` / `team recruitment
unread`): counted apart (`RunStats.agent_short`), never scored."""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from ..calls import CallRequest, ProgressFn, RunStats, add_stats, request_key, run_calls
from ..models.serving import serving
from ..runtime.jsontypes import JSONObject
from ..runtime.seeding import stable_hash
from ..store import CallRow, Store
from .loop_units import PlannedUnit, StagedProgress, StoredTurn, direct_scorer, pending_units, stored_turns, unit_links
from .monitor import MONITOR_TOKENS
from .team import (
    DISCUSS_REQUEST,
    EXPERT_TOKENS,
    LEAD_REQUEST,
    RECRUIT_TOKENS,
    SUMMARY_MODEL,
    SUMMARY_ROLE,
    TEAMS,
    TRIAGE_TOKENS,
    TURN_ROLE,
    Member,
    TeamConfig,
    agreed,
    cut,
    read_experts,
    read_level,
    read_position,
    read_teams,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..models.openai_compatible import OpenAICompatibleModel
    from ..models.spec import ModelSpec
    from .setting import Messages

__all__ = ["OVER_CALLS", "OVER_TOKENS", "run_teams"]

OVER_CALLS = "team over its call limit"
OVER_TOKENS = "team over its token budget"
UNREAD = {"complexity_unread": "team triage unread", "recruitment_unread": "team recruitment unread"}
#: decoding parameters of the unit that are for its answer only (the experts talk in plain text)
_ANSWER_ONLY = ("logprobs", "top_logprobs", "response_format", "max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class Turn:
    """One call a conversation asks for: what it is (triage, monitor, recruit, answer, discuss, lead), who makes it, the call."""

    what: str
    who: str
    spec: ModelSpec
    messages: Messages
    params: JSONObject
    round: int = 0


@dataclass(frozen=True)
class Final:
    """The final decision's messages (the unit's own call)."""

    messages: Messages


class Notes(TypedDict, total=False):
    """What a conversation's protocol found, for its summary: the level used (None: the triage
    unread), the experts and teams recruited, the positions per stage, the rounds of discussion,
    whether the experts agreed, and why it stopped without a decision (with the unread reply)."""

    complexity: str | None
    outcome: str
    triage: str
    recruitment: str
    experts: list[dict[str, object]]
    teams: list[str]
    positions: list[list[str | None]]
    rounds: int
    agreed: bool


class TurnRecord(TypedDict):
    """One call of a conversation in the order made: its number, what it was, who made it, its round and key."""

    n: int
    what: str
    who: str
    round: int
    key: str


Stage = list[Turn] | Final
Protocol = Generator[Stage, list[str], None]


@dataclass
class Conversation:
    """One unit's team (units sharing a key share it): its protocol, the stage it waits on, its figures."""

    units: list[PlannedUnit]  # the first one's scorer scores the answer
    spec: ModelSpec
    config: TeamConfig
    stage: Stage | None = None
    keys: list[str] = field(default_factory=list)
    protocol: Protocol | None = None
    calls: int = 0
    tokens: list[int] = field(default_factory=lambda: [0, 0])
    summary: Notes = field(default_factory=lambda: Notes())
    turns: list[TurnRecord] = field(default_factory=list)

    def link(self, key: str, role: str) -> list[tuple[str, str, str, str]]:
        return unit_links(self.units, key, role)

    @property
    def first(self) -> PlannedUnit:
        return self.units[0]


def _answering_params(c: Conversation, budget: int) -> JSONObject:
    """An expert's decoding parameters: the unit's (its seed and temperature), in plain text, with the turn's budget."""
    params = {k: v for k, v in c.first.params.items() if k not in _ANSWER_ONLY}
    return {**params, **{k: v for k, v in c.spec.decoding(max_tokens=budget).items() if k in _ANSWER_ONLY}}


def _label(m: Member, i: int, teams: bool) -> str:
    return f"team {m.team} member {i} ({m.role})" if teams else f"expert {i} ({m.role})"


def _protocol(c: Conversation) -> Protocol:
    """The team's protocol for one unit (see mitigations.team): yields each stage, receives its reply texts."""
    cfg, msgs = c.config, c.first.messages
    moderator = cfg.moderator or c.spec
    monitor = cfg.monitor_spec or c.spec
    first: list[Turn] = []
    if cfg.mode == "adaptive":
        first.append(Turn("triage", "moderator", moderator, cfg.triage(msgs), moderator.decoding(max_tokens=TRIAGE_TOKENS)))
    if cfg.monitor:
        first.append(Turn("monitor", "monitor", monitor, cfg.monitor_messages(msgs), monitor.decoding(max_tokens=MONITOR_TOKENS)))
    replies = (yield first) if first else []
    note = replies[-1] if cfg.monitor else None
    level = read_level(replies[0]) if cfg.mode == "adaptive" else cfg.mode
    c.summary["complexity"] = level
    if level is None:
        c.summary["outcome"] = "complexity_unread"
        c.summary["triage"] = replies[0][:500]
        return
    if level == "basic":
        yield Final(cfg.basic(msgs, note))
        return
    (recruited,) = yield [Turn("recruit", "moderator", moderator, cfg.recruit(msgs, level), moderator.decoding(max_tokens=RECRUIT_TOKENS))]
    if level == "intermediate":
        yield from _intermediate(c, recruited, note)
    else:
        yield from _advanced(c, recruited, note)


def _unread_recruitment(c: Conversation, text: str) -> None:
    c.summary["outcome"] = "recruitment_unread"
    c.summary["recruitment"] = text[:1000]


def _intermediate(c: Conversation, recruited: str, note: str | None) -> Protocol:
    """K experts answer, discuss over up to N rounds (stopping once their positions agree), then the moderator decides."""
    cfg, msgs = c.config, c.first.messages
    experts = read_experts(recruited, cfg.experts)
    if experts is None:
        _unread_recruitment(c, recruited)
        return
    c.summary["experts"] = [m.record() for m in experts]
    who = [_label(m, i, False) for i, m in enumerate(experts, 1)]
    params = _answering_params(c, EXPERT_TOKENS)
    convs = [cfg.expert(msgs, m, note) for m in experts]
    texts = yield [Turn("answer", who[i], c.spec, convs[i], params) for i in range(len(experts))]
    positions = [read_position(t) for t in texts]
    c.summary["positions"] = [positions]
    done = 0
    for r in range(1, cfg.rounds + 1):
        if agreed(positions):
            break
        for i in range(len(convs)):
            others = "\n\n".join(f"[{who[j]}]\n{cut(texts[j])}" for j in range(len(texts)) if j != i)
            convs[i] = [*convs[i], {"role": "assistant", "content": texts[i]}, {"role": "user", "content": DISCUSS_REQUEST.format(others=others)}]
        texts = yield [Turn("discuss", who[i], c.spec, convs[i], params, r) for i in range(len(experts))]
        positions = [read_position(t) for t in texts]
        c.summary["positions"].append(positions)
        done = r
    c.summary["rounds"], c.summary["agreed"] = done, agreed(positions)
    yield Final(cfg.final(msgs, list(zip(who, texts)), False, note))


def _advanced(c: Conversation, recruited: str, note: str | None) -> Protocol:
    """TEAMS teams of K: every member answers, each lead writes the team's report, a final call combines the reports."""
    cfg, msgs = c.config, c.first.messages
    got = read_teams(recruited, TEAMS, cfg.experts)
    if got is None:
        _unread_recruitment(c, recruited)
        return
    purposes, members = got
    c.summary["experts"] = [m.record() for m in members]
    c.summary["teams"] = purposes
    k = cfg.experts
    who = [_label(m, i % k + 1, True) for i, m in enumerate(members)]
    params = _answering_params(c, EXPERT_TOKENS)
    convs = [cfg.expert(msgs, m, note) for m in members]
    texts = yield [Turn("answer", who[i], c.spec, convs[i], params) for i in range(len(members))]
    leads = []
    for t in range(TEAMS):
        lead = t * k
        answers = "\n\n".join(f"[{who[j]}]\n{cut(texts[j])}" for j in range(lead, lead + k))
        request = LEAD_REQUEST.format(purpose=purposes[t], answers=answers)
        conv = [*convs[lead], {"role": "assistant", "content": texts[lead]}, {"role": "user", "content": request}]
        leads.append(Turn("lead", f"team {t + 1} lead ({members[lead].role})", c.spec, conv, params))
    reports = yield leads
    c.summary["positions"] = [[read_position(t) for t in texts], [read_position(t) for t in reports]]
    c.summary["rounds"], c.summary["agreed"] = 0, agreed([read_position(t) for t in reports])
    yield Final(cfg.final(msgs, [(f"Team {t + 1}: {purposes[t]}", reports[t]) for t in range(TEAMS)], True, note))


def _key(c: Conversation, spec: ModelSpec, messages: Messages, params: JSONObject) -> str:
    key = request_key(spec, messages, params)
    epoch = c.first.unit.epoch
    if epoch and spec.label == c.spec.label and not spec.supports("seed"):  # another epoch's turn is another call, as the runner keys answers
        key = stable_hash({"answer": key, "epoch": epoch})
    return key


def _requests(c: Conversation, stats: RunStats, store: Store) -> list[CallRequest]:
    """The calls of a conversation's next stage (none when it stops at its limits, recorded as such)."""
    stage = c.stage
    n = 1 if isinstance(stage, Final) else len(stage or [])
    if c.calls + n > c.config.calls or sum(c.tokens) >= c.config.tokens:
        _stop(c, "over_calls" if c.calls + n > c.config.calls else "over_tokens", stats, store)
        return []
    if isinstance(stage, Final):
        p = c.first
        score = direct_scorer(p)  # a deferred one (a judge) reads the stored decision after the run
        c.keys = [p.unit.key]
        return [CallRequest(p.unit.model, p.unit.key, stage.messages, p.params, score, p.unit.scoring)]
    assert stage is not None
    c.keys = [_key(c, t.spec, t.messages, t.params) for t in stage]
    return [CallRequest(t.spec.label, k, t.messages, t.params) for t, k in zip(stage, c.keys)]


def _summary(c: Conversation, outcome: str) -> dict[str, object]:
    return {
        "mode": c.config.mode,
        "complexity": c.summary.get("complexity"),
        "experts": c.summary.get("experts", []),
        "teams": c.summary.get("teams", []),
        "rounds": c.summary.get("rounds", 0),
        "agreed": c.summary.get("agreed"),
        "positions": c.summary.get("positions", []),
        "outcome": outcome,
        "calls": c.calls,
        "prompt_tokens": c.tokens[0],
        "completion_tokens": c.tokens[1],
        "turns": c.turns,
        **{k: v for k, v in (("triage", c.summary.get("triage")), ("recruitment", c.summary.get("recruitment"))) if k in c.summary},
    }


def _write_summary(c: Conversation, outcome: str, store: Store, rows: list[CallRow]) -> None:
    key = stable_hash({"team": c.first.unit.key})
    summary = CallRow(key, SUMMARY_MODEL, "ok", text=json.dumps(_summary(c, outcome), ensure_ascii=False))
    store.add_plan([], [], c.link(key, SUMMARY_ROLE))
    store.write_results([*rows, summary], [])


def _stop(c: Conversation, outcome: str, stats: RunStats, store: Store) -> None:
    """A unit that ends without a final decision: an error under its key, counted, never scored."""
    p = c.first
    why = {"over_calls": OVER_CALLS, "over_tokens": OVER_TOKENS, **UNREAD}[outcome]
    text = f"{why}: {c.calls} calls, {sum(c.tokens)} tokens (limits {c.config.calls} calls, {c.config.tokens} tokens), no final decision"
    store.add_plan([], [(p.unit.key, p.unit.model, p.messages, {**p.params, "team": c.config.marker})])
    _write_summary(c, outcome, store, [CallRow(p.unit.key, p.unit.model, "error", True, error=text)])
    stats.agent_short += len(c.units)
    c.stage = None


def _advance(c: Conversation, turns: dict[str, StoredTurn], stats: RunStats, store: Store) -> bool:
    """Take a conversation's stored stage: link its calls, count them, and move to the next stage (or
    finish). True when it goes on; None-stage conversations have finished."""
    got = [turns[k] for k in c.keys]
    c.calls += len(got)
    for t in got:
        c.tokens[0] += t["prompt_tokens"]
        c.tokens[1] += t["completion_tokens"]
    if isinstance(c.stage, Final):
        c.turns.append({"n": len(c.turns) + 1, "what": "decision", "who": "moderator", "round": 0, "key": c.first.unit.key})
        _write_summary(c, "answered", store, [])
        return False
    assert c.stage is not None and c.protocol is not None
    links = []
    for turn, key in zip(c.stage, c.keys):
        n = len(c.turns) + 1
        c.turns.append({"n": n, "what": turn.what, "who": turn.who, "round": turn.round, "key": key})
        links += c.link(key, f"{TURN_ROLE}{n}")
    store.add_plan([], [], links)
    return _next(c, [t["text"] for t in got], stats, store)


def _next(c: Conversation, replies: list[str] | None, stats: RunStats, store: Store) -> bool:
    assert c.protocol is not None
    try:
        c.stage = next(c.protocol) if replies is None else c.protocol.send(replies)
    except StopIteration:  # the protocol ended without a decision (an unread triage or recruitment)
        _stop(c, c.summary.get("outcome", "recruitment_unread"), stats, store)
        return False
    return True


def _start(units: list[PlannedUnit], spec: ModelSpec) -> Conversation:
    config = units[0].loop
    assert isinstance(config, TeamConfig)  # the runner hands a loop the units of its own setting
    c = Conversation(units, spec, config)
    c.protocol = _protocol(c)
    return c


async def run_teams(
    planned: Sequence[PlannedUnit],
    specs: list[ModelSpec],
    store: Store,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    halted: set[str] | None = None,
    progress: ProgressFn | None = None,
) -> RunStats:
    """Run the conversations of the planned team units not yet answered (see the module doc).
    `progress(done, todo, waits=)` counts the calls made so far across stages."""
    stats = RunStats()
    shown = StagedProgress(progress)
    spec_of = {s.label: s for s in specs}
    active = [_start(units, spec_of[units[0].unit.model]) for units in pending_units(planned, store)]
    active = [c for c in active if _next(c, None, stats, store)]
    helpers = {s.label: s for c in active for s in c.config.helper_models() if s.label not in spec_of}
    failed = 0
    with serving(list(helpers.values())) as live:
        every = [*specs, *live]
        while active:
            requests = [r for c in active for r in _requests(c, stats, store)]
            active = [c for c in active if c.stage is not None]
            part = await run_calls(requests, every, store, shown, clients, RunStats(), halted=halted)
            shown.next_round(part.called)
            stats = add_stats(stats, part)
            turns = stored_turns(store, [k for c in active for k in c.keys])
            going = []
            for c in active:
                if any(k not in turns for k in c.keys):  # a call failed (stored as an error): resumed by a rerun
                    failed += len(c.units)
                elif _advance(c, turns, stats, store):
                    going.append(c)
            active = going
    if failed:
        stats.not_run += failed
        stats.stopped.append(
            f"{failed} team units stopped at a call that failed (stored as an error): not answered, not scored; "
            "rerun to resume them from their last stored call"
        )
    return stats
