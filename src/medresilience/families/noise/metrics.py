"""Clinical-noise metrics from the results frame.

Per model and setting (and per source dataset), for the original case (`clean`) and each variant:

- accuracy: correct / answered units with its 95% interval; answered = a reply that was read
  (`valid`) or could not be (`invalid`, or `truncated`: cut at its token budget; both counted as
  not correct, the study's rule, and counted apart); `unscored` (a judge that gave no verdict)
  and call errors are left out and counted;
- the drop from the original, as the study tests it: the accuracy of the originals of the same
  cases (the cases the variant covers) minus the variant's, with the study's one-sided Fisher exact
  test (is the original's accuracy the higher?), which compares the two groups as if unpaired and
  pools the epochs, and is named as the study's;
- beyond it, paired by case (each variant of a case is paired with the same case's original): the
  McNemar test on the discordant pairs (b: right on the original and wrong on the variant, c: the
  reverse), the paired drop (mean over pairs of original minus variant correctness) with a
  case-clustered bootstrap 95% interval (the bootstrap gives the interval only; the p-value is the
  McNemar test's);
- the flip rate: among the pairs whose original was answered right, the share answered wrong
  on the variant; `flip_read` beside it leaves out the pairs whose variant reply was unread
  (invalid or truncated).

A case is the unit of independence. When each case gives one unit (one epoch), the intervals of
accuracy and flip rate are Wilson intervals and the paired test is the exact McNemar test. When a
case gives several (`medres eval --epochs N`, the study's repeated runs: a pair is one case in one
epoch, the variant's answer with the original's answer of the same epoch), repeats of a case are
never counted as independent cases: the intervals of accuracy and flip rate are case-clustered
bootstrap ones (the Wilson interval kept beside as wilson_lo / wilson_hi) and the paired test is
the clustered McNemar test (Durkalski); each result's `test` / `interval` field names which. Each
variant also gets its accuracy per epoch with the mean and standard deviation across epochs
(`epochs`), the study's "mean of 3 runs" view.

Block shape: {"overall": {"n_items", "n_epochs", "clean_acc", "clean_epochs", "<variant>_acc", "<variant>_flip",
"<variant>_drop"}, "by_variant": {variant: {"acc", "drop", "paired", "flip", "epochs", "facets"}},
"by_source": {source: overall-shaped}, "counts": {...}}."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ... import stats
from ...run.frame import epochs_of
from ...score import ANSWERED
from .taxonomy import CONDITIONS, facets_of


def _finite(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def _order(conditions: list[str]) -> list[str]:
    known = [c for c in CONDITIONS if c in conditions]
    return known + sorted(c for c in conditions if c not in CONDITIONS and c != "clean")


def _clustered(rate: dict[str, object], succ: np.ndarray, size: np.ndarray, seed: int = 0) -> dict[str, object]:
    """A rate of units grouped in cases (successes and units per case): Wilson when every case
    gives one unit, else the case-clustered bootstrap interval, the Wilson one kept beside it."""
    if not len(size) or size.max() <= 1:
        rate["interval"] = "wilson"
        return rate
    rate["wilson_lo"], rate["wilson_hi"] = rate["lo"], rate["hi"]
    rate["lo"], rate["hi"] = stats.cluster_interval(succ, size, seed=seed)
    rate["interval"] = "case-clustered bootstrap"
    return rate


def _per_case(ok: np.ndarray, case: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(successes, units) per case."""
    codes, _ = pd.factorize(case, sort=False)
    g = int(codes.max()) + 1 if len(codes) else 0
    return np.bincount(codes, weights=ok, minlength=g).astype(np.int64), np.bincount(codes, minlength=g)


def _accuracy(correct: np.ndarray, status: np.ndarray, case: np.ndarray | None = None) -> dict[str, Any]:
    answered = np.isin(status, ANSWERED)
    r = stats.wilson(int((correct & answered).sum()), int(answered.sum())).as_dict()
    if case is not None:
        _clustered(r, *_per_case(correct[answered], case[answered]))
    r["invalid"] = int((status == "invalid").sum())
    r["truncated"] = int((status == "truncated").sum())
    r["unscored"] = int((status == "unscored").sum())
    r["errors"] = int((status == "error").sum())
    return r


def _epochs(correct: np.ndarray, status: np.ndarray, epoch: np.ndarray) -> dict[str, object]:
    """Accuracy in each epoch, and its mean and standard deviation (n - 1) across the epochs that
    have answers (sd None with fewer than two)."""
    per = []
    for e in sorted(set(epoch.tolist())):
        m = epoch == e
        a = _accuracy(correct[m], status[m])
        per.append({"epoch": int(e), "p": a["p"], "k": a["k"], "n": a["n"]})
    ps = [r["p"] for r in per if r["p"] is not None]
    return {"n": len(per), "mean": float(np.mean(ps)) if ps else None, "sd": float(np.std(ps, ddof=1)) if len(ps) > 1 else None, "per_epoch": per}


def _slice(g: pd.DataFrame, seed: int = 0) -> tuple[dict[str, object], dict[str, object]]:
    """(overall, by_variant) of one slice of the frame (one model and setting, or one source)."""
    cond = g["condition"].astype(str).to_numpy()
    status = g["status"].astype(str).to_numpy()
    correct = g["correct"].to_numpy(dtype=bool)
    item = g["item_id"].astype(str).to_numpy()
    epoch = epochs_of(g)
    pair = item if not epoch.any() else np.char.add(np.char.add(item.astype(str), "\x1f"), epoch.astype(str))  # a case in one epoch
    answered = np.isin(status, ANSWERED)
    is_clean = cond == "clean"
    clean_acc = _accuracy(correct[is_clean], status[is_clean], item[is_clean])
    cm = is_clean & answered
    clean_by_pair = pd.Series(correct[cm], index=pair[cm]).groupby(level=0, sort=False).first()
    overall: dict[str, object] = {
        "n_items": int(len(set(item))),
        "n_epochs": int(len(set(epoch.tolist()))),
        "clean_acc": clean_acc,
        "clean_epochs": _epochs(correct[is_clean], status[is_clean], epoch[is_clean]),
    }
    by_variant: dict[str, object] = {}
    for c in _order(sorted(set(cond))):
        m = cond == c
        acc = _accuracy(correct[m], status[m], item[m])
        vm = m & answered
        v_item, v_correct = item[vm], correct[vm]
        base = clean_by_pair.reindex(pair[vm])
        paired = base.notna().to_numpy()
        cc = base.to_numpy()[paired].astype(bool)
        vc = v_correct[paired]
        v_read = (status[vm] == "valid")[paired]
        pi = v_item[paired]
        b = int((cc & ~vc).sum())
        cnt = int((~cc & vc).sum())
        per = pd.DataFrame({"i": pi, "d": cc.astype(np.int64) - vc.astype(np.int64)})
        grouped = per.groupby("i", sort=False)["d"].agg(["sum", "size"])
        boot = stats.paired_cluster_diff(grouped["sum"].to_numpy(), grouped["size"].to_numpy(), seed=seed)
        test = stats.paired_mcnemar(cc, vc, pi)  # clustered by case only where a case gives several pairs
        # the study's drop: the variant against the originals of the cases it covers
        same = is_clean & np.isin(item, np.unique(item[m]))
        base_acc = _accuracy(correct[same], status[same], item[same])
        fisher = stats.fisher_one_sided(base_acc["k"], base_acc["n"], acc["k"], acc["n"], "greater")
        flip = _clustered(stats.wilson(b, int(cc.sum())).as_dict(), *_per_case(~vc[cc], pi[cc]))
        read = cc & v_read
        flip_read = _clustered(stats.wilson(int((read & ~vc).sum()), int(read.sum())).as_dict(), *_per_case(~vc[read], pi[read]))
        diff = None if base_acc["p"] is None or acc["p"] is None else base_acc["p"] - acc["p"]
        try:
            facets = facets_of(c)
        except ValueError:
            facets = {}
        by_variant[c] = {
            "acc": acc,
            "drop": {
                "diff": diff,
                "original": {k: base_acc[k] for k in ("k", "n", "p")},
                "cases": int(len(np.unique(item[m]))),
                "odds_ratio": _finite(fisher["odds_ratio"]),
                "p_fisher": fisher["p"],
                "test": "fisher_one_sided",
                "design": "the study's: originals of the same cases against the variant, compared as unpaired groups",
            },
            "paired": {
                "n": int(paired.sum()),
                "b": b,
                "c": cnt,
                "p_mcnemar": test["p"],
                "test": test["test"],
                "drop": boot["diff"],
                "lo": boot["lo"],
                "hi": boot["hi"],
                "clusters": boot["clusters"],
                "interval": "case-clustered bootstrap",
            },
            "flip": flip,
            "flip_read": flip_read,
            "epochs": _epochs(correct[m], status[m], epoch[m]),
            "facets": facets,
        }
        overall[f"{c}_acc"] = acc
        overall[f"{c}_flip"] = flip
        overall[f"{c}_flip_read"] = flip_read
        overall[f"{c}_drop"] = boot["diff"]
    return overall, by_variant


def _counts(g: pd.DataFrame) -> dict[str, int]:
    status = g["status"].astype(str)
    return {
        "units": int(len(g)),
        "errors": int((status == "error").sum()),
        "invalid": int((status == "invalid").sum()),
        "truncated": int((status == "truncated").sum()),
        "unscored": int((status == "unscored").sum()),
        "missing": int((status == "missing").sum()),
    }


def noise_metrics(df: pd.DataFrame) -> dict[str, object]:
    """{"models": {model: {setting: block}}, "mean_across_models": {setting: {key: {mean, min, max, models}}}}"""
    if df.empty:
        return {"models": {}, "mean_across_models": {}, "mean_by_stratum": {}}
    models: dict[str, dict[str, dict[str, object]]] = {}
    for (model, setting), g in df.groupby(["model", "setting"], observed=True, sort=False):
        overall, by_variant = _slice(g)
        block: dict[str, object] = {"overall": overall, "by_variant": by_variant}
        sources = g["source"].astype(str)
        block["by_source"] = {str(s): _slice(gs)[0] for s, gs in g.groupby(sources, sort=True)}
        block["counts"] = _counts(g)
        models.setdefault(str(model), {})[str(setting)] = block
    return {"models": models, "mean_across_models": mean_across_models(models), "mean_by_stratum": {}}


def mean_across_models(models: dict[str, Any]) -> dict[str, Any]:
    """Unweighted mean, min and max over models of each headline rate and each paired drop."""
    seen = list(dict.fromkeys(s for v in models.values() for s in v))
    settings = sorted(seen, key=lambda s: (s != "none", seen.index(s)))
    out: dict[str, object] = {}
    for setting in settings:
        blocks = [v[setting]["overall"] for v in models.values() if setting in v]
        keys = list(dict.fromkeys(k for b in blocks for k in b if k.endswith(("_acc", "_flip", "_drop"))))
        agg: dict[str, object] = {}
        for k in keys:
            vals = []
            for b in blocks:
                v = b.get(k)
                v = v.get("p") if isinstance(v, dict) else v
                if v is not None:
                    vals.append(float(v))
            if vals:
                agg[k] = {"mean": float(np.mean(vals)), "min": float(np.min(vals)), "max": float(np.max(vals)), "models": len(vals)}
        out[setting] = agg
    return out
