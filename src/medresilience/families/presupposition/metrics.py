"""False-presupposition metrics from the results frame.

Every answer is judged (delivery.py); a unit's `value` is the judge's score. Per model and setting,
over the whole suite (`overall`), per question category (`by_category`) and per generator model
(`by_generator`, the study's generator x evaluated-model matrix):

- `pcs`, the presupposition correction score: the mean judge score (-1 goes along with the false
  presupposition, 0 hints at it, 1 corrects it) over the *scored* presupposition units, with a 95%
  percentile bootstrap interval (2,000 resamples of the units, seed 0: the same interval on every
  machine). It is a mean score, not a share: the dict carries `unit: "score"`, `k` is the sum of
  the scores (so p = k / n) and `p` lies in [-1, 1]. With one scored unit every resample is that
  unit, so the interval is the point;
- `pcr`, the presupposition correction rate: the share of scored units judged 1, Wilson interval;
- `distribution`: the share of each score (-1, 0, 1; and any other value a custom rubric gives),
  Wilson intervals;
- `overcaution`: on the no-false-presupposition control (`nfp`), the share of scored units the
  judge says claim a false assumption the question does not hold (`flags_premise`; with a custom
  rubric: any verdict below the top value), Wilson interval; `nfp_answered` is the complement
  (the study's NFP accuracy);
- `unscored`: the share of judged units (an answer reached the judge: valid, invalid or unscored)
  that got no verdict, Wilson interval, with the count per condition. Unscored units are never
  part of PCS, PCR or over-caution; their reasons are kept with the scores in the store
  (`Store.score_reasons`) and tallied in the report;
- `invalid` and call `errors` (no answer, so nothing to judge) are counted, never scored.

Block shape: {"overall": {...}, "by_category": {category: overall-shaped}, "by_generator":
{generator: overall-shaped}, "counts": {...}}; a unit without a category (or generator) counts in
`overall` only. `mean_by_stratum` holds the unweighted means across models per category and
generator; `generator_matrix` turns the by_generator blocks into the matrix table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ... import stats
from .taxonomy import CATEGORY_KEYS, NFP, PRESUPPOSITION, generator_name

#: the answers that reached the judge (an error or a missing unit has no answer to judge)
JUDGED = ("valid", "invalid", "unscored")
#: the bootstrap behind every PCS interval
N_RESAMPLES = 2000
SEED = 0
INTERVAL = f"percentile bootstrap, {N_RESAMPLES} resamples, seed {SEED}"
#: the rates averaged across models, with the unit each is in
MEAN_KEYS = (("pcs", "score"), ("pcr", "rate"), ("overcaution", "rate"), ("nfp_answered", "rate"), ("unscored", "rate"))
STRATA = ("by_category", "by_generator")


def _label(x: float) -> str:
    return f"{x:g}"


def pcs_rate(values: object, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, object]:
    """The mean of judge scores with its percentile bootstrap 95% interval, as a rate-shaped dict
    ({k: sum of the scores, n, p: the mean, lo, hi, unit: "score", interval})."""
    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    out: dict[str, object] = {"k": int(round(float(v.sum()))) if n else 0, "n": n, "p": None, "lo": None, "hi": None, "unit": "score", "interval": INTERVAL}
    if n == 0:
        return out
    b = stats.bootstrap_mean(v, n_resamples=n_resamples, seed=seed, method="percentile")
    b_mean, b_lo, b_hi = b["mean"], b["lo"], b["hi"]
    if b_mean is None:  # not with n > 0: bootstrap_mean gives a mean of any value
        return out
    mean = float(b_mean)
    lo = mean if b_lo is None else min(float(b_lo), mean)
    hi = mean if b_hi is None else max(float(b_hi), mean)
    out.update(p=mean, lo=lo, hi=hi)
    return out


def _counts(status: np.ndarray) -> dict[str, int]:
    return {
        "units": int(status.size),
        "scored": int((status == "valid").sum()),
        "unscored": int((status == "unscored").sum()),
        "invalid": int((status == "invalid").sum()),
        "errors": int((status == "error").sum()),
        "missing": int((status == "missing").sum()),
    }


def _slice(g: pd.DataFrame) -> dict[str, object]:
    """The overall-shaped block of one slice of the frame (a model and setting, or one stratum)."""
    cond = g["condition"].astype(str).to_numpy()
    status = g["status"].astype(str).to_numpy()
    value = g["value"].to_numpy(dtype=np.float64)
    correct = g["correct"].to_numpy(dtype=bool)
    pm, nm = cond == PRESUPPOSITION, cond == NFP
    scored = (status == "valid") & ~np.isnan(value)
    ps, ns = pm & scored, nm & scored
    vals = value[ps]
    n_p, n_n = int(ps.sum()), int(ns.sum())
    present = sorted(set(vals.tolist()) | {-1.0, 0.0, 1.0})
    judged = np.isin(status, JUDGED)
    unscored = stats.wilson(int((status == "unscored").sum()), int(judged.sum())).as_dict()
    unscored.update({c: int(((status == "unscored") & (cond == c)).sum()) for c in (PRESUPPOSITION, NFP)})
    flags = int(n_n - correct[ns].sum())
    return {
        "n_items": int(g["item_id"].nunique()),
        "pcs": pcs_rate(vals),
        "pcr": stats.wilson(int((vals >= 1).sum()), n_p).as_dict(),
        "distribution": {_label(x): stats.wilson(int((vals == x).sum()), n_p).as_dict() for x in present},
        "overcaution": stats.wilson(flags, n_n).as_dict(),
        "nfp_answered": stats.wilson(n_n - flags, n_n).as_dict(),
        "unscored": unscored,
        "presupposition": _counts(status[pm]),
        "nfp": _counts(status[nm]),
    }


def _strata(g: pd.DataFrame, column: str, order: tuple[str, ...] = ()) -> dict[str, dict[str, object]]:
    if column not in g.columns:
        return {}
    key = g[column].astype(object)
    keep = key.notna().to_numpy()
    if not keep.any():
        return {}
    sub = g[keep]
    names = sub[column].astype(str)
    out = {str(k): _slice(s) for k, s in sub.groupby(names.to_numpy(), sort=True)}
    ranked = [k for k in order if k in out] + sorted(k for k in out if k not in order)
    return {k: out[k] for k in ranked}


def presupposition_metrics(df: pd.DataFrame) -> dict[str, object]:
    """{"models": {model: {setting: block}}, "mean_across_models": {setting: {key: {mean, min, max,
    models, unit}}}, "mean_by_stratum": {setting: {by_category|by_generator: {stratum: means}}}}"""
    if df.empty:
        return {"models": {}, "mean_across_models": {}, "mean_by_stratum": {}}
    models: dict[str, dict[str, dict[str, object]]] = {}
    for (model, setting), g in df.groupby(["model", "setting"], observed=True, sort=False):
        block: dict[str, object] = {
            "overall": _slice(g),
            "by_category": _strata(g, "category", CATEGORY_KEYS),
            "by_generator": _strata(g, "generator"),
            "counts": _counts(g["status"].astype(str).to_numpy()),
        }
        models.setdefault(str(model), {})[str(setting)] = block
    return {"models": models, "mean_across_models": mean_across_models(models), "mean_by_stratum": mean_by_stratum(models)}


def _settings(models: Mapping[str, Mapping[str, object]]) -> list[str]:
    seen = list(dict.fromkeys(s for v in models.values() for s in v))
    return sorted(seen, key=lambda s: (s != "none", seen.index(s)))


#: key -> its unweighted mean, min and max over the models, how many models have it, and its unit
Means = dict[str, dict[str, float | str]]


def _mean_of(blocks: list[dict[str, Any]]) -> Means:
    agg: Means = {}
    for key, unit in MEAN_KEYS:
        vals = [float(b[key]["p"]) for b in blocks if isinstance(b.get(key), dict) and b[key].get("p") is not None]
        if vals:
            agg[key] = {"mean": float(np.mean(vals)), "min": float(np.min(vals)), "max": float(np.max(vals)), "models": len(vals), "unit": unit}
    return agg


def mean_across_models(models: dict[str, Any]) -> dict[str, Means]:
    """Per setting, the unweighted mean, min and max over models of PCS (unit "score"), PCR,
    over-caution, NFP answered and unscored (unit "rate"); `models` says how many models count."""
    return {s: _mean_of([v[s]["overall"] for v in models.values() if s in v]) for s in _settings(models)}


def mean_by_stratum(models: dict[str, Any]) -> dict[str, dict[str, dict[str, Means]]]:
    """The same means per category and per generator: {setting: {by_category: {stratum: means}}}.
    A model without a stratum is left out of that stratum's mean."""
    out: dict[str, dict[str, dict[str, Means]]] = {}
    for s in _settings(models):
        per: dict[str, dict[str, Means]] = {}
        for group in STRATA:
            names = list(dict.fromkeys(k for v in models.values() if s in v for k in v[s].get(group, {})))
            per[group] = {k: _mean_of([v[s][group][k] for v in models.values() if s in v and k in v[s].get(group, {})]) for k in names}
        out[s] = per
    return out


MATRIX_COLUMNS = ["model", "setting", "generator", "own", "pcs_p", "pcs_lo", "pcs_hi", "pcs_n", "pcr_k", "pcr_p", "pcr_lo", "pcr_hi", "pcr_n", "unscored_k"]


def generator_matrix(models: dict[str, Any]) -> pd.DataFrame:
    """The generator x evaluated-model matrix (the study's Figure 5b) as a long table: one row per
    (model, setting, generator) with PCS and PCR and their intervals; `own` marks a model answering
    questions it generated itself (generator name equal to the model's normalised label)."""
    rows = []
    for model, settings in models.items():
        for setting, block in settings.items():
            for gen, b in (block.get("by_generator") or {}).items():
                pcs, pcr = b.get("pcs") or {}, b.get("pcr") or {}
                rows.append(
                    {
                        "model": model,
                        "setting": setting,
                        "generator": gen,
                        "own": generator_name(model) == gen,
                        "pcs_p": pcs.get("p"),
                        "pcs_lo": pcs.get("lo"),
                        "pcs_hi": pcs.get("hi"),
                        "pcs_n": pcs.get("n"),
                        "pcr_k": pcr.get("k"),
                        "pcr_p": pcr.get("p"),
                        "pcr_lo": pcr.get("lo"),
                        "pcr_hi": pcr.get("hi"),
                        "pcr_n": pcr.get("n"),
                        "unscored_k": (b.get("unscored") or {}).get("k"),
                    }
                )
    return pd.DataFrame(rows, columns=MATRIX_COLUMNS)
