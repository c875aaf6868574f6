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
same engine, checks and store as a build (work dir default `<OUT>.build/`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .... import __version__
from ....errors import ConfigError
from ....models.serving import serving
from ....models.spec import ModelSpec
from ....records import Item, SuiteManifest
from ....seeding import rng_for
from ....store import Store
from ....suite import Suite
from ..bundles import bundle_of
from ..probe import MisleadingProbe as Probe
from ..taxonomy import PROVENANCE_KEYS
from . import prompts
from .checks import Limits, bundle_problems
from .engine import BundleJob, Engine, StageProgress
from .pipeline import (
    Decision,
    _problems_text,
    build_report,
    check_specs,
    default_work_dir,
    generator_identity,
    probes_for,
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
    meta: dict[str, Any]
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
    for p in suite.probes:
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
    for p in suite.probes:
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


def _rebuild(
    suite: Suite,
    jobs: Sequence[BundleJob],
    originals: Mapping[str, SourceBundle],
    generator: ModelSpec,
    out: Path,
    tool: str,
    derived: dict[str, Any],
    bundle_extra: Mapping[str, Any],
    verifier: ModelSpec | None,
    retries: int,
    limits: Limits,
    work_dir: Path | str | None,
    reference_out: Path | str | None,
    name: str | None,
    progress: StageProgress | None,
    stage: str,
) -> SensitivityResult:
    t0 = time.perf_counter()
    work = Path(work_dir) if work_dir is not None else default_work_dir(out)
    specs = check_specs(generator, verifier)
    seed = suite.manifest.seed
    with Store(work / "store.sqlite") as store:
        store.record_run(time.strftime("sensitivity-%Y%m%dT%H%M%S"), {"kind": tool, "out": str(out), **derived})
        with serving(specs) as live:
            for s in live:
                s.api_key()
            gen = live[0]
            ver = None if verifier is None else (live[1] if len(live) > 1 else gen)
            engine = Engine(store, gen, ver, limits, retries, progress)
            with engine:
                decisions, new = _rebuild_bundles(engine, jobs, limits, stage)
    return _write_rebuilt(
        suite, jobs, originals, new, decisions, engine, generator, out, tool, derived, bundle_extra, verifier, retries, limits, reference_out, name, seed, t0
    )


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
                iid, "rejected", "checks", probs[0].code, f"bundle {job.id}: {_problems_text(probs)}", job.content_type, job.provenance, source=job.item.source
            )
            failed.add(iid)
            continue
        new.setdefault(iid, []).append((job, {k: " ".join(o.value[k].split()) for k in job.item.options}))
    for iid in failed:
        new.pop(iid, None)
    verify_passed(engine, new, decisions, lambda job: f"bundle {job.id}")
    return decisions, new


def _write_rebuilt(
    suite: Suite,
    jobs: Sequence[BundleJob],
    originals: Mapping[str, SourceBundle],
    new: Mapping[str, list[tuple[BundleJob, dict[str, str]]]],
    decisions: dict[str, Decision],
    engine: Engine,
    generator: ModelSpec,
    out: Path,
    tool: str,
    derived: dict[str, Any],
    bundle_extra: Mapping[str, Any],
    verifier: ModelSpec | None,
    retries: int,
    limits: Limits,
    reference_out: Path | str | None,
    name: str | None,
    seed: int,
    t0: float,
) -> SensitivityResult:
    item_ids = list(dict.fromkeys(j.item.id for j in jobs))
    probes: list[Probe] = []
    for iid in item_ids:
        if iid in new:
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
                source=suite.items[iid].source,
            )
            for job, sentences in pairs:
                meta = {**originals[job.id].meta, "generator": generator.label, **bundle_extra}
                if job.source is not None and tool == "reassign-provenance":
                    meta["provenance_from"] = job.source_provenance
                elif tool == "reassign-provenance":
                    meta["provenance_from"] = originals[job.id].provenance
                probes += probes_for(job, sentences, seed, meta)
    kept_ids = [iid for iid in item_ids if iid in new]
    items = [suite.items[iid] for iid in kept_ids]
    base = suite.manifest
    derived_from = {
        "suite": base.name,
        "path": str(suite.path) if suite.path else None,
        "checksums": dict(base.checksums),
        "generator": base.generator,
        "tool": tool,
        **derived,
    }
    counts = {
        "considered": len(item_ids),
        "kept": len(kept_ids),
        "rejected": sum(1 for d in decisions.values() if d.status == "rejected"),
        "failed": sum(1 for d in decisions.values() if d.status == "failed"),
        "bundles": len({p.bundle_id for p in probes}),
    }
    manifest = SuiteManifest(
        name=name or out.name,
        seed=seed,
        family=base.family,
        generator=generator_identity(generator),
        prompt_hashes=prompts.prompt_hashes(),
        counts=counts,
        description=f"{tool} of suite {base.name!r} ({', '.join(f'{k}={v}' for k, v in derived.items() if not isinstance(v, (list, dict)))}) by medres {__version__}",
        derived_from=derived_from,
        build={
            "tool": f"medres build {tool}",
            "medresilience": __version__,
            "retries": retries,
            "limits": limits.__dict__,
            "verifier": None if verifier is None else generator_identity(verifier),
            "prompts_version": prompts.PROMPTS_VERSION,
        },
    )
    result_suite = Suite(manifest, items, probes)
    result_suite.save(out)
    reference = None
    if reference_out is not None:
        ref_out = Path(reference_out)
        keep_bids = {j.id for iid in kept_ids for j, _ in new[iid]}
        ref_probes = [p for p in suite.probes if p.bundle_id in keep_bids]
        ref_manifest = base.model_copy(
            update={
                "name": f"{manifest.name}-reference",
                "counts": {"kept": len(kept_ids), "bundles": len(keep_bids)},
                "description": f"the original bundles of suite {base.name!r} for the items of {manifest.name!r} (matched reference)",
            }
        )
        ref_manifest = SuiteManifest.model_validate({**ref_manifest.model_dump(), "derived_from": {**derived_from, "tool": f"{tool} (reference)"}})
        reference = Suite(ref_manifest, items, ref_probes)
        reference.save(ref_out)
    all_decisions = [decisions[iid] for iid in item_ids]
    report = build_report(
        result_suite,
        all_decisions,
        engine,
        tool,
        seed,
        generator,
        verifier,
        time.perf_counter() - t0,
        None,
        extra={"tool": tool, "derived_from": derived_from, "reference": str(reference_out) if reference_out else None},
    )
    write_report(out, report, all_decisions)
    return SensitivityResult(out, result_suite, reference, report, all_decisions)


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
) -> SensitivityResult:
    """Rewrite a stratified subset of `suite` with `generator`, holding item, content type,
    provenance and bundle id (so targets, the Type 1 sample and the Type 2 order) fixed."""
    out = Path(out)
    chosen = set(stratified_subset(suite, n, by))
    originals = {b.id: b for b in suite_bundles(suite) if b.item.id in chosen}
    jobs = [BundleJob(b.id, b.item, b.content_type, b.provenance) for b in originals.values()]
    derived = {"n": len(chosen), "by": list(by), "items": sorted(chosen)}
    return _rebuild(
        suite,
        jobs,
        originals,
        generator,
        out,
        "regenerate",
        derived,
        {"derived": "regenerate"},
        verifier,
        retries,
        limits,
        work_dir,
        reference_out,
        name,
        progress,
        "generation",
    )


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
    return _rebuild(
        suite,
        jobs,
        originals,
        gen,
        out,
        "reassign-provenance",
        derived,
        {"cycle": cycle, "mode": mode},
        verifier,
        retries,
        limits,
        work_dir,
        reference_out,
        name,
        progress,
        "render" if mode == "render" else "generation",
    )
