"""The statistics of a rubric rated part by part (CancerCare, Cancer-Myth §2 and appendix A.4:
each answer rated 1-5 as a whole and paragraph by paragraph, with issue labels), written by
`medres review stats` beside the per-dimension tables.

- Per source (the hidden fact the answers are grouped by): the mean whole-answer rating and the
  mean paragraph rating (a paragraph's mean over its raters, "no advice" left out, averaged per
  answer), each with a bootstrap interval over answers; paragraphs and "no advice" ratings.
- Label counts per source: paragraph ratings carrying each issue label, of the paragraph ratings.
- The maximum inter-rater score difference (MISD) of each paragraph (max - min of its raters' 1-5
  ratings), its distribution overall and per source (Cancer-Myth Fig. 8) and the share of
  paragraphs with MISD <= 2 (clustered by answer). Its population is named (`MISD_POPULATIONS`):
  `two-or-more` (default), the paragraphs two or more raters scored; `study`, the study's code's:
  the paragraphs every rater of the answer scored (at least two), with each whole-answer rating
  every one of them gave mixed in as one more row (part 0).
- The 1-5 paragraph scores per source (Cancer-Myth Fig. 2 right): every scored paragraph rating
  under `two-or-more`; under `study` the ratings of the paragraphs every rater of the answer
  scored (whole-answer ratings not mixed in, as in the study's code).
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
from ..runtime.jsontypes import JSONObject
from .db import ReviewDB, opened
from .rubrics import PART, ReviewRubric, part_key

GROUP = "source"
#: the MISD populations by name, with the rule each keeps (`compute_parts(misd_population=...)`)
MISD_POPULATIONS = {
    "two-or-more": "paragraphs two or more raters scored",
    "study": "paragraphs every rater of the answer scored (at least two), whole-answer ratings mixed in as part 0 (the study's code)",
}


@dataclass
class PartsStats:
    rubric: ReviewRubric
    by_source: pd.DataFrame
    labels: pd.DataFrame
    misd: pd.DataFrame  # one row per paragraph scored by two or more raters
    misd_distribution: pd.DataFrame
    misd_within_2: dict[str, Any]
    agreement: pd.DataFrame
    misd_population: str = "two-or-more"
    misd_by_source: pd.DataFrame | None = None  # source, misd, paragraphs, share
    scores_by_source: pd.DataFrame | None = None  # source, score, ratings, share

    def summary(self) -> dict[str, object]:
        def rec(df: pd.DataFrame) -> list[JSONObject]:
            return json.loads(df.to_json(orient="records")) if len(df) else []

        return {
            "by_source": rec(self.by_source),
            "labels": rec(self.labels),
            "misd_distribution": rec(self.misd_distribution),
            "misd_within_2": self.misd_within_2,
            "misd_population": {"name": self.misd_population, "rule": MISD_POPULATIONS[self.misd_population]},
            "misd_by_source": rec(self.misd_by_source) if self.misd_by_source is not None else [],
            "scores_by_source": rec(self.scores_by_source) if self.scores_by_source is not None else [],
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
    b = stats.bootstrap_mean(values.dropna().astype(float).to_numpy(), confidence=confidence, n_resamples=n_resamples, seed=seed)
    return b["mean"], b["lo"], b["hi"]


def _misd_rows(answers: pd.DataFrame, scored: pd.DataFrame, rubric: ReviewRubric, population: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per paragraph of the MISD population: unit, part, source, raters, misd; the scored
    paragraph ratings the score histogram counts) under the named population."""
    cols = ["unit_id", "part", GROUP, "raters", "misd"]
    if not len(scored):
        return pd.DataFrame(columns=cols), scored
    per_para = scored.groupby(["unit_id", "part", GROUP])["score"].agg(raters="count", misd=lambda s: int(s.max() - s.min())).reset_index()
    if population == "two-or-more":
        return per_para.query("raters >= 2")[cols], scored
    rated_by = answers.groupby("unit_id")["reviewer"].nunique()
    every = per_para[(per_para["raters"] == per_para["unit_id"].map(rated_by)) & (per_para["raters"] >= 2)]
    keep = scored.merge(every[["unit_id", "part"]], on=["unit_id", "part"])
    whole = [d for d in rubric.dimensions if d.scale == "ordinal" and d.numeric()]
    rows = []
    for d in whole:
        v = answers.assign(score=pd.to_numeric(answers[d.key], errors="coerce")).dropna(subset=["score"])
        g = v.groupby(["unit_id", GROUP])["score"].agg(raters="count", misd=lambda s: int(s.max() - s.min())).reset_index()
        g = g[(g["raters"] == g["unit_id"].map(rated_by)) & (g["raters"] >= 2)]
        rows.append(g.assign(part=0)[cols])
    return pd.concat([every[cols], *rows], ignore_index=True).sort_values(["unit_id", "part"], kind="stable"), keep


def _counts_by_source(values: pd.DataFrame, column: str, levels: range, name: str) -> pd.DataFrame:
    """source x level: how many rows have each level of `column`, and the share of the source's rows."""
    rows = []
    for source in sorted(set(values[GROUP])) if len(values) else []:
        v = values.loc[values[GROUP] == source, column].astype(int)
        for k in levels:
            n = int((v == k).sum())
            rows.append({GROUP: source, column: k, name: n, "share": n / len(v) if len(v) else None})
    return pd.DataFrame(rows, columns=[GROUP, column, name, "share"])


def compute_parts(
    review: Path | str | ReviewDB, *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95, misd_population: str = "two-or-more"
) -> PartsStats:
    if misd_population not in MISD_POPULATIONS:
        raise ValueError(f"no MISD population {misd_population!r} (one of: {', '.join(MISD_POPULATIONS)})")
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
        row: dict[str, object] = {GROUP: source, "answers": a["unit_id"].nunique(), "ratings": len(a)}
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
    misd, counted = _misd_rows(answers, scored, rubric, misd_population)
    scale = [int(v) for v in rubric.per_part.rated_values()]
    top = max(scale) - min(scale)
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
    return PartsStats(
        rubric,
        by_source,
        labels,
        misd,
        dist,
        misd_within_2,
        pd.DataFrame(arows),
        misd_population,
        _counts_by_source(misd, "misd", range(top + 1), "paragraphs"),
        _counts_by_source(counted, "score", range(min(scale), max(scale) + 1), "ratings"),
    )


def write(res: PartsStats, out_dir: Path | str) -> dict[str, Path]:
    from ..runtime.fileio import atomic_write, write_csv_frame

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, df in (
        ("parts_by_source", res.by_source),
        ("parts_labels", res.labels),
        ("parts_misd", res.misd),
        ("parts_misd_distribution", res.misd_distribution),
        ("parts_misd_by_source", res.misd_by_source),
        ("parts_scores_by_source", res.scores_by_source),
        ("parts_agreement", res.agreement),
    ):
        if df is None:  # a table this review has none of
            continue
        write_csv_frame(out / f"{name}.csv", df)
        paths[name] = out / f"{name}.csv"
    with atomic_write(out / "parts_summary.json") as fh:
        json.dump(res.summary(), fh, indent=2, default=str)
    paths["parts_summary"] = out / "parts_summary.json"
    return paths
