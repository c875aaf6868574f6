"""Plan -> dedupe -> bounded-concurrency execution -> store.

A plan is a list of units: one clean unit per (model, item, setting, scoring) when the family
asks items clean, and one unit per (model, probe, setting, scoring). The suite's family selects
the probes, renders the messages and gives each unit its scorer; a setting (a named mitigation)
turns the rendered messages into the messages sent. Each unit has a request key = hash(model
identity, messages, decoding parameters); units with the same key share one call, and a key
already stored `ok` is not called again, so re-running a command resumes it.

A setting may make a call before the answer (a pre-call: a monitor model's note, see
mitigations.monitor): `setting.precall(messages, spec)` gives that call and `setting.with_note(messages,
text)` the messages the answer is sent once its reply is stored. The unit's key is still known at
plan time: hash(the answer's request key over the setting's messages, the pre-call's key, the
setting's marker); the answer is stored under it with the messages actually sent, and the unit is
linked to its pre-call in the store (role, key), so the setting's cost counts both. `execute` runs
the pre-calls first (deduplicated, cached and resumed by key, never scored), then the answers of the
units whose pre-call is stored ok; a unit whose pre-call failed is not answered (counted as not run;
the frame shows it missing) and a rerun retries it.

A setting may obtain the answer through an agent (`setting.agent`, mitigations.agent): its units
are run as conversations of stored steps (mitigations.agent_run) before the other answers, under a
key naming the answer's request key, the agent's marker and its protocol; their judges run after,
on the stored final answers, like any other.

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
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from . import followups, mitigations
from .answer_format import SCHEMA, check_answer_format, declared_formats, resolve_formats, schema_params, schema_scorer_of
from .call_order import in_rounds
from .calls import CallRequest, ProgressFn, RunStats, add_stats, request_key, run_calls, takes_waits
from .errors import ConfigError
from .family import Family, family_of
from .fileio import env_number
from .mitigations import Setting
from .mitigations.agent_run import run_agents
from .models.openai_compatible import OpenAICompatibleModel
from .models.serving import serving
from .models.spec import ModelSpec
from .records import CLEAN, Item, Probe
from .scoring.extract import Extractor, ExtractScorer, check_extractor, is_extracting, run_extraction
from .scoring.judge import run_deferred
from .scoring.mcq import LetterScorer, mcq_params
from .scoring.schema_answer import SchemaScorer
from .scoring.types import Scorer, is_deferred
from .seeding import sample_order, stable_hash
from .store import Store, UnitRow
from .suite import Suite

__all__ = [
    "CallRequest",
    "EvalOptions",
    "Planned",
    "PlannedPreCall",
    "ProgressFn",
    "RunStats",
    "check_answer_units",
    "check_extract",
    "check_options",
    "chunk_size",
    "execute",
    "is_deferred",
    "plan",
    "request_key",
    "run_calls",
    "run_items",
    "select_units",
    "setting_models",
    "unit_chunks",
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


@dataclass(frozen=True)
class EvalOptions:
    """What a run plans. `family` holds the suite family's own options (a mapping validated by
    the family, or its options model); `conditions` None means clean plus every condition."""

    settings: tuple[str, ...] = (mitigations.NONE,)
    scoring: str = "letter"
    limit: int | None = None
    sample_seed: int | None = None  # items in this seed's random order before the limit (seeding.sample_order)
    conditions: tuple[str, ...] | None = None
    family: Mapping[str, Any] | BaseModel | None = None
    epochs: int = 1
    extract: ModelSpec | None = None  # the extraction model for replies the rules leave unread (-O extract=SPEC)
    answer_format: str = "prompt"  # prompt, or schema: a response_format JSON answer where the model takes one (answer_format)

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ConfigError("--epochs", f"at least one epoch is needed, not {self.epochs}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit", f"the number of items must be at least 1, not {self.limit}")
        if not self.settings:
            raise ConfigError("--setting", "at least one setting is needed (none for no mitigation)")
        if len(set(self.settings)) != len(self.settings):
            raise ConfigError("--setting", f"a setting is named twice: {', '.join(self.settings)}")


@dataclass
class PlannedPreCall:
    """The call a unit's setting makes before its answer: its key, model (spec and label),
    messages and parameters, role; `with_note(messages, text)` makes the answer's messages."""

    role: str
    key: str
    spec: ModelSpec
    messages: list[dict[str, str]]
    params: dict[str, Any]
    with_note: Any  # Callable[[messages, str], messages]


@dataclass
class Planned:
    unit: UnitRow
    messages: list[dict[str, str]]  # with a pre-call: the messages before its note is added
    params: dict[str, Any]
    score: Scorer | Any  # a direct Scorer, or a deferred one (scoring.judge)
    pre: PlannedPreCall | None = None
    follow: followups.FollowUp | None = None  # a second turn: its messages and key wait for the earlier reply
    agent: Any = None  # the setting's AgentConfig when an agent obtains the answer (mitigations.agent)
    item: Item | None = None  # the unit's item (an agent keeps its answer key out of what it finds)


def _precall_of(setting: Setting) -> Any:
    """The setting's pre-call maker (None: it makes no call before the answer)."""
    return getattr(setting, "precall", None)


def setting_models(settings: Iterable[str]) -> list[ModelSpec]:
    """The models the named settings call besides the answering ones (a monitor:SPEC's), one per
    label, in order: they are served and checked with the run."""
    out: dict[str, ModelSpec] = {}
    for name in settings:
        for spec in getattr(mitigations.get(name), "models", ()):
            known = out.setdefault(spec.label, spec)
            if known.identity() != spec.identity():
                raise ConfigError("--setting", f"two settings call different models labelled {spec.label}; give one another label=")
    return list(out.values())


def select_units(suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions) -> list[tuple[Item, Probe | None]]:
    """(item, None) for clean, then (item, probe) for each selected probe, item by item: the
    suite's order, or the sample seed's random order; the first `limit` items of it."""
    return [pair for chunk in unit_chunks(suite, family, family_options, opts) for pair in chunk]


def run_items(suite: Suite, opts: EvalOptions) -> list[str]:
    """The ids of the items a run plans, in its order: the suite's, or the sample seed's random
    order; the first `limit` of it."""
    ids = suite.item_ids()
    if opts.sample_seed is not None:
        ids = sample_order(ids, opts.sample_seed)
    if opts.limit is not None:
        ids = ids[: opts.limit]
    return ids


def unit_chunks(
    suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions, records: int | None = None
) -> Iterator[list[tuple[Item, Probe | None]]]:
    """`select_units` in pieces of whole items, about `records` items and probes a piece (None:
    one piece), each read from the suite when it is reached (`Suite.batches`): a lazily loaded
    suite is held one piece at a time. The family's `select` is applied to each piece's probes
    (a selection is a filter of probes)."""
    for _, pairs in _chunks(suite, family, family_options, opts, records):
        yield pairs


def _chunks(
    suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions, records: int | None, first: int | None = None
) -> Iterator[tuple[int, list[tuple[Item, Probe | None]]]]:
    """(records read, pairs) of each piece of `unit_chunks`; `first`: the items of the first piece
    at most (the others are of about `records` records)."""
    ids = run_items(suite, opts)
    wanted = None if opts.conditions is None else set(opts.conditions)
    clean = family.clean and (wanted is None or CLEAN in wanted)
    size = records or len(ids) + 1
    head = len(ids) if first is None else min(first, len(ids))
    parts = itertools.chain(suite.batches(ids[:head], size), suite.batches(ids[head:], size) if head < len(ids) else ())
    for part in parts:
        by_item: dict[str, list[Probe]] = {}
        for p in family.select(part, family_options):
            if wanted is None or p.condition in wanted:
                by_item.setdefault(p.item_id, []).append(p)
        out: list[tuple[Item, Probe | None]] = []
        for it in part.items.values():
            # a probe whose turn follows the item asked clean brings the clean unit along
            if clean or any(family.follows(p) == CLEAN for p in by_item.get(it.id, [])):
                out.append((it, None))
            out += [(it, p) for p in by_item.get(it.id, [])]
        yield len(part.items) + len(part.probes), out


def check_options(family: Family, opts: EvalOptions, specs: Iterable[ModelSpec] = ()) -> BaseModel:
    """The family's options, after checking the scoring and settings, and that each model takes
    what the scoring needs (log-probabilities) (ConfigError otherwise)."""
    fopts = family.parse_options(opts.family)
    if opts.scoring not in family.scorings:
        raise ConfigError("--scoring", f"family {family.name} scores by {', '.join(family.scorings)}, not {opts.scoring}")
    for n in opts.settings:
        mitigations.get(n)
    specs = list(specs)
    answering = {s.label: s for s in specs}
    for m in setting_models(opts.settings):
        other = answering.get(m.label)
        if other is not None and other.identity() != m.identity():
            raise ConfigError("--setting", f"the model {m.label} a setting calls is not the answering model of that label; give it another label=")
    check_answer_format(family, opts, [mitigations.get(n) for n in opts.settings])
    if opts.extract is not None:
        if opts.scoring != "letter":
            raise ConfigError("-O extract", f"the extraction model reads generated replies: it needs --scoring letter, not {opts.scoring}")
        check_extractor(opts.extract, specs)
    if opts.epochs > 1:
        if not family.epochs:
            raise ConfigError("--epochs", f"family {family.name} pairs single answers; it reads no repeats (use --epochs 1)")
        for spec in specs:
            if spec.supports("temperature") and spec.temperature == 0:
                raise ConfigError(
                    f"--model {spec.label}",
                    "temperature 0 decodes greedily, so every epoch would give the same answer: give the model a sampling temperature (e.g. temperature=0.7)",
                )
    if {**family.decoding(fopts), **mcq_params(opts.scoring)}.get("logprobs"):
        for spec in specs:
            if not spec.supports("logprobs"):
                raise ConfigError(
                    f"--model {spec.label}", f"{spec.why_not('logprobs')}: --scoring {opts.scoring} needs log-probabilities (use --scoring letter)"
                )
    return fopts


def check_extract(suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions) -> None:
    """With an extraction model, the suite's replies must be read as option letters (a family or
    mode that judges its replies takes none): ConfigError otherwise, before anything is written."""
    if opts.extract is None:
        return
    for item, probe in select_units(suite, family, family_options, dataclasses.replace(opts, limit=1))[:1]:
        _with_extractor(family.scorer(item, probe, opts.scoring, family_options), item, Extractor(opts.extract), opts.scoring, family)


def check_answer_units(suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions) -> None:
    """With the schema answer format, the suite's replies must be read as option letters (a family
    or mode that judges its replies takes no schema): ConfigError otherwise, before anything is written."""
    if opts.answer_format != SCHEMA:
        return
    for item, probe in select_units(suite, family, family_options, dataclasses.replace(opts, limit=1))[:1]:
        schema_scorer_of(family.scorer(item, probe, opts.scoring, family_options), family)


def _with_extractor(scorer: Scorer | Any, item: Item, extractor: Extractor | None, scoring: str, family: Family) -> Scorer | Any:
    """The unit's scorer, read with the extraction model where the run has one."""
    if extractor is None:
        return scorer
    if not isinstance(scorer, LetterScorer):
        raise ConfigError(
            "-O extract",
            f"family {family.name} does not read option letters from these replies (they are judged): "
            "an extraction model reads multiple-choice letter answers only",
        )
    return ExtractScorer(scorer, extractor, scoring, item.options)


def plan(suite: Suite, specs: Iterable[ModelSpec], opts: EvalOptions) -> list[Planned]:
    """Every unit of a run at once (`execute_plan` plans and runs in chunks)."""
    family = family_of([suite.manifest.family])
    specs = list(specs)
    fopts = check_options(family, opts, specs)
    return _plan_pairs(select_units(suite, family, fopts, opts), family, fopts, specs, opts)


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
    agents = [p for p in planned if p.agent is not None]
    if agents:  # their answers come from the agent's steps (mitigations.agent_run)
        part = await run_agents(agents, specs, store, clients, halted, show)
        offset[0] += part.called  # the answers' progress counts on from the agents' steps
        stats = add_stats(stats, part)
    skipped: dict[str, set[str]] = {}  # setting -> answer keys held back
    roles: set[str] = set()

    def requests() -> Iterable[CallRequest]:
        for p in planned:
            if p.agent is not None:
                continue
            messages = p.messages
            if p.pre is not None and p.unit.key not in answered:
                note = notes.get(p.pre.key)
                if note is None:  # its pre-call failed (or was not run): not answered, retried on a rerun
                    skipped.setdefault(p.unit.setting, set()).add(p.unit.key)
                    roles.add(p.pre.role)
                    continue
                messages = p.pre.with_note(p.messages, note)
            yield CallRequest(p.unit.model, p.unit.key, messages, p.params, None if is_deferred(p.score) else p.score, p.unit.scoring)

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
    """Plan and run a suite in chunks of about `chunk_units` units: each chunk is planned, recorded,
    deduplicated against the store and run before the next is planned, so memory stays flat as
    the suite grows (a lazily loaded suite is checked once and read from disk a chunk of items at
    a time: `Suite.batches`) and a resume with nothing to do costs one key lookup per unit. The
    results are the same as `execute(plan(...))`: a chunk boundary only decides when a call is
    made, never which. `helpers`: live endpoints of the models the settings call
    (`setting_models`), served by the caller for the whole run. `chunk_units` None:
    `chunk_size()`."""
    if chunk_units is None:
        chunk_units = chunk_size()
    specs = list(specs)
    helpers = list(helpers)
    family = family_of([suite.manifest.family])
    fopts = check_options(family, opts, specs)
    per_pair = max(1, len(specs) * len(opts.settings) * opts.epochs)
    step = max(1, chunk_units // per_pair)
    total = RunStats()
    records_left = suite.records_of(run_items(suite, opts))  # items and probes before the family's selection
    records_done = units_done = done_before = 0

    with_waits = progress is not None and takes_waits(progress)
    waits_before = 0
    halted: set[str] = set()

    def units_left() -> int:
        """The units not yet planned, estimated from the share of records the chunks so far made units."""
        share = units_done / records_done if records_done else per_pair
        return round(records_left * share)

    def chunk_progress(done: int, todo: int, waits: int = 0) -> None:
        if progress is None:
            return
        shown = (done_before + done, done_before + todo + units_left())
        if with_waits:
            progress(*shown, waits=waits_before + waits)  # type: ignore[call-arg]
        else:
            progress(*shown)

    # the first chunk is small, so the calls start at once; every next chunk is planned in a thread
    # while the calls of the one before it run (at most two chunks planned at a time)
    chunks = _chunks(suite, family, fopts, opts, step, first=max(1, FIRST_CHUNK_ITEMS // per_pair))
    # the format each model's answers are asked in (a probe per model that may take the schema)
    formats = await resolve_formats(specs, opts.answer_format, store, total, clients)

    def plan_next() -> tuple[int, list[Planned]] | None:
        got = next(chunks, None)
        return None if got is None else (got[0], _plan_pairs(got[1], family, fopts, specs, opts, formats))

    ahead = plan_next()
    while ahead is not None:
        records, planned = ahead
        records_left -= records
        records_done += records
        units_done += len(planned)
        running = asyncio.ensure_future(execute(planned, specs, store, chunk_progress, clients, halted, helpers))
        planning = asyncio.ensure_future(asyncio.to_thread(plan_next))
        try:
            part = await running
        except BaseException:
            planning.add_done_callback(_retrieved)  # the calls failed: the next chunk is not run
            raise
        ahead = await planning  # a bad record of the next chunk fails once this chunk's calls are stored
        waits_before += part.retry_waits
        done_before += part.called
        total = add_stats(total, part)
        del planned
    if progress is not None:
        progress(done_before, done_before)
    return total


def _retrieved(future: asyncio.Future) -> None:
    """A planning given up on: its result or error is dropped (not reported as never retrieved)."""
    if not future.cancelled():
        future.exception()


def epoch_spec(spec: ModelSpec, epoch: int) -> ModelSpec:
    """The model as epoch `epoch` calls it: its decoding seed moved on by the epoch."""
    return spec if epoch == 0 else spec.model_copy(update={"seed": (spec.seed or 0) + epoch})


def epoch_decoding(specs: Iterable[ModelSpec], epochs: int) -> dict[str, list[dict[str, Any]]]:
    """model label -> the seed and temperature of each epoch, as recorded with a run."""
    return {s.label: [{"epoch": e, "seed": epoch_spec(s, e).seed, "temperature": s.temperature} for e in range(epochs)] for s in specs}


def _plan_pairs(
    pairs: list[tuple[Item, Probe | None]],
    family: Family,
    fopts: BaseModel,
    specs: list[ModelSpec],
    opts: EvalOptions,
    formats: Mapping[str, str] | None = None,
) -> list[Planned]:
    """The units of some (item, probe-or-clean) pairs, for every model and setting (as `plan`); a
    probe that follows an earlier unit of its item is planned as a follow-up of it (`followups`).
    `formats`: model label -> the format its answers are asked in (`answer_format`): a schema
    answer's request carries the item's response_format (so its key differs from the prompt
    format's) and is read from its answer field; None: as the provider table declares them."""
    if formats is None:
        formats = declared_formats(specs, opts.answer_format)
    settings = [mitigations.get(n) for n in opts.settings]
    rendered = [(item, probe, family.render(item, probe, opts.scoring, fopts)) for item, probe in pairs]
    after = {id(probe): family.follows(probe) for _, probe, _ in rendered if probe is not None}
    overrides = {**family.decoding(fopts), **mcq_params(opts.scoring)}  # the scoring's needs win (logprob: 1 token)
    extractor = None if opts.extract is None else Extractor(opts.extract)
    out: list[Planned] = []
    for spec, epoch in ((s, e) for s in specs for e in range(opts.epochs)):
        params = epoch_spec(spec, epoch).decoding(**overrides)
        schema = formats.get(spec.label) == SCHEMA

        def item_params(item: Item, params: dict[str, Any] = params, schema: bool = schema) -> dict[str, Any]:
            return schema_params(params, item.letters) if schema else params

        for setting in settings:
            precall = _precall_of(setting)
            if any(after.values()):
                followups.check_setting(setting, family.name)
            earlier: dict[tuple[str, str], Planned] = {}  # (item id, condition) -> its unit, for the follow-ups
            later: list[tuple[Item, Probe, list[dict[str, str]], str]] = []
            agent = getattr(setting, "agent", None)
            if agent is not None and params.get("logprobs"):
                raise ConfigError(f"--setting {setting.name}", "the agent answers in text after its steps: score it with --scoring letter")
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
                    c = precall(messages, spec)
                    pre = PlannedPreCall(c.role, request_key(c.spec, c.messages, c.params), c.spec, c.messages, c.params, setting.with_note)  # type: ignore[attr-defined]  # a pre-call setting has both
                    # the answer's messages depend on the pre-call's stored reply: the unit's key names both
                    key = stable_hash({"answer": key, c.role: pre.key, "marker": getattr(setting, "marker", "")})
                if agent is not None:  # the answer comes from the agent's steps: the key names the agent and its protocol
                    key = stable_hash({"answer": key, "agent": agent.marker, "protocol": agent.protocol_for(spec)})
                unit = _unit(family, fopts, opts, extractor, spec, epoch, setting.name, item, probe, key, schema)
                earlier[(item.id, cond)] = planned = Planned(unit.row, messages, sent, unit.scorer, pre, agent=agent, item=item if agent is not None else None)
                out.append(planned)
            for item, probe, turn, cond in later:
                first = earlier.get((item.id, cond))
                if first is None:
                    raise ConfigError(
                        "--conditions", f"probe {probe.id} ({probe.condition}) follows the {cond} unit of item {item.id}: plan that condition too"
                    )
                follow = followups.FollowUp(first.unit.key, rendered_of(rendered, item, cond), turn, item, setting, spec, epoch)
                sent = item_params(item)
                unit = _unit(family, fopts, opts, extractor, spec, epoch, setting.name, item, probe, follow.placeholder_key(sent), schema)
                out.append(Planned(unit.row, turn, sent, unit.scorer, None, follow))
    return out


def rendered_of(rendered: list[tuple[Item, Probe | None, list[dict[str, str]]]], item: Item, cond: str) -> list[dict[str, str]]:
    """The rendered messages (before any setting) of an item's unit of that condition."""
    return next(m for it, p, m in rendered if it is item and (CLEAN if p is None else p.condition) == cond)


@dataclass
class _Unit:
    row: UnitRow
    scorer: Scorer | Any


def _unit(
    family: Family,
    fopts: BaseModel,
    opts: EvalOptions,
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
    cond = CLEAN if probe is None else probe.condition
    base = item.id if probe is None else probe.id
    scorer = family.scorer(item, probe, opts.scoring, fopts)
    if schema:
        schema_scorer_of(scorer, family)
        scorer = SchemaScorer(item)
    scorer = _with_extractor(scorer, item, extractor, opts.scoring, family)
    # a judge's name carries its model and rubric hash: another judge makes other units
    scoring = scorer.name if is_deferred(scorer) else opts.scoring
    unit_id = f"{base}|{cond}|{setting}|{scoring}" + (f"|e{epoch}" if epoch else "")
    return _Unit(UnitRow(spec.label, unit_id, item.id, None if probe is None else probe.id, cond, setting, scoring, key, epoch), scorer)
