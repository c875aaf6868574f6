"""`medres review sample`: the units a rubric reviews, drawn as a stratified, seeded sample and
assigned to reviewers (one each, or two for the dual-rated share), written to a new review
database.

Units per rubric:
- A: one misleading bundle (an item with its option-aligned sentences, content type and
  provenance), the Type 2 probe's sentences or the Type 1 probes' together.
- B: one model response to a stressed probe (from the run's store: its reply, and the prompt as
  the item presents it, rendered by the suite's family with the run's options, without what a
  setting added: no caution text, retrieved evidence or monitor note, so a task does not tell
  which units ran under a mitigation; a rubric with `show_setting` shows the messages as sent);
  model, setting and the automatic score are kept apart, never shown.
- premise: one item (question and reference correction).
- noise: one perturbed case (a noise probe) beside its original.

Stratified sampling: proportional allocation over the strata (largest remainders, ties broken by
a seeded hash), units drawn inside a stratum in seeded-hash order; the dual-rated share is drawn
the same way inside the sample. Reviewers get balanced loads (dual pairs spread over reviewer
pairs) and each queue is in its own seeded order, so neighbouring tasks do not reveal a model."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..records import Item, Probe, Suite
from ..seeding import stable_hash
from .db import ReviewDB, ReviewError, UnitRow, valid_name
from .rubrics import Rubric, get_rubric

DEFAULT_STRATA = ("source", "content_type", "provenance")


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


# --------------------------------------------------------------------------- display blocks


def _item_blocks(item: Item, *, gold: bool = True) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"kind": "text", "title": "Question", "text": item.question}]
    if item.options:
        blocks.append({"kind": "options", "title": "Options", "options": [[k, v, bool(gold and k == item.answer)] for k, v in item.options.items()]})
    return blocks


def _taxonomy(content_type: str | None, provenance: str | None) -> list[list[str]]:
    facts = []
    try:
        from ..families.misleading.taxonomy import CONTENT_TYPES, PROVENANCES
    except ImportError:  # pragma: no cover - the family is part of the package
        CONTENT_TYPES, PROVENANCES = (), ()
    ct = {c.key: c for c in CONTENT_TYPES}.get(content_type or "")
    pv = {p.key: p for p in PROVENANCES}.get(provenance or "")
    if content_type:
        facts.append(["Content type", f"{ct.label}: {ct.definition}" if ct else content_type])
    if provenance:
        facts.append(["Provenance", f"{pv.label}: {pv.framing}" if pv else provenance])
    return facts


def _sentences(item: Item, context: Sequence[Any]) -> dict[str, Any]:
    rows = []
    order = {k: i for i, k in enumerate(item.options or {})}
    for s in sorted(context, key=lambda s: order.get(s.option, len(order))):
        tag = f"Option {s.option}: " + ("true (gold option)" if s.option == item.answer else "misleading")
        rows.append([tag, s.text])
    return {"kind": "list", "title": "Injected sentences", "items": rows}


# --------------------------------------------------------------------------- candidates per rubric


@dataclass
class Candidate:
    unit_id: str
    item_id: str | None
    strata: dict[str, Any]
    display: list[dict[str, Any]]
    hidden: dict[str, Any]


def _facets(probe: Probe) -> dict[str, Any]:
    return {k: v for k, v in probe.facet_values().items() if v is not None}


def _candidates_a(suite: Suite) -> list[Candidate]:
    bundles: dict[str, list[Probe]] = defaultdict(list)
    for p in suite.probes:
        bundles[getattr(p, "bundle_id", None) or p.id].append(p)
    out = []
    for bid, probes in bundles.items():
        item = suite.items[probes[0].item_id]
        full = next((p for p in probes if len(getattr(p, "context", ())) > 1), None)
        context = list(full.context) if full is not None else list({s.option: s for p in probes for s in getattr(p, "context", ())}.values())
        first = probes[0]
        facets = {k: v for k, v in _facets(first).items() if k != "target"}
        ct, pv = facets.get("content_type"), facets.get("provenance")
        display = _item_blocks(item)
        if context:
            display.append(_sentences(item, context))
        display.append({"kind": "facts", "title": "Labelled attack", "facts": _taxonomy(ct, pv)})
        strata = {"source": item.source, "subject": item.subject, **facets}
        hidden = {
            "bundle_id": bid,
            "probes": [p.id for p in probes],
            "generator": (suite.manifest.generator or {}).get("model"),
            "checks": first.meta.get("checks"),
        }
        out.append(Candidate(f"A-{stable_hash(bid)[:16]}", item.id, strata, display, hidden))
    return out


def _candidates_premise(suite: Suite) -> list[Candidate]:
    out = []
    for item in suite.items.values():
        display = _item_blocks(item)
        display.append({"kind": "text", "title": "Reference correction", "text": item.reference or "(this item has no reference correction)"})
        strata = {"source": item.source, "subject": item.subject}
        out.append(Candidate(f"P-{stable_hash(item.id)[:16]}", item.id, strata, display, {"item_id": item.id}))
    return out


def _candidates_noise(suite: Suite) -> list[Candidate]:
    out = []
    for p in suite.probes:
        item = suite.items[p.item_id]
        parts = getattr(p, "parts", {}) or {}
        display: list[dict[str, Any]] = [
            {"kind": "text", "title": "Original case", "text": item.question},
            {"kind": "text", "title": "Perturbed case", "text": str(parts.get("text", ""))},
        ]
        herrings = item.meta.get("red_herrings") if isinstance(item.meta.get("red_herrings"), list) else []
        inserted = []
        for ins in parts.get("insertions") or []:
            try:
                inserted.append(["Inserted", str(herrings[int(ins["herring"])])])
            except (KeyError, IndexError, ValueError, TypeError):
                continue
        if inserted and not parts.get("blank"):
            display.append({"kind": "list", "title": "Inserted sentences", "items": inserted})
        if item.options:
            display.append({"kind": "options", "title": "Options", "options": [[k, v, k == item.answer] for k, v in item.options.items()]})
        strata = {"source": item.source, "subject": item.subject, "condition": p.condition, **_facets(p)}
        out.append(Candidate(f"N-{stable_hash(p.id)[:16]}", item.id, strata, display, {"probe_id": p.id, "condition": p.condition}))
    return out


def _candidates_b(suite: Suite, run_dir: Path, show_reference: bool = False, show_setting: bool = False) -> list[Candidate]:
    from ..family import family_of
    from ..store import Store

    db = run_dir / "store.sqlite"
    if not db.is_file():
        raise InputError(run_dir, None, None, "not a run directory (store.sqlite missing)")
    probes = {p.id: p for p in suite.probes}
    out = []
    with Store(db) as store:
        run = store.latest_run()
        where, args = ("AND u.run = ?", [run]) if run else ("", [])
        rows = store.conn.execute(
            f"""SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.key, c.text,
                       s.label, s.status, s.value, r.messages
                FROM units u JOIN calls c ON c.key = u.key AND c.status = 'ok'
                LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring
                LEFT JOIN requests r ON r.key = u.key
                WHERE u.probe_id IS NOT NULL {where} ORDER BY u.model, u.unit_id""",
            args,
        ).fetchall()
        options = ((store.run_config(run) if run else None) or {}).get("options", {})
    import json

    family = family_of([suite.manifest.family])
    fopts = family.parse_options(options.get("family"))
    scoring_mode = options.get("scoring") or family.scorings[0]
    presented: dict[str, list[dict[str, str]]] = {}  # probe id -> the prompt as the item presents it

    for model, unit_id, item_id, probe_id, condition, setting, scoring, key, text, label, status, value, messages in rows:
        item = suite.items.get(item_id)
        probe = probes.get(probe_id)
        if item is None or probe is None:
            continue
        display = _item_blocks(item)
        if show_reference and item.reference:
            display.append({"kind": "text", "title": "Reference correction", "text": item.reference})
        context = getattr(probe, "context", ())
        if context:
            display.append(_sentences(item, context))
        if show_setting:
            try:
                msgs = json.loads(messages) if messages else []
            except json.JSONDecodeError:
                msgs = []
            title = "What the model was sent"
        else:
            if probe_id not in presented:
                presented[probe_id] = family.render(item, probe, scoring_mode, fopts)
            msgs, title = presented[probe_id], "The prompt, as the item presents it"
        if msgs:
            display.append(
                {"kind": "messages", "title": title, "messages": [[str(m.get("role", "")), str(m.get("content", ""))] for m in msgs if isinstance(m, dict)]}
            )
        display.append({"kind": "response", "title": "The model's response", "text": text or ""})
        auto_correct = None
        if status == "valid":
            auto_correct = "correct" if value is not None and float(value) >= 1.0 else "incorrect"
        elif status in ("invalid", "truncated"):  # unread: not correct, the study's rule
            auto_correct = "incorrect"
        strata = {"source": item.source, "subject": item.subject, "condition": condition, "model": model, "setting": setting, **_facets(probe)}
        hidden = {
            "model": model,
            "unit": unit_id,
            "key": key,
            "setting": setting,
            "scoring": scoring,
            "condition": condition,
            "probe_id": probe_id,
            "auto_label": label,
            "auto_status": status,
            "auto_correct": auto_correct,
        }
        out.append(Candidate(f"B-{stable_hash(model, unit_id)[:16]}", item.id, strata, display, hidden))
    return out


def candidates(rubric: Rubric, suite: Suite, run_dir: Path | None = None) -> list[Candidate]:
    if rubric.families and suite.manifest.family not in rubric.families:
        raise ReviewError(f"rubric {rubric.key} reviews {' or '.join(rubric.families)} suites; {suite.path or 'the suite'} is a {suite.manifest.family} suite")
    if rubric.needs_run:
        if run_dir is None:
            raise ReviewError(f"rubric {rubric.key} reviews model responses: name the run with --run DIR")
        cands = _candidates_b(
            suite, Path(run_dir), show_reference=bool(rubric.extra.get("show_reference")), show_setting=bool(rubric.extra.get("show_setting"))
        )
        conditions = rubric.extra.get("conditions")  # a rubric for some conditions only (premise-answer: presupposition)
        return [c for c in cands if c.hidden.get("condition") in conditions] if conditions else cands
    if rubric.key == "A":
        return _candidates_a(suite)
    if rubric.key == "noise":
        return _candidates_noise(suite)
    return _candidates_premise(suite)


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


def assign(units: Sequence[Candidate], dual_ids: set[str], reviewers: Sequence[str], seed: int) -> list[tuple[str, str, int, int]]:
    """(unit_id, reviewer, slot, position): one reviewer per unit, two for the dual ones, with
    balanced loads and evenly spread pairs; each reviewer's queue in its own seeded order."""
    load: Counter[str] = Counter({r: 0 for r in reviewers})
    pairs: Counter[tuple[str, str]] = Counter()
    picked: list[tuple[str, str, int]] = []
    for u in units:

        def rank(r: str, u: Candidate = u) -> tuple[int, str]:
            return (load[r], stable_hash(seed, "assign", u.unit_id, r))

        first = min(reviewers, key=rank)
        picked.append((u.unit_id, first, 0))
        load[first] += 1
        if u.unit_id in dual_ids:
            second = min(
                (r for r in reviewers if r != first),
                key=lambda r, u=u, first=first: (load[r], pairs[tuple(sorted((first, r)))], stable_hash(seed, "assign2", u.unit_id, r)),
            )
            picked.append((u.unit_id, second, 1))
            load[second] += 1
            pairs[tuple(sorted((first, second)))] += 1
    out = []
    for r in reviewers:
        mine = sorted((p for p in picked if p[1] == r), key=lambda p: stable_hash(seed, "queue", r, p[0]))
        out += [(uid, rev, slot, pos) for pos, (uid, rev, slot) in enumerate(mine)]
    return out


def sample_review(
    rubric_key: str,
    suite_dir: Path,
    out: Path,
    *,
    run_dir: Path | None = None,
    n: int = 100,
    strata: Sequence[str] = DEFAULT_STRATA,
    dual: float = 0.0,
    reviewers: Sequence[str] = (),
    seed: int = 0,
) -> SampleResult:
    """Draw the sample and write the review database at `out` (a new directory)."""
    rubric = get_rubric(rubric_key)
    reviewers = [valid_name(r) for r in reviewers]
    if not reviewers:
        raise ReviewError("name at least one reviewer: --reviewers alice,bob")
    if len(set(reviewers)) != len(reviewers):
        raise ReviewError(f"--reviewers names someone twice: {', '.join(reviewers)}")
    if not 0.0 <= dual <= 1.0:
        raise ReviewError(f"--dual is a share of the sample between 0 and 1, not {dual}")
    if dual > 0 and len(reviewers) < 2:
        raise ReviewError("dual rating needs at least two reviewers")
    if n < 1:
        raise ReviewError(f"--n must be at least 1, not {n}")
    if (Path(out) / "review.sqlite").exists():
        raise ReviewError(f"{Path(out) / 'review.sqlite'} already exists: choose another --out (a review is never overwritten)")
    suite = Suite.load(suite_dir)
    cands = candidates(rubric, suite, run_dir)
    if not cands:
        raise ReviewError(f"nothing to review: the suite{' and run' if run_dir else ''} hold no {rubric.unit}")
    known = sorted({k for c in cands for k in c.strata})
    strata = [s.strip() for s in strata if s.strip()]
    unknown = [s for s in strata if s not in known]
    notes = []
    if unknown:
        raise ReviewError(f"--strata names {', '.join(unknown)}, which rubric {rubric.key} units do not have (they have: {', '.join(known)})")
    chosen = stratified(cands, n, strata, seed)
    if n > len(cands):
        notes.append(f"asked for {n} units, the population holds {len(cands)}: all are sampled")
    n_dual = int(round(dual * len(chosen)))
    dual_ids = {c.unit_id for c in stratified(chosen, n_dual, strata, seed, purpose="dual")}
    tasks = assign(chosen, dual_ids, reviewers, seed)
    pop = Counter(_key(c, strata) for c in cands)
    got = Counter(_key(c, strata) for c in chosen)
    table = [(k, pop[k], got.get(k, 0)) for k in sorted(pop)]
    meta = {
        "rubric": rubric.key,
        "rubric_def": rubric.as_dict(),
        "suite": str(Path(suite_dir).resolve()),
        "suite_name": suite.manifest.name,
        "suite_version": suite.manifest.version,
        "suite_family": suite.manifest.family,
        "suite_checksums": suite.manifest.checksums,
        "run": str(Path(run_dir).resolve()) if run_dir else None,
        "n_requested": n,
        "n_sampled": len(chosen),
        "population": len(cands),
        "strata": list(strata),
        "dual": dual,
        "n_dual": len(dual_ids),
        "reviewers": list(reviewers),
        "seed": seed,
        "allocation": [{"stratum": list(k), "population": p, "sampled": s} for k, p, s in table],
    }
    rows = [UnitRow(c.unit_id, c.item_id, c.strata, c.display, c.hidden) for c in chosen]
    db = ReviewDB.create(out, meta, rows, tasks, reviewers)
    db.close()
    per = Counter(t[1] for t in tasks)
    return SampleResult(Path(out), rubric.key, len(cands), len(chosen), len(dual_ids), {r: per.get(r, 0) for r in reviewers}, table, notes)
