"""A new suite version from clinicians' ratings: what the rubric's `suite_actions` say (drop an
item, drop a probe, move an item's probes to another condition) is applied where the reviewers
of a unit agree by the chosen rule, and the result is written as a new suite directory whose
manifest names the suite and the review it came from. The reviewed suite is never changed.

Rules over a unit's rated tasks (skipped ones do not vote): `any` (one reviewer is enough),
`all` (every reviewer who rated it), `majority` (more than half of them). A unit nobody rated
changes nothing."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..records import Item, Probe
from ..runtime.fileio import atomic_write, write_jsonl
from ..runtime.seeding import stable_hash
from ..suite import Suite
from .db import ReviewDB, ReviewError, UnitRow, db_path
from .rubrics import ReviewRubric

Rule = Literal["any", "all", "majority"]
CHANGES = "review_changes.jsonl"


@dataclass
class Revision:
    out: Path
    suite: Suite
    dropped_items: dict[str, list[str]] = field(default_factory=dict)  # item id -> reasons
    dropped_probes: dict[str, list[str]] = field(default_factory=dict)  # probe id -> reasons
    relabelled: dict[str, str] = field(default_factory=dict)  # old probe id -> new probe id
    counts: dict[str, int] = field(default_factory=dict)


def _decides(votes: list[bool], rule: Rule) -> bool:
    if not votes:
        return False
    if rule == "any":
        return any(votes)
    if rule == "all":
        return all(votes)
    return sum(votes) * 2 > len(votes)


def _relabel_id(probe_id: str, old: str, new: str) -> str:
    return probe_id[: -len(old)] + new if probe_id.endswith(":" + old) else f"{probe_id}:{new}"


def _decisions(
    ratings: list[dict[str, Any]], units: dict[str, UnitRow], rubric: ReviewRubric, rule: Rule
) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]:
    """What the reviewers of each unit decide by `rule`: items to drop, probes to drop (each with
    its reasons) and the condition an item's probes move to (none for an item that is dropped)."""
    by_unit: dict[str, list[dict[str, Any]]] = {}
    for r in ratings:
        by_unit.setdefault(r["unit_id"], []).append(r)
    drop_items: dict[str, list[str]] = {}
    drop_probes: dict[str, list[str]] = {}
    relabel: dict[str, str] = {}  # item id -> condition
    for uid, rs in by_unit.items():
        unit = units[uid]
        for dim, value, action in rubric.suite_actions:
            votes = [r["values"].get(dim) == value for r in rs]
            if not _decides(votes, rule):
                continue
            why = f"{dim}={value} ({sum(votes)} of {len(votes)} reviewers, rule {rule}; unit {uid})"
            if action == "drop_item" and unit.item_id:
                drop_items.setdefault(unit.item_id, []).append(why)
            elif action == "drop_probe" and unit.hidden.get("probe_id"):
                drop_probes.setdefault(str(unit.hidden["probe_id"]), []).append(why)
            elif action.startswith("relabel:") and unit.item_id:
                relabel[unit.item_id] = action.split(":", 1)[1]
    return drop_items, drop_probes, {k: v for k, v in relabel.items() if k not in drop_items}


def _applied(
    suite: Suite, drop_items: dict[str, list[str]], drop_probes: dict[str, list[str]], relabel: dict[str, str]
) -> tuple[list[Item], list[Probe], dict[str, str]]:
    """The suite's items and probes with the decisions applied, and old probe id -> new for the
    relabelled probes. `drop_items` gains the items left with no probe."""
    items = [it for it in suite.items.values() if it.id not in drop_items]
    probes = []
    relabelled: dict[str, str] = {}
    for p in suite.probes:
        if p.item_id in drop_items or p.id in drop_probes:
            continue
        new = relabel.get(p.item_id)
        if new and p.condition != new:
            q = p.model_copy(update={"condition": new, "id": _relabel_id(p.id, p.condition, new)})
            relabelled[p.id] = q.id
            p = q
        probes.append(p)
    # an item left with no probe (its probes all dropped) goes too, unless its family asks it clean
    from ..family import get

    if not get(suite.manifest.family).probes.clean:
        kept = {p.item_id for p in probes}
        for it in list(items):
            if it.id not in kept:
                drop_items.setdefault(it.id, []).append("no probe left")
        items = [it for it in items if it.id in kept]
    return items, probes, relabelled


def revise_suite(review: Path | str, out: Path | str, suite_dir: Path | str | None = None, rule: Rule = "any") -> Revision:
    """Apply the review's decisions to its suite (or `suite_dir`, which must be the same suite)
    and write the result to `out`, a new directory (never the reviewed suite's own)."""
    if rule not in ("any", "all", "majority"):
        raise ReviewError(f"--rule must be any, all or majority, not {rule!r}")
    with ReviewDB(db_path(review)) as db:
        rubric = db.rubric
        meta = db.all_meta()
        units = db.units()
        ratings = [r for r in db.ratings() if r["status"] == "rated"]
    if not rubric.suite_actions:
        raise ReviewError(f"rubric {rubric.key} rates {rubric.unit}s: its ratings do not change a suite")
    src = Path(suite_dir or meta.get("suite") or "")
    suite = Suite.load(src)
    if suite.manifest.checksums != meta.get("suite_checksums"):
        raise ReviewError(
            f"{src} is not the suite this review sampled ({meta.get('suite_name')} version {meta.get('suite_version')}: its files' checksums differ)"
        )
    out = Path(out)
    if out.resolve() == src.resolve():
        raise ReviewError("--out is the reviewed suite itself: a revision is written as a new suite version, never in place")
    drop_items, drop_probes, relabel = _decisions(ratings, units, rubric, rule)
    items, probes, relabelled = _applied(suite, drop_items, drop_probes, relabel)

    version = (
        f"{suite.manifest.version}+review.{stable_hash(meta.get('created', ''), sorted(drop_items), sorted(drop_probes), sorted(relabelled.items()), rule)[:8]}"
    )
    manifest = suite.manifest.model_copy(
        update={
            "version": version,
            "description": (suite.manifest.description + " " if suite.manifest.description else "")
            + f"Revised by clinician review ({rubric.key}, rule {rule}).",
        }
    )
    extra = dict(manifest.model_extra or {})
    extra["revised_from"] = {
        "name": suite.manifest.name,
        "version": suite.manifest.version,
        "checksums": suite.manifest.checksums,
        "review": str(Path(review).resolve()),
        "rubric": rubric.key,
        "rule": rule,
        "dropped_items": len(drop_items),
        "dropped_probes": len(drop_probes),
        "relabelled": len(relabelled),
    }
    manifest = manifest.model_copy(update=extra)
    revised = Suite(manifest, items, probes)
    revised.save(out)
    changes = (
        [{"item_id": k, "action": "drop_item", "reasons": v} for k, v in drop_items.items()]
        + [{"probe_id": k, "action": "drop_probe", "reasons": v} for k, v in drop_probes.items()]
        + [{"probe_id": k, "action": "relabel", "new_probe_id": v} for k, v in relabelled.items()]
    )
    write_jsonl(out / CHANGES, changes)
    counts = {
        "items": len(items),
        "probes": len(probes),
        "dropped_items": len(drop_items),
        "dropped_probes": len(drop_probes),
        "relabelled": len(relabelled),
        **{f"probes_{k}": v for k, v in Counter(p.condition for p in probes).items()},
    }
    with atomic_write(out / "review_revision.json") as fh:
        json.dump({"version": version, "rule": rule, "counts": counts, **extra["revised_from"]}, fh, indent=2)
    return Revision(out, Suite.load(out), drop_items, drop_probes, relabelled, counts)
