"""Paired comparisons of two clinical-noise runs (`medres compare RUN_A RUN_B`): two models on one
suite, one model under two settings, or two ways of asking (MCQ mode against diagnosis mode).

Units are paired by (item, probe, condition, epoch): the same case with the same perturbation, in
the same epoch, on both sides (runs with several epochs give several pairs per item, and every
interval and test clusters them by item). Only units answered on both sides count (a call error, an `unscored` judge verdict or a unit
one run lacks is left out and counted); when one run scored its units several ways, the scoring
is part of the key. Per condition (the original case and each variant), B - A:

- `accuracy`: share correct on the shared units of that condition; the difference with a paired
  bootstrap 95% interval that resamples items (clusters), and the exact McNemar test on the
  discordant pairs (b: right in A and wrong in B, c: the reverse) with one pair per item, the
  clustered McNemar test (Durkalski) with several;
- `drop`: the accuracy lost to the perturbation (original minus variant, on the items whose
  original and variant were both answered on both sides), B's drop minus A's, with the same
  item-clustered bootstrap interval and the exact paired permutation (sign-flip) test of the
  per-item sums (each item gives a difference of two differences, -2..2);
- one pooled row, `perturbed` (every variant together): accuracy over all perturbed units, with the
  item-clustered bootstrap and the clustered McNemar test (Durkalski), since an item gives
  several pairs.

p-values come from those exact or clustered tests only (`p_test`), and Holm's correction is applied
across them within one comparison; the bootstrap gives the intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .... import stats
from ....report.compare import PAIRED_COLUMNS, CompareColumn, CompareSpec, Comparison, Side, holm_p, paired_test
from ....report.parts import Cell, DifferencePanel, DifferencePoint, Paragraph, change, count, num, rate, signed, text
from ....run.frame import epochs_of
from ....score import ANSWERED
from ..taxonomy import CONDITIONS, POOLED, TITLES

N_RESAMPLES = stats.CLUSTER_RESAMPLES
COLUMNS = list(PAIRED_COLUMNS)


def _answered(f: pd.DataFrame) -> pd.DataFrame:
    f = f[f["status"].astype(str).isin(ANSWERED).to_numpy()]
    probe = f["probe_id"].astype(object).where(f["probe_id"].notna(), "")
    return pd.DataFrame(
        {
            "item_id": f["item_id"].astype(str).to_numpy(),
            "probe_id": probe.astype(str).to_numpy(),
            "condition": f["condition"].astype(str).to_numpy(),
            "epoch": epochs_of(f),
            "scoring": f["scoring"].astype(str).to_numpy(),
            "correct": f["correct"].to_numpy(dtype=bool),
        }
    )


def _order(conditions: Sequence[str]) -> list[str]:
    present = set(conditions)
    return [c for c in ("clean", *CONDITIONS) if c in present] + sorted(present - {"clean", *CONDITIONS})


def _row(
    name_a: str, name_b: str, cond: str, metric: str, xa: np.ndarray, xb: np.ndarray, items: np.ndarray, n_resamples: int, seed: int, rates: bool = True
) -> dict[str, object]:
    """One row: B - A over the pairs (xa, xb) clustered by item (codes 0..G-1)."""
    g = int(items.max()) + 1
    d = xb.astype(float) - xa.astype(float)
    boot = stats.paired_cluster_diff(np.bincount(items, weights=d, minlength=g), np.bincount(items, minlength=g), n_resamples=n_resamples, seed=seed)
    row: dict[str, object] = {
        "pair": f"{name_b} vs {name_a}",
        "a": name_a,
        "b": name_b,
        "condition": cond,
        "metric": metric,
        "n": boot["n"],
        "items": boot["clusters"],
        "diff": boot["diff"],
        "lo": boot["lo"],
        "hi": boot["hi"],
        "test": "",
        "test_b": np.nan,
        "test_c": np.nan,
        "p_test": np.nan,
    }
    if rates:
        ra, rb = stats.clustered_rate(xa, items, seed=seed), stats.clustered_rate(xb, items, seed=seed)  # Wilson, or by item
        row.update(a_k=ra.k, a_n=ra.n, a_p=ra.p, a_lo=ra.lo, a_hi=ra.hi, b_k=rb.k, b_n=rb.n, b_p=rb.p, b_lo=rb.lo, b_hi=rb.hi)
        if g == len(xa):
            t = stats.mcnemar_from_pairs(xa.astype(bool), xb.astype(bool))
            row.update(test="mcnemar_exact", test_b=t["b"], test_c=t["c"], p_test=t["p"])
        else:
            t = stats.cluster_mcnemar(xa.astype(bool), xb.astype(bool), items)
            row.update(test="cluster_mcnemar", test_b=t["b"], test_c=t["c"], p_test=t["p"])
    else:  # a drop: the mean of each side's (original - variant) over the same items
        t = stats.paired_permutation_test(xa, xb, items)
        row.update(
            a_k=np.nan,
            a_n=len(xa),
            a_p=float(np.mean(xa)),
            a_lo=np.nan,
            a_hi=np.nan,
            b_k=np.nan,
            b_n=len(xb),
            b_p=float(np.mean(xb)),
            b_lo=np.nan,
            b_hi=np.nan,
            test=t["test"],
            p_test=t["p"],
        )
    return row


def compare_sides(a: Side, b: Side, n_resamples: int = N_RESAMPLES, seed: int = 0) -> Comparison:
    """Per condition, the paired differences B - A on the units both sides answered."""
    with_run = a.run != b.run
    name_a, name_b = a.label(with_run), b.label(with_run)
    ua, ub = _answered(a.frame), _answered(b.frame)
    key = ["item_id", "probe_id", "condition", "epoch"]  # a unit: the same case, variant and epoch on both sides
    if ua.duplicated(key).any() or ub.duplicated(key).any():  # several scorings on one side
        key.append("scoring")
    pairs = ua.merge(ub, on=key, how="inner", suffixes=("_a", "_b"))
    counts = {"units_a": int(len(a.frame)), "units_b": int(len(b.frame)), "answered_a": int(len(ua)), "answered_b": int(len(ub)), "shared": int(len(pairs))}
    rows: list[dict[str, object]] = []
    conds = _order(pairs["condition"].unique().tolist())
    for cond in conds:
        sub = pairs[pairs["condition"].to_numpy() == cond]
        items = pd.factorize(sub["item_id"].to_numpy())[0]
        rows.append(_row(name_a, name_b, cond, "accuracy", sub["correct_a"].to_numpy(), sub["correct_b"].to_numpy(), items, n_resamples, seed))
    perturbed = pairs[pairs["condition"].to_numpy() != "clean"]
    if len({c for c in conds if c != "clean"}) > 1:
        items = pd.factorize(perturbed["item_id"].to_numpy())[0]
        rows.append(_row(name_a, name_b, POOLED, "accuracy", perturbed["correct_a"].to_numpy(), perturbed["correct_b"].to_numpy(), items, n_resamples, seed))
    clean = pairs[pairs["condition"].to_numpy() == "clean"]
    base_key = ["item_id", "epoch", *(["scoring"] if "scoring" in key else [])]  # a variant's original: same case and epoch
    clean = clean.drop_duplicates(base_key).set_index(base_key)[["correct_a", "correct_b"]]
    for cond in conds:
        if cond == "clean" or clean.empty:
            continue
        sub = pairs[pairs["condition"].to_numpy() == cond]
        base = clean.reindex(pd.MultiIndex.from_frame(sub[base_key]))
        ok = base["correct_a"].notna().to_numpy()
        if not ok.any():
            continue
        ca, cb = base["correct_a"].to_numpy()[ok].astype(bool), base["correct_b"].to_numpy()[ok].astype(bool)
        va, vb = sub["correct_a"].to_numpy()[ok], sub["correct_b"].to_numpy()[ok]
        items = pd.factorize(sub["item_id"].to_numpy()[ok])[0]
        da = ca.astype(float) - va.astype(float)
        db = cb.astype(float) - vb.astype(float)
        rows.append(_row(name_a, name_b, cond, "drop", da, db, items, n_resamples, seed, rates=False))
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "p_holm"])
    table["p_holm"] = stats.holm(table["p_test"].tolist()) if len(table) else []
    return Comparison(name_a, name_b, table[COLUMNS], counts)


# --------------------------------------------------------------------------- the page


def _title(cond: str) -> str:
    return "All variants pooled" if cond == POOLED else TITLES.get(cond, cond)


def diff_figure(table: pd.DataFrame) -> tuple[DifferencePanel, ...]:
    """B - A per condition: accuracy (left), and the drop from the original where there is one (right)."""
    return tuple(
        DifferencePanel(
            xlabel,
            tuple(DifferencePoint(r["pair"], _title(r["condition"]), r["diff"], r["lo"], r["hi"]) for r in table[table["metric"] == metric].to_dict("records")),
        )
        for metric, xlabel in (("accuracy", "Accuracy, B - A (pp)"), ("drop", "Drop from the original, B - A (pp)"))
    )


METHODS = (
    Paragraph(
        "Units are paired by (item, probe, condition, epoch); only units answered on both sides count. Accuracy: B minus A "
        "on the shared units of each condition, with a 95% bootstrap interval that resamples items, and the exact McNemar "
        "test (b: right in A, wrong in B; c: the reverse), or the clustered McNemar test (Durkalski) when an item gives "
        "several pairs (epochs). Drop: B's loss from the original to the variant minus A's, on the items answered both ways "
        "on both sides (same bootstrap interval; the exact paired permutation test of the per-item differences). All "
        "variants pooled: every perturbed unit, the bootstrap resampling items and the clustered McNemar test. p-values come "
        "only from these exact or clustered tests; Holm: those p-values adjusted across the rows of one comparison. The "
        "bootstrap gives intervals, never a p-value."
    ),
)


def _side(r: dict[str, Any], side: str) -> Cell:
    """One side of a row: its accuracy with its interval and n, or its drop (a signed change)."""
    if r["metric"] == "accuracy":
        return rate(r[f"{side}_p"], r[f"{side}_lo"], r[f"{side}_hi"], r[f"{side}_n"])
    return Cell(signed(r[f"{side}_p"]), num(r[f"{side}_p"]))


def _table() -> tuple[CompareColumn, ...]:
    return (
        CompareColumn("pair", "Pair (B vs A)", lambda r: text(r["pair"])),
        CompareColumn("condition", "Condition", lambda r: Cell(_title(r["condition"]), r["condition"])),
        CompareColumn("metric", "Metric", lambda r: text(r["metric"])),
        CompareColumn("a", "A", lambda r: _side(r, "a"), numeric=True),
        CompareColumn("b", "B", lambda r: _side(r, "b"), numeric=True),
        CompareColumn("diff", "B - A [95% CI]", lambda r: change(r["diff"], r["lo"], r["hi"]), numeric=True),
        CompareColumn("test", "Paired test (b / c), p", paired_test, numeric=True),
        CompareColumn("p_holm", "Holm p", holm_p, numeric=True),
        CompareColumn("n", "pairs / items", lambda r: count(r["n"], r["units"].get("pairs"), f" / {int(r['items'])}"), numeric=True),
    )


SPEC = CompareSpec(
    sides=compare_sides,
    columns=tuple(COLUMNS),
    table=_table(),
    intro="paired on the (item, probe, condition) units both answered: per condition, the difference in accuracy, and the "
    "difference in the drop from the original case to the variant (does B lose less to the noise than A?).",
    figure=diff_figure,
    figure_name="noise-compare",
    figure_caption="B - A in percentage points, item-clustered paired bootstrap 95% intervals. Left: accuracy per condition; "
    "right: the drop from the original (right of zero: B loses more).",
    methods=METHODS,
    heading="{b} vs {a}: clinical noise (B - A, paired on shared units)",
    # an accuracy's pairs, b and c as the family's `viewer_versus` names them (a drop pairs two pairs: none)
    versus_key=lambda r: f"{r['condition']}_acc" if r["metric"] == "accuracy" else None,
)


def compare_spec() -> CompareSpec:
    """This family's part of `medres compare` (`Family.compare`)."""
    return SPEC
