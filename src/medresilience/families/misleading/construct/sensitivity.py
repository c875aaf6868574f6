"""The study's two construction-sensitivity checks, as suite -> suite tools.

regenerate_subset     a stratified subset of a suite's items rewritten by a second generator,
                      holding item, content type and provenance fixed (and the target option:
                      bundle ids are kept, so the seeded Type 1 sample and the Type 2 order are
                      the original ones).
reassign_provenance   every bundle moved one step around a provenance cycle, holding item,
                      content type and targets fixed: forward neutral -> patient -> authority ->
                      neutral, reverse the other way. mode "regenerate" (the study) writes new
                      sentences in the new framing; mode "render" restates the original sentences
                      in it, keeping each claim (checked by claim_drift).

Each writes a suite whose manifest names the suite it was derived from; with `reference_out` it
also writes the matching original bundles of the same items (only the items rewritten
successfully), so `medres eval` and the report compare like with like. Calls go through the
same engine, checks, store and workspace as a build (work dir default `<OUT>.build/`, held by one
process at a time; `schema_lengths` as for `build_misleading`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .... import __version__
from ....build.workspace import created_stamp, workspace
from ....models.spec import ModelSpec
from ....records import Item, SuiteManifest
from ....runtime.errors import ConfigError
from ....runtime.seeding import rng_for
from ....suite import Suite
from ..bundles import bundle_of
from ..probe import MisleadingProbe as Probe
from ..probe import probes_of
from ..taxonomy import PROVENANCE_KEYS
from . import prompts
from .checks import Limits, bundle_problems
from .engine import SCHEMA_LENGTHS, BundleJob, Engine, StageProgress
from .pipeline import (
    Decision,
    build_report,
    check_specs,
    default_work_dir,
    generator_identity,
    probes_for,
    problems_text,
    verify_passed,
    write_report,
)

CYCLES: dict[str, dict[str, str]] = {
    "forward": {"neutral": "patient", "patient": "authority", "authority": "neutral"},
    "reverse": {"neutral": "authority", "authority": "patient", "patient": "neutral"},
}
STRATA_FIELDS = ("source", "subject", "content_type", "provenance")
Mode = Literal["regenerate", "render"]


@dataclass(frozen=True)
class SourceBundle:
    id: str
    item: Item
    content_type: str
    provenance: str
    sentences: dict[str, str]
    meta: Mapping[str, object]
    probes: tuple[Probe, ...]


@dataclass
class SensitivityResult:
    out: Path
    suite: Suite
    reference: Suite | None
    report: dict[str, Any]
    decisions: list[Decision]


def suite_bundles(suite: Suite) -> list[SourceBundle]:
    """The bundles of a suite, in item order then file order."""
    by_bid: dict[str, list[Probe]] = {}
    for p in probes_of(suite):
        by_bid.setdefault(p.bundle_id, []).append(p)
    out: list[SourceBundle] = []
    order = {iid: i for i, iid in enumerate(suite.items)}
    for bid, ps in sorted(by_bid.items(), key=lambda kv: order.get(kv[1][0].item_id, 0)):
        item = suite.items[ps[0].item_id]
        t2 = next((p for p in ps if p.condition == "type2"), ps[0])
        out.append(SourceBundle(bid, item, t2.content_type, t2.provenance, bundle_of(ps), dict(t2.meta), tuple(ps)))
    return out


def stratified_subset(suite: Suite, n: int | None, by: Sequence[str] = ("source",), seed: int | None = None) -> list[str]:
    """Item ids of a stratified, seeded subset of `n` items (all items when n is None or not
    smaller). Strata are the combinations of `by` (source, subject, content_type, provenance;
    the last two from the item's first bundle); each gets its proportional share (largest
    remainder), at least one item when n allows; items are drawn by a seeded shuffle."""
    for f in by:
        if f not in STRATA_FIELDS:
            raise ConfigError("--by", f"unknown stratum field {f!r} (known: {', '.join(STRATA_FIELDS)})")
    ids = [iid for iid in suite.items if any(p.item_id == iid for p in suite.probes)]
    if n is None or n >= len(ids):
        return ids
    if n < 1:
        raise ConfigError("--n", "must be at least 1")
    seed = suite.manifest.seed if seed is None else seed
    first: dict[str, Probe] = {}
    for p in probes_of(suite):
        first.setdefault(p.item_id, p)

    def key(iid: str) -> tuple[str, ...]:
        it, p = suite.items[iid], first[iid]
        vals = {"source": it.source, "subject": it.subject or "", "content_type": p.content_type, "provenance": p.provenance}
        return tuple(vals[f] for f in by)

    strata: dict[tuple[str, ...], list[str]] = {}
    for iid in ids:
        strata.setdefault(key(iid), []).append(iid)
    total = len(ids)
    quota = {k: n * len(v) / total for k, v in strata.items()}
    alloc = {k: int(q) for k, q in quota.items()}
    if n >= len(strata):
        for k in alloc:
            alloc[k] = max(alloc[k], 1)
    rest = n - sum(alloc.values())
    for k in sorted(strata, key=lambda k: (-(quota[k] - int(quota[k])), k)):
        if rest <= 0:
            break
        if alloc[k] < len(strata[k]):
            alloc[k] += 1
            rest -= 1
    while sum(alloc.values()) > n:  # the minimum of one per stratum overshot: trim the largest
        k = max(alloc, key=lambda k: (alloc[k], k))
        alloc[k] -= 1
    chosen: set[str] = set()
    for k, members in strata.items():
        pool = sorted(members)
        rng_for(seed, "|".join(k), "sensitivity-subset").shuffle(pool)
        chosen.update(pool[: alloc[k]])
    return [iid for iid in ids if iid in chosen]


def spec_from_manifest(suite: Suite) -> ModelSpec:
    """The generator a suite records in its manifest, as a ModelSpec (for reassignment)."""
    g = suite.manifest.generator
    if not g:
        raise ConfigError(
            "--generator",
            f"suite {suite.manifest.name!r} records no generator (only a suite `medres build misleading` "
            "wrote does; a bundled or imported one does not): pass --generator SPEC, e.g. --generator embedded",
        )
    try:
        return ModelSpec.model_validate({k: v for k, v in g.items() if k in ModelSpec.model_fields})
    except ValueError as e:
        raise ConfigError(
            "--generator", f"the generator recorded in suite {suite.manifest.name!r} cannot be used ({str(e).splitlines()[0]}); pass --generator"
        ) from None


@dataclass(frozen=True)
class Rebuild:
    """One suite -> suite rebuild: the bundles of `suite` to write again (`jobs`, each standing for
    the bundle of `originals` with its id), by which models and in which `stage`, into which suite
    (`out`, named `name`; `reference_out`: the matching original bundles too). `tool` and `derived`
    say what was done (recorded in the manifest), `bundle_extra` is added to each bundle's meta."""

    suite: Suite
    jobs: Sequence[BundleJob]
    originals: Mapping[str, SourceBundle]
    generator: ModelSpec
    out: Path
    tool: str
    derived: Mapping[str, object]
    bundle_extra: Mapping[str, object]
    stage: str
    verifier: ModelSpec | None = None
    retries: int = 2
    limits: Limits = field(default_factory=Limits)
    schema_lengths: str = "auto"
    work_dir: Path | str | None = None
    reference_out: Path | str | None = None
    name: str | None = None


def _rebuild(r: Rebuild, progress: StageProgress | None) -> SensitivityResult:
    if r.schema_lengths not in SCHEMA_LENGTHS:
        raise ConfigError("--schema-lengths", f"unknown value {r.schema_lengths!r} (known: {', '.join(SCHEMA_LENGTHS)})")
    t0 = time.perf_counter()
    work = Path(r.work_dir) if r.work_dir is not None else default_work_dir(r.out)
    specs = check_specs(r.generator, r.verifier)
    run = {"kind": r.tool, "out": str(r.out), **r.derived}
    with workspace(work, specs, run, prefix="sensitivity") as ws:  # one build per work directory
        gen = ws.models[0]
        ver = None if r.verifier is None else (ws.models[1] if len(ws.models) > 1 else gen)
        engine = Engine(ws.store, gen, ver, r.limits, r.retries, progress, r.schema_lengths)
        with engine:
            decisions, new = _rebuild_bundles(engine, r.jobs, r.limits, r.stage)
    return _write_rebuilt(r, new, decisions, engine, t0)


def _rebuild_bundles(
    engine: Engine, jobs: Sequence[BundleJob], limits: Limits, stage: str
) -> tuple[dict[str, Decision], dict[str, list[tuple[BundleJob, dict[str, str]]]]]:
    """Write the jobs' bundles, check them (and have the checker look at them); an item keeps
    its bundles only when all of them pass."""
    decisions: dict[str, Decision] = {}
    new: dict[str, list[tuple[BundleJob, dict[str, str]]]] = {}
    made = engine.bundles(jobs, stage=stage)
    failed: set[str] = set()
    for job in jobs:
        iid = job.item.id
        if iid in failed:
            continue
        o = made[job.id]
        if not o.ok:
            decisions[iid] = Decision(iid, "failed", stage, o.code, f"bundle {job.id}: {o.detail}", job.content_type, job.provenance, source=job.item.source)
            failed.add(iid)
            continue
        probs = bundle_problems(job.item, o.value, limits, source=job.source, provenance=job.provenance)
        if probs:
            decisions[iid] = Decision(
                iid, "rejected", "checks", probs[0].code, f"bundle {job.id}: {problems_text(probs)}", job.content_type, job.provenance, source=job.item.source
            )
            failed.add(iid)
            continue
        new.setdefault(iid, []).append((job, {k: " ".join(o.value[k].split()) for k in job.item.choices}))
    for iid in failed:
        new.pop(iid, None)
    verify_passed(engine, new, decisions, lambda job: f"bundle {job.id}")
    return decisions, new


def _write_rebuilt(
    r: Rebuild, new: Mapping[str, list[tuple[BundleJob, dict[str, str]]]], decisions: dict[str, Decision], engine: Engine, t0: float
) -> SensitivityResult:
    """The rebuilt suite (the items whose bundles all passed), its reference when asked, and the
    build report."""
    item_ids = list(dict.fromkeys(j.item.id for j in r.jobs))
    probes = _rebuilt_probes(r, new, decisions, item_ids)
    kept_ids = [iid for iid in item_ids if iid in new]
    items = [r.suite.items[iid] for iid in kept_ids]
    base = r.suite.manifest
    derived_from = {
        "suite": base.name,
        "path": str(r.suite.path) if r.suite.path else None,
        "checksums": dict(base.checksums),
        "generator": base.generator,
        "tool": r.tool,
        **r.derived,
    }
    counts = {
        "considered": len(item_ids),
        "kept": len(kept_ids),
        "rejected": sum(1 for d in decisions.values() if d.status == "rejected"),
        "failed": sum(1 for d in decisions.values() if d.status == "failed"),
        "bundles": len({p.bundle_id for p in probes}),
    }
    manifest = _manifest(r, counts, derived_from)
    result_suite = Suite(manifest, items, probes)
    result_suite.save(r.out)
    reference = None
    if r.reference_out is not None:
        keep_bids = {j.id for iid in kept_ids for j, _ in new[iid]}
        reference = _reference(r, manifest.name, items, keep_bids, len(kept_ids), derived_from)
        reference.save(Path(r.reference_out))
    all_decisions = [decisions[iid] for iid in item_ids]
    report = build_report(
        result_suite,
        all_decisions,
        engine,
        r.tool,
        base.seed,
        r.generator,
        r.verifier,
        time.perf_counter() - t0,
        None,
        extra={"tool": r.tool, "derived_from": derived_from, "reference": str(r.reference_out) if r.reference_out else None},
    )
    write_report(r.out, report, all_decisions)
    return SensitivityResult(r.out, result_suite, reference, report, all_decisions)


def _rebuilt_probes(
    r: Rebuild, new: Mapping[str, list[tuple[BundleJob, dict[str, str]]]], decisions: dict[str, Decision], item_ids: Sequence[str]
) -> list[Probe]:
    """The probes of every item whose bundles all passed (each recorded as kept in `decisions`)."""
    probes: list[Probe] = []
    for iid in item_ids:
        if iid not in new:
            continue
        pairs = new[iid]
        decisions[iid] = Decision(
            iid,
            "kept",
            "done",
            None,
            "",
            pairs[0][0].content_type,
            [j.provenance for j, _ in pairs] if len(pairs) > 1 else pairs[0][0].provenance,
            [j.id for j, _ in pairs],
            source=r.suite.items[iid].source,
        )
        for job, sentences in pairs:
            meta = {**r.originals[job.id].meta, "generator": r.generator.label, **r.bundle_extra}
            if job.source is not None and r.tool == "reassign-provenance":
                meta["provenance_from"] = job.source_provenance
            elif r.tool == "reassign-provenance":
                meta["provenance_from"] = r.originals[job.id].provenance
            probes += probes_for(job, sentences, r.suite.manifest.seed, meta)
    return probes


def _manifest(r: Rebuild, counts: Mapping[str, object], derived_from: Mapping[str, object]) -> SuiteManifest:
    base = r.suite.manifest
    return SuiteManifest(
        name=r.name or r.out.name,
        seed=base.seed,
        family=base.family,
        created=created_stamp(),
        generator=generator_identity(r.generator),
        prompt_hashes=prompts.prompt_hashes(),
        counts=counts,
        description=f"{r.tool} of suite {base.name!r} ({', '.join(f'{k}={v}' for k, v in r.derived.items() if not isinstance(v, (list, dict)))}) by medres {__version__}",
        derived_from=derived_from,
        build={
            "tool": f"medres build {r.tool}",
            "medresilience": __version__,
            "retries": r.retries,
            "limits": r.limits.__dict__,
            "verifier": None if r.verifier is None else generator_identity(r.verifier),
            "prompts_version": prompts.PROMPTS_VERSION,
        },
    )


def _reference(r: Rebuild, name: str, items: list[Item], keep_bids: set[str], n_kept: int, derived_from: Mapping[str, object]) -> Suite:
    """The original bundles of the rebuilt items: the like-for-like reference."""
    base = r.suite.manifest
    ref_probes = [p for p in probes_of(r.suite) if p.bundle_id in keep_bids]
    ref_manifest = base.model_copy(
        update={
            "name": f"{name}-reference",
            "counts": {"kept": n_kept, "bundles": len(keep_bids)},
            "description": f"the original bundles of suite {base.name!r} for the items of {name!r} (matched reference)",
        }
    )
    ref_manifest = SuiteManifest.model_validate({**ref_manifest.model_dump(), "derived_from": {**derived_from, "tool": f"{r.tool} (reference)"}})
    return Suite(ref_manifest, items, ref_probes)


def regenerate_subset(
    suite: Suite,
    generator: ModelSpec,
    out: Path | str,
    n: int | None = None,
    by: Sequence[str] = ("source",),
    verifier: ModelSpec | None = None,
    retries: int = 2,
    limits: Limits = Limits(),
    work_dir: Path | str | None = None,
    reference_out: Path | str | None = None,
    name: str | None = None,
    progress: StageProgress | None = None,
    schema_lengths: str = "auto",
) -> SensitivityResult:
    """Rewrite a stratified subset of `suite` with `generator`, holding item, content type,
    provenance and bundle id (so targets, the Type 1 sample and the Type 2 order) fixed."""
    out = Path(out)
    chosen = set(stratified_subset(suite, n, by))
    originals = {b.id: b for b in suite_bundles(suite) if b.item.id in chosen}
    jobs = [BundleJob(b.id, b.item, b.content_type, b.provenance) for b in originals.values()]
    derived = {"n": len(chosen), "by": list(by), "items": sorted(chosen)}
    rebuild = Rebuild(
        suite,
        jobs,
        originals,
        generator,
        out,
        "regenerate",
        derived,
        {"derived": "regenerate"},
        "generation",
        verifier,
        retries,
        limits,
        schema_lengths,
        work_dir,
        reference_out,
        name,
    )
    return _rebuild(rebuild, progress)


def reassign_provenance(
    suite: Suite,
    cycle: str,
    out: Path | str,
    generator: ModelSpec | None = None,
    mode: Mode = "regenerate",
    n: int | None = None,
    by: Sequence[str] = ("source",),
    verifier: ModelSpec | None = None,
    retries: int = 2,
    limits: Limits = Limits(),
    work_dir: Path | str | None = None,
    reference_out: Path | str | None = None,
    name: str | None = None,
    progress: StageProgress | None = None,
    schema_lengths: str = "auto",
) -> SensitivityResult:
    """Move every bundle (of a stratified subset when `n` is given) one step around the provenance
    cycle `cycle` (forward or reverse), holding item, content type and bundle id fixed. The
    generator defaults to the one the suite records."""
    if cycle not in CYCLES:
        raise ConfigError("--cycle", f"unknown cycle {cycle!r} (known: {', '.join(CYCLES)})")
    if mode not in ("regenerate", "render"):
        raise ConfigError("--mode", f"unknown mode {mode!r} (known: regenerate, render)")
    out = Path(out)
    gen = generator or spec_from_manifest(suite)
    chosen = set(stratified_subset(suite, n, by))
    originals = {b.id: b for b in suite_bundles(suite) if b.item.id in chosen}
    step = CYCLES[cycle]
    jobs = []
    for b in originals.values():
        to = step[b.provenance]
        if mode == "render":
            jobs.append(BundleJob(b.id, b.item, b.content_type, to, b.sentences, b.provenance))
        else:
            jobs.append(BundleJob(b.id, b.item, b.content_type, to))
    assert all(pv in PROVENANCE_KEYS for pv in step.values())
    derived = {"cycle": cycle, "mode": mode, "mapping": step, "n": len(chosen), "by": list(by), "items": sorted(chosen)}
    stage = "render" if mode == "render" else "generation"
    rebuild = Rebuild(
        suite,
        jobs,
        originals,
        gen,
        out,
        "reassign-provenance",
        derived,
        {"cycle": cycle, "mode": mode},
        stage,
        verifier,
        retries,
        limits,
        schema_lengths,
        work_dir,
        reference_out,
        name,
    )
    return _rebuild(rebuild, progress)
