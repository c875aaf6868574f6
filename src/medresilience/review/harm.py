"""`medres review harm`: MedMisBench's clinician analyses of a response review (rubric B).

- The worst case per unit under three rules: any reviewer (the study's conservative primary rule),
  the mean reviewer (each dimension of the rule averaged over the unit's reviewers: an ordinal
  value by its number rounded half up, a nominal one as the share of reviewers meeting it, at
  least one half) and every reviewer (both, for a dual-rated unit); each a share of units with a
  Wilson interval.
- Outcome classes (the rubric's `outcome_classes`, most severe first): a rating is in the first
  class whose rule holds, a unit in the most severe class any reviewer gave (the study: "safety
  categories use the more conservative clinical judgement").
- Strata of another review of the same items (rubric A's falsehood clarity: the rubric's `bands`
  of an item's mean rating, clear / soft / potentially true) joined on the item: the worst case
  (any reviewer) per band.
- A mixed-effects logistic model of the per-rating outcome (the worst case, or DIM=VALUES) with
  fixed effects for the named strata (and the band) and the reviewer as a random intercept:
  adjusted odds ratios with Wald intervals from the maximum-likelihood fit, the reviewer ICC and the
  method (stats.mixed_logistic; a level with no events has no finite odds ratio and a note)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pandas as pd

from .. import stats
from ..runtime.jsontypes import JSONObject
from .db import ReviewDB, ReviewError
from .rubrics import ReviewRubric, WorstCase
from .stats import ratings_frame

RULES = (
    ("any", "any reviewer (conservative)"),
    ("mean", "the mean reviewer"),
    ("all", "every reviewer (both, when dual-rated)"),
)
OTHER = "other"


@dataclass
class HarmAnalysis:
    rubric: ReviewRubric
    outcome: str
    worst_case: pd.DataFrame  # rule, title, k, n, p, lo, hi
    outcomes: pd.DataFrame  # class, definition, units, share, lo, hi
    bands: pd.DataFrame  # band, k, n, p, lo, hi
    model: stats.MixedLogit | None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        def rec(df: pd.DataFrame) -> list[JSONObject]:
            return json.loads(df.to_json(orient="records")) if len(df) else []

        return {
            "rubric": self.rubric.key,
            "outcome": self.outcome,
            "worst_case": rec(self.worst_case),
            "outcome_classes": rec(self.outcomes),
            "bands": rec(self.bands),
            "model": None if self.model is None else self.model.as_dict(),
            "notes": self.notes,
        }


def _present(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def mean_holds(rubric: ReviewRubric, rule: WorstCase, ratings: list[dict[str, Any]]) -> bool:
    """The rule on the mean reviewer: every named dimension, averaged over the ratings, meets it."""
    for key, allowed in rule.when:
        d = rubric.dimension(key)
        vals = [r[key] for r in ratings if _present(r.get(key)) and r[key] != d.not_applicable]
        if not vals:
            return False
        if d.scale == "ordinal" and d.numeric():
            mean = sum(int(v) for v in vals) / len(vals)
            if str(math.floor(mean + 0.5)) not in allowed:
                return False
        elif sum(v in allowed for v in vals) / len(vals) < 0.5:
            return False
    return True


def outcome_class(rubric: ReviewRubric, values: dict[str, Any]) -> int:
    """The index of the first outcome class whose rule holds (len(classes): none, "other")."""
    for i, c in enumerate(rubric.outcome_classes):
        if c.holds(values):
            return i
    return len(rubric.outcome_classes)


def _rate_row(k: int, n: int, confidence: float, **extra: object) -> dict[str, object]:
    w = stats.wilson(k, n, confidence)
    return {**extra, "k": k, "n": n, "p": w.p, "lo": w.lo, "hi": w.hi}


def parse_outcome(rubric: ReviewRubric, text: str) -> WorstCase:
    """`worst_case` (the rubric's) or DIM=V1/V2 (a rating whose dimension takes one of the values)."""
    if text == "worst_case":
        if rubric.worst_case is None:
            raise ReviewError(f"rubric {rubric.key} defines no worst case: name an outcome as DIM=VALUE")
        return rubric.worst_case
    dim, eq, vals = text.partition("=")
    try:
        d = rubric.dimension(dim.strip())
    except KeyError:
        raise ReviewError(f"--outcome {text!r}: {dim.strip()!r} is not a dimension of rubric {rubric.key}") from None
    allowed = tuple(v.strip() for v in vals.split("/") if v.strip())
    if not eq or not allowed or any(v not in d.values for v in allowed):
        raise ReviewError(f"--outcome {text!r} is not worst_case or {d.key}=VALUE[/VALUE] with values from {', '.join(d.values)}")
    return WorstCase(text, f"{d.label} is {' or '.join(allowed)}", ((d.key, allowed),))


def parse_pairs(text: str | None, what: str) -> dict[str, str]:
    """KEY=VALUE,... as a dict."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        k, eq, v = part.partition("=")
        if not eq or not k.strip() or not v.strip():
            raise ReviewError(f"{what} entry {part!r} is not KEY=VALUE")
        out[k.strip()] = v.strip()
    return out


def item_bands(items_review: Path | str) -> tuple[str, list[str], dict[str, str]]:
    """(the banded dimension, its bands in order, item id -> band) of a review whose rubric
    declares `bands`: an item's band is the first whose bound its mean rating reaches."""
    with ReviewDB(items_review) as db:
        rubric = db.rubric
        if rubric.bands is None:
            raise ReviewError(f"{items_review}: rubric {rubric.key} declares no bands to join on (a review of items such as rubric A)")
        df = ratings_frame(db)
    key, cuts = rubric.bands
    d = rubric.dimension(key)
    rated = df[df["status"] == "rated"] if len(df) else df
    per_item: dict[str, list[int]] = {}
    for item, v in zip(rated.get("item_id", []), rated.get(key, [])):
        if _present(v) and v != d.not_applicable and item is not None:
            per_item.setdefault(str(item), []).append(int(v))
    out = {}
    for item, vals in per_item.items():
        mean = sum(vals) / len(vals)
        out[item] = next(label for bound, label in cuts if mean >= bound)
    return key, [label for _, label in cuts], out


def _outcome_classes(rubric: ReviewRubric, per_unit: dict[str, list[dict[str, Any]]], confidence: float) -> pd.DataFrame:
    """The share of units in each of the rubric's outcome classes, a unit in the most severe class any
    of its reviewers gave (no rows for a rubric without classes)."""
    if not rubric.outcome_classes:
        return pd.DataFrame([])
    classes = [c.label for c in rubric.outcome_classes] + [OTHER]
    defs = [c.definition for c in rubric.outcome_classes] + ["none of the classes above"]
    unit_class = {u: min(outcome_class(rubric, r) for r in rs) for u, rs in per_unit.items()}
    counts = pd.Series(list(unit_class.values())).value_counts()
    n = len(per_unit)
    return pd.DataFrame([_rate_row(int(counts.get(i, 0)), n, confidence, outcome_class=c, definition=defs[i]) for i, c in enumerate(classes)])


def analyse(
    review: Path | str,
    *,
    items_review: Path | str | None = None,
    factors: list[str] | None = None,
    references: dict[str, str] | None = None,
    outcome: str = "worst_case",
    confidence: float = 0.95,
) -> HarmAnalysis:
    with ReviewDB(review) as db:
        rubric = db.rubric
        df = ratings_frame(db)
    rule = parse_outcome(rubric, outcome)
    rated = df[df["status"] == "rated"].copy() if len(df) else df
    if not len(rated):
        raise ReviewError(f"{review}: no rating yet")
    dims = [d.key for d in rubric.dimensions]
    per_unit: dict[str, list[dict[str, Any]]] = {}
    for row in cast(list[dict[str, Any]], rated[["unit_id", *dims]].to_dict("records")):  # its columns are names
        per_unit.setdefault(row["unit_id"], []).append(row)
    notes: list[str] = []

    # the worst case (or the named outcome) under each aggregation rule
    flags = {u: [rule.holds(r) for r in rs] for u, rs in per_unit.items()}
    agg = {"any": lambda u: any(flags[u]), "mean": lambda u: mean_holds(rubric, rule, per_unit[u]), "all": lambda u: all(flags[u])}
    n = len(per_unit)
    worst = pd.DataFrame([_rate_row(sum(agg[r](u) for u in per_unit), n, confidence, rule=r, title=t) for r, t in RULES])

    outcomes = _outcome_classes(rubric, per_unit, confidence)

    # bands of the items review, joined on the item
    bands = pd.DataFrame()
    band_of: dict[str, str] = {}
    band_key = None
    if items_review is not None:
        band_key, labels, band_of = item_bands(items_review)
        items = dict(zip(rated["unit_id"], rated["item_id"]))
        unit_band = {u: band_of.get(str(items[u])) for u in per_unit}
        missing = sum(1 for b in unit_band.values() if b is None)
        if missing:
            notes.append(f"{missing} of {n} units have no rating of {band_key} in {items_review}: left out of the bands")
        bands = pd.DataFrame(
            [
                _rate_row(sum(any(flags[u]) for u, b in unit_band.items() if b == label), sum(b == label for b in unit_band.values()), confidence, band=label)
                for label in labels
            ]
        )
        rated["band"] = [band_of.get(str(i)) for i in rated["item_id"]]

    # the mixed model of the per-rating outcome
    model = None
    factors = list(factors or [])
    cols = {}
    for f in factors:
        col = f"stratum_{f}"
        if col not in rated:
            known = sorted(c[len("stratum_") :] for c in rated.columns if c.startswith("stratum_"))
            raise ReviewError(f"--factors names {f}, which the units do not have (they have: {', '.join(known)})")
        cols[f] = col
    data = rated
    if band_key is not None:
        data = rated[rated["band"].notna()]
        cols[band_key] = "band"
    if cols:
        y = [rule.holds(r) for r in cast(list[dict[str, Any]], data[dims].to_dict("records"))]  # its columns are names
        try:
            model = stats.mixed_logistic(
                y,
                {f: data[c].fillna("—").tolist() for f, c in cols.items()},
                data["reviewer"].tolist(),
                references=references or {},
                confidence=confidence,
            )
            notes += [f"mixed model: {n}" for n in model.notes]
        except ValueError as e:
            if references and any(k in str(e) for k in ("reference", "unknown factors")):
                raise ReviewError(f"--reference: {e}") from None
            notes.append(f"no mixed model: {e}")
    return HarmAnalysis(rubric, rule.label, worst, outcomes, bands, model, notes)


def write(res: HarmAnalysis, out_dir: Path | str) -> dict[str, Path]:
    """worst_case, outcome_classes, bands and odds_ratios as CSV, and summary.json."""
    from ..runtime.fileio import atomic_write, write_csv_frame

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ors = pd.DataFrame([o.as_dict() for o in res.model.odds_ratios]) if res.model else pd.DataFrame()
    paths = {}
    for name, df in (("worst_case", res.worst_case), ("outcome_classes", res.outcomes), ("bands", res.bands), ("odds_ratios", ors)):
        write_csv_frame(out / f"{name}.csv", df)
        paths[name] = out / f"{name}.csv"
    with atomic_write(out / "harm_summary.json") as fh:
        json.dump(res.summary(), fh, indent=2, default=str)
    paths["summary"] = out / "harm_summary.json"
    return paths
