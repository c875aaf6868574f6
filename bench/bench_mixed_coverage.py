"""The mixed model's odds-ratio intervals on simulated reviews shaped like MedMisBench's response
review (14 reviewers, 153 ratings, provenance and model as factors, reviewer ICC 0.1): the
coverage of each true odds ratio at nominal 95%, the median interval width on the log scale and
the seconds per fit, for the maximum-likelihood fit (stats.mixed_logistic, adaptive quadrature)
and for the mean-field variational fit it replaced (statsmodels' BinomialBayesMixedGLM.fit_vb,
exp(b +- z sd) from the variational posterior); then one such review side by side.

    python bench/bench_mixed_coverage.py --sims 500"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from medresilience import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "spine"))
from test_mixed import COVERAGE_OR, simulated_review

REFS = {"provenance": "neutral", "model": "gemini"}
Z = 1.959964


def variational(y, factors, groups) -> tuple[dict[tuple[str, str], tuple[float, float, float]], float]:
    """(factor, level) -> (odds ratio, lo, hi) and the ICC of the variational fit the toolkit used."""
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    cols, labels = [np.ones(len(y))], []
    for name, vals in factors.items():
        s = pd.Series(vals)
        for level in sorted(set(s) - {REFS[name]}):
            cols.append((s == level).to_numpy(dtype=float))
            labels.append((name, level))
    g = pd.Series(groups)
    names = sorted(set(g))
    vc = np.column_stack([(g == k).to_numpy(dtype=float) for k in names])
    res = BinomialBayesMixedGLM(np.asarray(y, dtype=float), np.column_stack(cols), vc, np.zeros(len(names), dtype=int), vcp_p=1.0, fe_p=2.0).fit_vb()
    fe, sd = np.asarray(res.fe_mean), np.asarray(res.fe_sd)
    s = math.exp(float(np.asarray(res.vcp_mean)[0]))
    out = {lab: (math.exp(fe[i + 1]), math.exp(fe[i + 1] - Z * sd[i + 1]), math.exp(fe[i + 1] + Z * sd[i + 1])) for i, lab in enumerate(labels)}
    return out, s * s / (s * s + math.pi**2 / 3)


def maximum_likelihood(y, factors, groups) -> tuple[dict[tuple[str, str], tuple[float | None, float | None, float | None]], float]:
    m = stats.mixed_logistic(y, factors, groups, references=REFS)
    return {(o.factor, o.level): (o.odds_ratio, o.lo, o.hi) for o in m.odds_ratios}, m.icc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    fits = {"maximum likelihood (adaptive quadrature)": maximum_likelihood, "variational (fit_vb, replaced)": variational}
    for title, fit in fits.items():
        rng = np.random.default_rng(args.seed)
        covered, widths, iccs = {k: 0 for k in COVERAGE_OR}, {k: [] for k in COVERAGE_OR}, []
        t0 = time.perf_counter()
        for _ in range(args.sims):
            ors, icc = fit(*simulated_review(rng))
            iccs.append(icc)
            for k, (_, lo, hi) in ors.items():
                if lo is not None:
                    covered[k] += lo <= COVERAGE_OR[k] <= hi
                    widths[k].append(math.log(hi) - math.log(lo))
        secs = (time.perf_counter() - t0) / args.sims
        print(f"{title}: {secs * 1000:.0f} ms per fit, median ICC {np.median(iccs):.3f} (true 0.099)")
        for k, v in covered.items():
            print(
                f"  {k[0]} {k[1]} (true OR {COVERAGE_OR[k]}): coverage {v}/{args.sims} = {100 * v / args.sims:.1f}%, median log-width {np.median(widths[k]):.2f}"
            )
    rng = np.random.default_rng(args.seed + 1000)
    review = simulated_review(rng)
    print(f"one review ({len(review[0])} ratings, {int(np.sum(review[0]))} worst cases, 14 reviewers):")
    (ml, ml_icc), (vb, vb_icc) = maximum_likelihood(*review), variational(*review)
    for k in COVERAGE_OR:
        a, b = ml[k], vb[k]
        print(f"  {k[1]} vs {REFS[k[0]]} (true {COVERAGE_OR[k]}): ML {a[0]:.2f} [{a[1]:.2f}, {a[2]:.2f}]   variational {b[0]:.2f} [{b[1]:.2f}, {b[2]:.2f}]")
    print(f"  reviewer ICC: ML {ml_icc:.3f}, variational {vb_icc:.3f}")


if __name__ == "__main__":
    main()
