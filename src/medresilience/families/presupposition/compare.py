"""Paired comparisons of two false-presupposition runs (`medres compare RUN_A RUN_B`): two models on
one suite, one model under two settings (a mitigation against none), or one model before and
after a change.

Units are paired by (item, probe, condition): the same question on both sides. Only units scored
on both sides count (a call error, an `unscored` judgment or a unit one run lacks is left out and
counted). Each question has one probe, so pairs are independent and no clustering is needed.
Per model pair, B - A:

- `pcs` on the questions with a false presupposition: the mean judge score, with a paired
  percentile bootstrap 95% interval (resampling questions) and the exact paired permutation
  (sign-flip) test of the score differences;
- `pcr` on the same questions: the share scored 1 (fully corrected), with the paired bootstrap
  interval and the exact McNemar test on the binary view (b: corrected in A and not in B, c: the
  reverse);
- `overcaution` on the control questions (no false presupposition): the share the judge says
  claim a false assumption, with the same bootstrap and exact McNemar test.

p-values come from those exact tests only, and Holm's correction is applied across them within one
comparison; the bootstrap gives the intervals. When the two runs
were judged by different judges or rubrics the page says so: a difference then mixes the models
and the judges."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import stats
from ...report.compare import Comparison as BaseComparison
from ...report.compare import Side, side
from .metrics import N_RESAMPLES, SEED, pcs_rate
from .taxonomy import NFP, PRESUPPOSITION

COLUMNS = [
    "pair",
    "a",
    "b",
    "condition",
    "metric",
    "a_k",
    "a_n",
    "a_p",
    "a_lo",
    "a_hi",
    "b_k",
    "b_n",
    "b_p",
    "b_lo",
    "b_hi",
    "n",
    "diff",
    "lo",
    "hi",
    "test",
    "test_b",
    "test_c",
    "p_test",
    "p_holm",
    "unit",
]
METRIC_TITLES = {"pcs": "PCS (mean score, -1..1)", "pcr": "PCR (fully corrected)", "overcaution": "NFP over-caution"}


@dataclass
class Comparison(BaseComparison):
    same_judge: bool = True  # both sides were judged by the same judge model and rubric


def _scored(f: pd.DataFrame) -> pd.DataFrame:
    f = f[(f["status"].astype(str) == "valid").to_numpy() & f["value"].notna().to_numpy()]
    probe = f["probe_id"].astype(object).where(f["probe_id"].notna(), "")
    out = pd.DataFrame(
        {
            "item_id": f["item_id"].astype(str).to_numpy(),
            "probe_id": probe.astype(str).to_numpy(),
            "condition": f["condition"].astype(str).to_numpy(),
            "value": f["value"].to_numpy(dtype=np.float64),
            "correct": f["correct"].to_numpy(dtype=bool),
        }
    )
    return out.drop_duplicates(["item_id", "probe_id", "condition"])


def _base(name_a: str, name_b: str, cond: str, metric: str, xa: np.ndarray, xb: np.ndarray, seed: int, n_resamples: int) -> dict[str, Any]:
    boot = stats.paired_bootstrap_diff(xa, xb, n_resamples=n_resamples, seed=seed)
    return {
        "pair": f"{name_b} vs {name_a}",
        "a": name_a,
        "b": name_b,
        "condition": cond,
        "metric": metric,
        "n": int(len(xa)),
        "diff": boot["diff"],
        "lo": boot["lo"],
        "hi": boot["hi"],
        "test": "",
        "test_b": np.nan,
        "test_c": np.nan,
        "p_test": np.nan,
        "unit": "score" if metric == "pcs" else "rate",
    }


def _score_row(name_a: str, name_b: str, cond: str, xa: np.ndarray, xb: np.ndarray, seed: int, n_resamples: int) -> dict[str, Any]:
    row = _base(name_a, name_b, cond, "pcs", xa, xb, seed, n_resamples)
    ra, rb = pcs_rate(xa, n_resamples, seed), pcs_rate(xb, n_resamples, seed)
    t = stats.paired_permutation_test(xa, xb)
    row.update(test=t["test"], p_test=t["p"])
    row.update(a_k=ra["k"], a_n=ra["n"], a_p=ra["p"], a_lo=ra["lo"], a_hi=ra["hi"], b_k=rb["k"], b_n=rb["n"], b_p=rb["p"], b_lo=rb["lo"], b_hi=rb["hi"])
    return row


def _rate_row(name_a: str, name_b: str, cond: str, metric: str, xa: np.ndarray, xb: np.ndarray, seed: int, n_resamples: int) -> dict[str, Any]:
    row = _base(name_a, name_b, cond, metric, xa.astype(float), xb.astype(float), seed, n_resamples)
    ra, rb = stats.rate_from_bools(xa), stats.rate_from_bools(xb)
    t = stats.mcnemar_from_pairs(xa, xb)
    row.update(
        a_k=ra.k,
        a_n=ra.n,
        a_p=ra.p,
        a_lo=ra.lo,
        a_hi=ra.hi,
        b_k=rb.k,
        b_n=rb.n,
        b_p=rb.p,
        b_lo=rb.lo,
        b_hi=rb.hi,
        test="mcnemar_exact",
        test_b=t["b"],
        test_c=t["c"],
        p_test=t["p"],
    )
    return row


def compare_sides(a: Side, b: Side, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Comparison:
    """PCS, PCR and over-caution, B - A, on the units both sides scored."""
    with_run = a.run != b.run
    name_a, name_b = a.label(with_run), b.label(with_run)
    sa, sb = _scored(a.frame), _scored(b.frame)
    pairs = sa.merge(sb, on=["item_id", "probe_id", "condition"], how="inner", suffixes=("_a", "_b"))
    status_a, status_b = a.frame["status"].astype(str), b.frame["status"].astype(str)
    counts = {
        "units_a": int(len(a.frame)),
        "units_b": int(len(b.frame)),
        "scored_a": int(len(sa)),
        "scored_b": int(len(sb)),
        "unscored_a": int((status_a == "unscored").sum()),
        "unscored_b": int((status_b == "unscored").sum()),
        "errors_a": int((status_a == "error").sum()),
        "errors_b": int((status_b == "error").sum()),
        "shared": int(len(pairs)),
    }
    rows: list[dict[str, Any]] = []
    p = pairs[pairs["condition"].to_numpy() == PRESUPPOSITION]
    if len(p):
        va, vb = p["value_a"].to_numpy(), p["value_b"].to_numpy()
        rows.append(_score_row(name_a, name_b, PRESUPPOSITION, va, vb, seed, n_resamples))
        rows.append(_rate_row(name_a, name_b, PRESUPPOSITION, "pcr", va >= 1, vb >= 1, seed, n_resamples))
    n = pairs[pairs["condition"].to_numpy() == NFP]
    if len(n):
        rows.append(
            _rate_row(name_a, name_b, NFP, "overcaution", ~n["correct_a"].to_numpy(dtype=bool), ~n["correct_b"].to_numpy(dtype=bool), seed, n_resamples)
        )
    table = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "p_holm"])
    with stats.cheap_gc():
        table["p_holm"] = stats.holm(table["p_test"].tolist()) if len(table) else []
    return Comparison(name_a, name_b, table[COLUMNS], counts, same_judge=a.scorers == b.scorers)


def compare_pair(ra, rb, out: Path, pairs: Sequence[str] = (), n_resamples: int = N_RESAMPLES):
    """Compare two loaded false-presupposition runs on shared questions and write the comparison to out."""
    from ...report.compare import pair_models

    comps = [compare_sides(side(ra.name, ra.frame, ma, sa), side(rb.name, rb.frame, mb, sb), n_resamples) for ma, sa, mb, sb in pair_models(ra, rb, pairs)]
    return write_compare(ra, rb, comps, out)


# --------------------------------------------------------------------------- the page


def diff_figure(table: pd.DataFrame, title: str) -> str | None:
    """B - A per pair: PCR and over-caution in percentage points (left), PCS on its scale (right)."""
    from ...report.plots import PALETTE, STYLE, _err, _short, plt, to_svg

    if table.empty:
        return None
    pairs = list(dict.fromkeys(table["pair"]))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(9.6, max(2.8, 0.5 * len(pairs) + 2.0)), layout="constrained", gridspec_kw={"width_ratios": [2, 1]})
        panels = ((axes[0], ("pcr", "overcaution"), 100.0, "B - A (percentage points)"), (axes[1], ("pcs",), 1.0, "PCS, B - A"))
        for ax, metrics, scale, xlabel in panels:
            y = np.arange(len(metrics))
            step = 0.7 / max(1, len(pairs))
            for j, pair in enumerate(pairs):
                sub = table[table["pair"] == pair].set_index("metric").reindex(list(metrics))
                p, lo, hi = (scale * sub[k].astype(float).to_numpy() for k in ("diff", "lo", "hi"))
                colour = PALETTE[j % len(PALETTE)]
                ax.errorbar(
                    p,
                    y - 0.35 + step * (j + 0.5),
                    xerr=_err(p, lo, hi),
                    fmt="o",
                    color=colour,
                    ecolor=colour,
                    elinewidth=1.2,
                    capsize=2,
                    label=_short(pair, 40) if ax is axes[0] else None,
                    zorder=3,
                )
            ax.axvline(0, color="#333", lw=0.8)
            ax.set_yticks(y, [METRIC_TITLES[m] for m in metrics])
            ax.invert_yaxis()
            ax.set_xlabel(xlabel)
        fig.suptitle(title, fontweight="bold")
        fig.legend(loc="outside lower center", frameon=False, fontsize=9)
        return to_svg(fig, "presupposition-compare", title)


METHODS = (
    "<p class='note'>Units are paired by (question, probe, condition); only units scored on both sides count (call errors "
    "and unscored judgments are left out and counted above). PCS: B minus A in mean judge score, with a 95% paired "
    "percentile bootstrap interval that resamples questions and the exact paired permutation (sign-flip) test of the score "
    "differences. PCR and over-caution: B minus A in the share, the same bootstrap interval, and the exact McNemar test (b: "
    "yes in A and no in B; c: the reverse). p-values come only from these exact tests; Holm: those p-values adjusted across "
    "the rows of one comparison. The bootstrap gives intervals, never a p-value.</p>"
)


def table_html(table: pd.DataFrame) -> str:
    from ...report.html import diff_cell, esc, fmt_p, rate_cell, sig_class, test_cell
    from ...report.html import table as html_table
    from .report import score_cell

    rows, classes = [], []
    for r in table.to_dict("records"):
        score = r["metric"] == "pcs"
        cell = score_cell if score else rate_cell
        a = cell(r["a_p"], r["a_lo"], r["a_hi"], r["a_n"])
        b = cell(r["b_p"], r["b_lo"], r["b_hi"], r["b_n"])
        rows.append(
            [
                esc(r["pair"]),
                esc(METRIC_TITLES.get(r["metric"], r["metric"])),
                a,
                b,
                diff_cell(r["diff"], r["lo"], r["hi"], "score" if score else "rate"),
                test_cell(r["test"], r["test_b"], r["test_c"], r["p_test"]),
                fmt_p(r["p_holm"]),
                str(int(r["n"])),
            ]
        )
        classes.append(sig_class(r["p_holm"]))
    return html_table(
        rows, ["Pair (B vs A)", "Metric", "A", "B", "B - A [95% CI]", "Exact test (b / c), p", "Holm p", "pairs"], numeric=range(2, 8), row_classes=classes
    )


def write_compare(ra, rb, comps: list[Comparison], out: Path):
    from ...report import html as H
    from ...report.compare import CompareResult, finish_compare
    from ...report.tables import markdown_table

    table = pd.concat([c.table for c in comps], ignore_index=True) if comps else pd.DataFrame(columns=COLUMNS)
    counts = "".join(
        f"<li>{H.esc(c.b)} vs {H.esc(c.a)}: {c.counts['shared']} questions scored on both sides (A scored {c.counts['scored_a']} of "
        f"{c.counts['units_a']}, {c.counts['unscored_a']} unscored, {c.counts['errors_a']} errors; B scored {c.counts['scored_b']} of "
        f"{c.counts['units_b']}, {c.counts['unscored_b']} unscored, {c.counts['errors_b']} errors)</li>"
        for c in comps
    )
    judges = "".join(
        f"<p class='warn'>{H.esc(c.b)} and {H.esc(c.a)} were judged by different judges or rubrics: the differences mix the models with the judges.</p>"
        for c in comps
        if not c.same_judge
    )
    body = "".join(
        [
            f"<p>Run B <code>{H.esc(rb.name)}</code> against run A <code>{H.esc(ra.name)}</code>, paired on the questions both scored: "
            "does B correct false presuppositions more often (PCR, PCS), and at what cost in over-caution on the questions "
            "without one?</p>",
            f"<ul>{counts}</ul>",
            judges,
            H.figure(
                diff_figure(table, f"{rb.name} minus {ra.name}, paired"),
                "B - A with paired bootstrap 95% intervals. Left: PCR and over-caution in percentage points (right of zero: B "
                "corrects more, or raises more false alarms); right: PCS.",
            ),
            table_html(table) if not table.empty else "<p>No shared scored questions.</p>",
            METHODS,
        ]
    )
    md = "\n".join(
        [
            f"# {rb.name} vs {ra.name}: false presuppositions (B - A, paired on shared questions)",
            "",
            markdown_table(table, ["pair", "condition", "metric", "a_p", "b_p", "diff", "lo", "hi", "test", "test_b", "test_c", "p_test", "p_holm", "n"])
            if not table.empty
            else "No shared scored questions.",
            "",
        ]
    )
    paths = finish_compare(ra, rb, body, md, table, out)
    return CompareResult(table, comps, out, paths["html"], paths["md"], paths["csv"], paths["parquet"])
