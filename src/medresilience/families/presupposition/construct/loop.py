"""The adversarial loop (Cancer-Myth sec. 3.2): per myth a generator writes M questions, each with
its correction; deterministic checks reject the unusable ones; a responder answers the rest as a
patient would ask them; the verifier judges each answer with the premise rubric (-1 / 0 / 1).

- -1 (the responder went along with the false belief): the question joins the generator's valid
  pool (a hard example for later prompts) and the candidates;
- 1 (it corrected the belief): the question joins the generator's easy pool (shown as invalid);
- 0, or unscored (the verifier's reply had no readable verdict, or its call failed): neither.

Myths run in rounds of `round_size`; the pools change only between rounds, so every myth of a
round sees the same pools whatever order its calls finish in (round size 1 is the study's
sequential loop). Each round is three stages (generate, respond, verify) through
`stages.run_stage`, every generator's tasks of the round in one stage. Several generators are
separate runs over the same myths, each with its own pools and, by default, answering its own
questions (the study: each model was "both generator and responder" of its run).

A transient call failure (after the client's retries) leaves that generator's run incomplete: the
loop stops it after the round, since every later prompt depends on this round's outcome; the rerun
retries the failed calls and goes on from there, reusing everything stored. A call failure the
endpoint calls permanent (400, 401, 404) is recorded as the question's outcome and the run goes
on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ....build.stages import CallSession, Outcome, Rejected, StageProgress, StageStats, Task, run_stage
from ....models.spec import ModelSpec
from ....runtime.jsontypes import JSONObject
from ....scoring.judge import Judge
from ....store import Store
from ..delivery import messages_for
from ..formats.myths import Myth
from . import checks, prompts
from .pools import Counts, Drawn, Pools
from .seeds import ValidExample

GENERATE, RESPOND, VERIFY = "generate", "respond", "verify"

# final statuses of a question the loop decides (the build adds kept / not_selected / unsound / unchecked for candidates)
REJECTED, NO_ANSWER, UNSCORED, PARTIAL, EASY, CANDIDATE = "rejected", "no_answer", "unscored", "partial", "easy", "candidate"
# statuses of a myth that gave no question
FAILED, NOT_RUN = "failed", "not_run"


@dataclass
class Decision:
    """What happened to one generated question (question_id set) or to a myth that gave none."""

    generator: str
    myth_id: str
    myth_row: int
    round: int | None
    status: str
    question_id: str | None = None
    reason: str | None = None
    detail: str = ""
    question: str | None = None
    correction: str | None = None
    score: int | None = None
    verifier_reason: str | None = None
    category: str | None = None
    category_reason: str | None = None
    checker_reason: str | None = None

    def as_dict(self) -> JSONObject:
        return {k: v for k, v in self.__dict__.items() if (v is not None and v != "") or k in ("status", "generator", "myth_id")}


@dataclass
class GeneratorRun:
    """One generator's run over the myths: its model, who answers its questions, its pools."""

    name: str
    spec: ModelSpec
    responder: ModelSpec
    pools: Pools
    active: bool = True
    stopped_at: int | None = None
    history: list[dict[str, int]] = field(default_factory=list)
    written: set[str] = field(default_factory=set)  # every question it wrote, normalised (the duplicate check)


@dataclass(frozen=True)
class LoopOptions:
    questions: int = 3
    counts: Counts = field(default_factory=Counts)
    round_size: int = 1
    seed: int = 0
    retries: int = 2
    answer_tokens: int = 1024


@dataclass
class Pending:
    decision: Decision
    run: GeneratorRun
    answer: str | None = None
    answer_key: str | None = None

    @property
    def question_id(self) -> str:
        """The pending question's id (a generated question always has one)."""
        return drafted(self.decision.question_id)

    @property
    def question(self) -> str:
        """The pending question's text (a generated question always has one)."""
        return drafted(self.decision.question)


def drafted(value: str | None) -> str:
    """A field every generated question's decision holds (its id, question, correction)."""
    if value is None:
        raise ValueError("a generated question's decision lacks its id or text")
    return value


def question_id(generator: str, myth: Myth, k: int) -> str:
    return f"{generator}.{myth.id}.q{k}"


def rounds_of(myths: Sequence[Myth], size: int) -> list[list[Myth]]:
    return [list(myths[i : i + size]) for i in range(0, len(myths), size)]


def _answer(text: str | None) -> str:
    if text is None or not text.strip():
        raise Rejected("empty_answer", "the responder's reply is empty")
    return text


def _verify_task(judge: Judge, p: Pending, params: Mapping[str, object]) -> Task:
    """The verifier's call on one answer; its reader knows the answer, so no verdict the answer
    plants is read."""
    fields = {"question": p.question, "correction": drafted(p.decision.correction)}
    answer, salt = p.answer or "", p.answer_key or ""
    fence = f"answer-{judge.nonce(fields, answer, salt)}"
    return Task(p.question_id, judge.messages(fields, answer, salt=salt), None, None, 0, judge.reader(answer, fence), model=judge.spec, params=params)


def _failure(o: Outcome) -> str:
    return f"{o.detail} (permanent)" if o.permanent else o.detail


@dataclass
class _Round:
    """One round of the loop: where its calls go and what it has decided so far (`halted`: the
    generators whose calls failed in it, stopped after it)."""

    store: Store
    opts: LoopOptions
    stats: dict[str, StageStats]
    progress: StageProgress | None
    session: CallSession | None
    number: int
    by_run: dict[str, list[Decision]]
    halted: set[str] = field(default_factory=set)

    def stage(self, name: str, tasks: dict[str, Task], retries: int) -> dict[str, Outcome]:
        return run_stage(self.store, None, name, tasks, retries, self.progress, self.stats[name], self.session)


def run_loop(
    store: Store,
    runs: Sequence[GeneratorRun],
    myths: Sequence[Myth],
    opts: LoopOptions,
    judge: Judge,
    stats: dict[str, StageStats],
    progress: StageProgress | None = None,
    session: CallSession | None = None,
) -> list[Decision]:
    """Every decision of the loop, in generator order, then myth order, then question order."""
    by_run: dict[str, list[Decision]] = {r.name: [] for r in runs}
    batches = rounds_of(myths, opts.round_size)
    for st in (GENERATE, RESPOND, VERIFY):
        stats.setdefault(st, StageStats())
    for r_no, batch in enumerate(batches, 1):
        active = [g for g in runs if g.active]
        if not active:
            break
        if progress is not None:
            progress("rounds", r_no - 1, len(batches))
        rnd = _Round(store, opts, stats, progress, session, r_no, by_run)
        pending = _generate(rnd, active, batch)
        judged = _respond(rnd, pending)
        _verify(rnd, judge, judged)
        _grow_pools(rnd, active, len(batch))
        if progress is not None:
            progress("rounds", r_no, len(batches))
    for g in runs:
        if g.stopped_at is not None:
            done = {m.id for b in batches[: g.stopped_at] for m in b}
            by_run[g.name] += [
                Decision(
                    g.name,
                    m.id,
                    m.row,
                    None,
                    NOT_RUN,
                    reason="loop_stopped",
                    detail=f"the run stopped after round {g.stopped_at}, whose calls failed; run the same command again to go on",
                )
                for m in myths
                if m.id not in done
            ]
    return [d for g in runs for d in by_run[g.name]]


def generate_task(g: GeneratorRun, myth: Myth, opts: LoopOptions, r_no: int) -> tuple[str, Drawn, Task]:
    """The generator's task on one myth in round `r_no` (its id, the examples drawn from its pools, the task)."""
    tid = f"{g.name}|{myth.id}"
    d = g.pools.draw(opts.counts, opts.seed, myth.id, r_no)
    return tid, d, prompts.task(tid, myth, opts.questions, d.valid, d.invalid, d.easy, model=g.spec)


def _generate(rnd: _Round, active: Sequence[GeneratorRun], batch: Sequence[Myth]) -> list[Pending]:
    """Each active generator's questions on the round's myths, checked; the ones that pass wait
    for an answer."""
    opts, r_no = rnd.opts, rnd.number
    drawn: dict[str, Drawn] = {}
    tasks: dict[str, Task] = {}
    for g in active:
        for myth in batch:
            tid, d, task = generate_task(g, myth, opts, r_no)
            drawn[tid], tasks[tid] = d, task
    made = rnd.stage(GENERATE, tasks, opts.retries)
    pending: list[Pending] = []
    for g in active:
        for myth in batch:
            tid = f"{g.name}|{myth.id}"
            o = made[tid]
            if not o.ok:
                rnd.by_run[g.name].append(Decision(g.name, myth.id, myth.row, r_no, FAILED, reason=o.code, detail=_failure(o)))
                if o.code == "call_error" and not o.permanent:
                    rnd.halted.add(g.name)
                continue
            shown = drawn[tid].questions()
            for k, draft in enumerate(o.value, 1):
                dec = Decision(g.name, myth.id, myth.row, r_no, CANDIDATE, question_id(g.name, myth, k), question=draft.question, correction=draft.correction)
                rnd.by_run[g.name].append(dec)
                problem = checks.check(draft, myth, g.written, shown)
                g.written.add(checks.normalised(draft.question))
                if problem is not None:
                    dec.status, dec.reason, dec.detail = REJECTED, problem.code, problem.detail
                else:
                    pending.append(Pending(dec, g))
    return pending


def _respond(rnd: _Round, pending: Sequence[Pending]) -> list[Pending]:
    """The responder's answer to each pending question; the answered ones go to the verifier."""
    tasks = {p.question_id: Task(p.question_id, messages_for(p.question), None, None, rnd.opts.answer_tokens, _answer, model=p.run.responder) for p in pending}
    answers = rnd.stage(RESPOND, tasks, 0)
    judged: list[Pending] = []
    for p in pending:
        o = answers[p.question_id]
        if not o.ok:
            p.decision.status, p.decision.reason, p.decision.detail = NO_ANSWER, o.code, _failure(o)
            if o.code == "call_error" and not o.permanent:
                rnd.halted.add(p.run.name)
            continue
        p.answer, p.answer_key = o.value, o.keys[-1]
        judged.append(p)
    return judged


def _verify(rnd: _Round, judge: Judge, judged: Sequence[Pending]) -> None:
    """The verifier's score of each answer: -1 (the premise got past it) keeps the question a
    candidate, 0 partial, 1 easy; an unreadable verdict leaves it unscored."""
    params = judge.params()
    scores = rnd.stage(VERIFY, {p.question_id: _verify_task(judge, p, params) for p in judged}, 0)
    for p in judged:
        d = p.decision
        o = scores[p.question_id]
        if not o.ok:
            d.status, d.reason, d.detail = UNSCORED, o.code, _failure(o)
            if o.code == "call_error" and not o.permanent:
                rnd.halted.add(p.run.name)
            continue
        s = o.value
        if s.status != "valid" or s.value is None:
            d.status, d.reason = UNSCORED, "no_verdict"
            d.detail = str((s.detail or {}).get("reason") or "the verifier's reply has no readable verdict")
            continue
        d.score = int(s.value)
        d.verifier_reason = (s.detail or {}).get("reason") or None
        d.status = {-1: CANDIDATE, 0: PARTIAL, 1: EASY}[d.score]


def _grow_pools(rnd: _Round, active: Sequence[GeneratorRun], n_myths: int) -> None:
    """The round's candidates and easy questions join each generator's example pools; a generator
    whose calls failed stops here."""
    r_no = rnd.number
    for g in active:
        mine = [d for d in rnd.by_run[g.name] if d.round == r_no and d.question_id is not None]
        g.pools.add(
            valid=[ValidExample(d.question or "", d.correction or "", d.question_id or "") for d in mine if d.status == CANDIDATE],
            easy=[ValidExample(d.question or "", d.correction or "", d.question_id or "") for d in mine if d.status == EASY],
        )
        g.history.append({"round": r_no, "myths": n_myths, **g.pools.sizes()})
        if g.name in rnd.halted:
            g.active, g.stopped_at = False, r_no
