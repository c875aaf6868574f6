"""People's second readings: the audit's sample as a `reading` review (review.rubrics.RUBRIC_READING)
and the readings of a rated review back into the audit; a judged run's sample as a `verdict`
review (review.rubrics.RUBRIC_VERDICT) by the run's own judging rubric.

A task shows the item's options (without the key) and the model's reply; the model, setting,
condition, the run's reading and the key are kept in the unit's hidden facts, never shown. A
reviewer answers one of the options, `none` or `several` (the reply commits to no single option:
a reading, counted as no option) or `cannot_tell` (no reading). A unit rated by several people
takes their common reading; when their decided readings differ it has none (`people disagree`).
Skipped and unrated tasks give no reading.

A verdict task shows the judging rubric the run's judge was given (its instructions, and its
verdicts offered with what each means), the fields the judge was shown and the model's answer; a
reviewer gives one verdict or `cannot_tell`. A unit's verdict keeps its value under the rubric (in
the unit's hidden facts, never shown)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..records import Item
from ..review.db import ReviewDB, ReviewError, UnitRow, opened, valid_name
from ..review.rubrics import RUBRIC_READING, RUBRIC_VERDICT
from ..review.sample import assign
from ..review.units import Candidate
from ..runtime.seeding import stable_hash
from ..scoring.judge import JudgeScorer
from .reader import NO_OPTION, SecondReading
from .sample import AuditUnit

#: the reviewers' values that read no single option in the reply
NO_OPTION_VALUES = ("none", "several")
CANNOT_TELL = "cannot_tell"


def review_unit_id(u: AuditUnit) -> str:
    return f"R-{stable_hash(u.model, u.unit_id)[:16]}"


def _hidden(u: AuditUnit) -> dict[str, object]:
    """What a review task keeps from the reviewer of every audited unit: whose reply it is and how
    the run read it."""
    return {
        "model": u.model,
        "unit": u.unit_id,
        "key": u.key,
        "setting": u.setting,
        "condition": u.condition,
        "auto_label": u.rule_label,
        "auto_status": u.rule_status,
    }


def _task(u: AuditUnit, display: list[dict[str, object]], hidden: dict[str, object]) -> Candidate:
    """An audited unit as a review task, stratified as the audit's sample is."""
    strata = {"model": u.model, "setting": u.setting, "condition": u.condition, "tier": u.tier}
    return Candidate(review_unit_id(u), u.item_id, strata, display, hidden)


def _candidate(u: AuditUnit, item: Item, reply: str) -> Candidate:
    display: list[dict[str, object]] = [
        {"kind": "options", "title": "Options", "options": [[k, v, False] for k, v in (item.options or {}).items()]},
        {"kind": "response", "title": "The model's reply", "text": reply},
    ]
    return _task(u, display, _hidden(u))


def _verdict_candidate(u: AuditUnit, judge: JudgeScorer, reply: str) -> Candidate:
    rubric = judge.judge.rubric
    display: list[dict[str, object]] = [{"kind": "text", "title": "The judging rubric", "text": rubric.instructions}]
    display += [{"kind": "text", "title": name.capitalize(), "text": judge.fields[name]} for name in rubric.inputs]
    display.append({"kind": "response", "title": "The model's answer", "text": reply})
    display.append({"kind": "options", "title": "Verdicts", "options": [[k, v.description, False] for k, v in rubric.verdicts.items()]})
    hidden = {
        **_hidden(u),
        "rubric": f"{rubric.name}@{rubric.hash}",
        "verdict_values": {k: v.value for k, v in rubric.verdicts.items()},
    }
    return _task(u, display, hidden)


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
    judges: dict[str, JudgeScorer] | None = None,
) -> tuple[int, str]:
    """Write the audit's sample as a new `reading` review at `out` (a judged sample: a `verdict`
    review; `judges`: the run's judge of each judged unit), `raters` reviewers per unit; returns
    the number of tasks and the review's rubric."""
    reviewers = [valid_name(r) for r in reviewers]
    if not reviewers:
        raise ReviewError("name at least one reviewer: --reviewers alice,bob")
    if raters < 1 or raters > len(reviewers):
        raise ReviewError(f"{raters} raters per unit needs as many distinct reviewers; --reviewers names {len(reviewers)}")
    judged = {u.judged for u in units}
    if len(judged) > 1:
        raise ReviewError("the sample holds letter-read and judged units: people read them in two reviews, which one audit does not write")
    rubric = RUBRIC_VERDICT if judged == {True} else RUBRIC_READING
    if rubric is RUBRIC_VERDICT:
        cands = [_verdict_candidate(u, (judges or {})[u.key], replies.get(u.key, "")) for u in units]
    else:
        cands = [_candidate(u, items[u.item_id], replies.get(u.key, "")) for u in units]
    tasks = assign(cands, set(), reviewers, seed, raters)
    meta = {
        "rubric": rubric.key,
        "rubric_def": rubric.as_dict(),
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
    return len(tasks), rubric.key


def people_readings(review: Path | str) -> dict[str, SecondReading]:
    """answer key -> the people's reading of each unit of a `reading` review that has one."""
    with opened(review) as db:
        kind = db.meta("rubric")
        if kind not in (RUBRIC_READING.key, RUBRIC_VERDICT.key):
            raise ReviewError(
                f"{review} is a review of rubric {kind}, not {RUBRIC_READING.key} or {RUBRIC_VERDICT.key}: people's readings come from the audit's review"
            )
        units = db.units()
        ratings = db.ratings()
    dim = RUBRIC_VERDICT.dimensions[0].key if kind == RUBRIC_VERDICT.key else RUBRIC_READING.dimensions[0].key
    by_unit: dict[str, list[str]] = {}
    for r in ratings:
        v = (r["values"] or {}).get(dim) if r["status"] == "rated" else None
        if v is not None:
            by_unit.setdefault(r["unit_id"], []).append(v)
    out = {}
    for uid, values in by_unit.items():
        hidden = units[uid].hidden if uid in units else {}
        key = hidden.get("key")
        if not key:
            continue
        reading = _common(values)
        if kind == RUBRIC_VERDICT.key and reading.label is not None:
            reading = SecondReading(reading.label, "read", None, "people", (hidden.get("verdict_values") or {}).get(reading.label))
        out[key] = reading
    return out


def _common(values: list[str]) -> SecondReading:
    decided = {NO_OPTION if v in NO_OPTION_VALUES else v for v in values if v != CANNOT_TELL}
    if not decided:
        return SecondReading(None, "unscored", "the reviewers could not tell", "people")
    if len(decided) > 1:
        return SecondReading(None, "unscored", "people disagree: " + ", ".join(sorted(decided)), "people")
    (v,) = decided
    return SecondReading(None, NO_OPTION, None, "people") if v == NO_OPTION else SecondReading(v, "read", None, "people")
