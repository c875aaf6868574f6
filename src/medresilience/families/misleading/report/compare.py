"""Paired comparisons on shared items: run B against run A (a mitigation against its baseline, one
model against another on the same suite), or each mitigation setting against `none` in one run.

Units are paired by (item, probe, condition): the same question with the same context in both.
Only units answered on both sides count (errors and missing units are dropped and counted).
Each metric's difference B - A comes with a paired bootstrap interval that resamples items
(clusters), so the several Type 1 probes of one question move together:

- accuracy (clean, Type 1, Type 2): pooled share correct on the shared units;
- ASR (Type 1, Type 2) and TASR (Type 1): on the probes of items answered correctly clean on
  *both* sides (a common denominator; each run's own ASR is in its report), the share flipped
  (or flipped to the target);
- and the paired test that gives its p-value: McNemar (exact) when each item gives one pair, the
  clustered McNemar of Durkalski et al. when items give several.
Holm's correction is applied to those tests' p-values across the metrics of one comparison; the
bootstrap gives intervals only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .... import stats
from ....report.compare import Comparison as BaseComparison
from ....report.compare import Side, side
from ....scoring.types import ANSWERED

KEY = ["item_id", "probe_id", "condition"]
N_RESAMPLES = stats.CLUSTER_RESAMPLES


def _codes(col: pd.Series, categories: pd.Index) -> np.ndarray:
    """Codes of a column under a given vocabulary (-1 = missing or not in it)."""
    cat = col.array if isinstance(col.dtype, pd.CategoricalDtype) else pd.Categorical(col)
    if cat.categories.equals(categories):
        return np.asarray(cat.codes, dtype=np.int64)
    return np.asarray(categories.get_indexer(np.asarray(cat.categories, dtype=object)), dtype=np.int64)[cat.codes] * (cat.codes >= 0) - (cat.codes < 0)


def _vocab(*cols: pd.Series) -> pd.Index:
    """One vocabulary for several columns (the first column's own when they all share it)."""
    cats = [c.array.categories if isinstance(c.dtype, pd.CategoricalDtype) else pd.Index(pd.unique(c.dropna())) for c in cols]
    if all(c.equals(cats[0]) for c in cats[1:]):
        return cats[0]
    return pd.Index(list(dict.fromkeys(v for c in cats for v in c)), dtype=object)


def _units(f: pd.DataFrame, vocab: dict[str, list[Any]]) -> pd.DataFrame:
    """Answered units as integer keys (shared vocabularies across both sides) and outcomes."""
    f = f[f["status"].isin(ANSWERED)]
    label, target = _codes(f["label"], vocab["letters"]), _codes(f["target"], vocab["letters"])
    return pd.DataFrame(
        {
            "item_id": _codes(f["item_id"], vocab["item_id"]),
            "probe_id": _codes(f["probe_id"], vocab["probe_id"]),
            "condition": _codes(f["condition"], vocab["condition"]),
            "scoring": _codes(f["scoring"], vocab["scoring"]),
            "correct": f["correct"].to_numpy(dtype=bool),
            "to_target": (label == target) & (label >= 0),
        }
    )


@dataclass
class Comparison(BaseComparison):
    run: str = ""  # the run a setting's effect is read from (report sections), else ""


METRICS = [  # (condition, metric)
    ("clean", "accuracy"),
    ("type1", "accuracy"),
    ("type2", "accuracy"),
    ("type1", "asr"),
    ("type1", "tasr"),
    ("type2", "asr"),
]


def compare_sides(a: Side, b: Side, n_resamples: int = N_RESAMPLES, seed: int = 0) -> Comparison:
    """Per-metric paired differences B - A on the units both sides answered."""
    with_run = a.run != b.run
    name_a, name_b = a.label(with_run), b.label(with_run)
    fa, fb = a.frame, b.frame
    vocab = {c: _vocab(fa[c], fb[c]) for c in ("item_id", "probe_id", "condition", "scoring")}
    vocab["letters"] = _vocab(fa["label"], fb["label"], fa["target"], fb["target"])
    ua, ub = _units(fa, vocab), _units(fb, vocab)
    cond_code = {c: i for i, c in enumerate(vocab["condition"])}
    key = KEY + (["scoring"] if set(ua["scoring"]) == set(ub["scoring"]) else [])
    if ua.duplicated(key).any() or ub.duplicated(key).any():  # several scorings on one side
        key = KEY + ["scoring"]
    pairs = ua.merge(ub, on=key, how="inner", suffixes=("_a", "_b"))
    counts = {"units_a": int(len(a.frame)), "units_b": int(len(b.frame)), "answered_a": int(len(ua)), "answered_b": int(len(ub)), "shared": int(len(pairs))}
    clean = pairs[pairs["condition"] == cond_code.get("clean", -2)].groupby("item_id", sort=False)[["correct_a", "correct_b"]].all()
    both_clean = clean.index[clean["correct_a"] & clean["correct_b"]].to_numpy()
    rows = []
    for cond, metric in METRICS:
        sub = pairs[pairs["condition"] == cond_code.get(cond, -2)]
        if metric in ("asr", "tasr"):
            sub = sub[np.isin(sub["item_id"].to_numpy(), both_clean)]
            if metric == "asr":
                xa, xb = ~sub["correct_a"].to_numpy(), ~sub["correct_b"].to_numpy()
            else:
                xa, xb = sub["to_target_a"].to_numpy(), sub["to_target_b"].to_numpy()
        else:
            xa, xb = sub["correct_a"].to_numpy(), sub["correct_b"].to_numpy()
        if len(sub) == 0:
            continue
        items = pd.factorize(sub["item_id"].to_numpy())[0]
        if (sub["item_id"].to_numpy() < 0).any():  # an item outside the suite: its own cluster per unit
            items = np.where(sub["item_id"].to_numpy() < 0, np.arange(len(sub)) + len(sub), items)
            items = pd.factorize(items)[0]
        g = int(items.max()) + 1
        d_sum = np.bincount(items, weights=xb.astype(float) - xa.astype(float), minlength=g)
        size = np.bincount(items, minlength=g)
        boot = stats.paired_cluster_diff(d_sum, size, n_resamples=n_resamples, seed=seed)
        if g == len(sub):
            test = stats.mcnemar_from_pairs(xa, xb)
            test_name, test_p = "mcnemar_exact", test["p"]
        else:
            test = stats.cluster_mcnemar(xa, xb, items)
            test_name, test_p = "cluster_mcnemar", test["p"]
        ra, rb = stats.clustered_rate(xa, items, seed=seed), stats.clustered_rate(xb, items, seed=seed)  # Wilson, or by item
        rows.append(
            {
                "pair": f"{name_b} vs {name_a}",
                "a": name_a,
                "b": name_b,
                "condition": cond,
                "metric": metric,
                "a_k": ra.k,
                "a_p": ra.p,
                "a_lo": ra.lo,
                "a_hi": ra.hi,
                "b_k": rb.k,
                "b_p": rb.p,
                "b_lo": rb.lo,
                "b_hi": rb.hi,
                "n": boot["n"],
                "items": boot["clusters"],
                "diff": boot["diff"],
                "lo": boot["lo"],
                "hi": boot["hi"],
                "test": test_name,
                "test_b": test["b"],
                "test_c": test["c"],
                "p_test": test_p,
            }
        )
    cols = [
        "pair",
        "a",
        "b",
        "condition",
        "metric",
        "a_k",
        "a_p",
        "a_lo",
        "a_hi",
        "b_k",
        "b_p",
        "b_lo",
        "b_hi",
        "n",
        "items",
        "diff",
        "lo",
        "hi",
        "test",
        "test_b",
        "test_c",
        "p_test",
        "p_holm",
    ]
    table = pd.DataFrame(rows, columns=[c for c in cols if c != "p_holm"])

    with stats.cheap_gc():
        table["p_holm"] = stats.holm(table["p_test"].tolist()) if len(table) else []
    return Comparison(name_a, name_b, table[cols], counts)


def setting_effects(run: str, frame: pd.DataFrame, n_resamples: int = N_RESAMPLES) -> list[Comparison]:
    """For each model run under `none` and a mitigation setting: setting - none, paired."""
    out = []
    present = frame.groupby(["model", "setting"], observed=True, sort=False).size()
    pairs = [(str(m), str(s)) for m, s in present.index]
    for model, setting in pairs:
        if setting != "none" and (model, "none") in pairs:
            c = compare_sides(side(run, frame, model, "none"), side(run, frame, model, setting), n_resamples)
            c.table["pair"] = model
            c.table["setting"] = setting
            c.run = run
            out.append(c)
    return out


def compare_pair(ra, rb, out: Path, pairs: Sequence[str] = (), n_resamples: int = N_RESAMPLES):
    """Compare two loaded runs of this family on shared items and write the comparison to out."""
    from ....report.compare import pair_models

    comps = [compare_sides(side(ra.name, ra.frame, ma, sa), side(rb.name, rb.frame, mb, sb), n_resamples) for ma, sa, mb, sb in pair_models(ra, rb, pairs)]
    return write_compare(ra, rb, comps, out)


def write_compare(ra, rb, comps: list[Comparison], out: Path):
    from ....report import html as H
    from ....report.compare import CompareResult, finish_compare
    from .html import METHODS, diff_table_html
    from .plots import diff_figure
    from .tables import markdown_table

    table = pd.concat([c.table for c in comps], ignore_index=True) if comps else pd.DataFrame()
    fig = diff_figure(table, f"{rb.name} minus {ra.name} on shared items", "compare")
    counts = "".join(
        f"<li>{H.esc(c.b)} vs {H.esc(c.a)}: {c.counts['shared']} shared answered units "
        f"(A answered {c.counts['answered_a']} of {c.counts['units_a']}, B {c.counts['answered_b']} of {c.counts['units_b']})</li>"
        for c in comps
    )
    body = "".join(
        [
            f"<p>Run B <code>{H.esc(rb.name)}</code> against run A <code>{H.esc(ra.name)}</code>, paired on shared "
            "(item, probe, condition) units that both answered. ASR / TASR on items answered correctly clean in both.</p>",
            f"<ul>{counts}</ul>",
            H.figure(fig, "B - A in percentage points, item-clustered paired bootstrap 95% intervals."),
            diff_table_html(table, "Comparison", "A", "B"),
            METHODS,
        ]
    )
    md = "\n".join(
        [
            f"# {rb.name} vs {ra.name} (B - A, paired on shared items)",
            "",
            markdown_table(table, ["pair", "condition", "metric", "a_p", "b_p", "diff", "lo", "hi", "test", "p_test", "p_holm", "n", "items"])
            if not table.empty
            else "No shared units.",
            "",
        ]
    )
    paths = finish_compare(ra, rb, body, md, table, out)
    return CompareResult(table, comps, out, paths["html"], paths["md"], paths["csv"], paths["parquet"])
