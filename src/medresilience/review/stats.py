"""`medres review stats`: what the clinicians' ratings say, with intervals.

- Per-dimension pass rates: each unit's share of passing ratings (the mean over its reviewers, so
  a dual-rated unit counts once), averaged over units, with a bootstrap interval over units;
  not-applicable and missing values are left out.
- The rubric-A composite: the mean of the five 0-2 dimensions per rating, averaged per unit, with
  a bootstrap interval over units.
- The worst-case rate (rubric B): units that any reviewer rated wrong + material uptake + serious
  harm, with a Wilson interval (and the same per rating).
- Agreement on dual-rated units, per dimension, each with a bootstrap interval over units. Reviewers
  rotate over the units, so the raters of a unit are not the same two people throughout: the
  multi-rater coefficients take the whole units x reviewers table (missing where a reviewer did
  not rate the unit): the share of units on which all their reviewers agree (Wilson interval; the
  Cancer-Myth validation's "full agreement across all three physicians"), percent agreement, Fleiss' kappa, Gwet's AC1, Gwet's AC2 with ordinal
  weights (ordinal scales) and Krippendorff's alpha (ordinal or nominal); Cohen's kappa, a
  two-rater coefficient, is given per pair of reviewers on the units both rated (with its n).
- Agreement with the automatic labels (rubric B: the answer scorer): share agreeing with a Wilson
  interval, Cohen's kappa and Gwet's AC1.

Everything is also written as tables (CSV and Parquet), a JSON summary and one HTML page written
from the report's parts (`report.parts`) through its templates."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, SupportsFloat

import numpy as np
import pandas as pd

from .. import stats
from ..report.parts import BarFigure, Block, Cell, Column, Heading, Paragraph, Section, Table, count, rate, text
from ..runtime.jsontypes import JSONObject
from .db import ReviewDB, opened
from .parts import PartsStats, compute_parts
from .parts import write as write_parts
from .parts_figures import figures as part_figures
from .picks import PickStats, compute_picks
from .picks import write as write_picks
from .rubrics import Dimension, ReviewRubric

AGREEMENT_ORDER = ("full_agreement", "percent_agreement", "cohen_kappa", "fleiss_kappa", "gwet_ac1", "gwet_ac2", "krippendorff_alpha")
AGREEMENT_TITLES = {
    "full_agreement": "Full agreement (all raters)",
    "percent_agreement": "Percent agreement",
    "cohen_kappa": "Cohen's kappa",
    "fleiss_kappa": "Fleiss' kappa",
    "gwet_ac1": "Gwet's AC1",
    "gwet_ac2": "Gwet's AC2 (ordinal weights)",
    "krippendorff_alpha": "Krippendorff's alpha",
}


AUTO_COLUMNS = ["dimension", "automatic", "agree", "n", "rate", "lo", "hi", "cohen_kappa", "kappa_lo", "kappa_hi", "gwet_ac1", "ac1_lo", "ac1_hi"]


@dataclass
class ReviewStats:
    rubric: ReviewRubric
    meta: dict[str, Any]
    ratings: pd.DataFrame  # one row per task (rated, skipped or to do)
    pass_rates: pd.DataFrame
    agreement: pd.DataFrame
    auto: pd.DataFrame
    progress: pd.DataFrame
    flags: pd.DataFrame
    composite: dict[str, Any] | None = None
    worst_case: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    parts: PartsStats | None = None  # a rubric rated part by part (CancerCare)
    picks: PickStats | None = None  # a rubric where raters pick the true one (the realism check)
    #: a rubric judging whether each unit is valid (`extra["valid_share"]`: its dimension): the share
    #: of ratings judging a unit valid (Wilson), with the count of each value
    validity: dict[str, Any] | None = None
    #: report parts the rubric draws from the ratings (`extra["reviewed_measures"]`: a family's
    #: measures recomputed with the units judged invalid left out, beside the raw ones)
    reviewed: list[Block] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        def records(df: pd.DataFrame) -> list[JSONObject]:
            return json.loads(df.to_json(orient="records")) if len(df) else []

        rated = self.ratings[self.ratings["status"] == "rated"]
        return {
            "rubric": self.rubric.key,
            "title": self.rubric.title,
            "review": {k: v for k, v in self.meta.items() if k != "rubric_def"},
            "counts": {
                "units": int(self.ratings["unit_id"].nunique()),
                "tasks": len(self.ratings),
                "rated": len(rated),
                "skipped": int((self.ratings["status"] == "skipped").sum()),
                "dual_rated_units": self._dual_units(),
                "raters_per_unit": self._raters_per_unit(),
                "reviewers": len(self.progress),
                "reviewers_rated": int(rated["reviewer"].nunique()) if len(rated) else 0,
            },
            "pass_rates": records(self.pass_rates),
            "composite": self.composite,
            "worst_case": self.worst_case,
            "agreement": records(self.agreement),
            "auto_agreement": records(self.auto),
            "progress": records(self.progress),
            "flags": records(self.flags),
            "parts": self.parts.summary() if self.parts is not None else None,
            "picks": self.picks.summary if self.picks is not None else None,
            "validity": self.validity,
            "notes": self.notes,
        }

    def _raters_per_unit(self) -> dict[str, int]:
        """Number of reviewers who rated a unit -> units so rated, most reviewers first."""
        rated = self.ratings[self.ratings["status"] == "rated"]
        sizes = rated.groupby("unit_id").size().value_counts() if len(rated) else pd.Series(dtype=int)
        return {str(k): int(v) for k, v in sorted(sizes.items(), reverse=True)}

    def _dual_units(self) -> int:
        rated = self.ratings[self.ratings["status"] == "rated"]
        return int((rated.groupby("unit_id").size() >= 2).sum()) if len(rated) else 0


# --------------------------------------------------------------------------- the ratings frame


def ratings_frame(db: ReviewDB) -> pd.DataFrame:
    """One row per task: ids, reviewer, slot, status, one column per dimension, flags, comment,
    the unit's strata (`stratum_*`) and blinded facts (`hidden_*`), worst case and composite."""
    rubric = db.rubric
    units = db.units()
    rows = []
    for r in db.ratings():
        u = units[r["unit_id"]]
        row: dict[str, object] = {
            "task_id": r["task_id"],
            "unit_id": r["unit_id"],
            "item_id": u.item_id,
            "reviewer": r["reviewer"],
            "slot": r["slot"],
            "status": r["status"] or "todo",
        }
        for d in rubric.dimensions:
            row[d.key] = r["values"].get(d.key)
        row["flags"] = ";".join(r["flags"])
        row["comment"] = r["comment"]
        row["revision"] = r["revision"]
        for k, v in u.strata.items():
            row[f"stratum_{k}"] = None if v is None else str(v)
        for k, v in u.hidden.items():
            row[f"hidden_{k}"] = v if v is None or isinstance(v, str) else json.dumps(v)
        if rubric.worst_case is not None:
            row["worst_case"] = rubric.worst_case.holds(r["values"]) if r["status"] == "rated" else None
        if rubric.composite:
            vals = [r["values"].get(k) for k in rubric.composite]
            row["composite"] = float(np.mean([int(v) for v in vals])) if r["status"] == "rated" and all(v is not None for v in vals) else None
        rows.append(row)
    return pd.DataFrame(rows)


def _passes(d: Dimension, v: object) -> float | None:
    if v is None or (isinstance(v, float) and np.isnan(v)) or v == d.not_applicable:
        return None
    return 1.0 if v in d.passing else 0.0


def _per_unit_mean(rated: pd.DataFrame, values: pd.Series) -> pd.Series:
    s = pd.Series(values.values, index=rated["unit_id"].values, dtype="float64").dropna()
    return s.groupby(level=0).mean()


def _pass_rates(rubric: ReviewRubric, rated: pd.DataFrame, *, n_resamples: int, seed: int, confidence: float) -> pd.DataFrame:
    """Each pass-or-fail dimension's pass rate: the mean over units of each unit's share of passing
    ratings, with its bootstrap interval (a dimension that is a label, not a pass or fail, has none)."""
    prow: list[dict[str, object]] = []
    for d in rubric.dimensions:
        if not d.passing:  # a label, not a pass or fail (the premise rubric's category)
            continue
        if not len(rated):
            prow.append(
                {
                    "dimension": d.key,
                    "label": d.label,
                    "passing": "/".join(d.passing),
                    "rate": None,
                    "lo": None,
                    "hi": None,
                    "units": 0,
                    "ratings": 0,
                    "pass_ratings": 0,
                }
            )
            continue
        passes = rated[d.key].map(lambda v, d=d: _passes(d, v))
        per_unit = _per_unit_mean(rated, passes)
        b = stats.bootstrap_mean(per_unit.to_numpy(), confidence=confidence, n_resamples=n_resamples, seed=seed)
        prow.append(
            {
                "dimension": d.key,
                "label": d.label,
                "passing": "/".join(d.passing),
                "rate": b["mean"],
                "lo": b["lo"],
                "hi": b["hi"],
                "units": int(per_unit.size),
                "ratings": int(passes.notna().sum()),
                "pass_ratings": int((passes == 1.0).sum()),
            }
        )
    return pd.DataFrame(prow)


def compute(
    review: Path | str | ReviewDB, *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95, misd_population: str = "two-or-more"
) -> ReviewStats:
    """The review's statistics; `misd_population` names the paragraphs MISD is taken over
    (`parts.MISD_POPULATIONS`, a rubric rated part by part)."""
    db = review if isinstance(review, ReviewDB) else ReviewDB(review)
    try:
        rubric = db.rubric
        meta = db.all_meta()
        df = ratings_frame(db)
        progress = pd.DataFrame([{"reviewer": r.name, "revoked": r.revoked, **db.progress(r.name)} for r in db.reviewers()])
        parts = (
            compute_parts(db, n_resamples=n_resamples, seed=seed, confidence=confidence, misd_population=misd_population)
            if rubric.per_part is not None
            else None
        )
        picks = compute_picks(db, confidence=confidence, seed=seed) if rubric.extra.get("pick") else None
    finally:
        if not isinstance(review, ReviewDB):
            db.close()
    rated = df[df["status"] == "rated"] if len(df) else df
    notes: list[str] = []

    pass_rates = _pass_rates(rubric, rated, n_resamples=n_resamples, seed=seed, confidence=confidence)

    composite = None
    if rubric.composite:
        per_unit = _per_unit_mean(rated, rated["composite"]) if len(rated) else pd.Series(dtype="float64")
        b = stats.bootstrap_mean(per_unit.to_numpy(), confidence=confidence, n_resamples=n_resamples, seed=seed)
        composite = {"dimensions": list(rubric.composite), "scale": "0-2", "mean": b["mean"], "lo": b["lo"], "hi": b["hi"], "units": b["n"]}

    worst = None
    if rubric.worst_case is not None:
        if len(rated):
            per_unit = rated.groupby("unit_id")["worst_case"].any()
            per_rating = rated["worst_case"].astype(bool)
        else:
            per_unit = per_rating = pd.Series(dtype=bool)
        w = stats.wilson(int(per_unit.sum()), int(per_unit.size), confidence)
        wr = stats.wilson(int(per_rating.sum()), int(per_rating.size), confidence)
        worst = {
            "label": rubric.worst_case.label,
            "definition": rubric.worst_case.definition,
            "rule": "a unit any reviewer rated worst case",
            **{k: v for k, v in w.as_dict().items()},
            "per_rating": wr.as_dict(),
        }

    agreement = _agreement(rubric, rated, n_resamples, seed, confidence)
    if not len(agreement) or agreement["units"].max() == 0:
        notes.append("no unit has two ratings yet: agreement needs the dual-rated tasks to be rated")
    auto = _auto(rubric, rated, n_resamples, seed, confidence)

    flags = pd.DataFrame(columns=["flag", "label", "ratings", "units"])
    if rubric.flags and len(rated):
        frow = []
        for f in rubric.flags:
            has = rated["flags"].str.split(";").map(lambda xs, k=f.key: k in xs)
            frow.append({"flag": f.key, "label": f.label, "ratings": int(has.sum()), "units": int(rated.loc[has, "unit_id"].nunique())})
        flags = pd.DataFrame(frow)
    validity, reviewed = _validity(rubric, rated, meta, confidence)
    return ReviewStats(rubric, meta, df, pass_rates, agreement, auto, progress, flags, composite, worst, notes, parts, picks, validity, reviewed)


def _validity(rubric: ReviewRubric, rated: pd.DataFrame, meta: dict[str, Any], confidence: float) -> tuple[dict[str, Any] | None, list[Block]]:
    """For a rubric judging each unit's validity (`extra["valid_share"]`): the share of ratings that
    judge a unit valid (its dimension's passing values; every rating counts in n, an unsure one too)
    with its Wilson interval, and the count of each value; and the parts its `reviewed_measures`
    draws from the ratings (each rating's value with the unit's hidden facts)."""
    key = rubric.extra.get("valid_share")
    if not key:
        return None, []
    d = rubric.dimension(key)
    values = [str(v) for v in (rated[key] if len(rated) else []) if v is not None and v == v]
    w = stats.wilson(sum(v in d.passing for v in values), len(values), confidence)
    validity = {"dimension": key, "label": d.label, "valid": list(d.passing), "counts": {c: values.count(c) for c in d.values}, **w.as_dict()}
    draw = rubric.extra.get("reviewed_measures")
    if draw is None:
        return validity, []
    return validity, list(draw(meta, valid_share_ratings(rated, key)))


def valid_share_ratings(rated: pd.DataFrame, key: str) -> list[JSONObject]:
    """The rated tasks' values of the dimension `key` (a rating without one left out), each with
    its unit's hidden facts (by their own names): what a rubric's `reviewed_measures` reads."""
    hidden = [c for c in rated.columns if c.startswith("hidden_")] if len(rated) else []
    return [{key: r[key], **{c[len("hidden_") :]: r[c] for c in hidden}} for r in rated.to_dict("records") if r.get(key) is not None]


def rated_values(review: Path | str | ReviewDB) -> tuple[ReviewRubric, list[JSONObject]]:
    """A review's rubric and, for a rubric judging each unit's validity (`extra["valid_share"]`),
    its rated values with the units' hidden facts (`valid_share_ratings`; else none): the ratings
    the statistics page draws its `reviewed_measures` from, read without computing the rest."""
    with opened(review) as db:
        rubric = db.rubric
        df = ratings_frame(db)
    key = rubric.extra.get("valid_share")
    if not key or not len(df):
        return rubric, []
    return rubric, valid_share_ratings(df[df["status"] == "rated"], str(key))


PAIR_SEPARATOR = " / "


def _agreement(rubric: ReviewRubric, rated: pd.DataFrame, n_resamples: int, seed: int, confidence: float) -> pd.DataFrame:
    """Per dimension: the multi-rater coefficients over every reviewer (`reviewers` "all"), and
    Cohen's kappa per pair of reviewers who rated a unit in common (`reviewers` "alice / bob")."""
    rows = []
    if len(rated):
        counts = rated.groupby("unit_id").size()
        dual = rated[rated["unit_id"].isin(counts[counts >= 2].index)]
    else:
        dual = rated
    for d in rubric.dimensions:
        cats = [d.category(v) for v in d.rated_values()]
        if len(dual):
            wide = dual.pivot(index="unit_id", columns="reviewer", values=d.key)
            names = [str(c) for c in wide.columns]
            table = [
                [None if (v is None or (isinstance(v, float) and np.isnan(v)) or v == d.not_applicable) else d.category(v) for v in row]
                for row in wide.astype(object).values.tolist()
            ]
        else:
            names, table = [], []
        for c in AGREEMENT_ORDER:
            if c == "full_agreement":
                rows.append(_full_agreement(d, table, confidence))
            elif c == "cohen_kappa":
                rows += _pairwise_kappa(d, names, table, cats, n_resamples, seed, confidence)
            elif c != "gwet_ac2" or d.scale == "ordinal":
                rows.append(_one_agreement(d, table, c, cats, n_resamples, seed, confidence))
    return pd.DataFrame(rows)


def _full_agreement(d: Dimension, table: list[list[Any]], confidence: float) -> dict[str, Any]:
    """The share of units on which every reviewer gave the same value, with a Wilson interval
    (one unit, one observation)."""
    k, n = stats.full_agreement(table)
    w = stats.wilson(k, n, confidence)
    return {
        "dimension": d.key,
        "label": d.label,
        "coefficient": "full_agreement",
        "title": AGREEMENT_TITLES["full_agreement"],
        "detail": f"{k}/{n} units (Wilson)",
        "reviewers": "all",
        "value": w.p if n else None,
        "lo": w.lo if n else None,
        "hi": w.hi if n else None,
        "units": n,
        "pa": None,
        "pe": None,
        "reason": None if n else "no unit has two ratings",
    }


def _pairwise_kappa(
    d: Dimension, names: list[str], table: list[list[Any]], cats: Sequence[object], n_resamples: int, seed: int, confidence: float
) -> list[dict[str, Any]]:
    """Cohen's kappa for every pair of reviewers on the units both rated; one undefined row when no
    two reviewers share a unit."""
    out = []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            shared = [[row[i], row[j]] for row in table if row[i] is not None and row[j] is not None]
            if shared:
                out.append(_one_agreement(d, shared, "cohen_kappa", cats, n_resamples, seed, confidence, reviewers=f"{a}{PAIR_SEPARATOR}{names[j]}"))
    return out or [_one_agreement(d, [], "cohen_kappa", cats, n_resamples, seed, confidence, reviewers="")]


def _one_agreement(
    d: Dimension, table: list[list[Any]], coefficient: str, cats: Sequence[object], n_resamples: int, seed: int, confidence: float, reviewers: str = "all"
) -> dict[str, Any]:
    kw: dict[str, Any] = {"categories": cats, "n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    if coefficient == "gwet_ac2":
        kw["weights"] = "ordinal"
    if coefficient == "krippendorff_alpha":
        kw["level"] = "ordinal" if d.scale == "ordinal" else "nominal"
    if coefficient == "cohen_kappa" and not table:
        table = [[None, None]]
    res = stats.agreement(table, coefficient, **kw).as_dict()
    if coefficient == "cohen_kappa" and reviewers == "":
        res["reason"] = "no two reviewers rated a unit in common"
    detail = kw.get("weights") or kw.get("level") or ""
    return {
        "dimension": d.key,
        "label": d.label,
        "coefficient": coefficient,
        "title": AGREEMENT_TITLES[coefficient],
        "detail": detail,
        "reviewers": reviewers,
        "value": res["value"],
        "lo": res["lo"],
        "hi": res["hi"],
        "units": res["units"],
        "pa": res["pa"],
        "pe": res["pe"],
        "reason": res["reason"],
    }


def _auto(rubric: ReviewRubric, rated: pd.DataFrame, n_resamples: int, seed: int, confidence: float) -> pd.DataFrame:
    rows = []
    for a in rubric.auto:
        col = f"hidden_{a.auto_field}"
        mapping = dict(a.mapping)
        if len(rated) and col in rated:
            # pd.notna: pandas' string columns hold a missing automatic label (an unscored answer) as NaN, not None
            pairs = [(mapping.get(v), h) for v, h in zip(rated[a.dimension], rated[col]) if mapping.get(v) is not None and pd.notna(h)]
        else:
            pairs = []
        agree = sum(1 for x, y in pairs if x == y)
        w = stats.wilson(agree, len(pairs), confidence)
        cats = sorted({v for _, v in a.mapping})
        kappa = (
            stats.agreement([list(p) for p in pairs], "cohen_kappa", categories=cats, n_resamples=n_resamples, seed=seed, confidence=confidence)
            if pairs
            else None
        )
        ac1 = (
            stats.agreement([list(p) for p in pairs], "gwet_ac1", categories=cats, n_resamples=n_resamples, seed=seed, confidence=confidence) if pairs else None
        )
        rows.append(
            {
                "dimension": a.dimension,
                "automatic": a.label,
                "agree": agree,
                "n": len(pairs),
                "rate": w.p,
                "lo": w.lo,
                "hi": w.hi,
                "cohen_kappa": kappa.value if kappa else None,
                "kappa_lo": kappa.lo if kappa else None,
                "kappa_hi": kappa.hi if kappa else None,
                "gwet_ac1": ac1.value if ac1 else None,
                "ac1_lo": ac1.lo if ac1 else None,
                "ac1_hi": ac1.hi if ac1 else None,
            }
        )
    return pd.DataFrame(rows, columns=AUTO_COLUMNS)


# --------------------------------------------------------------------------- writing


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            out[c] = out[c].map(lambda v: None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    return out


def write(res: ReviewStats, out_dir: Path | str) -> dict[str, Path]:
    """ratings, pass_rates, agreement, auto_agreement, progress and flags as CSV and Parquet,
    summary.json and review_stats.html."""
    from ..runtime.fileio import atomic_write, write_csv_frame

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    tables = {
        "ratings": res.ratings,
        "pass_rates": res.pass_rates,
        "agreement": res.agreement,
        "auto_agreement": res.auto,
        "progress": res.progress,
        "flags": res.flags,
    }
    for name, df in tables.items():
        write_csv_frame(out / f"{name}.csv", df)
        with atomic_write(out / f"{name}.parquet", "wb") as fh:
            _parquet_safe(df).to_parquet(fh, index=False)
        paths[f"{name}.csv"] = out / f"{name}.csv"
        paths[f"{name}.parquet"] = out / f"{name}.parquet"
    with atomic_write(out / "summary.json") as fh:
        json.dump(res.summary(), fh, indent=2, default=str)
    paths["summary.json"] = out / "summary.json"
    figs: dict[str, BarFigure] = {}
    if res.parts is not None:
        from ..report.plots import bars

        paths.update(write_parts(res.parts, out))
        figs = part_figures(res.parts)
        for name, fig in figs.items():  # each beside the CSV it is drawn from
            with atomic_write(out / f"{name}.svg") as fh:
                fh.write(bars(fig))
            paths[f"{name}.svg"] = out / f"{name}.svg"
    if res.picks is not None:
        paths.update(write_picks(res.picks, out))
    with atomic_write(out / "review_stats.html") as fh:
        fh.write(html_page(res, figs))
    paths["review_stats.html"] = out / "review_stats.html"
    return paths


def _num(v: SupportsFloat | None, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{float(v):.{digits}f}"


def _coef(v: Any, lo: Any, hi: Any, n: Any) -> Cell:
    """A coefficient with its interval and n beneath it."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return Cell("—", None, note=(f"n={int(n or 0)}",), stacked=False)
    ival = (f"[{_num(lo, 2)}, {_num(hi, 2)}]",) if lo is not None and not (isinstance(lo, float) and np.isnan(lo)) else ()
    return Cell(_num(v), float(v), note=(*ival, f"n={int(n)}"), data={"lo": lo, "hi": hi, "n": int(n)})


def _table(name: str, headers: list[str], rows: list[list[Cell]], numeric: range | list[int]) -> Table:
    """A table of the page: its columns keyed by position, those in `numeric` right-aligned."""
    columns = tuple(Column(f"c{i}", h, numeric=i in numeric) for i, h in enumerate(headers))
    return Table(name, columns, tuple(tuple(r) for r in rows))


def _overview_section(res: ReviewStats, c: dict[str, Any]) -> Section:
    # "by N reviewers" counts those who rated; the others assigned are said apart
    by = f"{c['reviewers_rated']} reviewer{'s' if c['reviewers_rated'] != 1 else ''}"
    if c["reviewers"] != c["reviewers_rated"]:
        by += f" (of {c['reviewers']} assigned)"
    lead = f"{res.rubric.title}: {c['rated']} ratings of {c['units']} units by {by}; {_raters_sentence(c['raters_per_unit'])}; {c['skipped']} skipped."
    blocks: list[Block] = [Paragraph(lead, "lead"), Paragraph(_origin_sentence(res.meta)), *(Paragraph(n, "warn") for n in res.notes)]
    return Section("overview", "Overview", tuple(blocks))


def _rates_section(res: ReviewStats) -> Section | None:
    """Pass rates, the composite and the worst-case rate (those the rubric has)."""
    prow = [
        [text(r.label), text(r.passing), rate(r.rate, r.lo, r.hi, r.units), text(f"{r.pass_ratings} / {r.ratings}")]
        for r in res.pass_rates.itertuples(index=False)
    ]
    blocks: list[Block] = []
    if prow:  # a rubric whose dimensions have no pass rule (a 1-5 score, a label) has no pass rates
        blocks.append(_table("pass_rates", ["Dimension", "Pass", "Pass rate (units, 95% bootstrap CI)", "Passing ratings"], prow, [2, 3]))
        blocks.append(Paragraph("A unit's pass rate is the share of its reviewers who rated it passing; rates average over units."))
    if res.composite:
        cm = res.composite
        blocks += [
            Heading("Composite"),
            Paragraph(
                f"Mean of {', '.join(cm['dimensions'])} (0-2): {_num(cm['mean'], 2)} [{_num(cm['lo'], 2)}, {_num(cm['hi'], 2)}] over {cm['units']} units (95% bootstrap CI).",
                "plain",
            ),
        ]
    if res.worst_case:
        w, pr = res.worst_case, res.worst_case["per_rating"]
        blocks += [
            Heading(w["label"]),
            Paragraph(w["definition"], "plain"),
            Paragraph(
                f"{rate(w['p'], w['lo'], w['hi'], w['n']).shown} of units ({w['k']} units; {w['rule']}; Wilson 95% CI); "
                f"per rating {rate(pr['p'], pr['lo'], pr['hi'], pr['n']).shown}.",
                "plain",
            ),
        ]
    return Section("rates", "Pass rates" if prow else "Summary", tuple(blocks)) if blocks else None


def _validity_section(res: ReviewStats) -> Section:
    """The share of ratings judging a unit valid, and the parts the rubric draws from them."""
    v = res.validity or {}
    counts = ", ".join(f"{k} {n}" for k, n in (v.get("counts") or {}).items())
    blocks: list[Block] = [
        Paragraph(
            f"{v.get('label')}: {rate(v.get('p'), v.get('lo'), v.get('hi'), v.get('n')).shown} of ratings judged the unit valid "
            f"({v.get('k')} of {v.get('n')} ratings answered {' or '.join(v.get('valid') or [])}; Wilson 95% CI; {counts}).",
            "plain",
        ),
        *res.reviewed,
    ]
    return Section("validity", "Units judged valid", tuple(blocks))


def _agreement_section(res: ReviewStats) -> Section:
    ag = res.agreement
    multi = [c for c in AGREEMENT_ORDER if c != "cohen_kappa"]
    arow = []
    for dkey in dict.fromkeys(ag["dimension"]):
        sub = ag[(ag["dimension"] == dkey) & (ag["coefficient"] != "cohen_kappa")].set_index("coefficient")
        cells = [_coef(*sub.loc[c, ["value", "lo", "hi", "units"]]) if c in sub.index else text("n/a") for c in multi]
        arow.append([text(ag.loc[ag["dimension"] == dkey, "label"].iloc[0]), *cells])
    blocks: list[Block] = [_table("agreement", ["Dimension", *[AGREEMENT_TITLES[c] for c in multi]], arow, range(1, len(multi) + 1))]
    kappa = ag[(ag["coefficient"] == "cohen_kappa") & (ag["reviewers"] != "")]
    if len(kappa):
        krow = [[text(r.label), text(r.reviewers), _coef(r.value, r.lo, r.hi, r.units)] for r in kappa.itertuples(index=False)]
        blocks += [Heading("Cohen's kappa per pair of reviewers"), _table("cohen_kappa", ["Dimension", "Reviewers", "Cohen's kappa"], krow, [2])]
    blocks.append(
        Paragraph(
            "Units rated by two reviewers or more; 95% bootstrap intervals over units. Reviewers rotate over the "
            "units, so the multi-rater coefficients take every reviewer's ratings of each unit, and Cohen's kappa, which needs "
            "two fixed raters, is given per pair of reviewers on the units both rated (n: those units). Alpha is ordinal on "
            "ordinal scales, nominal otherwise; not-applicable ratings are left out."
        )
    )
    return Section("agreement", "Agreement between reviewers", tuple(blocks))


def _auto_section(res: ReviewStats) -> Section:
    arow = [
        [
            text(r.dimension),
            text(r.automatic),
            rate(r.rate, r.lo, r.hi, r.n),
            text(f"{r.agree} / {r.n}"),
            _coef(r.cohen_kappa, r.kappa_lo, r.kappa_hi, r.n),
            _coef(r.gwet_ac1, r.ac1_lo, r.ac1_hi, r.n),
        ]
        for r in res.auto.itertuples(index=False)
    ]
    headers = ["Dimension", "Automatic label", "Agreement (Wilson 95% CI)", "Agreeing", "Cohen's kappa", "Gwet's AC1"]
    return Section("auto", "Reviewers vs automatic labels", (_table("auto_agreement", headers, arow, range(2, 6)),))


def page_sections(res: ReviewStats, figures: dict[str, BarFigure] | None = None) -> list[Section]:
    """The page's sections as report parts; `figures` the paragraph figures (None: made here)."""
    sections = [_overview_section(res, res.summary()["counts"])]
    rates = _rates_section(res)
    if rates is not None:
        sections.append(rates)
    if res.validity is not None:
        sections.append(_validity_section(res))
    if len(res.agreement):
        sections.append(_agreement_section(res))
    if len(res.auto):
        sections.append(_auto_section(res))
    if figures is None:
        figures = part_figures(res.parts) if res.parts is not None else {}
    sections += _parts_sections(res, figures) + _picks_sections(res)
    if len(res.flags):
        frow = [[text(r.label), count(r.ratings), count(r.units)] for r in res.flags.itertuples(index=False)]
        sections.append(Section("flags", "Flags", (_table("flags", ["Flag", "Ratings", "Units"], frow, [1, 2]),)))
    rrow = [
        [text(r.reviewer), count(r.total), count(r.rated), count(r.skipped), count(r.todo), text("revoked" if r.revoked else "")]
        for r in res.progress.itertuples(index=False)
    ]
    sections.append(Section("reviewers", "Reviewers", (_table("progress", ["Reviewer", "Tasks", "Rated", "Skipped", "To do", ""], rrow, range(1, 5)),)))
    return sections


def html_page(res: ReviewStats, figures: dict[str, BarFigure] | None = None) -> str:
    """One self-contained page (the report's skeleton and parts: no script, no external resource);
    `figures` the paragraph figures (None: drawn here)."""
    from ..report.html import page
    from ..report.render_html import section_html

    sections = [(s.anchor, s.title, str(section_html(s))) for s in page_sections(res, figures)]
    return page("Clinician review", [escape(res.rubric.title)], sections, "medresilience clinician review; tables beside this page as CSV and Parquet.")


def _raters_sentence(per_unit: dict[str, int]) -> str:
    """'3 units rated by 3 reviewers, 1 by 2' from {reviewers: units}."""
    if not per_unit:
        return "no unit rated yet"
    parts = [
        f"{n} unit{'s' if n != 1 else ''} rated by {k} reviewer{'s' if k != '1' else ''}" if i == 0 else f"{n} by {k}"
        for i, (k, n) in enumerate(per_unit.items())
    ]
    return ", ".join(parts)


def _origin_sentence(m: dict[str, Any]) -> str:
    """Where the units came from, from the fields the review's metadata holds (a sample of a suite
    or run, an answer file, or ratings imported from a file)."""
    said = []
    if m.get("imported_from"):
        coding = f" (coded {m['coding']})" if m.get("coding") not in (None, "medres") else ""
        said.append(f"Imported from {Path(str(m['imported_from'])).name}{coding}: {m.get('n_sampled')} units")
    else:
        if m.get("suite_name"):
            said.append(f"Suite {m['suite_name']}" + (f" v{m['suite_version']}" if m.get("suite_version") is not None else ""))
        if m.get("run"):
            said.append(f"run {m['run']}")
        if m.get("answers"):
            said.append(f"answers from {Path(str(m['answers'])).name}")
        sample = f"sample of {m.get('n_sampled')} from {m.get('population')} units" if m.get("n_sampled") is not None else ""
        if sample:
            sample += f", stratified by {', '.join(m.get('strata') or []) or 'nothing'}"
            sample += f", seed {m['seed']}" if m.get("seed") is not None else ""
            sample += f", dual share {m['dual']}" if m.get("dual") is not None else ""
            said.append(sample)
    return "; ".join(said) + "." if said else ""


def _parts_sections(res: ReviewStats, figures: dict[str, BarFigure]) -> list[Section]:
    """The paragraph statistics of a rubric rated part by part: means per source, labels, score
    histogram and MISD per source (figure and table), agreement."""
    from .parts import MISD_POPULATIONS

    p = res.parts
    if p is None:
        return []
    whole = [d for d in res.rubric.dimensions if f"{d.key}_mean" in p.by_source.columns]
    rows = [
        [
            text(r["source"]),
            count(r["answers"]),
            *[_coef(r[f"{d.key}_mean"], r[f"{d.key}_lo"], r[f"{d.key}_hi"], r["answers"]) for d in whole],
            _coef(r["paragraph_mean"], r["paragraph_lo"], r["paragraph_hi"], r["answers"]),
            text(f"{r['no_advice']} / {r['paragraph_ratings']}"),
        ]
        for r in p.by_source.to_dict("records")
    ]
    headers = ["Source", "Answers", *[f"{d.label} (mean)" for d in whole], "Paragraphs (mean)", "No advice"]
    blocks: list[Block] = [_table("parts_by_source", headers, rows, range(1, len(whole) + 4))]
    if len(p.labels):
        labels = p.labels.pivot(index="title", columns="source", values="count")
        lrows = [[text(t), *[count(v) for v in row]] for t, row in zip(labels.index, labels.values.tolist())]
        blocks += [
            Heading("Issue labels per source (paragraph ratings)"),
            _table("parts_labels", ["Label", *[str(c) for c in labels.columns]], lrows, range(1, len(labels.columns) + 1)),
        ]
    if p.scores_by_source is not None and len(p.scores_by_source):
        blocks += [Heading("Paragraph scores per source"), *_figure(figures, "parts_scores_by_source"), _wide(p.scores_by_source, "score", "ratings", "Score")]
    m = p.misd_within_2
    misd = [[count(r.misd), count(r.paragraphs)] for r in p.misd_distribution.itertuples(index=False)]
    blocks += [
        Heading("Maximum inter-rater score difference per paragraph"),
        _table("parts_misd", ["MISD", "Paragraphs"], misd, [1]),
        Paragraph(f"MISD population: {p.misd_population}, {MISD_POPULATIONS[p.misd_population]}."),
    ]
    if p.misd_by_source is not None and len(p.misd_by_source):
        blocks += [*_figure(figures, "parts_misd_by_source"), _wide(p.misd_by_source, "misd", "paragraphs", "MISD")]
    agreement = [
        [text(AGREEMENT_TITLES.get(str(r.coefficient), str(r.coefficient))), _coef(r.value, r.lo, r.hi, r.paragraphs)]
        for r in p.agreement.itertuples(index=False)
    ]
    blocks += [
        Paragraph(f"MISD at most 2: {rate(m['p'], m['lo'], m['hi'], m['n']).shown} (interval clustered by answer).", "plain"),
        _table("parts_agreement", ["Ordinal agreement on paragraphs", "Value"], agreement, [1]),
        Paragraph(
            "Means: bootstrap intervals over answers; a paragraph's rating is its raters' mean, 'no advice' left out. Agreement intervals resample answers."
        ),
    ]
    return [Section("parts", "Answers by source, paragraph by paragraph", tuple(blocks))]


def _figure(figures: dict[str, BarFigure], name: str) -> list[Block]:
    return [figures[name]] if name in figures else []


def _wide(df: pd.DataFrame, level: str, count_column: str, title: str) -> Table:
    """A level x source table of counts (the data of a per-source figure)."""
    wide = df.pivot(index=level, columns="source", values=count_column)
    rows = [[text(k), *[count(v) for v in row]] for k, row in zip(wide.index, wide.values.tolist())]
    return _table(f"{level}_by_source", [title, *[str(c) for c in wide.columns]], rows, range(1, len(wide.columns) + 1))


def _picks_sections(res: ReviewStats) -> list[Section]:
    """Per-pair binomial tests of a rubric where raters pick the true one."""
    k = res.picks
    if k is None:
        return []
    s, t = k.summary, k.summary["picked_true"]
    rows = [
        [
            text(str(r.item_id)),
            text(" / ".join((str(r.k), str(r.n)))),
            text("—" if r.p_value is None else format(r.p_value, ".3f")),
            text("yes" if r.told_apart else "no"),
        ]
        for r in k.per_unit.itertuples(index=False)
        if r.n
    ]
    lead = (
        f"Picked the true one: {rate(t['p'], t['lo'], t['hi'], t['n']).shown} (clustered by pair); {s['told_apart']} of {s['units']} pairs told apart; "
        f"{s['at_least_40pct_unsure']} with at least 40% of raters unable to tell."
    )
    table = _table("picks", ["Pair", "Picked the true one", "p (exact, one-sided)", "Told apart (p < 0.05)"], rows, [1, 2])
    return [Section("picks", "Which one is real", (Paragraph(lead, "plain"), table))]
