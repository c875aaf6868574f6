"""`audit_run`: a label audit of a finished run. It draws the seeded sample (audit.sample), gets
a second reading of each sampled unit from a reader model (audit.reader; its calls stored in the
run's store and resumed) and/or from people (audit.people: a `reading` review written for them, or
their rated review read back), and summarises what it finds (audit.summary) with the
label-corrected headline rates (audit.corrected).

It writes `audit.json` in the run directory (the design, every sampled unit with its stratum,
inclusion probability and readings) and the summary as the `audit` block of results.json (the CLI
table and the report read it there). The run directory is locked while the audit writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..calls import ProgressFn, RunStats
from ..family import Family
from ..models.spec import ModelSpec
from ..records import Item
from ..runtime import event_loop
from ..runtime.errors import ConfigError, InputError
from ..runtime.fileio import atomic_write
from ..runtime.lock import RunLock
from ..runtime.seeding import stable_hash
from ..scoring.judge import JudgeScorer
from ..store import Store, UnitRecord
from ..suite import Suite
from ..view.address import VIEWER_URL
from .people import people_readings, write_review
from .reader import ReaderModel, SecondReading, read_sample
from .sample import FIXED, READ_STATUSES, TIER_WEIGHT, AuditUnit, draw, population, reference_pairs, settled_status, strata_sizes
from .summary import summarise_reader

DESIGN = (
    "stratified by model, setting, condition and tier (unread, extracted, flip, stressed, reference); n allocated in "
    "proportion to tier weight x stratum size, at least one unit per stratum when n allows; drawn in seeded-hash order; "
    "each unit weighted by N_h / n_h"
)


@dataclass
class AuditResult:
    block: dict[str, Any]
    units: list[AuditUnit]
    stats: RunStats = field(default_factory=RunStats)
    review_tasks: int = 0
    review_rubric: str | None = None  # the review written for people: reading or verdict

    @property
    def failed_calls(self) -> int:
        """Reader calls that failed or were not sent: the audit could not read those units."""
        return self.stats.errors + self.stats.not_run


@dataclass
class _Inputs:
    run_id: str
    identity: str
    items: dict[str, Item]
    reference: str | None
    pop: list[AuditUnit]
    extract_label: str | None
    family: Family
    fixed: list[AuditUnit] = field(default_factory=list)  # judged units with nothing to judge: never sampled
    judges: dict[str, JudgeScorer] = field(default_factory=dict)  # a judged unit's key -> the run's judge of it


def _judges(records: list[UnitRecord], suite: Suite, family: Family, options: BaseModel) -> dict[str, JudgeScorer]:
    """The run's judge scorer of each unit the family scores by a judge (answer key -> scorer)."""
    from ..scoring.judge import JudgeScorer

    probes = {p.id: p for p in suite.probes}
    out: dict[str, JudgeScorer] = {}
    for r in records:
        item = suite.items.get(r.item_id)
        if item is None or r.key in out or settled_status(r) not in READ_STATUSES:
            continue
        try:
            sc = family.evaluation.scorer(item, probes.get(r.probe_id) if r.probe_id else None, r.scoring, options)
        except (ConfigError, ValueError):
            continue  # no judge the run could have used: the unit is not judged
        if isinstance(sc, JudgeScorer):
            out[r.key] = sc
    return out


def _inputs(store: Store, run_dir: Path, suite: Suite | None) -> _Inputs:
    from ..family import family_of
    from ..run.run_suite import find_run_suite

    run = store.latest_run()
    cfg = store.run_config(run) if run else None
    if run is None or cfg is None:
        raise InputError(run_dir, None, None, "the store holds no run to audit")
    if suite is None:
        suite, missing = find_run_suite(run_dir, cfg.data)
        if suite is None:
            raise InputError(run_dir, None, None, f"the run's suite is needed for its options and keys: {missing}")
    family = family_of([suite.manifest.family])
    items = suite.items
    records = list(store.unit_records(run))
    judges = _judges(records, suite, family, family.parse_options(cfg.options.get("family")))
    facet = family.outcomes.target
    targets = {p.id: p.facet_values().get(facet) for p in suite.probes} if facet else {}
    everyone = population(records, items, family.outcomes.reference, targets=targets, judged=lambda r: r.key in judges)
    pop = [u for u in everyone if u.tier != FIXED]
    identity = stable_hash({k: v for k, v in cfg.data.items() if k != "run_id"})[:16]
    extract = (cfg.options.get("extract") or {}).get("label") if isinstance(cfg.options.get("extract"), dict) else None
    fixed = [u for u in everyone if u.tier == FIXED]
    return _Inputs(run, identity, items, family.outcomes.reference, pop, extract, family, fixed, judges)


def audit_run(
    run_dir: Path | str,
    n: int,
    *,
    seed: int = 0,
    reader: ModelSpec | None = None,
    people: Path | str | None = None,
    review_out: Path | str | None = None,
    reviewers: tuple[str, ...] = (),
    raters: int = 1,
    suite: Suite | None = None,
    viewer: str | None = VIEWER_URL,
    progress: ProgressFn | None = None,
) -> AuditResult:
    """Audit the latest run in `run_dir` on a sample of `n` units (see the module)."""
    run_dir = Path(run_dir)
    if n < 1:
        raise ConfigError("--audit", f"the audit's sample size must be at least 1, not {n}")
    if reader is None and people is None and review_out is None:
        raise ConfigError("medres audit", "name a second reader: --reader SPEC (a model), --people REVIEW (a rated reading review) or --review-out DIR")
    if not (run_dir / "store.sqlite").is_file():
        raise InputError(run_dir, None, None, "not a run directory (store.sqlite missing)")
    if reader is not None:
        reader.api_key()
    with RunLock(run_dir), Store(run_dir / "store.sqlite") as store:
        inp = _inputs(store, run_dir, suite)
        units = draw(inp.pop, n, inp.identity, seed)
        pairs = _pairs(units, inp)
        read = units + pairs  # a sampled stressed unit's reference pair is read too (a flip reads both)
        stats, sources = RunStats(), {}
        if reader is not None:
            rm = ReaderModel(reader)
            stats, readings = event_loop.run(read_sample(read, inp.items, rm, store, progress, inp.judges))
            sources[f"model:{reader.label}"] = readings
        tasks, kind = 0, None
        if review_out is not None:
            replies = {k: t for k, (t, _) in store.replies(u.key for u in read).items()}
            tasks, kind = write_review(Path(review_out), read, inp.items, replies, reviewers, run_dir=run_dir, seed=seed, raters=raters, judges=inp.judges)
        if people is not None:
            keys = {u.key for u in read}
            sources["people"] = {k: r for k, r in people_readings(people).items() if k in keys}
    block = _block(inp, units, sources, n, seed, viewer, reader)
    _write(run_dir, block, units, sources)
    return AuditResult(block, units, stats, tasks, kind)


def _pairs(units: list[AuditUnit], inp: _Inputs) -> list[AuditUnit]:
    """The reference units of the sampled stressed units that the sample does not hold itself."""
    refs = reference_pairs(inp.pop, inp.reference)
    have = {u.key for u in units}
    out: dict[str, AuditUnit] = {}
    for u in units:
        r = refs.get(u.key)
        if r is not None and r.key not in have:
            out.setdefault(r.key, r)
    return list(out.values())


def _block(
    inp: _Inputs, units: list[AuditUnit], sources: dict[str, dict[str, SecondReading]], n: int, seed: int, viewer: str | None, reader: ModelSpec | None
) -> dict[str, Any]:
    from .corrected import corrected_rates

    sizes = strata_sizes(inp.pop)
    taken = strata_sizes(units)
    notes = []
    if reader is not None and inp.extract_label is not None and reader.label == inp.extract_label:
        notes.append(f"the reader {reader.label} is the run's extraction model: its reading of an extracted unit is not a second opinion")
    out: dict[str, Any] = {
        "run_id": inp.run_id,
        "seed": seed,
        "n_requested": n,
        "n_sampled": len(units),
        "population": len(inp.pop),
        "design": DESIGN,
        "tier_weight": dict(TIER_WEIGHT),
        "reference_condition": inp.reference,
        "strata": [{"model": k[0], "setting": k[1], "condition": k[2], "tier": k[3], "N": size, "n": taken.get(k, 0)} for k, size in sorted(sizes.items())],
        "readers": {},
        "notes": notes,
    }
    judge_labels = sorted({j.spec.label for j in inp.judges.values()})
    if reader is not None and reader.label in judge_labels:
        notes.append(f"the reader {reader.label} is the run's judge model: its verdicts on the judged units are the run's own, not a second opinion")
    if inp.fixed:
        notes.append(f"{len(inp.fixed)} judged units had nothing to judge (no verdict was asked): no second reader is asked, each counts with its own reading")
    pairs = reference_pairs([*inp.pop, *inp.fixed], inp.reference)
    for name, readings in sources.items():
        found = summarise_reader(units, readings, viewer)
        found["corrected"] = corrected_rates(inp.pop, units, readings, pairs, inp.family.measures.rates, inp.fixed)
        out["readers"][name] = found
    return out


def _write(run_dir: Path, block: Mapping[str, object], units: list[AuditUnit], sources: dict[str, dict[str, SecondReading]]) -> None:
    """audit.json (every sampled unit with its readings) and the `audit` block of results.json."""
    from ..run.evaluation import write_results
    from ..run.results import Results

    rows = []
    for u in units:
        d = u.as_dict()
        d["readings"] = {
            name: None if u.key not in r else {"label": r[u.key].label, "status": r[u.key].status, "reason": r[u.key].reason} for name, r in sources.items()
        }
        rows.append(d)
    with atomic_write(run_dir / "audit.json") as fh:
        json.dump({**block, "units": rows}, fh, indent=2)
    if (run_dir / "results.json").is_file():
        res = Results.load(run_dir / "results.json")
        write_results(run_dir, res.model_copy(update={"audit": block}))
