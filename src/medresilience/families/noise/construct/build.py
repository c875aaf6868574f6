"""Build a clinical-noise suite: MCQ items -> diagnosis cases -> perturbed variants, paired with the
original case (the spine's `clean`), one probe per variant per case.

    items -> cases.diagnosis_cases (the questions asking for the most likely diagnosis or cause)
          -> red herrings: one generator call per case (10 sentences, checked), stored in the
             case's meta; the distributed doses 1 / 5 / 10, the block of 10 and the whitespace
             control placed by seeded draws
             (--verify: a checker model reads each sentence for clinical information; flagged
             ones are dropped with its reason and replaced by the generator, `checker.py`)
          -> abbreviations: substitution from the inventories (no model)
          -> rewrite: one generator call per case (an informal note, checked: numbers kept)
             (--verify: the checker confirms the note is clinically equivalent, or it is dropped)
          -> suite directory (+ build_report.json / .md, decisions.jsonl)

Every generator call goes through `calls.run_calls` into `<work dir>/store.sqlite` (default: the
suite directory's sibling `<SUITE_DIR>.build/`), so a killed or repeated build makes no call
twice; one build at a time holds the work directory (lock.RunLock: a second one stops, naming
the holder). A case keeps every variant that could be built; a variant that could not is dropped for
that case with its reason, and a case left with no variant is dropped. The suite is written once,
atomically, at the end; with the same inputs, seed and stored replies it is the same byte for byte
(the manifest's `created` follows SOURCE_DATE_EPOCH when that is set)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .... import __version__
from ....build.construction import BuildResult, default_work_dir, write_build_files
from ....build.stages import Outcome, StageProgress, StageStats, Task, independent, request_for, run_stage, stage_table
from ....build.workspace import created_stamp, model_identity, workspace
from ....calls import CallRequest
from ....models.spec import ModelSpec
from ....records import Item, SuiteManifest
from ....runtime.errors import ConfigError
from ....runtime.fileio import sha256_file
from ....store import Store
from ....suite import Suite
from ..probe import NoiseProbe
from ..taxonomy import ABBREVIATIONS, CONDITIONS, FAMILY, GENERATED, HERRING_VARIANTS, HERRINGS, REWRITE, facets_of
from . import abbreviations as abbr
from . import checker as chk
from . import redherring, rewrite
from .cases import KINDS, CaseSkip, diagnosis_cases, load_items_file
from .checker import HerringCheck
from .split import insertion_points

BUILD_VERSION = "noise-build/1"


@dataclass(frozen=True)
class NoiseBuildOptions:
    """variants None: every variant that can be built (abbreviations only with an inventory)."""

    seed: int = 0
    variants: tuple[str, ...] | None = None
    retries: int = 2
    limit: int | None = None
    kinds: tuple[str, ...] = KINDS
    abbreviations: tuple[str, ...] = ()
    min_frequency: float = abbr.MIN_FREQUENCY
    abbreviation_rules: str = "clinical"  # abbreviations.RULES: clinical, or the study's plain string match
    name: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ConfigError("--retries", "must be 0 or more")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit", "must be at least 1")
        if self.variants is not None:
            unknown = [v for v in self.variants if v not in CONDITIONS]
            if unknown or not self.variants:
                raise ConfigError("--variants", f"unknown or no variant ({', '.join(unknown)}); known: {', '.join(CONDITIONS)}")
        if self.abbreviation_rules not in abbr.RULES:
            raise ConfigError("--abbreviation-rules", f"'{self.abbreviation_rules}' is not allowed (allowed: {', '.join(abbr.RULES)})")
        bad = [k for k in self.kinds if k not in KINDS]
        if bad or not self.kinds:
            raise ConfigError("--ask", f"unknown question kind(s) {', '.join(bad)} (known: {', '.join(KINDS)})")


@dataclass
class Decision:
    """What happened to one input item: `skipped` (not a diagnosis case), `kept` (with the variants
    built; `dropped` names the variants that could not be, with why) or `dropped` (no variant)."""

    item_id: str
    status: str
    reason: str | None = None
    detail: str = ""
    variants: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    source: str | None = None
    checker: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if v not in (None, [], {}, "")}
        d.setdefault("status", self.status)
        return d


def prompt_hashes(checked: bool = False) -> dict[str, str]:
    out = {"redherring": redherring.prompt_hash(), "rewrite": rewrite.prompt_hash()}
    if checked:
        out |= {"redherring_replace": redherring.replace_prompt_hash(), "check": chk.prompt_hash()}
    return out


def check_specs(generator: ModelSpec | None, checker: ModelSpec | None) -> list[ModelSpec]:
    """The distinct specs to serve (generator first)."""
    specs = [s for s in (generator,) if s is not None]
    if checker is not None:
        if generator is not None and checker.label == generator.label and checker.identity() != generator.identity():
            raise ConfigError("--verify", f"the checker and the generator share the label '{generator.label}' but differ; give one a distinct label=")
        if generator is None or checker.label != generator.label:
            specs.append(checker)
    return specs


def plan_variants(options: NoiseBuildOptions) -> tuple[tuple[str, ...], list[str]]:
    """The variants to build and notes on the ones left out."""
    notes: list[str] = []
    if options.variants is None:
        chosen = list(CONDITIONS)
        if not options.abbreviations:
            chosen.remove(ABBREVIATIONS)
            notes.append("abbreviations not built: no inventory given (--abbreviations DIR_OR_TSV)")
    else:
        chosen = list(options.variants)
        if ABBREVIATIONS in chosen and not options.abbreviations:
            raise ConfigError("--abbreviations", "the abbreviations variant needs an inventory (TSV: abbreviation, sense, variation, CUI, frequency)")
    return tuple(c for c in CONDITIONS if c in chosen), notes


def build_noise(
    items: Sequence[Item] | Path | str,
    out: Path | str,
    generator: ModelSpec | None = None,
    options: NoiseBuildOptions = NoiseBuildOptions(),
    work_dir: Path | str | None = None,
    progress: StageProgress | None = None,
    source_format: str = "auto",
    checker: ModelSpec | None = None,
) -> BuildResult:
    """Build (or resume) a clinical-noise suite into `out`; `checker`: the model that checks what
    the generator wrote (`--verify`). See the module docstring."""
    t0 = time.perf_counter()
    out = Path(out)
    source_path = Path(items) if isinstance(items, (str, Path)) else None
    item_list = load_items_file(Path(items), source_format) if isinstance(items, (str, Path)) else list(items)
    ids = [it.id for it in item_list]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"duplicate item id {dup!r} in the items to build from")
    variants, notes = plan_variants(options)
    need_generator = any(v in GENERATED for v in variants)
    if need_generator and generator is None:
        raise ConfigError("--generator", f"the variants {', '.join(v for v in variants if v in GENERATED)} need a generator model")
    table = abbr.load_table(options.abbreviations, options.min_frequency, options.abbreviation_rules) if ABBREVIATIONS in variants else {}
    if checker is not None and not need_generator:
        notes.append("--verify: no checker call was needed (no variant built here comes from the generator)")
        checker = None
    specs = check_specs(generator, checker)
    cases, considered, decisions = _select_cases(item_list, options)
    made = _Generated(variants, cases)
    if need_generator:
        assert generator is not None
        work = Path(work_dir) if work_dir is not None else default_work_dir(out)
        run = {"kind": "build noise", "out": str(out), "seed": options.seed, "variants": list(variants)}
        with workspace(work, specs, run) as ws:  # one build per work directory
            gen = ws.models[0]
            ver = None if checker is None else (ws.models[1] if len(ws.models) > 1 else gen)
            _generate(ws.store, gen, ver, made, options, progress)
    made.drop_failed_herrings()
    suite_items, probes, replaced = _variants(made, table, options, generator, checker, decisions)
    ordered = [decisions[it.id] for it in considered]
    counts = _counts(item_list, cases, ordered, replaced, variants)
    manifest = _manifest(out, options, variants, counts, table, source_path, generator if need_generator else None, checker)
    suite = Suite(manifest, suite_items, probes)
    suite.save(out)
    report = build_report(suite, ordered, made.stages, variants, options, generator if need_generator else None, notes, time.perf_counter() - t0, checker)
    write_report(out, report, ordered)
    return BuildResult(out, suite, report, ordered)


def _select_cases(item_list: Sequence[Item], options: NoiseBuildOptions) -> tuple[list[Item], list[Item], dict[str, Decision]]:
    """The diagnosis cases to build (the first `limit`), the items considered up to the last of
    them, and a decision for each item skipped on the way."""
    decisions: dict[str, Decision] = {}
    cases: list[Item] = []
    considered: list[Item] = []
    for it, x in zip(item_list, diagnosis_cases(item_list, options.kinds)):
        if options.limit is not None and len(cases) >= options.limit:
            break  # the first `limit` cases, and the items skipped before them
        considered.append(it)
        if isinstance(x, CaseSkip):
            decisions[x.item_id] = Decision(x.item_id, "skipped", x.reason, x.detail, source=it.source)
        else:  # red herrings of an earlier build are not carried over: this build writes its own
            cases.append(x.model_copy(update={"meta": {k: v for k, v in x.meta.items() if k != "red_herrings"}}))
    return cases, considered, decisions


class _Generated:
    """What the generator (and the checker) wrote for the cases, and why a variant was dropped
    for a case (variant -> reason)."""

    def __init__(self, variants: Sequence[str], cases: Sequence[Item]):
        self.variants = tuple(variants)
        self.cases = list(cases)
        self.herring_variants = [v for v in variants if v in HERRING_VARIANTS]
        self.stages: dict[str, StageStats] = {}
        self.herrings: dict[str, Outcome] = {}
        self.notes: dict[str, str] = {}
        self.checks: dict[str, HerringCheck] = {}
        self.rewrite_checks: dict[str, str] = {}
        self.dropped: dict[str, dict[str, str]] = {c.id: {} for c in cases}
        self.points = {c.id: insertion_points(c.question) for c in cases} if self.herring_variants else {}
        for c in cases if self.herring_variants else ():
            if not self.points[c.id]:
                self.dropped[c.id]["redherring"] = "no_insertion_point: the case has no sentence boundary a sentence may follow"

    def drop_failed_herrings(self) -> None:
        for c in self.cases:
            o = self.herrings.get(c.id)
            if self.herring_variants and o is not None and not o.ok:
                self.dropped[c.id]["redherring"] = f"{o.code}: {o.detail}"


def _generate(store: Store, gen: ModelSpec, ver: ModelSpec | None, made: _Generated, options: NoiseBuildOptions, progress: StageProgress | None) -> None:
    """The generator's red herrings and rewrites (each checked by `ver` when given), into `made`.
    The two need none of each other's replies: in a batch mode both go out before the build waits."""
    cases, stages = made.cases, made.stages
    by_id = {c.id: c for c in cases}
    first = _first_tasks(made)

    def herrings() -> None:
        stages["redherring"] = StageStats()
        made.herrings = run_stage(store, gen, "red herrings", first["redherring"], options.retries, progress, stages["redherring"])
        if ver is not None:
            good = {cid: o.value for cid, o in made.herrings.items() if o.ok}
            checked, made.checks = chk.check_herrings(store, gen, ver, by_id, good, options.retries, progress, stages)
            made.herrings.update(checked)

    def rewrites() -> None:
        stages["rewrite"] = StageStats()
        written = run_stage(store, gen, "rewrite", first["rewrite"], options.retries, progress, stages["rewrite"])
        if ver is not None:
            good = {cid: o.value for cid, o in written.items() if o.ok}
            stages["rewrite-check"] = StageStats()
            written.update(chk.check_rewrites(store, ver, by_id, good, options.retries, progress, stages["rewrite-check"]))
        for c in cases:
            o = written[c.id]
            if o.ok and ver is not None:
                made.notes[c.id], made.rewrite_checks[c.id] = o.value
            elif o.ok:
                made.notes[c.id] = o.value
            else:
                made.dropped[c.id]["rewrite"] = f"{o.code}: {o.detail}"

    independent(*(step for name, step in (("redherring", herrings), ("rewrite", rewrites)) if name in first))


def _first_tasks(made: _Generated) -> dict[str, dict[str, Task]]:
    """The generator's first stages (stage -> case id -> task): a red-herring task per case with an
    insertion point and a rewrite task per case, as the variants ask; a stage with no task is left out."""
    out: dict[str, dict[str, Task]] = {}
    if made.herring_variants and (herrings := {c.id: redherring.task(c) for c in made.cases if made.points.get(c.id)}):
        out["redherring"] = herrings
    if REWRITE in made.variants and made.cases:
        out["rewrite"] = {c.id: rewrite.task(c) for c in made.cases}
    return out


def first_requests(
    items: Sequence[Item] | Path | str, generator: ModelSpec, options: NoiseBuildOptions = NoiseBuildOptions(), source_format: str = "auto"
) -> dict[str, CallRequest]:
    """The calls a build's first stages make (the red herrings and the rewrites), by request key:
    what a dry run counts. The re-asks and the checker's calls depend on replies."""
    item_list = load_items_file(Path(items), source_format) if isinstance(items, (str, Path)) else list(items)
    variants, _ = plan_variants(options)
    cases, _, _ = _select_cases(item_list, options)
    requests = (request_for(generator, t) for tasks in _first_tasks(_Generated(variants, cases)).values() for t in tasks.values())
    return {r.key: r for r in requests}


def _variants(
    made: _Generated,
    table: Mapping[str, Any],
    options: NoiseBuildOptions,
    generator: ModelSpec | None,
    checker: ModelSpec | None,
    decisions: dict[str, Decision],
) -> tuple[list[Item], list[NoiseProbe], Counter[tuple[str, str]]]:
    """Each case's probes (the variants that could be built), its decision, and the abbreviations
    substituted (sense, form) across the cases."""
    gen_label = generator.label if generator is not None else None
    chk_label = checker.label if checker is not None else None
    abbreviator = abbr.Abbreviator(table)
    replaced: Counter[tuple[str, str]] = Counter()
    suite_items: list[Item] = []
    probes: list[NoiseProbe] = []
    for c in made.cases:
        case = c
        built: list[NoiseProbe] = []
        o = made.herrings.get(c.id)
        if made.herring_variants and o is not None and o.ok:
            case = c.model_copy(update={"meta": {**c.meta, "red_herrings": list(o.value)}})
            rh = redherring.variant_probes(case, o.value, options.seed, made.herring_variants, gen_label, made.points[c.id])
            if chk_label is not None:
                rh = [p.model_copy(update={"meta": {**p.meta, "checker": chk_label}}) for p in rh]
            built += rh
        if ABBREVIATIONS in made.variants:
            text, reps = abbreviator.substitute(c.question)
            if reps:
                built.append(
                    NoiseProbe(
                        id=f"{c.id}:{ABBREVIATIONS}",
                        item_id=c.id,
                        family=FAMILY,
                        condition=ABBREVIATIONS,
                        parts={"text": text, "replacements": [r.as_dict() for r in reps]},
                        facets=facets_of(ABBREVIATIONS),
                    )
                )
                replaced.update((r.sense, table[r.sense.lower()].form) for r in reps)
            else:
                made.dropped[c.id]["abbreviations"] = "unchanged: no sense of the inventory occurs in the case"
        if REWRITE in made.variants and c.id in made.notes:
            p = rewrite.probe(c, made.notes[c.id], gen_label)
            if c.id in made.rewrite_checks:
                p = p.model_copy(update={"meta": {**p.meta, "checker": chk_label, "checker_reason": made.rewrite_checks[c.id]}})
            built.append(p)
        built.sort(key=lambda p: CONDITIONS.index(p.condition))
        conditions = [p.condition for p in built]
        seen = _checker_record(made.checks.get(c.id), made.rewrite_checks.get(c.id))
        if built:
            suite_items.append(case)
            probes += built
            decisions[c.id] = Decision(c.id, "kept", None, "", conditions, made.dropped[c.id], c.source, seen)
        else:
            why = "; ".join(f"{k}: {v}" for k, v in made.dropped[c.id].items()) or "no variant"
            decisions[c.id] = Decision(c.id, "dropped", "no_variant", why, [], made.dropped[c.id], c.source, seen)
    return suite_items, probes, replaced


def _manifest(
    out: Path,
    options: NoiseBuildOptions,
    variants: Sequence[str],
    counts: Mapping[str, object],
    table: Mapping[str, object],
    source_path: Path | None,
    generator: ModelSpec | None,
    checker: ModelSpec | None,
) -> SuiteManifest:
    """The suite's manifest; `generator` None when no variant built comes from one."""
    source = None if source_path is None else {"path": str(source_path), "sha256": sha256_file(source_path)}
    return SuiteManifest(
        name=options.name or out.name,
        family=FAMILY,
        seed=options.seed,
        created=created_stamp(),
        generator=None if generator is None else model_identity(generator),
        prompt_hashes=prompt_hashes(checker is not None) if generator is not None else {},
        counts=counts,
        description=options.description or f"clinical-noise suite ({', '.join(variants)}) built by medres {__version__}, seed {options.seed}",
        build={
            "tool": "medres build noise",
            "version": BUILD_VERSION,
            "medresilience": __version__,
            "variants": list(variants),
            "kinds": list(options.kinds),
            "retries": options.retries,
            "limit": options.limit,
            "herrings": HERRINGS,
            "abbreviation_inventories": [{"name": f.name, "sha256": sha256_file(f)} for f in abbr.inventory_files(options.abbreviations)] if table else [],
            "min_frequency": options.min_frequency if table else None,
            "abbreviation_rules": options.abbreviation_rules if table else None,
            **({"checker": model_identity(checker)} if checker is not None else {}),
        },
        source=source,
    )


def _checker_record(herrings: HerringCheck | None, rewrite_reason: str | None) -> dict[str, object]:
    """What the checker said about one case, for decisions.jsonl (empty without a checker)."""
    out: dict[str, object] = {}
    if herrings is not None:
        out["redherring"] = herrings.as_dict()
    if rewrite_reason is not None:
        out["rewrite"] = {"equivalent": True, "reason": rewrite_reason}
    return out


def checker_counts(decisions: Sequence[Decision], stages: Mapping[str, StageStats], checker: ModelSpec) -> dict[str, Any]:
    """The checker's work in numbers: sentences read, flagged and replaced, cases whose red herrings
    it passed or dropped, rewrites it passed or dropped, and replies it could not read."""
    herring_codes: Counter[str] = Counter()
    rewrite_codes: Counter[str] = Counter()
    checked = flagged = replaced = rounds = passed = 0
    rewrites_passed = 0
    for d in decisions:
        h = d.checker.get("redherring")
        if h is not None:
            checked += h["checked"]
            flagged += len(h["flagged"])
            replaced += h["replaced"]
            rounds = max(rounds, h["rounds"])
            why = d.dropped.get("redherring")
            if why is None:
                passed += 1
            else:
                herring_codes[why.split(":", 1)[0]] += 1
        if "rewrite" in d.checker:
            rewrites_passed += 1
        why = d.dropped.get("rewrite", "")
        if why.startswith(("checker_", "call_error: checking")):
            rewrite_codes[why.split(":", 1)[0]] += 1
    rewrite_stage = stages.get("rewrite-check")
    return {
        "model": checker.label,
        "redherring": {
            "cases": passed + sum(herring_codes.values()),
            "passed": passed,
            "dropped": dict(sorted(herring_codes.items())),
            "sentences_checked": checked,
            "sentences_flagged": flagged,
            "sentences_replaced": replaced,
            "max_rounds": rounds,
        },
        "rewrite": {
            "checked": rewrite_stage.units if rewrite_stage is not None else 0,
            "equivalent": rewrites_passed,
            "not_equivalent": rewrite_codes.get("checker_not_equivalent", 0),
            "failed": rewrite_codes.get("checker_failed", 0),
            "call_errors": rewrite_codes.get("call_error", 0),
        },
    }


def _counts(
    items: Sequence[Item], cases: Sequence[Item], decisions: Sequence[Decision], replaced: Counter[tuple[str, str]], variants: Sequence[str]
) -> dict[str, Any]:
    status = Counter(d.status for d in decisions)
    drops: dict[str, Counter[str]] = {}
    for d in decisions:
        for group, why in d.dropped.items():
            drops.setdefault(group, Counter())[why.split(":", 1)[0]] += 1
    out: dict[str, object] = {
        "input_items": len(items),
        "cases": len(cases),
        "skipped": status.get("skipped", 0),
        "kept": status.get("kept", 0),
        "dropped": status.get("dropped", 0),
        "variant_drops": {g: dict(sorted(c.items())) for g, c in sorted(drops.items())},
    }
    if ABBREVIATIONS in variants:
        # (not "abbreviations": the suite counts its probes per condition under the condition's name)
        out["abbreviation_replacements"] = sum(replaced.values())
        out["abbreviation_table"] = abbr.frequency_table(replaced)
    return out


# --------------------------------------------------------------------------- reports


def _reasons(decisions: Sequence[Decision], status: str) -> dict[str, int]:
    c = Counter(d.reason or "?" for d in decisions if d.status == status)
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def build_report(
    suite: Suite,
    decisions: Sequence[Decision],
    stages: Mapping[str, StageStats],
    variants: Sequence[str],
    options: NoiseBuildOptions,
    generator: ModelSpec | None,
    notes: Sequence[str],
    seconds: float,
    checker: ModelSpec | None = None,
) -> dict[str, Any]:
    drops: dict[str, Counter[str]] = {}
    for d in decisions:
        for group, why in d.dropped.items():
            drops.setdefault(group, Counter())[why.split(":", 1)[0]] += 1
    totals = StageStats()
    for s in stages.values():
        for k, v in s.as_dict().items():
            if k == "cost":
                if v is not None:
                    totals.cost = (totals.cost or 0.0) + v
            else:
                setattr(totals, k, getattr(totals, k) + v)
    call_errors = sum(1 for d in decisions for why in d.dropped.values() if why.startswith("call_error"))
    report: dict[str, Any] = {
        "suite": suite.manifest.name,
        "out": str(suite.path) if suite.path else None,
        "seed": options.seed,
        "generator": None if generator is None else generator.label,
        "checker": None if checker is None else checker_counts(decisions, stages, checker),
        "variants": list(variants),
        "items": {
            "input": len(decisions),
            "skipped": sum(1 for d in decisions if d.status == "skipped"),
            "cases": sum(1 for d in decisions if d.status != "skipped"),
            "kept": sum(1 for d in decisions if d.status == "kept"),
            "dropped": sum(1 for d in decisions if d.status == "dropped"),
            "probes": len(suite.probes),
        },
        "probes_by_variant": {v: sum(1 for p in suite.probes if p.condition == v) for v in variants},
        "skipped": _reasons(decisions, "skipped"),
        "dropped": _reasons(decisions, "dropped"),
        "variant_drops": {g: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) for g, c in sorted(drops.items())},
        "abbreviations": suite.manifest.counts.get("abbreviation_table", {}),
        "stages": {k: v.as_dict() for k, v in stages.items()},
        "totals": totals.as_dict(),
        "incomplete": bool(call_errors),
        "seconds": round(seconds, 3),
        "prompt_hashes": suite.manifest.prompt_hashes,
        "notes": list(notes),
    }
    if call_errors:
        report["notes"].append(f"{call_errors} variant group(s) were left out because calls failed; run the same command again to retry them")
    if generator is not None and checker is None:
        report["notes"].append(
            "red herrings and rewrites were checked by deterministic rules only (no checker model, --verify SPEC): review a sample before a benchmark run"
        )
    elif checker is not None:
        report["notes"].append(
            f"red herrings and rewrites were checked by the checker model {checker.label} (each sentence for "
            "clinical information, each rewrite for clinical equivalence); a model is not a clinician: review "
            "a sample before a benchmark run (the study had a clinician review 10%)"
        )
    return report


def report_markdown(report: Mapping[str, Any]) -> str:
    it = report["items"]
    lines = [
        f"# Build report: {report['suite']}",
        "",
        f"Generator `{report['generator'] or '—'}`; seed {report['seed']}; variants {', '.join(report['variants'])}; {report['seconds']:.1f} s.",
        "",
        f"{it['input']} items read: {it['skipped']} are not diagnosis questions; of {it['cases']} cases, **{it['kept']}** kept "
        f"({it['probes']} probes), {it['dropped']} dropped.",
        "",
    ]
    lines += [f"> {n}" for n in report.get("notes", ())]
    if report.get("notes"):
        lines.append("")
    lines += ["| Variant | probes |", "|---|---:|"] + [f"| {v} | {n} |" for v, n in report["probes_by_variant"].items()] + [""]
    for title, key in (("Skipped (reason)", "skipped"), ("Dropped cases (reason)", "dropped")):
        if report.get(key):
            lines += [f"| {title} | items |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in report[key].items()] + [""]
    for group, reasons in report.get("variant_drops", {}).items():
        lines += [f"| {group}: dropped for (reason) | cases |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in reasons.items()] + [""]
    c = report.get("checker")
    if c:
        h, r = c["redherring"], c["rewrite"]
        lines += [
            f"Checker `{c['model']}`:",
            "",
            "| Checker | count |",
            "|---|---:|",
            f"| red herrings: cases checked | {h['cases']} |",
            f"| red herrings: cases passed | {h['passed']} |",
            *[f"| red herrings: cases dropped, {k} | {v} |" for k, v in h["dropped"].items()],
            f"| red herrings: sentences checked | {h['sentences_checked']} |",
            f"| red herrings: sentences flagged as clinical (dropped) | {h['sentences_flagged']} |",
            f"| red herrings: sentences written to replace them | {h['sentences_replaced']} |",
            f"| rewrites checked | {r['checked']} |",
            f"| rewrites equivalent | {r['equivalent']} |",
            f"| rewrites not equivalent (dropped) | {r['not_equivalent']} |",
            f"| rewrites the checker could not judge | {r['failed']} |",
            "",
        ]
    if report.get("abbreviations"):
        lines += ["| Abbreviation (sense -> abbreviation) | replaced |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in list(report["abbreviations"].items())[:50]] + [""]
    if report.get("stages"):
        lines += stage_table(report["stages"], report["totals"])
    lines += ["Per-item decisions, with reasons: decisions.jsonl.", ""]
    return "\n".join(lines)


def write_report(out: Path, report: Mapping[str, object], decisions: Sequence[Decision]) -> None:
    write_build_files(out, report, report_markdown(report), (d.as_dict() for d in decisions))
