"""People's second readings: the audit's sample as a `reading` review (review.rubrics.RUBRIC_READING)
and the readings of a rated review back into the audit.

A task shows the item's options (without the key) and the model's reply; the model, setting,
condition, the run's reading and the key are kept in the unit's hidden facts, never shown. A
reviewer answers one of the options, `none` or `several` (the reply commits to no single option:
a reading, counted as no option) or `cannot_tell` (no reading). A unit rated by several people
takes their common reading; when their decided readings differ it has none (`people disagree`).
Skipped and unrated tasks give no reading."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..records import Item
from ..review.db import ReviewDB, ReviewError, UnitRow, opened, valid_name
from ..review.rubrics import RUBRIC_READING
from ..review.sample import assign
from ..review.units import Candidate
from ..seeding import stable_hash
from .reader import NO_OPTION, SecondReading
from .sample import AuditUnit

#: the reviewers' values that read no single option in the reply
NO_OPTION_VALUES = ("none", "several")
CANNOT_TELL = "cannot_tell"


def review_unit_id(u: AuditUnit) -> str:
    return f"R-{stable_hash(u.model, u.unit_id)[:16]}"


def _candidate(u: AuditUnit, item: Item, reply: str) -> Candidate:
    display = [
        {"kind": "options", "title": "Options", "options": [[k, v, False] for k, v in (item.options or {}).items()]},
        {"kind": "response", "title": "The model's reply", "text": reply},
    ]
    hidden = {
        "model": u.model,
        "unit": u.unit_id,
        "key": u.key,
        "setting": u.setting,
        "condition": u.condition,
        "auto_label": u.rule_label,
        "auto_status": u.rule_status,
    }
    strata = {"model": u.model, "setting": u.setting, "condition": u.condition, "tier": u.tier}
    return Candidate(review_unit_id(u), u.item_id, strata, display, hidden)


def write_review(
    out: Path,
    units: Sequence[AuditUnit],
    items: dict[str, Item],
    replies: dict[str, str],
    reviewers: Sequence[str],
    *,
    run_dir: Path,
    seed: int,
    raters: int = 1,
) -> int:
    """Write the audit's sample as a new `reading` review at `out` (`raters` reviewers per unit);
    returns the number of tasks."""
    reviewers = [valid_name(r) for r in reviewers]
    if not reviewers:
        raise ReviewError("name at least one reviewer: --reviewers alice,bob")
    if raters < 1 or raters > len(reviewers):
        raise ReviewError(f"{raters} raters per unit needs as many distinct reviewers; --reviewers names {len(reviewers)}")
    cands = [_candidate(u, items[u.item_id], replies.get(u.key, "")) for u in units]
    tasks = assign(cands, set(), reviewers, seed, raters)
    meta = {
        "rubric": RUBRIC_READING.key,
        "rubric_def": RUBRIC_READING.as_dict(),
        "run": str(Path(run_dir).resolve()),
        "audit": True,
        "n_sampled": len(cands),
        "population": None,
        "strata": ["model", "setting", "condition", "tier"],
        "raters": raters,
        "reviewers": list(reviewers),
        "seed": seed,
    }
    db = ReviewDB.create(out, meta, [UnitRow(c.unit_id, c.item_id, c.strata, c.display, c.hidden) for c in cands], tasks, reviewers)
    db.close()
    return len(tasks)


def people_readings(review: Path | str) -> dict[str, SecondReading]:
    """answer key -> the people's reading of each unit of a `reading` review that has one."""
    with opened(review) as db:
        if db.meta("rubric") != RUBRIC_READING.key:
            raise ReviewError(f"{review} is a review of rubric {db.meta('rubric')}, not {RUBRIC_READING.key}: people's readings come from a reading review")
        units = db.units()
        ratings = db.ratings()
    by_unit: dict[str, list[str]] = {}
    for r in ratings:
        v = (r["values"] or {}).get("reading") if r["status"] == "rated" else None
        if v is not None:
            by_unit.setdefault(r["unit_id"], []).append(v)
    out = {}
    for uid, values in by_unit.items():
        key = units[uid].hidden.get("key") if uid in units else None
        if key:
            out[key] = _common(values)
    return out


def _common(values: list[str]) -> SecondReading:
    decided = {NO_OPTION if v in NO_OPTION_VALUES else v for v in values if v != CANNOT_TELL}
    if not decided:
        return SecondReading(None, "unscored", "the reviewers could not tell", "people")
    if len(decided) > 1:
        return SecondReading(None, "unscored", "people disagree: " + ", ".join(sorted(decided)), "people")
    (v,) = decided
    return SecondReading(None, NO_OPTION, None, "people") if v == NO_OPTION else SecondReading(v, "read", None, "people")
