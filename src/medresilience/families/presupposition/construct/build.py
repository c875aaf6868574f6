"""Build a false-presupposition suite from myth records (`medres build presupposition`):

    myths -> the adversarial loop per generator (loop.py: generate -> checks -> respond -> verify,
             pools updated between rounds)
          -> candidates (the questions the responder went along with: verifier score -1)
          -> categoriser: one call per candidate (categorise.py)
          -> balancing per generator (balance.py, the study's Algorithm 1; none unless asked)
          -> --verify: a checker reads each selected question and correction (verify.py)
          -> suite directory (items.jsonl, probes.jsonl, suite.json) + build_report.json / .md and
             decisions.jsonl

Every call goes through `calls.run_calls` into `<work dir>/store.sqlite` (default: the suite
directory's sibling `<SUITE_DIR>.build/`), held by one build at a time (lock.RunLock: a second
build on the same work directory stops at once, naming the holder). A killed or repeated build
makes no finished call again: the loop recomputes every decision, pools included, from the stored
replies. The suite is written once, atomically, at the end; with the same myths, options, seed and
stored replies it is the same byte for byte (the manifest's `created` follows SOURCE_DATE_EPOCH
when that is set)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .... import __version__
from ....build.construction import BuildResult, default_work_dir
from ....build.stages import CallSession, StageProgress, StageStats, request_for, run_stage
from ....build.workspace import created_stamp, model_identity, workspace
from ....calls import CallRequest
from ....models.spec import ModelSpec
from ....records import Item, SuiteManifest
from ....runtime.errors import ConfigError
from ....runtime.fileio import sha256_file
from ....scoring.judge import Judge
from ....store import Store
from ....suite import Suite
from ..delivery import MAX_TOKENS, PREMISE_RUBRIC
from ..formats.myths import Myth, read_myths
from ..probe import PresuppositionProbe, probe_id
from ..taxonomy import CATEGORY_KEYS, FAMILY, PRESUPPOSITION, generator_name
from . import categorise, prompts, verify
from .balance import balance
from .loop import CANDIDATE, Decision, GeneratorRun, LoopOptions, drafted, generate_task, run_loop
from .pools import Counts, Pools
from .report import build_report, write_report
from .seeds import Seeds, package_seeds

BUILD_VERSION = "presupposition-build/1"
SOURCE = "cancer-myth-build"
CATEGORISE, CHECK = "categorise", "check"
KEPT, NOT_SELECTED, UNSOUND, UNCHECKED = "kept", "not_selected", "unsound", "unchecked"


@dataclass(frozen=True)
class PresuppositionBuildOptions:
    """questions: M per myth; hard / easy / invalid: the most examples of each kind a prompt shows
    (K_h, K_e, K_i); round_size: myths per round (pools change between rounds only);
    per_generator / per_category: balancing (both None: none); answer_tokens: the responder's reply
    budget; judge_tokens: the verifier's (default: the judge's own)."""

    seed: int = 0
    questions: int = 3
    hard: int = 6
    easy: int = 2
    invalid: int = 4
    round_size: int = 1
    limit: int | None = None
    retries: int = 2
    per_generator: int | None = None
    per_category: int | None = None
    answer_tokens: int = MAX_TOKENS
    judge_tokens: int | None = None
    name: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        for flag, v, low in (
            ("--questions", self.questions, 1),
            ("--hard", self.hard, 0),
            ("--easy", self.easy, 0),
            ("--invalid", self.invalid, 0),
            ("--round-size", self.round_size, 1),
            ("--retries", self.retries, 0),
            ("--answer-tokens", self.answer_tokens, 1),
        ):
            if v < low:
                raise ConfigError(flag, f"must be at least {low}")
        for flag, given in (
            ("--limit", self.limit),
            ("--per-generator", self.per_generator),
            ("--per-category", self.per_category),
            ("--judge-tokens", self.judge_tokens),
        ):
            if given is not None and given < 1:
                raise ConfigError(flag, "must be at least 1")

    @property
    def balancing(self) -> bool:
        return self.per_generator is not None or self.per_category is not None


def prompt_hashes(checked: bool) -> dict[str, str]:
    out = {"generate": prompts.prompt_hash(), "categorise": categorise.prompt_hash(), "verifier_rubric": PREMISE_RUBRIC.hash}
    if checked:
        out["verify"] = verify.prompt_hash()
    return out


def distinct_specs(*groups: Sequence[ModelSpec | None]) -> list[ModelSpec]:
    """One spec per label, in order; two different models under one label are an error."""
    out: dict[str, ModelSpec] = {}
    for group in groups:
        for s in group:
            if s is None:
                continue
            known = out.setdefault(s.label, s)
            if known is not s and known.identity() != s.identity():
                raise ConfigError(f"model {s.label}", "two different models share this label; give one another label=")
    return list(out.values())


def _generator_names(generators: Sequence[ModelSpec]) -> list[str]:
    if not generators:
        raise ConfigError("--generator", "give at least one generator model")
    names = [generator_name(g.label) for g in generators]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError("--generator", f"two generators have the name {n!r}; give one another label=")
    return names


def build_presupposition(
    myths: Sequence[Myth] | Path | str,
    out: Path | str,
    generators: Sequence[ModelSpec],
    verifier: ModelSpec,
    responder: ModelSpec | None = None,
    options: PresuppositionBuildOptions = PresuppositionBuildOptions(),
    categoriser: ModelSpec | None = None,
    checker: ModelSpec | None = None,
    seeds: Seeds | None = None,
    work_dir: Path | str | None = None,
    progress: StageProgress | None = None,
) -> BuildResult:
    """Build (or resume) a false-presupposition suite into `out`. `responder` None: each generator
    answers its own questions (the study); `categoriser` None: the verifier. See the module docstring."""
    t0 = time.perf_counter()
    out = Path(out)
    source_path = Path(myths) if isinstance(myths, (str, Path)) else None
    myth_list = read_myths(Path(myths)) if isinstance(myths, (str, Path)) else list(myths)
    if options.limit is not None:
        myth_list = myth_list[: options.limit]
    ids = [m.id for m in myth_list]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"duplicate myth row {dup!r} in the myths to build from")
    names = _generator_names(generators)
    seeds = seeds or package_seeds()
    categoriser = categoriser or verifier
    specs = distinct_specs(generators, [responder, verifier, categoriser, checker])
    work = Path(work_dir) if work_dir is not None else default_work_dir(out)
    stats: dict[str, StageStats] = {}
    run = {"kind": "build presupposition", "out": str(out), "seed": options.seed, "generators": [g.label for g in generators]}
    with workspace(work, specs, run) as ws, CallSession() as session:  # one build per work directory
        store, live = ws.store, {s.label: s for s in ws.models}
        runs = [
            GeneratorRun(name, live[g.label], live[(responder or g).label], Pools(name, list(seeds.valid), tuple(seeds.invalid)))
            for name, g in zip(names, generators, strict=True)
        ]
        judge = Judge(live[verifier.label], PREMISE_RUBRIC, structured=True, max_tokens=options.judge_tokens)
        loop_opts = LoopOptions(
            options.questions, Counts(options.hard, options.easy, options.invalid), options.round_size, options.seed, options.retries, options.answer_tokens
        )
        decisions = run_loop(store, runs, myth_list, loop_opts, judge, stats, progress, session)
        candidates = [d for d in decisions if d.status == CANDIDATE]
        _categorise(store, live[categoriser.label], candidates, options.retries, stats, progress, session)
        balanced = _balance(runs, candidates, options)
        if checker is not None:
            _check(store, live[checker.label], [d for d in candidates if d.status == CANDIDATE], myth_list, options.retries, stats, progress, session)
    for d in candidates:
        if d.status == CANDIDATE:
            d.status = KEPT
    by_myth = {m.id: m for m in myth_list}
    kept = [d for d in decisions if d.status == KEPT]
    items = [_item(d, by_myth[d.myth_id]) for d in kept]
    probes = [_probe(d) for d in kept]
    counts = {
        "myths": len(myth_list),
        "candidates": len(candidates),
        "kept": len(kept),
        "by_generator": {r.name: sum(1 for d in kept if d.generator == r.name) for r in runs},
    }
    roles = _Roles(generators, responder, verifier, categoriser, checker)
    manifest = _manifest(out, options, counts, roles, [r.name for r in runs], seeds, source_path, len(myth_list))
    suite = Suite(manifest, items, probes)
    suite.save(out)
    report = build_report(suite, decisions, runs, balanced, stats, options, generators, responder, verifier, categoriser, checker, time.perf_counter() - t0)
    write_report(out, report, decisions)
    return BuildResult(out, suite, report, decisions)


def first_requests(
    myths: Sequence[Myth] | Path | str,
    generators: Sequence[ModelSpec],
    options: PresuppositionBuildOptions = PresuppositionBuildOptions(),
    seeds: Seeds | None = None,
) -> dict[str, CallRequest]:
    """The calls of the loop's first stage (each generator's questions on the first round's myths,
    its prompts showing the seed examples), by request key: what a dry run counts. Everything
    after (answers, verdicts, categories, checks, re-asks, later rounds) depends on replies."""
    myth_list = (read_myths(Path(myths)) if isinstance(myths, (str, Path)) else list(myths))[: options.limit]
    seeds = seeds or package_seeds()
    opts = LoopOptions(options.questions, Counts(options.hard, options.easy, options.invalid), options.round_size, options.seed)
    out: dict[str, CallRequest] = {}
    for name, g in zip(_generator_names(generators), generators, strict=True):
        run = GeneratorRun(name, g, g, Pools(name, list(seeds.valid), tuple(seeds.invalid)))
        for myth in myth_list[: options.round_size]:
            _, _, task = generate_task(run, myth, opts, 1)
            r = request_for(g, task)
            out[r.key] = r
    return out


@dataclass(frozen=True)
class _Roles:
    """The models of a build, by what they do (`responder` None: each generator answers its own)."""

    generators: Sequence[ModelSpec]
    responder: ModelSpec | None
    verifier: ModelSpec
    categoriser: ModelSpec
    checker: ModelSpec | None


def _manifest(
    out: Path,
    options: PresuppositionBuildOptions,
    counts: Mapping[str, object],
    roles: _Roles,
    names: Sequence[str],
    seeds: Seeds,
    source_path: Path | None,
    n_myths: int,
) -> SuiteManifest:
    """The suite's manifest: what was built, by which models, from which myths and seeds."""
    source = None if source_path is None else {"path": str(source_path), "sha256": sha256_file(source_path)}
    return SuiteManifest(
        name=options.name or out.name,
        family=FAMILY,
        seed=options.seed,
        created=created_stamp(),
        generator=model_identity(roles.generators[0]) if len(roles.generators) == 1 else {"generators": [model_identity(g) for g in roles.generators]},
        prompt_hashes=prompt_hashes(roles.checker is not None),
        counts=counts,
        description=options.description or f"false-presupposition suite built by medres {__version__} from {n_myths} myths, seed {options.seed}",
        build={
            "tool": "medres build presupposition",
            "version": BUILD_VERSION,
            "medresilience": __version__,
            "generators": {name: model_identity(g) for name, g in zip(names, roles.generators, strict=True)},
            "responder": "same" if roles.responder is None else model_identity(roles.responder),
            "verifier": {**model_identity(roles.verifier), "rubric": PREMISE_RUBRIC.name, "rubric_hash": PREMISE_RUBRIC.hash},
            "categoriser": model_identity(roles.categoriser),
            "checker": None if roles.checker is None else model_identity(roles.checker),
            "questions": options.questions,
            "examples": {"hard": options.hard, "easy": options.easy, "invalid": options.invalid},
            "round_size": options.round_size,
            "retries": options.retries,
            "limit": options.limit,
            "answer_tokens": options.answer_tokens,
            "judge_tokens": options.judge_tokens,
            "balancing": {"per_generator": options.per_generator, "per_category": options.per_category},
            "seeds": {**seeds.sources, "hash": seeds.hash, "valid_count": len(seeds.valid), "invalid_count": len(seeds.invalid)},
        },
        source=source,
    )


def _categorise(
    store: Store, spec: ModelSpec, candidates: list[Decision], retries: int, stats: dict[str, StageStats], progress: StageProgress | None, session: CallSession
) -> None:
    stats[CATEGORISE] = StageStats()
    if not candidates:
        return
    res = run_stage(
        store,
        spec,
        "categorise",
        {d.question_id: categorise.task(d.question_id, d.question or "", d.correction or "") for d in candidates if d.question_id},
        retries,
        progress,
        stats[CATEGORISE],
        session,
    )
    for d in candidates:
        o = res[drafted(d.question_id)]
        if o.ok:
            d.category, d.category_reason = o.value
        else:
            d.category = None
            d.category_reason = f"{categorise.UNCATEGORISED}: {o.code}: {o.detail}"


def _balance(runs: Sequence[GeneratorRun], candidates: list[Decision], options: PresuppositionBuildOptions) -> dict[str, Any]:
    """Balance each generator's candidates; marks the ones not selected; the counts per generator."""
    out: dict[str, object] = {}
    for r in runs:
        mine = [d for d in candidates if d.generator == r.name]
        b = balance(mine, lambda d: d.category, CATEGORY_KEYS, options.seed, r.name, options.per_category, options.per_generator)
        uncategorised = {id(d) for d in b.uncategorised}
        for d in b.dropped:
            d.status = NOT_SELECTED
            d.reason = "uncategorised" if id(d) in uncategorised else "balancing"
            d.detail = "Algorithm 1 selects from the listed categories only" if id(d) in uncategorised else "not drawn by the category balancing (Algorithm 1)"
        out[r.name] = {
            "before": b.before,
            "after": b.after,
            "selected": len(b.selected),
            "dropped": len(b.dropped),
            "uncategorised_dropped": len(b.uncategorised),
        }
    return out


def _check(
    store: Store,
    spec: ModelSpec,
    selected: list[Decision],
    myths: Sequence[Myth],
    retries: int,
    stats: dict[str, StageStats],
    progress: StageProgress | None,
    session: CallSession,
) -> None:
    stats[CHECK] = StageStats()
    if not selected:
        return
    cancer = {m.id: m.cancer for m in myths}
    res = run_stage(
        store,
        spec,
        "check",
        {d.question_id: verify.task(d.question_id, d.question or "", d.correction or "", cancer[d.myth_id]) for d in selected if d.question_id},
        retries,
        progress,
        stats[CHECK],
        session,
    )
    for d in selected:
        o = res[drafted(d.question_id)]
        if not o.ok:
            d.status, d.reason, d.detail = UNCHECKED, o.code, o.detail
        else:
            sound, why = o.value
            d.checker_reason = why or None
            if not sound:
                d.status, d.reason, d.detail = UNSOUND, "unsound_correction", why


def _item(d: Decision, myth: Myth) -> Item:
    meta: dict[str, object] = {
        "cancer": myth.cancer,
        "myth": myth.myth,
        "fact": myth.fact,
        "myth_source": myth.source,
        "myth_row": myth.row,
        "generator": d.generator,
        "round": d.round,
        "verifier_score": d.score,
    }
    for k in ("verifier_reason", "category_reason", "checker_reason"):
        if getattr(d, k):
            meta[k] = getattr(d, k)
    return Item(id=d.question_id or "", source=SOURCE, question=d.question or "", reference=d.correction, subject=myth.cancer, meta=meta)


def _probe(d: Decision) -> PresuppositionProbe:
    qid = d.question_id or ""
    meta = {} if d.category else {"category_status": "uncategorised"}
    return PresuppositionProbe(
        id=probe_id(qid, PRESUPPOSITION),
        item_id=qid,
        family=FAMILY,
        condition=PRESUPPOSITION,
        facets={"category": d.category, "generator": d.generator},
        meta=meta,
    )
