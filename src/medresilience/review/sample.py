"""`medres review sample`: the units a rubric reviews, drawn as a stratified, seeded sample and
assigned to reviewers (`raters` distinct reviewers each, one more for the dual-rated share),
written to a new review database.

Units: a rubric of items says how its units are drawn from a suite (`ReviewRubric.candidates`, declared
by the family it belongs to); the response rubric B draws one unit per model response to a
stressed probe (from the run's store: its reply, and the prompt as the item presents it, rendered
by the suite's family with the run's options, without what a setting added: no caution text,
retrieved evidence or monitor note, so a task does not tell which units ran under a mitigation; a
rubric with `show_setting` shows the messages as sent; what the stress added is shown as the
family declares, `Family.review.blocks`); model, setting and the automatic score are kept apart,
never shown. The default strata are the rubric's, else the items' source and the family's facets.

Stratified sampling: proportional allocation over the strata (largest remainders, ties broken by
a seeded hash), units drawn inside a stratum in seeded-hash order; or fixed quotas (`--quota
KEY=VALUE:N,...`, as the MedMisBench review fixed its numbers by source and model): each quota's
units drawn from its cell, proportionally over the strata inside it. The dual-rated share is drawn
the same way inside the sample. Reviewers get balanced loads (the reviewers of a unit spread over
reviewer pairs) and each queue is in its own seeded order, so neighbouring tasks do not reveal a
model."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.errors import InputError
from ..runtime.seeding import stable_hash
from ..suite import Suite
from .answers import read_wide
from .db import ReviewDB, ReviewError, UnitRow, valid_name
from .rubrics import ReviewRubric, get_rubric
from .units import Candidate, item_blocks, probe_facets


@dataclass
class SampleResult:
    path: Path
    rubric: str
    population: int
    units: int
    dual: int
    tasks: dict[str, int]
    strata: list[tuple[tuple[str, ...], int, int]]  # (stratum values, population, sampled)
    notes: list[str] = field(default_factory=list)
    raters: int = 1


# --------------------------------------------------------------------------- display blocks


# --------------------------------------------------------------------------- candidates per rubric


def _candidates_b(suite: Suite, run_dir: Path, show_reference: bool = False, show_setting: bool = False) -> list[Candidate]:
    from ..family import family_of
    from ..store import Store

    db = run_dir / "store.sqlite"
    if not db.is_file():
        raise InputError(run_dir, None, None, "not a run directory (store.sqlite missing)")
    probes = {p.id: p for p in suite.probes}
    out = []
    with Store.read_only(db) as store:
        run = store.latest_run()
        rows = list(store.unit_results(run, answered_probes=True, text=True, messages=True))
        cfg = store.run_config(run) if run else None
    options = cfg.data.get("options", {}) if cfg is not None else {}

    family = family_of([suite.manifest.family])
    fopts = family.parse_options(options.get("family"))
    scoring_mode = options.get("scoring") or family.evaluation.scorings[0]
    presented: dict[str, list[dict[str, str]]] = {}  # probe id -> the prompt as the item presents it

    for row in rows:
        item = suite.items.get(row.item_id)
        probe = probes.get(row.probe_id) if row.probe_id is not None else None
        if item is None or probe is None:
            continue
        display = item_blocks(item)
        if show_reference and item.reference:
            display.append({"kind": "text", "title": "Reference correction", "text": item.reference})
        display += family.review.blocks(item, probe)  # what the stress added, as the family shows it
        if show_setting:
            try:
                msgs = json.loads(row.messages) if row.messages else []
            except json.JSONDecodeError:
                msgs = []
            title = "What the model was sent"
        else:
            if probe.id not in presented:
                presented[probe.id] = family.evaluation.render(item, probe, scoring_mode, fopts)
            msgs, title = presented[probe.id], "The prompt, as the item presents it"
        if msgs:
            display.append(
                {"kind": "messages", "title": title, "messages": [[str(m.get("role", "")), str(m.get("content", ""))] for m in msgs if isinstance(m, dict)]}
            )
        display.append({"kind": "response", "title": "The model's response", "text": row.text or ""})
        auto_correct = None
        if row.status == "valid":
            auto_correct = "correct" if row.value is not None and float(row.value) >= 1.0 else "incorrect"
        elif row.status in ("invalid", "truncated"):  # unread: not correct, the study's rule
            auto_correct = "incorrect"
        strata = {"source": item.source, "subject": item.subject, "condition": row.condition, "model": row.model, "setting": row.setting, **probe_facets(probe)}
        hidden = {
            "model": row.model,
            "unit": row.unit_id,
            "key": row.key,
            "setting": row.setting,
            "scoring": row.scoring,
            "condition": row.condition,
            "probe_id": row.probe_id,
            "auto_label": row.label,
            "auto_status": row.status,
            "auto_correct": auto_correct,
        }
        out.append(Candidate(f"B-{stable_hash(row.model, row.unit_id)[:16]}", item.id, strata, display, hidden))
    return out


def candidates(
    rubric: ReviewRubric, suite: Suite | None, run_dir: Path | None = None, answers: Path | None = None, sources: Sequence[str] | None = None
) -> list[Candidate]:
    """The units a rubric can review; `sources`: `answers` is a wide CSV with these answer columns
    (review.answers), given to the rubric as read."""
    if sources is not None and not rubric.extra.get("answer_display"):
        raise ReviewError(f"rubric {rubric.key} reads no wide answers file: drop --sources")
    if rubric.extra.get("answers"):  # units from a file of answers, not from a suite
        if answers is None:
            raise ReviewError(f"rubric {rubric.key} reads its units from a CSV: name it with --answers FILE (or --pairs FILE)")
        if rubric.candidates is None:
            raise ReviewError(f"rubric {rubric.key} reads its units from a CSV but declares no reader of it")
        if sources is not None:
            return rubric.candidates(suite, answers=read_wide(answers, list(sources)))
        return rubric.candidates(suite, answers=Path(answers))
    if answers is not None:
        raise ReviewError(f"rubric {rubric.key} reviews a suite's units, not answers from a file: drop --answers")
    if suite is None:
        raise ReviewError(f"rubric {rubric.key} reviews a suite's units: name it with --suite DIR")
    if rubric.families and suite.manifest.family not in rubric.families:
        raise ReviewError(f"rubric {rubric.key} reviews {' or '.join(rubric.families)} suites; {suite.path or 'the suite'} is a {suite.manifest.family} suite")
    if rubric.needs_run:
        if run_dir is None:
            raise ReviewError(f"rubric {rubric.key} reviews model responses: name the run with --run DIR")
        if rubric.candidates is not None:  # a rubric of a run's own units, declared with its reader (a family's)
            return rubric.candidates(suite, run_dir=Path(run_dir))
        cands = _candidates_b(
            suite, Path(run_dir), show_reference=bool(rubric.extra.get("show_reference")), show_setting=bool(rubric.extra.get("show_setting"))
        )
        conditions = rubric.extra.get("conditions")  # a rubric for some conditions only
        return [c for c in cands if c.hidden.get("condition") in conditions] if conditions else cands
    if rubric.candidates is None:
        raise ReviewError(f"rubric {rubric.key} declares no units to draw from a suite")
    return rubric.candidates(suite)


def default_strata(rubric: ReviewRubric, suite: Suite) -> tuple[str, ...]:
    """The strata a sample is drawn over when none are named: the rubric's, else the items'
    source and the family's facets."""
    if rubric.strata is not None:
        return rubric.strata
    from ..family import get

    return ("source", *get(suite.manifest.family).probes.facets)


# --------------------------------------------------------------------------- sampling and assignment


def _key(c: Candidate, strata: Sequence[str]) -> tuple[str, ...]:
    return tuple("—" if c.strata.get(s) is None else str(c.strata.get(s)) for s in strata)


def stratified(cands: Sequence[Candidate], n: int, strata: Sequence[str], seed: int, purpose: str = "sample") -> list[Candidate]:
    """A proportional stratified sample of n (all when n >= len), in seeded order."""
    groups: dict[tuple[str, ...], list[Candidate]] = defaultdict(list)
    for c in cands:
        groups[_key(c, strata)].append(c)
    total = len(cands)
    n = max(0, min(n, total))
    quotas = {k: n * len(v) / total for k, v in groups.items()} if total else {}
    alloc = {k: int(math.floor(q)) for k, q in quotas.items()}
    rest = n - sum(alloc.values())
    order = sorted(groups, key=lambda k: (-(quotas[k] - alloc[k]), stable_hash(seed, purpose, "stratum", k)))
    for k in order[:rest]:
        alloc[k] += 1
    chosen = []
    for k, members in groups.items():
        members = sorted(members, key=lambda c: stable_hash(seed, purpose, c.unit_id))
        chosen += members[: alloc[k]]
    return sorted(chosen, key=lambda c: stable_hash(seed, purpose, "order", c.unit_id))


@dataclass(frozen=True)
class Quota:
    """A fixed number of units drawn from one cell: the units whose strata hold every KEY=VALUE."""

    where: tuple[tuple[str, str], ...]
    n: int

    def matches(self, c: Candidate) -> bool:
        return all(c.strata.get(k) is not None and str(c.strata.get(k)) == v for k, v in self.where)

    def label(self) -> str:
        return "+".join(f"{k}={v}" for k, v in self.where)


def parse_quotas(text: str) -> list[Quota]:
    """`KEY=VALUE:N,...` (a cell of several strata joins them with `+`: `source=medqa+model=m1:10`)."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        cell, sep, count = part.rpartition(":")
        conds = [c.partition("=") for c in cell.split("+")] if sep else []
        if not sep or not count.strip().isdigit() or not conds or any(not k.strip() or not eq or not v.strip() for k, eq, v in conds):
            raise ReviewError(f"--quota entry '{part}' is not KEY=VALUE:N (several strata joined with +)")
        out.append(Quota(tuple((k.strip(), v.strip()) for k, _, v in conds), int(count)))
    if not out:
        raise ReviewError("--quota names no cell: KEY=VALUE:N,...")
    return out


def by_quota(cands: Sequence[Candidate], quotas: Sequence[Quota], strata: Sequence[str], seed: int) -> tuple[list[Candidate], list[str]]:
    """Each quota's units drawn from its cell (proportionally over `strata` inside it), in seeded
    order; the notes say which cells held fewer units than their quota."""
    notes, chosen = [], []
    for q in quotas:
        cell = [c for c in cands if q.matches(c)]
        for other in quotas:
            if other is not q and any(other.matches(c) for c in cell):
                raise ReviewError(f"--quota cells {q.label()} and {other.label()} overlap: a unit may belong to one cell only")
        if not cell:
            raise ReviewError(f"--quota {q.label()}: no unit of the population has it")
        if q.n > len(cell):
            notes.append(f"quota {q.label()} asks for {q.n} units, the cell holds {len(cell)}: all are sampled")
        chosen += stratified(cell, q.n, strata, seed, purpose=f"quota {q.label()}")
    return sorted(chosen, key=lambda c: stable_hash(seed, "sample", "order", c.unit_id)), notes


def assign(units: Sequence[Candidate], dual_ids: set[str], reviewers: Sequence[str], seed: int, raters: int = 1) -> list[tuple[str, str, int, int]]:
    """(unit_id, reviewer, slot, position): `raters` distinct reviewers per unit (one more for the
    dual ones), with balanced loads and evenly spread pairs (each further reviewer is the least
    loaded, then the one paired least often with those already chosen); each reviewer's queue in
    its own seeded order."""
    load: Counter[str] = Counter({r: 0 for r in reviewers})
    pairs: Counter[tuple[str, str]] = Counter()
    picked: list[tuple[str, str, int]] = []
    for u in units:
        chosen: list[str] = []
        for slot in range(raters + (1 if u.unit_id in dual_ids else 0)):
            purpose = "assign" if slot == 0 else ("assign2" if slot == 1 else f"assign{slot + 1}")

            def rank(r: str, u: Candidate = u, chosen: list[str] = chosen, purpose: str = purpose) -> tuple[int, int, str]:
                return (load[r], sum(pairs[(min(c, r), max(c, r))] for c in chosen), stable_hash(seed, purpose, u.unit_id, r))

            r = min((r for r in reviewers if r not in chosen), key=rank)
            picked.append((u.unit_id, r, slot))
            load[r] += 1
            pairs.update((min(c, r), max(c, r)) for c in chosen)
            chosen.append(r)
    out = []
    for r in reviewers:
        mine = sorted((p for p in picked if p[1] == r), key=lambda p: stable_hash(seed, "queue", r, p[0]))
        out += [(uid, rev, slot, pos) for pos, (uid, rev, slot) in enumerate(mine)]
    return out


def _panel(reviewers: Sequence[str], dual: float, raters: int) -> list[str]:
    """The reviewers' names, checked against the design asked: `raters` distinct reviewers per unit,
    one more for the `dual` share."""
    reviewers = [valid_name(r) for r in reviewers]
    if not reviewers:
        raise ReviewError("name at least one reviewer: --reviewers alice,bob")
    if len(set(reviewers)) != len(reviewers):
        raise ReviewError(f"--reviewers names someone twice: {', '.join(reviewers)}")
    if not 0.0 <= dual <= 1.0:
        raise ReviewError(f"--dual is a share of the sample between 0 and 1, not {dual}")
    if dual > 0 and len(reviewers) < 2:
        raise ReviewError("dual rating needs at least two reviewers")
    if raters < 1:
        raise ReviewError(f"--raters must be at least 1, not {raters}")
    if raters + (1 if dual > 0 else 0) > len(reviewers):
        raise ReviewError(
            f"{raters} raters per unit{' plus one for the dual share' if dual > 0 else ''} needs as many distinct reviewers; --reviewers names {len(reviewers)}"
        )
    return reviewers


def sample_review(
    rubric_key: str,
    suite_dir: Path | None,
    out: Path,
    *,
    run_dir: Path | None = None,
    answers: Path | None = None,
    sources: Sequence[str] | None = None,
    n: int = 100,
    strata: Sequence[str] | None = None,
    dual: float = 0.0,
    reviewers: Sequence[str] = (),
    seed: int = 0,
    raters: int = 1,
    quotas: Sequence[Quota] | str | None = None,
) -> SampleResult:
    """Draw the sample and write the review database at `out` (a new directory): `n` units
    allocated proportionally over the strata, or, with `quotas`, each quota's number from its
    cell; `raters` distinct reviewers per unit (one more for the `dual` share)."""
    rubric = get_rubric(rubric_key)
    reviewers = _panel(reviewers, dual, raters)
    if isinstance(quotas, str):
        quotas = parse_quotas(quotas)
    if n < 1:
        raise ReviewError(f"--n must be at least 1, not {n}")
    if (Path(out) / "review.sqlite").exists():
        raise ReviewError(f"{Path(out) / 'review.sqlite'} already exists: choose another --out (a review is never overwritten)")
    suite = Suite.load(suite_dir) if suite_dir is not None else None
    cands = candidates(rubric, suite, run_dir, answers, sources)
    if not cands:
        raise ReviewError(f"nothing to review: the suite{' and run' if run_dir else ''} hold no {rubric.unit}")
    known = sorted({k for c in cands for k in c.strata})
    if strata is None:  # the default: the strata its units have
        strata = [s for s in (rubric.strata if suite is None else default_strata(rubric, suite)) or () if s in known]
    strata = [s.strip() for s in strata if s.strip()]
    unknown = [s for s in strata if s not in known]
    notes: list[str] = []
    if unknown:
        raise ReviewError(f"--strata names {', '.join(unknown)}, which rubric {rubric.key} units do not have (they have: {', '.join(known)})")
    if quotas:
        unnamed = sorted({k for q in quotas for k, _ in q.where} - set(known))
        if unnamed:
            raise ReviewError(f"--quota names {', '.join(unnamed)}, which rubric {rubric.key} units do not have (they have: {', '.join(known)})")
        chosen, notes = by_quota(cands, quotas, strata, seed)
    else:
        chosen = stratified(cands, n, strata, seed)
        if n > len(cands):
            notes.append(f"asked for {n} units, the population holds {len(cands)}: all are sampled")
    n_dual = int(round(dual * len(chosen)))
    dual_ids = {c.unit_id for c in stratified(chosen, n_dual, strata, seed, purpose="dual")}
    tasks = assign(chosen, dual_ids, reviewers, seed, raters)
    pop = Counter(_key(c, strata) for c in cands)
    got = Counter(_key(c, strata) for c in chosen)
    table = [(k, pop[k], got.get(k, 0)) for k in sorted(pop)]
    meta = {
        "rubric": rubric.key,
        "rubric_def": rubric.as_dict(),
        "suite": str(Path(suite_dir).resolve()) if suite_dir is not None else None,
        "suite_name": suite.manifest.name if suite is not None else None,
        "suite_version": suite.manifest.version if suite is not None else None,
        "suite_family": suite.manifest.family if suite is not None else None,
        "suite_checksums": suite.manifest.checksums if suite is not None else None,
        "answers": str(Path(answers).resolve()) if answers is not None else None,
        "run": str(Path(run_dir).resolve()) if run_dir else None,
        "n_requested": n,
        "n_sampled": len(chosen),
        "population": len(cands),
        "strata": list(strata),
        "dual": dual,
        "raters": raters,
        "quotas": [{"cell": dict(q.where), "n": q.n} for q in quotas or ()],
        "n_dual": len(dual_ids),
        "reviewers": list(reviewers),
        "seed": seed,
        "allocation": [{"stratum": list(k), "population": p, "sampled": s} for k, p, s in table],
    }
    rows = [UnitRow(c.unit_id, c.item_id, c.strata, c.display, c.hidden) for c in chosen]
    db = ReviewDB.create(out, meta, rows, tasks, reviewers)
    db.close()
    per = Counter(t[1] for t in tasks)
    return SampleResult(Path(out), rubric.key, len(cands), len(chosen), len(dual_ids), {r: per.get(r, 0) for r in reviewers}, table, notes, raters)
