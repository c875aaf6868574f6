"""Paired comparisons of two pressure runs (`medres compare RUN_A RUN_B`): two models on one
suite, or one model under two settings (a mitigation applies to both turns).

Per condition, B - A on the flip after commitment: the second turns (item, probe) answered on both
sides whose turn 1 was right on both sides, so both sides are asked to keep a right answer; the
difference with an item-clustered bootstrap interval and the clustered McNemar test on (flipped
in A, flipped in B), items as clusters (an item may carry several claims). A first row compares
turn-1 accuracy (the clean answers, one per item: exact McNemar). p-values come from those tests
only; Holm's correction across the rows of one comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .... import stats
from ....records import CLEAN
from ....report.compare import PAIRED_COLUMNS, CompareColumn, CompareSpec, Comparison, Side, holm_p, paired_test
from ....report.parts import Cell, Paragraph, change, count, rate, text
from ..metrics import ANSWERED
from ..taxonomy import CONDITIONS, LABELS

COLUMNS = list(PAIRED_COLUMNS)


def _answered(f: pd.DataFrame) -> pd.DataFrame:
    f = f[f["status"].astype(str).isin(ANSWERED).to_numpy()]
    return pd.DataFrame(
        {
            "item_id": f["item_id"].astype(str).to_numpy(),
            "probe_id": f["probe_id"].astype(object).where(f["probe_id"].notna(), "").astype(str).to_numpy(),
            "condition": f["condition"].astype(str).to_numpy(),
            "correct": f["correct"].to_numpy(dtype=bool),
        }
    )


def _row(name_a: str, name_b: str, cond: str, metric: str, xa: np.ndarray, xb: np.ndarray, item_ids: np.ndarray) -> dict[str, object]:
    """B - A over paired outcomes (xa, xb), clustered by item."""
    items = pd.factorize(item_ids)[0]
    g = int(items.max()) + 1
    d = xb.astype(float) - xa.astype(float)
    boot = stats.paired_cluster_diff(np.bincount(items, weights=d, minlength=g), np.bincount(items, minlength=g))
    ra, rb = stats.clustered_rate(xa.tolist(), items.tolist()), stats.clustered_rate(xb.tolist(), items.tolist())
    t = stats.paired_mcnemar(xa.tolist(), xb.tolist(), items.tolist())
    return {
        "pair": f"{name_b} vs {name_a}",
        "a": name_a,
        "b": name_b,
        "condition": cond,
        "metric": metric,
        **{f"a_{k}": v for k, v in ra.as_dict().items()},
        **{f"b_{k}": v for k, v in rb.as_dict().items()},
        "n": boot["n"],
        "items": boot["clusters"],
        "diff": boot["diff"],
        "lo": boot["lo"],
        "hi": boot["hi"],
        "test": t["test"],
        "test_b": t["b"],
        "test_c": t["c"],
        "p_test": t["p"],
    }


def compare_sides(a: Side, b: Side) -> Comparison:
    """Turn-1 accuracy and, per condition, the flip after commitment, B - A (see the module)."""
    with_run = a.run != b.run
    name_a, name_b = a.label(with_run), b.label(with_run)
    ua, ub = _answered(a.frame), _answered(b.frame)
    pairs = ua.merge(ub, on=["item_id", "probe_id", "condition"], how="inner", suffixes=("_a", "_b"))
    counts = {"units_a": int(len(a.frame)), "units_b": int(len(b.frame)), "answered_a": int(len(ua)), "answered_b": int(len(ub)), "shared": int(len(pairs))}
    rows: list[dict[str, object]] = []
    clean = pairs[pairs["condition"] == CLEAN]
    if len(clean):
        rows.append(_row(name_a, name_b, CLEAN, "turn 1 accuracy", clean["correct_a"].to_numpy(), clean["correct_b"].to_numpy(), clean["item_id"].to_numpy()))
    right = set(clean.loc[clean["correct_a"] & clean["correct_b"], "item_id"])
    for cond in CONDITIONS:
        sub = pairs[(pairs["condition"] == cond) & pairs["item_id"].isin(right)]
        if len(sub):
            rows.append(_row(name_a, name_b, cond, "flip", ~sub["correct_a"].to_numpy(), ~sub["correct_b"].to_numpy(), sub["item_id"].to_numpy()))
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "p_holm"])
    table["p_holm"] = stats.holm(table["p_test"].tolist()) if len(table) else []
    return Comparison(name_a, name_b, table[COLUMNS], counts)


def _table() -> tuple[CompareColumn, ...]:
    return (
        CompareColumn("pair", "Pair (B vs A)", lambda r: text(r["pair"])),
        CompareColumn("condition", "Condition", lambda r: Cell(LABELS.get(r["condition"], "Turn 1 (clean)"), r["condition"])),
        CompareColumn("metric", "Metric", lambda r: text(r["metric"])),
        CompareColumn("a", "A", lambda r: rate(r["a_p"], r["a_lo"], r["a_hi"], r["a_n"]), numeric=True),
        CompareColumn("b", "B", lambda r: rate(r["b_p"], r["b_lo"], r["b_hi"], r["b_n"]), numeric=True),
        CompareColumn("diff", "B - A [95% CI]", lambda r: change(r["diff"], r["lo"], r["hi"]), numeric=True),
        CompareColumn("test", "Paired test (b / c), p", paired_test, numeric=True),
        CompareColumn("p_holm", "Holm p", holm_p, numeric=True),
        CompareColumn("n", "pairs / items", lambda r: count(r["n"], r["units"].get("pairs"), f" / {int(r['items'])}"), numeric=True),
    )


METHODS = (
    Paragraph(
        "Second turns are paired by (item, probe); a flip row counts the second turns answered on both sides whose turn 1 "
        "was right on both sides. B minus A with a 95% bootstrap interval that resamples items; the clustered McNemar test "
        "(Durkalski) when an item gives several pairs, else the exact McNemar test (b: true in A, false in B; c: the "
        "reverse). Holm: those p-values adjusted across the rows of one comparison; the bootstrap gives intervals only."
    ),
)

SPEC = CompareSpec(
    sides=compare_sides,
    columns=tuple(COLUMNS),
    table=_table(),
    intro="paired on the second turns both answered after a right first answer on both sides: per condition, the "
    "difference in the flip after commitment (does B give up a right answer less often than A?), and turn-1 accuracy.",
    figure=lambda table: (),
    figure_name="pressure-compare",
    figure_caption="",
    methods=METHODS,
    heading="{b} vs {a}: pressure after commitment (B - A, paired)",
    # each measure's pairs, b and c as the family's `viewer_versus` names them
    versus_key=lambda r: "clean_acc" if r["condition"] == CLEAN else f"flip_{r['condition']}",
)


def compare_spec() -> CompareSpec:
    """This family's part of `medres compare` (`Family.compare`)."""
    return SPEC
