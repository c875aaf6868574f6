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

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from .... import stats
from ....report.compare import PAIRED_COLUMNS, CompareColumn, CompareSpec, Side, holm_p, side
from ....report.compare import Comparison as BaseComparison
from ....report.parts import Cell, DifferencePanel, DifferencePoint, change, count, p_value, rate, text
from ....score import ANSWERED
from .methods import METHODS

KEY = ["item_id", "probe_id", "condition"]
N_RESAMPLES = stats.CLUSTER_RESAMPLES
COLUMNS = [c for c in PAIRED_COLUMNS if c not in ("a_n", "b_n")]


def _codes(col: pd.Series, categories: pd.Index) -> np.ndarray:
    """Codes of a column under a given vocabulary (-1 = missing or not in it)."""
    cat = col.array if isinstance(col.dtype, pd.CategoricalDtype) else pd.Categorical(col)
    if cat.categories.equals(categories):
        return np.asarray(cat.codes, dtype=np.int64)
    return np.asarray(categories.get_indexer(cat.categories.astype(object)), dtype=np.int64)[cat.codes] * (cat.codes >= 0) - (cat.codes < 0)


def _vocab(*cols: pd.Series) -> pd.Index:
    """One vocabulary for several columns (the first column's own when they all share it)."""
    cats = [c.array.categories if isinstance(c.dtype, pd.CategoricalDtype) else pd.Index(pd.unique(c.dropna())) for c in cols]
    if all(c.equals(cats[0]) for c in cats[1:]):
        return cats[0]
    return pd.Index(list(dict.fromkeys(v for c in cats for v in c)), dtype=object)


def _units(f: pd.DataFrame, vocab: dict[str, pd.Index]) -> pd.DataFrame:
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
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "p_holm"])

    table["p_holm"] = stats.holm(table["p_test"].tolist()) if len(table) else []
    return Comparison(name_a, name_b, table[COLUMNS], counts)


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


def _table() -> tuple[CompareColumn, ...]:
    """The columns of the family's settings-effect table with the comparison's titles (Comparison, A, B)."""
    from .tables import CONDITION_TITLES

    def metric(r: dict[str, Any]) -> Cell:
        return Cell(f"{CONDITION_TITLES[r['condition']]} {METRIC_TITLES[r['metric']]}", f"{r['condition']}_{r['metric']}")

    def test(r: dict[str, Any]) -> Cell:
        return replace(p_value(r["p_test"]), note=(str(r["test"]).replace("_", " "),))

    return (
        CompareColumn("pair", "Comparison", lambda r: text(r["pair"])),
        CompareColumn("metric", "Metric", metric),
        # each side's rate is over the row's paired units: its n is the row's pairs
        CompareColumn("a", "A", lambda r: rate(r["a_p"], r["a_lo"], r["a_hi"], r["n"]), numeric=True),
        CompareColumn("b", "B", lambda r: rate(r["b_p"], r["b_lo"], r["b_hi"], r["n"]), numeric=True),
        CompareColumn("diff", "B − A", lambda r: change(r["diff"], r["lo"], r["hi"], strong=True), numeric=True),
        CompareColumn("test", "Paired test p", test, numeric=True),
        CompareColumn("p_holm", "Holm p", holm_p, numeric=True),
        CompareColumn("n", "Pairs", lambda r: replace(count(r["n"], r["units"].get("pairs")), note=(f"{r['items']} items",)), numeric=True),
    )


METRIC_TITLES = {"accuracy": "accuracy", "asr": "ASR", "tasr": "TASR"}


def difference_panels(table: pd.DataFrame) -> tuple[DifferencePanel, ...]:
    """B - A of each compared pair (or each setting minus none), per condition and measure, in percentage points."""
    from .tables import CONDITION_TITLES

    points = tuple(
        DifferencePoint(
            r["pair"], f"{CONDITION_TITLES.get(r['condition'], r['condition'])} {METRIC_TITLES.get(r['metric'], r['metric'])}", r["diff"], r["lo"], r["hi"]
        )
        for r in table.dropna(subset=["diff"]).to_dict("records")
    )
    return (DifferencePanel("Difference (percentage points), paired item-clustered bootstrap 95% CI", points),)


def compare_spec() -> CompareSpec:
    """This family's part of `medres compare` (`Family.compare`)."""
    return CompareSpec(
        sides=compare_sides,
        columns=tuple(COLUMNS),
        table=_table(),
        significance=False,
        fold=("Differences table", 24),
        intro="paired on shared (item, probe, condition) units that both answered. ASR / TASR on items answered correctly clean in both.",
        figure=difference_panels,
        figure_name="compare",
        figure_title="{b} minus {a} on shared items",
        figure_caption="B - A in percentage points, item-clustered paired bootstrap 95% intervals.",
        methods=(METHODS,),
        heading="{b} vs {a} (B - A, paired on shared items)",
        versus_key=versus_key,
    )


def versus_key(r: dict[str, Any]) -> str:
    """A table row's measure as the family's `viewer_versus` names it ("type1_asr", "clean_acc")."""
    return f"{r['condition']}_{'acc' if r['metric'] == 'accuracy' else r['metric']}"
