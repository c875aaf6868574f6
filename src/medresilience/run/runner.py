"""Plan -> dedupe -> bounded-concurrency execution -> store.

A plan is a list of units: one clean unit per (model, item, setting, scoring) when the family
asks items clean, and one unit per (model, probe, setting, scoring). The suite's family selects
the probes, renders the messages and gives each unit its scorer; a setting (a named mitigation)
turns the rendered messages into the messages sent. Each unit has a request key = hash(model
identity, messages, decoding parameters); units with the same key share one call, and a key
already stored `ok` is not called again, so re-running a command resumes it.

The runner takes a resolved run (`resolved.ResolvedRun`: the suite, its family and parsed options,
the settings and the models, looked up and checked once) and looks nothing up by name. What a
setting does besides changing the messages is declared in its type (`mitigations.setting.Setting`):

- a pre-call (`setting.precall`, a monitor model's note, see mitigations.monitor): `precall.make(messages,
  spec)` gives the call made before the answer and `precall.with_note(messages, text)` the messages
  the answer is sent once its reply is stored. The unit's key is still known at plan time: hash(the
  answer's request key over the setting's messages, the pre-call's key, the setting's marker); the
  answer is stored under it with the messages actually sent, and the unit is linked to its pre-call
  in the store (role, key), so the setting's cost counts both. `execute` runs the pre-calls first
  (deduplicated, cached and resumed by key, never scored), then the answers of the units whose
  pre-call is stored ok; a unit whose pre-call failed is not answered (counted as not run; the frame
  shows it missing) and a rerun retries it.
- an answer loop (`setting.agent`, an `AnswerLoop`: a search agent's steps, mitigations.agent; or the
  family's, `family.evaluation.loop`, for its probe units: an adaptive attack's turns): the
  setting (or family) obtains the answer itself. Its units are keyed by `loop.unit_key(answer key, model)` and
  handed to `loop.run(...)` before the other answers, which stores every call it makes and each
  unit's final answer under the unit's key; their judges run after, on the stored final answers,
  like any other.

Epochs (`EvalOptions.epochs`, for a family that reads repeats): every unit is planned once per
epoch, epoch e decoding with seed (the model's seed) + e, so that each epoch is another sample of
the same sampling temperature; epoch 0 is the unit of a one-epoch run (same id, same key), and
epoch e > 0 adds `|e<e>` to the unit id. For a model that takes no seed the epochs send the same
request, each stored under its own key (the request key with the epoch), so each is its own call.
A model that decodes at temperature 0 would repeat one answer: more than one epoch is refused for it.

A scorer that needs a call of its own (a judge) is deferred: once the answers are stored, its
requests are built from the stored replies and run through the same path. So is the letter reading
of a run with an extraction model (`EvalOptions.extract`, scoring.extract): the rules read every
stored reply, and the extraction model is called for the ones they leave unread."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..calls import CallRequest, ProgressFn, RunStats, add_stats, batching, request_key, run_calls, takes_waits
from ..mitigations.setting import AnswerLoop, Messages, PreCallStep
from ..models.openai_compatible import OpenAICompatibleModel
from ..models.serving import serving
from ..models.spec import ModelSpec
from ..records import CLEAN, Item, Probe
from ..runtime.errors import ConfigError
from ..runtime.fileio import env_number
from ..runtime.jsontypes import JSONObject
from ..runtime.seeding import stable_hash
from ..score import AnyScorer, DeferredScorer, is_deferred
from ..scoring.extract import Extractor, is_extracting, run_extraction
from ..scoring.judge import run_deferred
from ..scoring.mcq import mcq_params
from ..scoring.schema_answer import SchemaScorer
from ..store import Store, UnitRow
from ..suite import Suite
from . import followups
from .answer_format import SCHEMA, declared_formats, resolve_formats, schema_params, schema_scorer_of
from .call_order import in_rounds
from .resolved import EvalOptions, ResolvedRun, check_answer_units, check_extract, check_options, resolve_run, setting_models, with_extractor
from .selection import pieces, run_items, select_units, unit_chunks
from .stopping import LOOK_MIN_ITEMS, Stopping

__all__ = [
    "CallRequest",
    "EvalOptions",
    "Planned",
    "PlannedPreCall",
    "ProgressFn",
    "ResolvedRun",
    "RunStats",
    "check_answer_units",
    "check_extract",
    "check_options",
    "chunk_size",
    "execute",
    "execute_plan",
    "execute_run",
    "is_deferred",
    "plan",
    "plan_run",
    "request_key",
    "resolve_run",
    "run_calls",
    "run_items",
    "select_units",
    "setting_models",
    "unit_chunks",
    "with_extractor",
]


#: The default of MEDRES_CHUNK_UNITS: about how many units `execute_plan` plans and runs at a time.
CHUNK_UNITS = 20_000
#: the items of a run's first chunk at most (divided among its models, settings and epochs): planned
#: alone, so that the calls start at once
FIRST_CHUNK_ITEMS = 64


def chunk_size() -> int:
    """About how many units a run plans and runs at a time: MEDRES_CHUNK_UNITS, default CHUNK_UNITS
    (ConfigError naming the variable when it is not a positive whole number)."""
    return int(env_number("MEDRES_CHUNK_UNITS", CHUNK_UNITS, integer=True))


@dataclass
class PlannedPreCall:
    """The call a unit's setting makes before its answer: its key, model (spec and label),
    messages and parameters, role; `step.with_note(messages, text)` makes the answer's messages."""

    role: str
    key: str
    spec: ModelSpec
    messages: Messages
    params: dict[str, Any]
    step: PreCallStep


@dataclass
class Planned:
    unit: UnitRow
    messages: Messages  # with a pre-call: the messages before its note is added
    params: dict[str, Any]
    score: AnyScorer  # a direct Scorer, or a deferred one (scoring.judge, scoring.extract)
    pre: PlannedPreCall | None = None
    follow: followups.FollowUp | None = None  # a second turn: its messages and key wait for the earlier reply
    loop: AnswerLoop | None = None  # the setting's answer loop when it obtains the answer itself (an agent's steps)
    item: Item | None = None  # the unit's item (an answer loop keeps its answer key out of what it finds)
    probe: Probe | None = None  # the unit's probe, given to an answer loop (a family's probe loop reads what it stresses)


def plan(suite: Suite | ResolvedRun, specs: Iterable[ModelSpec] = (), opts: EvalOptions = EvalOptions()) -> list[Planned]:
    """Every unit of a run at once (`execute_plan` plans and runs in chunks): of a resolved run,
    or of `suite` on `specs` with `opts` (resolved here, keys unchecked: planning calls nothing)."""
    run = suite if isinstance(suite, ResolvedRun) else resolve_run(suite, specs, opts, check_keys=False)
    return plan_run(run)


def plan_run(run: ResolvedRun) -> list[Planned]:
    """Every unit of a resolved run at once."""
    return _plan_pairs(select_units(run.suite, run.family, run.family_options, run.options), run)


async def execute(
    planned: list[Planned],
    specs: Iterable[ModelSpec],
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    halted: set[str] | None = None,
    helpers: Iterable[ModelSpec] = (),
) -> RunStats:
    """Record the plan's units (and their links to pre-calls); run the pre-calls of the units not
    yet answered; run every unique, unfinished answer call whose note is there and score it; then
    run the deferred scorers (judges) on the stored replies. `halted`: models stopped earlier in the
    run. `helpers`: live endpoints of the models settings call (by label); one not given is served
    here for the pre-calls. Follow-ups (second turns, `followups`) are run the same way once the
    units they follow are: those whose earlier reply is stored ok, under the key of the messages
    they send; the others stay planned under their placeholder key, counted as not run."""
    specs = list(specs)
    first = [p for p in planned if p.follow is None]
    later = [p for p in planned if p.follow is not None]
    show, offset = _staged(progress)  # the second turns count on from the first
    stats = await _execute_units(first, specs, store, show, clients, halted, helpers)
    if later:
        ready, waiting = followups.resolve(later, store)
        store.add_plan([p.unit for p in waiting], [])
        if ready:
            offset[0] = stats.called
            part = await _execute_units(ready, specs, store, show, clients, halted, helpers)
            stats = add_stats(stats, dataclasses.replace(part, planned_units=0))
        stats.planned_units += len(later)
        if waiting:
            stats.not_run += len(waiting)
            stats.stopped.append(
                f"{len(waiting)} second-turn calls were not made: the earlier turn each continues has no stored reply "
                "(its call failed or was not sent; not scored); rerun to retry them"
            )
    return stats


async def _execute_units(
    planned: list[Planned],
    specs: list[ModelSpec],
    store: Store,
    progress: ProgressFn | None,
    clients: dict[str, OpenAICompatibleModel] | None,
    halted: set[str] | None,
    helpers: Iterable[ModelSpec],
) -> RunStats:
    """`execute` of units that follow no other."""
    stats = RunStats(planned_units=len(planned))
    links = [(p.unit.model, p.unit.unit_id, p.pre.key, p.pre.role) for p in planned if p.pre is not None]
    store.add_plan([p.unit for p in planned], [], links)
    show, offset = _staged(progress)
    notes: dict[str, str] = {}
    answered: set[str] = set()
    if links:
        answered = store.finished_keys({p.unit.key for p in planned if p.pre is not None})
        waiting = [p for p in planned if p.pre is not None and p.unit.key not in answered]
        if waiting:
            part = await _run_precalls(waiting, specs, list(helpers), store, show, clients, halted)
            offset[0] = part.called
            stats = add_stats(stats, part)
            notes = store.ok_texts({p.pre.key for p in waiting if p.pre is not None})
    for loop, units in _by_loop(planned):  # their answers come from the loop's own calls (an agent's steps)
        part = await loop.run(units, specs, store, clients, halted, show)
        offset[0] += part.called  # the answers' progress counts on from the loop's calls
        stats = add_stats(stats, part)
    skipped: dict[str, set[str]] = {}  # setting -> answer keys held back
    roles: set[str] = set()

    def requests() -> Iterable[CallRequest]:
        for p in planned:
            if p.loop is not None:
                continue
            messages = p.messages
            if p.pre is not None and p.unit.key not in answered:
                note = notes.get(p.pre.key)
                if note is None:  # its pre-call failed (or was not run): not answered, retried on a rerun
                    skipped.setdefault(p.unit.setting, set()).add(p.unit.key)
                    roles.add(p.pre.role)
                    continue
                messages = p.pre.step.with_note(p.messages, note)
            yield CallRequest(p.unit.model, p.unit.key, messages, p.params, None if isinstance(p.score, DeferredScorer) else p.score, p.unit.scoring)

    part = await run_calls(requests(), specs, store, show, clients, RunStats(), halted=halted)
    stats = add_stats(stats, part)
    if skipped:
        n = sum(len(k) for k in skipped.values())
        stats.not_run += n
        stats.stopped.append(
            f"{n} answer calls under setting {', '.join(sorted(skipped))} were not made: the {'/'.join(sorted(roles))} "
            "call before each failed (stored as an error, not scored); rerun to retry them"
        )
    judged = [p for p in planned if is_deferred(p.score) and not is_extracting(p.score)]
    if judged:
        stats = await run_deferred(judged, specs, store, progress, clients, stats)
    extracted = [p for p in planned if is_extracting(p.score)]
    if extracted:
        stats = await run_extraction(extracted, store, progress, clients, stats)
    return stats


def _by_loop(planned: list[Planned]) -> list[tuple[AnswerLoop, list[Planned]]]:
    """The units whose setting obtains the answer itself, by answer loop, in plan order."""
    out: dict[int, tuple[AnswerLoop, list[Planned]]] = {}
    for p in planned:
        if p.loop is not None:
            out.setdefault(id(p.loop), (p.loop, []))[1].append(p)
    return list(out.values())


def _staged(progress: ProgressFn | None) -> tuple[ProgressFn | None, list[int]]:
    """A progress callback that counts on from the calls of an earlier stage (`offset[0]`), so the
    pre-calls and the answers of one chunk show as one count."""
    if progress is None:
        return None, [0]
    offset = [0]
    with_waits = takes_waits(progress)

    def show(done: int, todo: int, waits: int = 0) -> None:
        if with_waits:
            progress(offset[0] + done, offset[0] + todo, waits=waits)  # type: ignore[call-arg]
        else:
            progress(offset[0] + done, offset[0] + todo)

    return show, offset


async def _run_precalls(
    waiting: list[Planned],
    specs: list[ModelSpec],
    helpers: list[ModelSpec],
    store: Store,
    progress: ProgressFn | None,
    clients: dict[str, OpenAICompatibleModel] | None,
    halted: set[str] | None,
) -> RunStats:
    """The pre-calls of units not yet answered, through run_calls (deduplicated, cached, resumed
    by key; no score). A model they need that is neither answering nor given live is served here."""
    known = {s.label: s for s in [*helpers, *specs]}
    needed: dict[str, ModelSpec] = {}
    for p in waiting:
        assert p.pre is not None
        needed.setdefault(p.pre.spec.label, p.pre.spec)
    missing = [s for label, s in needed.items() if label not in known]
    reqs = (CallRequest(p.pre.spec.label, p.pre.key, p.pre.messages, p.pre.params) for p in waiting if p.pre is not None)
    with serving(missing) as live:
        return await run_calls(reqs, [*known.values(), *live], store, progress, clients, RunStats(), halted=halted)


async def execute_plan(
    suite: Suite,
    specs: Iterable[ModelSpec],
    opts: EvalOptions,
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    chunk_units: int | None = None,
    helpers: Iterable[ModelSpec] = (),
) -> RunStats:
    """`execute_run` of `suite` on `specs` (live endpoints) with `opts`, resolved here (keys
    unchecked, as a client checks its own). `helpers`: live endpoints of the models the settings
    call (`setting_models`); one not given is served for its calls."""
    run = resolve_run(suite, specs, opts, check_keys=False)
    run = dataclasses.replace(run, setting_models=tuple(helpers))
    return await execute_run(run, store, progress, clients, chunk_units)


async def execute_run(
    run: ResolvedRun,
    store: Store,
    progress: ProgressFn | None = None,
    clients: dict[str, OpenAICompatibleModel] | None = None,
    chunk_units: int | None = None,
    stopping: Stopping | None = None,
) -> RunStats:
    """Plan and run a resolved run in chunks of about `chunk_units` units: each chunk is planned,
    recorded, deduplicated against the store and run before the next is planned, so memory stays
    flat as the suite grows (a lazily loaded suite is checked once and read from disk a chunk of
    items at a time: `Suite.batches`) and a resume with nothing to do costs one key lookup per
    unit. The results are the same as `execute(plan(...))`: a chunk boundary only decides when a
    call is made, never which. The run's models are its live endpoints (`ResolvedRun.served`); a
    setting model not among them is served for its calls. `chunk_units` None: `chunk_size()`.
    `stopping`: the run's stopping rule (`stopping.Stopping`): the chunks are rounds of items (as
    many as the models take calls at once, at least `LOOK_MIN_ITEMS`), the rule is looked at after
    each, and no further chunk is run once it is met."""
    if chunk_units is None:
        chunk_units = chunk_size()
    suite, opts = run.suite, run.options
    specs = list(run.specs)
    helpers = list(run.setting_models)
    per_pair = max(1, len(specs) * len(opts.settings) * opts.epochs)
    step = max(1, chunk_units // per_pair)
    total = RunStats()
    # items and probes before the family's selection
    shown = _ChunkProgress(progress, suite.records_of(run_items(suite, opts)), per_pair, progress is not None and takes_waits(progress))
    halted: set[str] = set()

    # the first chunk is small, so the calls start at once (not in a batch mode: there each chunk's
    # step is one batch, so the chunks are as large as they come); every next chunk is planned in a
    # thread while the calls of the one before it run (at most two chunks planned at a time)
    first: int | None = None if batching() else max(1, FIRST_CHUNK_ITEMS // per_pair)
    if stopping is not None:
        first, step = _rounds(run, shown.records_left)
    chunks = pieces(suite, run.family, run.family_options, opts, step, first=first)
    # the format each model's answers are asked in (a probe per model that may take the schema)
    formats = await resolve_formats(specs, opts.answer_format, store, total, clients)

    def plan_next() -> tuple[int, list[Planned]] | None:
        got = next(chunks, None)
        if got is not None and stopping is not None:
            stopping.add(got[1])
        return None if got is None else (got[0], _plan_pairs(got[1], run, formats))

    ahead = plan_next()
    while ahead is not None:
        records, planned = ahead
        shown.planned(records, len(planned))
        running = asyncio.ensure_future(execute(planned, specs, store, shown, clients, halted, helpers))
        planning = asyncio.ensure_future(asyncio.to_thread(plan_next))
        try:
            part = await running
        except BaseException:
            planning.add_done_callback(_retrieved)  # the calls failed: the next chunk is not run
            raise
        if stopping is not None and stopping.look(store):
            planning.add_done_callback(_retrieved)  # the rule is met: the next round is not run
            ahead = None
        else:
            ahead = await planning  # a bad record of the next chunk fails once this chunk's calls are stored
        shown.ran(part)
        total = add_stats(total, part)
        del planned
    if progress is not None:
        progress(shown.done_before, shown.done_before)
    return total


@dataclass
class _ChunkProgress:
    """A run's progress across its chunks, as `progress` is told it (`execute` calls it with the
    calls of one chunk): the calls done in the chunks before, and the units still to do, those not
    yet planned estimated from the share of records the chunks so far made units (`per_pair` before
    the first). `with_waits`: `progress` takes the retry waits too."""

    progress: ProgressFn | None
    records_left: int
    per_pair: int
    with_waits: bool
    records_done: int = 0
    units_done: int = 0
    done_before: int = 0
    waits_before: int = 0

    def units_left(self) -> int:
        share = self.units_done / self.records_done if self.records_done else self.per_pair
        return round(self.records_left * share)

    def __call__(self, done: int, todo: int, waits: int = 0) -> None:
        if self.progress is None:
            return
        shown = (self.done_before + done, self.done_before + todo + self.units_left())
        if self.with_waits:
            self.progress(*shown, waits=self.waits_before + waits)  # type: ignore[call-arg]
        else:
            self.progress(*shown)

    def planned(self, records: int, units: int) -> None:
        """A chunk of `records` records planned into `units` units."""
        self.records_left -= records
        self.records_done += records
        self.units_done += units

    def ran(self, part: RunStats) -> None:
        """A chunk's calls done."""
        self.waits_before += part.retry_waits
        self.done_before += part.called


def _rounds(run: ResolvedRun, records: int) -> tuple[int, int]:
    """(items, records) of a round of a run with a stopping rule: as many items as its models take
    calls at once (at least LOOK_MIN_ITEMS), and about the records (items and probes) they hold."""
    items = max(LOOK_MIN_ITEMS, *(s.concurrency for s in run.specs))
    total = max(1, len(run_items(run.suite, run.options)))
    return items, max(1, round(items * records / total))


def _retrieved(future: asyncio.Future) -> None:
    """A planning given up on: its result or error is dropped (not reported as never retrieved)."""
    if not future.cancelled():
        future.exception()


def epoch_spec(spec: ModelSpec, epoch: int) -> ModelSpec:
    """The model as epoch `epoch` calls it: its decoding seed moved on by the epoch."""
    return spec if epoch == 0 else spec.model_copy(update={"seed": (spec.seed or 0) + epoch})


def epoch_decoding(specs: Iterable[ModelSpec], epochs: int) -> dict[str, list[JSONObject]]:
    """model label -> the seed and temperature of each epoch, as recorded with a run."""
    return {s.label: [{"epoch": e, "seed": epoch_spec(s, e).seed, "temperature": s.temperature} for e in range(epochs)] for s in specs}


def _plan_pairs(pairs: list[tuple[Item, Probe | None]], run: ResolvedRun, formats: Mapping[str, str] | None = None) -> list[Planned]:
    """The units of some (item, probe-or-clean) pairs, for every model and setting (as `plan`); a
    probe that follows an earlier unit of its item is planned as a follow-up of it (`followups`).
    `formats`: model label -> the format its answers are asked in (`answer_format`): a schema
    answer's request carries the item's response_format (so its key differs from the prompt
    format's) and is read from its answer field; None: as the provider table declares them."""
    family, fopts, opts, specs = run.family, run.family_options, run.options, run.specs
    if formats is None:
        formats = declared_formats(specs, opts.answer_format)
    rendered = [(item, probe, family.evaluation.render(item, probe, opts.scoring, fopts)) for item, probe in pairs]
    after = {id(probe): family.evaluation.follows(probe) for _, probe, _ in rendered if probe is not None}
    overrides = {**family.evaluation.decoding(fopts), **mcq_params(opts.scoring)}  # the scoring's needs win (logprob: 1 token)
    extractor = None if opts.extract is None else Extractor(opts.extract)
    out: list[Planned] = []
    for spec, epoch in ((s, e) for s in specs for e in range(opts.epochs)):
        params = epoch_spec(spec, epoch).decoding(**overrides)
        schema = formats.get(spec.label) == SCHEMA

        def item_params(item: Item, params: dict[str, Any] = params, schema: bool = schema) -> dict[str, Any]:
            return schema_params(params, item.letters) if schema else params

        for setting in run.settings:
            precall, loop = setting.precall, setting.agent
            # a family that answers its probes through a loop of its own (evaluation.loop): its probe units go to that loop
            probe_loop = loop if family.evaluation.loop is None else family.evaluation.loop.answer_loop(fopts, setting)
            if any(after.values()):
                followups.check_setting(setting, family.name)
            earlier: dict[tuple[str, str], Planned] = {}  # (item id, condition) -> its unit, for the follow-ups
            later: list[tuple[Item, Probe, list[dict[str, str]], str]] = []
            for item, probe, messages in in_rounds(rendered, spec.concurrency, lambda r: r[0].id):  # an item's prompts share a prefix
                cond = CLEAN if probe is None else probe.condition
                if probe is not None and after[id(probe)]:
                    later.append((item, probe, messages, after[id(probe)]))  # type: ignore[arg-type]
                    continue
                messages = setting.apply_to(messages, item)  # a setting may need the item (to keep its answer key out)
                sent = item_params(item)
                key = followups.epoch_key(request_key(spec, messages, sent), spec, epoch)
                pre = None
                if precall is not None:
                    c = precall.make(messages, spec)
                    pre = PlannedPreCall(c.role, request_key(c.spec, c.messages, c.params), c.spec, c.messages, c.params, precall)
                    # the answer's messages depend on the pre-call's stored reply: the unit's key names both
                    key = stable_hash({"answer": key, c.role: pre.key, "marker": setting.marker})
                unit_loop = loop if probe is None else probe_loop
                if unit_loop is not None:  # the answer comes from the loop's own calls: the key names the loop (an agent and its protocol)
                    key = unit_loop.unit_key(key, spec)
                unit = _unit(run, extractor, spec, epoch, setting.name, item, probe, key, schema)
                earlier[(item.id, cond)] = planned = Planned(
                    unit.row,
                    messages,
                    sent,
                    unit.scorer,
                    pre,
                    loop=unit_loop,
                    item=item if unit_loop is not None else None,
                    probe=probe if unit_loop is not None else None,
                )
                out.append(planned)
            for item, probe, turn, cond in later:
                first = earlier.get((item.id, cond))
                if first is None:
                    raise ConfigError(
                        "--conditions", f"probe {probe.id} ({probe.condition}) follows the {cond} unit of item {item.id}: plan that condition too"
                    )
                follow = followups.FollowUp(first.unit.key, rendered_of(rendered, item, cond), turn, item, setting, spec, epoch)
                sent = item_params(item)
                unit = _unit(run, extractor, spec, epoch, setting.name, item, probe, follow.placeholder_key(sent), schema)
                out.append(Planned(unit.row, turn, sent, unit.scorer, None, follow))
    return out


def rendered_of(rendered: list[tuple[Item, Probe | None, list[dict[str, str]]]], item: Item, cond: str) -> list[dict[str, str]]:
    """The rendered messages (before any setting) of an item's unit of that condition."""
    return next(m for it, p, m in rendered if it is item and (CLEAN if p is None else p.condition) == cond)


@dataclass
class _Unit:
    row: UnitRow
    scorer: AnyScorer


def _unit(
    run: ResolvedRun,
    extractor: Extractor | None,
    spec: ModelSpec,
    epoch: int,
    setting: str,
    item: Item,
    probe: Probe | None,
    key: str,
    schema: bool = False,
) -> _Unit:
    """A unit's row (its id names the probe or item, condition, setting, scoring and epoch) and
    scorer (`schema`: its answer is asked with the schema and read from its answer field)."""
    family, opts = run.family, run.options
    cond = CLEAN if probe is None else probe.condition
    base = item.id if probe is None else probe.id
    scorer = family.evaluation.scorer(item, probe, opts.scoring, run.family_options)
    if schema:
        schema_scorer_of(scorer, family)
        scorer = SchemaScorer(item)
    scorer = with_extractor(scorer, item, extractor, opts.scoring, family)
    # a judge's name carries its model and rubric hash: another judge makes other units
    scoring = scorer.name if isinstance(scorer, DeferredScorer) else opts.scoring
    unit_id = f"{base}|{cond}|{setting}|{scoring}" + (f"|e{epoch}" if epoch else "")
    return _Unit(UnitRow(spec.label, unit_id, item.id, None if probe is None else probe.id, cond, setting, scoring, key, epoch), scorer)
