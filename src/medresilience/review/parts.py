"""The statistics of a rubric rated part by part (CancerCare, Cancer-Myth §2 and appendix A.4:
each answer rated 1-5 as a whole and paragraph by paragraph, with issue labels), written by
`medres review stats` beside the per-dimension tables.

- Per source (the hidden fact the answers are grouped by): the mean whole-answer rating and the
  mean paragraph rating (a paragraph's mean over its raters, "no advice" left out, averaged per
  answer), each with a bootstrap interval over answers; paragraphs and "no advice" ratings.
- Label counts per source: paragraph ratings carrying each issue label, of the paragraph ratings.
- The maximum inter-rater score difference (MISD) of each paragraph two or more raters scored
  (max - min of their 1-5 ratings), its distribution and the share of paragraphs with MISD <= 2
  (clustered by answer).
- Ordinal agreement on the paragraphs: Gwet's AC2 with ordinal weights and Krippendorff's ordinal
  alpha over the paragraphs x raters table ("no advice" missing), with bootstrap intervals that
  resample answers (a paragraph's neighbours are not independent of it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import stats
from .db import ReviewDB, opened
from .rubrics import PART, ReviewRubric, part_key

GROUP = "source"


@dataclass
class PartsStats:
    rubric: ReviewRubric
    by_source: pd.DataFrame
    labels: pd.DataFrame
    misd: pd.DataFrame  # one row per paragraph scored by two or more raters
    misd_distribution: pd.DataFrame
    misd_within_2: dict[str, Any]
    agreement: pd.DataFrame

    def summary(self) -> dict[str, Any]:
        def rec(df: pd.DataFrame) -> list[dict[str, Any]]:
            return json.loads(df.to_json(orient="records")) if len(df) else []

        return {
            "by_source": rec(self.by_source),
            "labels": rec(self.labels),
            "misd_distribution": rec(self.misd_distribution),
            "misd_within_2": self.misd_within_2,
            "agreement": rec(self.agreement),
        }


def _paragraph_rows(db: ReviewDB, rubric: ReviewRubric) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per rated answer: unit, reviewer, source, the whole-answer values; one row per
    rated paragraph: unit, part, reviewer, source, value, score (None for not applicable), labels)."""
    assert rubric.per_part is not None
    units = db.units()
    na = rubric.per_part.not_applicable
    answers, paras = [], []
    for r in db.ratings():
        if r["status"] != "rated":
            continue
        u = units[r["unit_id"]]
        source = str(u.hidden.get(GROUP, u.strata.get(GROUP)))
        answers.append({"unit_id": r["unit_id"], "reviewer": r["reviewer"], GROUP: source, **{d.key: r["values"].get(d.key) for d in rubric.dimensions}})
        # the parts rated (an imported review's units show no text to count them by)
        rated_parts = sorted(int(k[len(PART) :]) for k in r["values"] if k.startswith(PART) and k[len(PART) :].isdigit())
        for n in rated_parts:
            v = r["values"][part_key(n)]
            labels = [f.split(":", 2)[2] for f in r["flags"] if f.startswith(f"{PART}{n}:")]
            paras.append(
                {
                    "unit_id": r["unit_id"],
                    "part": n,
                    "reviewer": r["reviewer"],
                    GROUP: source,
                    "value": v,
                    "score": None if v == na else int(v),
                    "labels": labels,
                }
            )
    return pd.DataFrame(answers), pd.DataFrame(paras, columns=["unit_id", "part", "reviewer", GROUP, "value", "score", "labels"])


def _mean_row(values: pd.Series, n_resamples: int, seed: int, confidence: float) -> tuple[Any, Any, Any]:
    b = stats.bootstrap_mean(values.dropna().astype(float).values, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return b["mean"], b["lo"], b["hi"]


def compute_parts(review: Path | str | ReviewDB, *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> PartsStats:
    with opened(review) as db:
        rubric = db.rubric
        if rubric.per_part is None:
            raise ValueError(f"rubric {rubric.key} is not rated part by part")
        answers, paras = _paragraph_rows(db, rubric)
    whole = [d for d in rubric.dimensions if d.scale == "ordinal" and d.numeric()]
    rows = []
    for source in sorted(set(answers[GROUP])) if len(answers) else []:
        a = answers[answers[GROUP] == source]
        p = paras[paras[GROUP] == source]
        row: dict[str, Any] = {GROUP: source, "answers": a["unit_id"].nunique(), "ratings": len(a)}
        for d in whole:
            per_answer = a.assign(v=pd.to_numeric(a[d.key], errors="coerce")).groupby("unit_id")["v"].mean()
            row[f"{d.key}_mean"], row[f"{d.key}_lo"], row[f"{d.key}_hi"] = _mean_row(per_answer, n_resamples, seed, confidence)
        scored = p.dropna(subset=["score"])
        per_answer = scored.groupby(["unit_id", "part"])["score"].mean().groupby(level=0).mean() if len(scored) else pd.Series(dtype=float)
        row["paragraph_mean"], row["paragraph_lo"], row["paragraph_hi"] = _mean_row(per_answer, n_resamples, seed, confidence)
        row["paragraphs"] = int(p[["unit_id", "part"]].drop_duplicates().shape[0])
        row["paragraph_ratings"] = len(p)
        row["no_advice"] = int(p["score"].isna().sum())
        rows.append(row)
    by_source = pd.DataFrame(rows)

    lrows = []
    for source in sorted(set(paras[GROUP])) if len(paras) else []:
        p = paras[paras[GROUP] == source]
        for f in rubric.part_labels:
            lrows.append(
                {GROUP: source, "label": f.key, "title": f.label, "count": int(p["labels"].map(lambda xs, k=f.key: k in xs).sum()), "paragraph_ratings": len(p)}
            )
    labels = pd.DataFrame(lrows)

    scored = paras.dropna(subset=["score"])
    grouped = scored.groupby(["unit_id", "part", GROUP])["score"] if len(scored) else None
    misd = (
        grouped.agg(raters="count", misd=lambda s: int(s.max() - s.min())).reset_index().query("raters >= 2")
        if grouped is not None
        else pd.DataFrame(columns=["unit_id", "part", GROUP, "raters", "misd"])
    )
    top = int(max(int(v) for v in rubric.per_part.rated_values()) - min(int(v) for v in rubric.per_part.rated_values()))
    dist = pd.DataFrame([{"misd": k, "paragraphs": int((misd["misd"] == k).sum())} for k in range(top + 1)])
    dist["share"] = dist["paragraphs"] / len(misd) if len(misd) else None
    within = stats.clustered_rate((misd["misd"] <= 2).tolist(), misd["unit_id"].tolist(), confidence, seed=seed)
    misd_within_2 = {"k": within.k, "n": within.n, "p": within.p, "lo": within.lo, "hi": within.hi, "clusters": "answers"}

    table, answers_of = [], []
    if len(scored):
        wide = scored.pivot_table(index=["unit_id", "part"], columns="reviewer", values="score", aggfunc="first")
        table = [[None if pd.isna(v) else int(v) for v in row] for row in wide.values.tolist()]
        answers_of = [uid for uid, _ in wide.index]  # the paragraphs of an answer resample together
    cats = [int(v) for v in rubric.per_part.rated_values()]
    arows = []
    for coef, kw in (("gwet_ac2", {"weights": "ordinal"}), ("krippendorff_alpha", {"level": "ordinal"})):
        res = stats.agreement(table, coef, categories=cats, n_resamples=n_resamples, seed=seed, confidence=confidence, clusters=answers_of or None, **kw)
        arows.append({"coefficient": coef, "detail": "ordinal", "value": res.value, "lo": res.lo, "hi": res.hi, "paragraphs": res.units, "reason": res.reason})
    return PartsStats(rubric, by_source, labels, misd, dist, misd_within_2, pd.DataFrame(arows))


def write(res: PartsStats, out_dir: Path | str) -> dict[str, Path]:
    from ..fileio import atomic_write, write_csv_frame

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, df in (
        ("parts_by_source", res.by_source),
        ("parts_labels", res.labels),
        ("parts_misd", res.misd),
        ("parts_misd_distribution", res.misd_distribution),
        ("parts_agreement", res.agreement),
    ):
        write_csv_frame(out / f"{name}.csv", df)
        paths[name] = out / f"{name}.csv"
    with atomic_write(out / "parts_summary.json") as fh:
        json.dump(res.summary(), fh, indent=2, default=str)
    paths["parts_summary"] = out / "parts_summary.json"
    return paths
