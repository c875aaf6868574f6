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

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .... import stats
from ....report.compare import PAIRED_COLUMNS, CompareColumn, CompareSpec, Side, holm_p, paired_test
from ....report.compare import Comparison as BaseComparison
from ....report.parts import Cell, DifferencePanel, DifferencePoint, Paragraph, change, count, rate, score, text
from ..metrics import N_RESAMPLES, SEED, pcs_rate
from ..taxonomy import NFP, PRESUPPOSITION

COLUMNS = [*(c for c in PAIRED_COLUMNS if c != "items"), "unit"]  # the unit the scores are counted in
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


def _base(name_a: str, name_b: str, cond: str, metric: str, xa: np.ndarray, xb: np.ndarray, seed: int, n_resamples: int) -> dict[str, object]:
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


def _score_row(name_a: str, name_b: str, cond: str, xa: np.ndarray, xb: np.ndarray, seed: int, n_resamples: int) -> dict[str, object]:
    row = _base(name_a, name_b, cond, "pcs", xa, xb, seed, n_resamples)
    ra, rb = pcs_rate(xa, n_resamples, seed), pcs_rate(xb, n_resamples, seed)
    t = stats.paired_permutation_test(xa, xb)
    row.update(test=t["test"], p_test=t["p"])
    row.update(a_k=ra["k"], a_n=ra["n"], a_p=ra["p"], a_lo=ra["lo"], a_hi=ra["hi"], b_k=rb["k"], b_n=rb["n"], b_p=rb["p"], b_lo=rb["lo"], b_hi=rb["hi"])
    return row


def _rate_row(name_a: str, name_b: str, cond: str, metric: str, xa: np.ndarray, xb: np.ndarray, seed: int, n_resamples: int) -> dict[str, object]:
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
    rows: list[dict[str, object]] = []
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
    table["p_holm"] = stats.holm(table["p_test"].tolist()) if len(table) else []
    return Comparison(name_a, name_b, table[COLUMNS], counts, same_judge=a.scorers == b.scorers)


# --------------------------------------------------------------------------- the page


def diff_figure(table: pd.DataFrame) -> tuple[DifferencePanel, ...]:
    """B - A per pair: PCR and over-caution in percentage points (left), PCS on its scale (right)."""
    return tuple(
        DifferencePanel(
            xlabel,
            tuple(
                DifferencePoint(r["pair"], METRIC_TITLES[r["metric"]], r["diff"], r["lo"], r["hi"])
                for r in table[table["metric"].isin(metrics)].to_dict("records")
            ),
            scale,
        )
        for metrics, scale, xlabel in ((("pcr", "overcaution"), 100.0, "B - A (percentage points)"), (("pcs",), 1.0, "PCS, B - A"))
    )


METHODS = (
    Paragraph(
        "Units are paired by (question, probe, condition); only units scored on both sides count (call errors and unscored "
        "judgments are left out and counted above). PCS: B minus A in mean judge score, with a 95% paired percentile "
        "bootstrap interval that resamples questions and the exact paired permutation (sign-flip) test of the score "
        "differences. PCR and over-caution: B minus A in the share, the same bootstrap interval, and the exact McNemar test "
        "(b: yes in A and no in B; c: the reverse). p-values come only from these exact tests; Holm: those p-values adjusted "
        "across the rows of one comparison. The bootstrap gives intervals, never a p-value."
    ),
)


def _cell(r: dict[str, Any], side: str) -> Cell:
    """One side's PCS (a mean score) or rate, with its interval and n."""
    cell = score if r["metric"] == "pcs" else rate
    return cell(r[f"{side}_p"], r[f"{side}_lo"], r[f"{side}_hi"], r[f"{side}_n"])


def _table() -> tuple[CompareColumn, ...]:
    return (
        CompareColumn("pair", "Pair (B vs A)", lambda r: text(r["pair"])),
        CompareColumn("metric", "Metric", lambda r: Cell(METRIC_TITLES.get(r["metric"], r["metric"]), r["metric"])),
        CompareColumn("a", "A", lambda r: _cell(r, "a"), numeric=True),
        CompareColumn("b", "B", lambda r: _cell(r, "b"), numeric=True),
        CompareColumn("diff", "B - A [95% CI]", lambda r: change(r["diff"], r["lo"], r["hi"], "score" if r["metric"] == "pcs" else "rate"), numeric=True),
        CompareColumn("test", "Exact test (b / c), p", paired_test, numeric=True),
        CompareColumn("p_holm", "Holm p", holm_p, numeric=True),
        CompareColumn("n", "pairs", lambda r: count(r["n"], r["units"].get("pairs")), numeric=True),
    )


def _counts(c: Comparison) -> Cell:
    n = c.counts
    tail = (
        f" questions scored on both sides (A scored {n['scored_a']} of {n['units_a']}, {n['unscored_a']} unscored, {n['errors_a']} errors; "
        f"B scored {n['scored_b']} of {n['units_b']}, {n['unscored_b']} unscored, {n['errors_b']} errors)"
    )
    return count(n["shared"], c.units.get("shared"), tail)


def _warning(c: Comparison) -> str | None:
    if c.same_judge:
        return None
    return f"{c.b} and {c.a} were judged by different judges or rubrics: the differences mix the models with the judges."


SPEC = CompareSpec(
    sides=compare_sides,
    columns=tuple(COLUMNS),
    table=_table(),
    intro="paired on the questions both scored: does B correct false presuppositions more often (PCR, PCS), and at what "
    "cost in over-caution on the questions without one?",
    counts=_counts,
    warning=_warning,
    figure=diff_figure,
    figure_name="presupposition-compare",
    figure_caption="B - A with paired bootstrap 95% intervals. Left: PCR and over-caution in percentage points (right of zero: B "
    "corrects more, or raises more false alarms); right: PCS.",
    methods=METHODS,
    heading="{b} vs {a}: false presuppositions (B - A, paired on shared questions)",
    empty="No shared scored questions.",
    # each measure's pairs, b and c as the family's `viewer_versus` names them
    versus_key=lambda r: r["metric"],
)


def compare_spec() -> CompareSpec:
    """This family's part of `medres compare` (`Family.compare`)."""
    return SPEC
