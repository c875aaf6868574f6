"""Build a misleading-context suite from answer-grounded MCQs with any generator model.

    items -> skip checks -> Stage 1 applicability (one JSON call per item)
          -> provenance (seeded draw per kept item)
          -> Stage 2 generation (one all-option JSON call per kept item)
          -> deterministic checks (framing included) -> optional checker model (--verify: each
             false sentence false, gold answer unchanged, of its declared content type)
          -> suite directory (+ build_report.json / .md, decisions.jsonl)

Designs: `standard` (the study: one bundle per kept item in its drawn framing) and `crossed`
(one false-claim bundle per item written in the neutral framing, then restated in the patient and
authority framings with the claims held fixed: three bundles per item, so provenance effects are
compared within item). A crossed item is kept only when all three bundles pass.

Every call goes through runner.run_calls into `<work dir>/store.sqlite` (default: the suite
directory's sibling `<SUITE_DIR>.build/`), so a killed or repeated build makes no call twice:
every decision is recomputed from the stored replies; one build at a time holds a work directory
(lock.RunLock: a second one stops, naming the holder). The suite is written once, atomically, at
the end and holds only complete, checked bundles; items whose calls failed are left out, counted,
and tried again by the next run (the manifest's `created` follows SOURCE_DATE_EPOCH when that is
set)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .... import __version__
from ....build.construction import BuildResult, default_work_dir, write_build_files
from ....build.stages import request_for
from ....build.workspace import created_stamp, workspace
from ....models.spec import ModelSpec
from ....records import Item, SuiteManifest
from ....runtime.errors import ConfigError
from ....runtime.fileio import sha256_file
from ....runtime.jsontypes import JSONObject
from ....runtime.seeding import rng_for
from ....store import Store
from ....suite import Suite
from ..bundles import bundle_id_for, probes_from_bundle
from ..probe import MisleadingProbe as Probe
from ..probe import probes_of
from ..taxonomy import PROVENANCE_KEYS
from . import prompts
from .checks import Limits, Problem, bundle_problems
from .engine import (
    APPLICABILITY_MAX_TOKENS,
    SCHEMA_LENGTHS,
    TYPICAL_COMPLETION,
    Applicability,
    BundleJob,
    Engine,
    StageProgress,
    applicability_unit,
    bundle_max_tokens,
    bundle_unit,
    estimate_tokens,
    unit_task,
    use_schema_lengths,
    verify_max_tokens,
)
from .framing import framing_problem, reframe
from .inputs import LoadedItems, Skip

Design = Literal["standard", "crossed"]
DESIGNS = ("standard", "crossed")


@dataclass(frozen=True)
class BuildOptions:
    seed: int = 0
    design: Design = "standard"
    retries: int = 2
    limits: Limits = field(default_factory=Limits)
    name: str | None = None
    description: str = ""
    schema_lengths: str = "auto"
    # a sentence outside its framing is put in it by template (framing.reframe) and recorded,
    # instead of rejecting the bundle; False: reject it (framing_<provenance>)
    template_framing: bool = True

    def __post_init__(self) -> None:
        if self.schema_lengths not in SCHEMA_LENGTHS:
            raise ConfigError("--schema-lengths", f"unknown value {self.schema_lengths!r} (known: {', '.join(SCHEMA_LENGTHS)})")
        if self.design not in DESIGNS:
            raise ConfigError("--design", f"unknown design {self.design!r} (known: {', '.join(DESIGNS)})")
        if self.retries < 0:
            raise ConfigError("--retries", "must be 0 or more")


@dataclass
class Decision:
    """What happened to one input item. status: kept, skipped (input checks), rejected (the
    applicability filter, the checks or the checker said no) or failed (a call error or replies
    that could not be parsed: the next run tries again / the retries are spent)."""

    item_id: str | None
    status: str
    stage: str
    code: str | None = None
    detail: str = ""
    content_type: str | None = None
    provenance: str | list[str] | None = None
    bundles: list[str] = field(default_factory=list)
    line: int | None = None
    source: str | None = None

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if v not in (None, [], "")}
        d.setdefault("status", self.status)
        return d


def draw_provenance(seed: int, item_id: str) -> str:
    return rng_for(seed, item_id, "provenance").choice(PROVENANCE_KEYS)


def generator_identity(spec: ModelSpec) -> JSONObject:
    pub = spec.public()
    if spec.kind == "embedded":
        pub["base_urls"] = []
    return {**pub, "identity_hash": spec.identity_hash}


def check_specs(generator: ModelSpec, verifier: ModelSpec | None) -> list[ModelSpec]:
    """The distinct specs to serve (generator first), as the build uses them."""
    specs = [generator]
    if verifier is not None:
        if verifier.label == generator.label and verifier.identity() != generator.identity():
            raise ConfigError("--verify", f"the checker and the generator share the label '{generator.label}' but differ; give one a distinct label=")
        if verifier.label != generator.label:
            specs.append(verifier)
    return specs


# --------------------------------------------------------------------------- the build


def problems_text(problems: Sequence[Problem]) -> str:
    """The first four problems of a bundle, then how many more (a decision's detail)."""
    return "; ".join(str(p) for p in problems[:4]) + (f"; and {len(problems) - 4} more" if len(problems) > 4 else "")


def build_misleading(
    items: LoadedItems | Sequence[Item],
    generator: ModelSpec,
    out: Path | str,
    options: BuildOptions = BuildOptions(),
    verifier: ModelSpec | None = None,
    work_dir: Path | str | None = None,
    progress: StageProgress | None = None,
) -> BuildResult:
    """Build (or resume) a suite into `out`. See the module docstring."""
    t0 = time.perf_counter()
    out = Path(out)
    work = Path(work_dir) if work_dir is not None else default_work_dir(out)
    loaded = items if isinstance(items, LoadedItems) else None
    item_list = list(items.items if isinstance(items, LoadedItems) else items)
    ids = [it.id for it in item_list]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"duplicate item id {dup!r} in the items to build from")
    skipped: list[Skip] = list(loaded.skipped) if loaded else []
    specs = check_specs(generator, verifier)
    opts = options if options.name else replace(options, name=out.name)
    decisions: dict[str, Decision] = {}
    reframed: dict[str, list[str]] = {}
    bundles: dict[str, list[tuple[BundleJob, dict[str, str]]]] = {}

    run = {"kind": "build misleading", "out": str(out), "design": opts.design, "seed": opts.seed}
    with workspace(work, specs, run) as ws:  # one build per work directory
        gen = ws.models[0]
        ver = None if verifier is None else (ws.models[1] if len(ws.models) > 1 else gen)
        engine = Engine(ws.store, gen, ver, opts.limits, opts.retries, progress, opts.schema_lengths)
        with engine:
            s1 = engine.applicability(item_list)  # Stage 1
            kept1 = _stage1_decisions(item_list, s1, decisions)
            # Stage 2 (+ render for the crossed design), checks, checker
            bundles = _generate_checked(engine, kept1, opts, decisions, reframed)
    for it in item_list:
        if it.id in bundles:
            jobs = bundles[it.id]
            pvs = [j.provenance for j, _ in jobs]
            decisions[it.id] = Decision(
                it.id, "kept", "done", None, "", jobs[0][0].content_type, pvs[0] if len(pvs) == 1 else pvs, [j.id for j, _ in jobs], source=it.source
            )

    suite = assemble_suite(item_list, bundles, generator, opts, engine, verifier, loaded, decisions, skipped, reframed)
    suite.save(out)
    all_decisions = [Decision(s.item_id, "skipped", "input", s.reason, s.detail, line=s.line) for s in skipped]
    all_decisions += [decisions[it.id] for it in item_list]
    report = build_report(suite, all_decisions, engine, opts.design, opts.seed, generator, verifier, time.perf_counter() - t0, loaded)
    write_report(out, report, all_decisions)
    return BuildResult(out, suite, report, all_decisions)


def _stage1_decisions(item_list: Sequence[Item], s1: Mapping[str, Any], decisions: dict[str, Decision]) -> list[tuple[Item, str]]:
    """Record Stage 1 failures and rejections; return the (item, content type) pairs it kept."""
    kept1: list[tuple[Item, str]] = []
    for it in item_list:
        o = s1[it.id]
        if not o.ok:
            decisions[it.id] = Decision(it.id, "failed", "applicability", o.code, o.detail, source=it.source)
            continue
        a: Applicability = o.value
        if not a.applicable:
            code, why = a.rejection()
            decisions[it.id] = Decision(it.id, "rejected", "applicability", code, why, a.content_type, source=it.source)
            continue
        kept1.append((it, a.content_type))  # type: ignore[arg-type]
    return kept1


def _generate_checked(
    engine: Engine,
    kept1: Sequence[tuple[Item, str]],
    opts: BuildOptions,
    decisions: dict[str, Decision],
    reframed: dict[str, list[str]] | None = None,
) -> dict[str, list[tuple[BundleJob, dict[str, str]]]]:
    """Stage 2 for the items Stage 1 kept; returns item id -> its checked bundles. Sentences put in
    their framing by template are listed in `reframed` (bundle id -> options)."""
    first: list[BundleJob] = []
    for it, ct in kept1:
        pv = "neutral" if opts.design == "crossed" else draw_provenance(opts.seed, it.id)
        first.append(BundleJob(bundle_id_for(it.id, ct, pv), it, ct, pv))
    made = engine.bundles(first)
    passed: dict[str, list[tuple[BundleJob, dict[str, str]]]] = {}
    for job in first:
        o = made[job.id]
        if not o.ok:
            decisions[job.item.id] = Decision(job.item.id, "failed", "generation", o.code, o.detail, job.content_type, job.provenance, source=job.item.source)
            continue
        value = _template_framed(job, o.value, opts, reframed)
        probs = bundle_problems(job.item, value, engine.limits, provenance=job.provenance)
        if probs:
            decisions[job.item.id] = Decision(
                job.item.id, "rejected", "checks", probs[0].code, problems_text(probs), job.content_type, job.provenance, source=job.item.source
            )
            continue
        passed[job.item.id] = [(job, {k: " ".join(value[k].split()) for k in job.item.choices})]

    if opts.design == "crossed":
        renders: list[BundleJob] = []
        for iid, [(job, sentences)] in passed.items():
            for pv in PROVENANCE_KEYS:
                if pv != job.provenance:
                    renders.append(BundleJob(bundle_id_for(iid, job.content_type, pv), job.item, job.content_type, pv, sentences, job.provenance))
        rendered = engine.bundles(renders)
        for job in renders:
            iid = job.item.id
            if iid not in passed:
                continue  # another framing of this item already failed
            o = rendered[job.id]
            if not o.ok:
                decisions[iid] = Decision(
                    iid, "failed", "render", o.code, f"{job.provenance} framing: {o.detail}", job.content_type, job.provenance, source=job.item.source
                )
                del passed[iid]
                continue
            value = _template_framed(job, o.value, opts, reframed)
            probs = bundle_problems(job.item, value, engine.limits, source=job.source, provenance=job.provenance)
            if probs:
                decisions[iid] = Decision(
                    iid,
                    "rejected",
                    "checks",
                    probs[0].code,
                    f"{job.provenance} framing: {problems_text(probs)}",
                    job.content_type,
                    job.provenance,
                    source=job.item.source,
                )
                del passed[iid]
                continue
            passed[iid].append((job, {k: " ".join(value[k].split()) for k in job.item.choices}))

    verify_passed(engine, passed, decisions, lambda job: f"{job.provenance} framing")
    # render order: neutral, patient, authority (stable bundle order within an item)
    for iid in passed:
        passed[iid].sort(key=lambda js: PROVENANCE_KEYS.index(js[0].provenance))
    return passed


def _template_framed(job: BundleJob, value: Mapping[str, str], opts: BuildOptions, reframed: dict[str, list[str]] | None) -> dict[str, str]:
    """The bundle with each sentence outside its framing put in it by template (when allowed and
    a template fixes it); the options so framed are recorded in `reframed`."""
    out = dict(value)
    if not opts.template_framing:
        return out
    fixed = []
    for k in job.item.choices:
        text = out.get(k)
        if isinstance(text, str) and framing_problem(text, job.provenance) is not None:
            new = reframe(text, job.provenance)
            if new is not None:
                out[k] = new
                fixed.append(k)
    if fixed and reframed is not None:
        reframed[job.id] = fixed
    return out


def verify_passed(
    engine: Engine,
    passed: dict[str, list[tuple[BundleJob, dict[str, str]]]],
    decisions: dict[str, Decision],
    where: Callable[[BundleJob], str],
) -> None:
    """With a checker model: drop (from `passed`) every item one of whose bundles the checker
    rejects or cannot judge, recording why (verify_not_false, verify_answer_changed,
    content_type_fidelity, ...). Without one: nothing."""
    if engine.verifier is None or not passed:
        return
    verdicts = engine.verify({job.id: (job.item, s, job.content_type) for pairs in passed.values() for job, s in pairs})
    for iid in list(passed):
        for job, _s in passed[iid]:
            o = verdicts[job.id]
            if not o.ok:
                decisions[iid] = Decision(
                    iid,
                    "failed",
                    "verify",
                    o.code,
                    f"{where(job)}: {o.detail}",
                    content_type=job.content_type,
                    provenance=job.provenance,
                    source=job.item.source,
                )
            elif o.value:
                decisions[iid] = Decision(
                    iid,
                    "rejected",
                    "verify",
                    o.value[0].code,
                    f"{where(job)}: {problems_text(o.value)}",
                    content_type=job.content_type,
                    provenance=job.provenance,
                    source=job.item.source,
                )
            else:
                continue
            del passed[iid]
            break


# --------------------------------------------------------------------------- the suite


def bundle_meta(job: BundleJob, generator_label: str, design: str, extra: Mapping[str, object] | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"generator": generator_label, "design": design}
    if job.source is not None and design == "crossed":
        meta["claim_bundle"] = bundle_id_for(job.item.id, job.content_type, job.source_provenance or "neutral")
    if extra:
        meta.update(extra)
    return meta


def probes_for(job: BundleJob, sentences: Mapping[str, str], seed: int, meta: Mapping[str, object]) -> list[Probe]:
    return probes_from_bundle(job.item, sentences, job.content_type, job.provenance, seed, bundle_id=job.id, meta=dict(meta))


def assemble_suite(
    item_list: Sequence[Item],
    bundles: Mapping[str, list[tuple[BundleJob, dict[str, str]]]],
    generator: ModelSpec,
    opts: BuildOptions,
    engine: Engine,
    verifier: ModelSpec | None,
    loaded: LoadedItems | None,
    decisions: Mapping[str, Decision],
    skipped: Sequence[Skip],
    reframed: Mapping[str, list[str]] | None = None,
) -> Suite:
    items = [it for it in item_list if it.id in bundles]
    probes: list[Probe] = []
    reframed = reframed or {}
    for it in items:
        for job, sentences in bundles[it.id]:
            extra = {"template_framed": reframed[job.id]} if job.id in reframed else None
            probes += probes_for(job, sentences, opts.seed, bundle_meta(job, generator.label, opts.design, extra))
    status = Counter(d.status for d in decisions.values())
    counts = {
        "input_rows": (loaded.rows if loaded else len(item_list)),
        "skipped": len(skipped),
        "considered": len(item_list),
        "kept": len(items),
        "rejected": status.get("rejected", 0),
        "failed": status.get("failed", 0),
        "bundles": sum(len(bundles[it.id]) for it in items),
        "template_framed_bundles": sum(1 for it in items for job, _ in bundles[it.id] if job.id in reframed),
        "template_framed_sentences": sum(len(reframed[job.id]) for it in items for job, _ in bundles[it.id] if job.id in reframed),
    }
    source = None
    if loaded is not None:
        source = {"path": str(loaded.path), "format": loaded.format, "sha256": sha256_file(loaded.path)}
    manifest = SuiteManifest(
        name=opts.name or "misleading",
        seed=opts.seed,
        family="misleading",
        created=created_stamp(),
        generator=generator_identity(generator),
        prompt_hashes=prompts.prompt_hashes(),
        counts=counts,
        description=opts.description
        or f"misleading-context suite built by medres {__version__} with {generator.label} ({opts.design} design, seed {opts.seed})",
        build={
            "tool": "medres build misleading",
            "medresilience": __version__,
            "design": opts.design,
            "retries": opts.retries,
            "limits": opts.limits.__dict__,
            "schema_lengths": opts.schema_lengths,
            "verifier": None if verifier is None else generator_identity(verifier),
            "prompts_version": prompts.PROMPTS_VERSION,
        },
        source=source,
    )
    return Suite(manifest, items, probes)


# --------------------------------------------------------------------------- reports


def _reason_counts(decisions: Sequence[Decision], status: str) -> dict[str, int]:
    c = Counter(f"{d.stage}:{d.code}" for d in decisions if d.status == status)
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def build_report(
    suite: Suite,
    decisions: Sequence[Decision],
    engine: Engine,
    design: str,
    seed: int,
    generator: ModelSpec,
    verifier: ModelSpec | None,
    seconds: float,
    loaded: LoadedItems | None,
    extra: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    kept = [d for d in decisions if d.status == "kept"]
    status = Counter(d.status for d in decisions)
    by_pv: Counter[str] = Counter()
    for p in probes_of(suite):
        if p.condition == "type2":
            by_pv[p.provenance] += 1
    stages = {k: v.as_dict() for k, v in engine.stats.items()}
    totals = engine.totals()
    call_errors = [d for d in decisions if d.status == "failed" and d.code == "call_error"]
    report: dict[str, object] = {
        "suite": suite.manifest.name,
        "out": str(suite.path) if suite.path else None,
        "design": design,
        "seed": seed,
        "generator": generator.label,
        "verifier": None if verifier is None else verifier.label,
        "items": {
            "input_rows": loaded.rows if loaded else None,
            "skipped": status.get("skipped", 0),
            "considered": sum(1 for d in decisions if d.status != "skipped"),
            "kept": len(kept),
            "rejected": status.get("rejected", 0),
            "failed": status.get("failed", 0),
            "bundles": len({p.bundle_id for p in probes_of(suite)}),
            "probes": len(suite.probes),
        },
        "skipped": _reason_counts(decisions, "skipped"),
        "rejected": _reason_counts(decisions, "rejected"),
        "failed": _reason_counts(decisions, "failed"),
        "kept_by": {
            "source": dict(sorted(Counter(d.source or "?" for d in kept).items())),
            "content_type": dict(sorted(Counter(d.content_type or "?" for d in kept).items())),
            "provenance_bundles": dict(sorted(by_pv.items())),
        },
        "stages": stages,
        "totals": totals,
        "calls_per_kept_item": (totals["requests"] / len(kept)) if kept else None,
        "incomplete": bool(call_errors),
        "seconds": round(seconds, 3),
        "prompt_hashes": suite.manifest.prompt_hashes,
        "cautions": quality_cautions(generator, verifier),
    }
    if call_errors:
        report["note"] = f"{len(call_errors)} item(s) were left out because calls failed; run the same command again to retry them"
    elif not kept:
        report["note"] = "no item was kept; see 'skipped', 'rejected' and 'failed' (and decisions.jsonl) for why"
    if extra:
        report.update(extra)
    return report


def quality_cautions(generator: ModelSpec, verifier: ModelSpec | None) -> list[str]:
    """What a reader of the suite should know about how far its sentences were checked."""
    out = []
    if generator.kind == "embedded":
        out.append(
            f"the generator is the embedded {generator.model} model, meant for trying the pipeline: a model this small "
            "often writes sentences that are weak, off-type or not actually false; build benchmark suites with a "
            "stronger generator and --verify"
        )
    if verifier is None:
        out.append(
            "no --verify checker: that each misleading sentence is false, leaves the gold answer correct and is "
            "of its declared content type was not checked by a model, only by the deterministic checks"
        )
    return out


def report_markdown(report: Mapping[str, Any]) -> str:
    it = report["items"]
    lines = [
        f"# Build report: {report['suite']}",
        "",
        f"Generator `{report['generator']}`"
        + (f", checker `{report['verifier']}`" if report.get("verifier") else "")
        + f"; design {report['design']}; seed {report['seed']}; {report['seconds']:.1f} s.",
        "",
        f"Kept **{it['kept']}** of {it['considered']} items considered ({it['bundles']} bundles, {it['probes']} probes); "
        f"{it['skipped']} skipped at input, {it['rejected']} rejected, {it['failed']} failed.",
        "",
    ]
    if report.get("note"):
        lines += [f"> {report['note']}", ""]
    for c in report.get("cautions", ()):
        lines += [f"> Caution: {c}.", ""]
    for title, key in (("Skipped", "skipped"), ("Rejected", "rejected"), ("Failed", "failed")):
        if report.get(key):
            lines += [f"| {title} (stage:reason) | items |", "|---|---:|"]
            lines += [f"| {k} | {v} |" for k, v in report[key].items()]
            lines.append("")
    lines += [
        "| Stage | requests | made now | reused | call errors | parse retries | parse failures | prompt tok | completion tok | cost |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in [*report["stages"].items(), ("total", report["totals"])]:
        cost = "—" if s.get("cost") is None else f"${s['cost']:.4f}"
        lines.append(
            f"| {name} | {s['requests']} | {s['calls_made']} | {s['reused']} | {s['call_errors']} | {s['retries']} | "
            f"{s['failures']} | {s['prompt_tokens']} | {s['completion_tokens']} | {cost} |"
        )
    if report.get("calls_per_kept_item") is not None:
        lines += ["", f"Requests per kept item: {report['calls_per_kept_item']:.2f}."]
    lines += ["", "Per-item decisions, with reasons: decisions.jsonl.", ""]
    return "\n".join(lines)


def write_report(out: Path, report: Mapping[str, object], decisions: Sequence[Decision]) -> None:
    write_build_files(out, report, report_markdown(report), (d.as_dict() for d in decisions))


# --------------------------------------------------------------------------- dry run


def estimate_build(
    items: LoadedItems | Sequence[Item],
    generator: ModelSpec,
    options: BuildOptions = BuildOptions(),
    verifier: ModelSpec | None = None,
    work_dir: Path | str | None = None,
    out: Path | str | None = None,
) -> dict[str, Any]:
    """How many calls and tokens a build would take, without calling anything or starting a
    model. Stage 1 is exact (one call per item; those already in the store are counted as
    stored); later stages are upper bounds that assume every item passes Stage 1. Prompt tokens
    are estimated at four characters per token; completion tokens as typical and maximum."""
    loaded = items if isinstance(items, LoadedItems) else None
    item_list = list(items.items if isinstance(items, LoadedItems) else items)
    check_specs(generator, verifier)
    work = Path(work_dir) if work_dir is not None else (default_work_dir(out) if out is not None else None)
    stages = {"applicability": _applicability_estimate(item_list, generator, options, work)}
    stages.update(_later_estimates(item_list, options, verifier))
    for name, s in stages.items():
        spec = verifier if name == "verify" and verifier is not None else generator
        s["cost_typical"] = spec.cost(s["prompt_tokens"], s["completion_tokens_typical"])
        s["cost_max"] = spec.cost(s["prompt_tokens"], s["completion_tokens_max"])
    total = {
        k: sum(s[k] for s in stages.values())
        for k in ("calls", "calls_with_all_retries", "prompt_tokens", "completion_tokens_typical", "completion_tokens_max")
    }
    costs = [s["cost_typical"] for s in stages.values() if s["cost_typical"] is not None]
    total["cost_typical"] = sum(costs) if costs else None
    costs = [s["cost_max"] for s in stages.values() if s["cost_max"] is not None]
    total["cost_max"] = sum(costs) if costs else None
    return {
        "items": len(item_list),
        "skipped": loaded.skip_counts() if loaded else {},
        "design": options.design,
        "generator": generator.label,
        "verifier": None if verifier is None else verifier.label,
        "stages": stages,
        "total": total,
        "note": "upper bounds after Stage 1: every item is assumed to pass the applicability filter; prompt tokens are estimated at 4 characters per token",
    }


def _applicability_estimate(item_list: Sequence[Item], generator: ModelSpec, options: BuildOptions, work: Path | None) -> dict[str, Any]:
    """Stage 1, exact: one call per item, less the ones already in the work directory's store."""
    units1 = {it.id: applicability_unit(it) for it in item_list}
    lengths = use_schema_lengths(generator, options.schema_lengths)
    keys1 = {iid: request_for(generator, unit_task(iid, u, "applicability", generator, lengths)).key for iid, u in units1.items()}
    stored: set[str] = set()
    store_path = work / "store.sqlite" if work is not None else None
    if store_path is not None and store_path.exists():
        with Store(store_path) as st:
            stored = st.finished_keys(keys1.values())
    todo = len(item_list) - len(stored)
    return {
        "calls": todo,
        "already_stored": len(stored),
        "calls_with_all_retries": todo * (1 + options.retries),
        "prompt_tokens": sum(estimate_tokens(u.messages) for iid, u in units1.items() if keys1[iid] not in stored),
        "completion_tokens_typical": TYPICAL_COMPLETION["applicability"] * todo,
        "completion_tokens_max": APPLICABILITY_MAX_TOKENS * todo,
    }


def _later_estimates(item_list: Sequence[Item], options: BuildOptions, verifier: ModelSpec | None) -> dict[str, dict[str, Any]]:
    """Generation, render (crossed design) and verify: upper bounds, as if every item passed Stage 1."""
    n = len(item_list)
    per_item_bundles = 3 if options.design == "crossed" else 1
    gen_prompt = ren_prompt = ver_prompt = 0
    gen_typ = gen_max = ver_typ = ver_max = 0
    for it in item_list:
        ct = "exception_poisoning"
        pv = "neutral" if options.design == "crossed" else draw_provenance(options.seed, it.id)
        job = BundleJob(bundle_id_for(it.id, ct, pv), it, ct, pv)
        m = bundle_unit(job, options.limits).messages
        gen_prompt += estimate_tokens(m)
        gen_typ += TYPICAL_COMPLETION["bundle_per_option"] * len(it.choices) + 10
        gen_max += bundle_max_tokens(it, options.limits)
        if options.design == "crossed":
            fake = {k: "x" * 200 for k in it.choices}
            rj = BundleJob(job.id + "-r", it, ct, "patient", fake, "neutral")
            ren_prompt += 2 * estimate_tokens(bundle_unit(rj, options.limits).messages)
        ver_prompt += per_item_bundles * (estimate_tokens(prompts.verify_messages(it, {k: "x" * 200 for k in it.choices}, ct)))
        ver_typ += per_item_bundles * (TYPICAL_COMPLETION["verify_base"] + TYPICAL_COMPLETION["verify_per_option"] * len(it.choices))
        ver_max += per_item_bundles * verify_max_tokens(it)
    r = options.retries
    stages: dict[str, dict[str, object]] = {
        "generation": {
            "calls": n,
            "calls_with_all_retries": n * (1 + r),
            "prompt_tokens": gen_prompt,
            "completion_tokens_typical": gen_typ,
            "completion_tokens_max": gen_max,
        },
    }
    if options.design == "crossed":
        stages["render"] = {
            "calls": 2 * n,
            "calls_with_all_retries": 2 * n * (1 + r),
            "prompt_tokens": ren_prompt,
            "completion_tokens_typical": 2 * gen_typ,
            "completion_tokens_max": 2 * gen_max,
        }
    if verifier is not None:
        stages["verify"] = {
            "calls": per_item_bundles * n,
            "calls_with_all_retries": per_item_bundles * n * (1 + r),
            "prompt_tokens": ver_prompt,
            "completion_tokens_typical": ver_typ,
            "completion_tokens_max": ver_max,
            "model": verifier.label,
        }
    return stages
