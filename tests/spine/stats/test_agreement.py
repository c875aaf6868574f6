"""Agreement statistics (stats/agreement.py) against published reference values: Gwet's 4-rater, 12-unit
example with missing ratings (Handbook of Inter-Rater Reliability, 4th ed., p. 120; irrCAC's
cac.raw4raters), the irrCAC overview's 3 x 3 contingency table, a textbook 2 x 2 table, and Gwet's
weight tables; Krippendorff's alpha cross-checked with the `krippendorff` package when it is
installed (the test extra), and the Gwet family with a plain loop written from the book's
formulas."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from medresilience import stats

NA = None
# Gwet (2014), p. 120: 4 raters, 12 units, 5 categories (a..e as 1..5), no rater rates every unit
GWET_4x12 = [
    [1, 1, NA, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [NA, 5, 5, 5],
    [NA, NA, 1, 1],
    [NA, NA, 3, NA],
]
LETTERS_4x12 = [[None if v is None else "abcde"[v - 1] for v in row] for row in GWET_4x12]


def _table_to_pairs(table: list[list[int]], labels=None) -> tuple[list, list]:
    labels = labels or list(range(len(table)))
    a, b = [], []
    for i, row in enumerate(table):
        for j, n in enumerate(row):
            a += [labels[i]] * n
            b += [labels[j]] * n
    return a, b


# --------------------------------------------------------------------------- published values


def test_gwet_four_raters_twelve_units_with_missing_ratings():
    assert stats.gwet_ac1(GWET_4x12) == pytest.approx(0.7754, abs=5e-5)
    assert stats.fleiss_kappa(GWET_4x12) == pytest.approx(0.7612, abs=5e-5)
    assert stats.krippendorff_alpha(GWET_4x12) == pytest.approx(0.743, abs=5e-4)
    assert stats.krippendorff_alpha(GWET_4x12) == pytest.approx(0.7434, abs=5e-5)
    assert stats.percent_agreement(GWET_4x12) == pytest.approx(0.8182, abs=5e-5)  # 9 / 11


def test_letters_numbers_nan_and_dataframes_give_the_same_values():
    frame = pd.DataFrame(GWET_4x12, dtype=float)  # None -> NaN
    for fn in (stats.gwet_ac1, stats.fleiss_kappa, stats.krippendorff_alpha, stats.percent_agreement):
        assert fn(LETTERS_4x12) == pytest.approx(fn(GWET_4x12))
        assert fn(frame) == pytest.approx(fn(GWET_4x12))
        assert fn(np.array(GWET_4x12, dtype=float)) == pytest.approx(fn(GWET_4x12))


def test_cohen_kappa_textbook_two_by_two():
    # 50 units: both yes 20, A yes B no 5, A no B yes 10, both no 15 -> p_o 0.70, p_e 0.50, kappa 0.40
    a, b = _table_to_pairs([[20, 5], [10, 15]], ["yes", "no"])
    assert stats.cohen_kappa(a, b) == pytest.approx(0.4)
    res = stats.agreement([[x, y] for x, y in zip(a, b)], "cohen_kappa")
    assert res.pa == pytest.approx(0.7) and res.pe == pytest.approx(0.5) and res.units == 50


def test_irrcac_overview_three_by_three_table():
    # irrCAC overview vignette, cont3x3abstractors: Cohen 0.7964094, AC1 0.8493305,
    # Krippendorff 0.7972585, percent agreement 0.89
    a, b = _table_to_pairs([[13, 0, 0], [0, 20, 7], [0, 4, 56]], ["Ectopic", "AIU", "NIU"])
    pairs = [[x, y] for x, y in zip(a, b)]
    assert stats.cohen_kappa(a, b) == pytest.approx(0.7964094, abs=1e-7)
    assert stats.gwet_ac1(pairs) == pytest.approx(0.8493305, abs=1e-7)
    assert stats.krippendorff_alpha(pairs) == pytest.approx(0.7972585, abs=1e-7)
    assert stats.percent_agreement(pairs) == pytest.approx(0.89)


def test_gwet_weight_tables():
    # irrCAC weighting vignette, categories 1:3
    assert stats.agreement_weights([1, 2, 3], "linear") == pytest.approx(np.array([[1, 0.5, 0], [0.5, 1, 0.5], [0, 0.5, 1]]))
    assert stats.agreement_weights([1, 2, 3], "quadratic") == pytest.approx(np.array([[1, 0.75, 0], [0.75, 1, 0.75], [0, 0.75, 1]]))
    assert stats.agreement_weights([1, 2, 3], "ordinal") == pytest.approx(np.array([[1, 2 / 3, 0], [2 / 3, 1, 2 / 3], [0, 2 / 3, 1]]))
    assert stats.agreement_weights(["lo", "mid", "hi"], "identity") == pytest.approx(np.eye(3))
    with pytest.raises(ValueError, match="weights must be one of"):
        stats.agreement_weights([1, 2], "cubic")


# --------------------------------------------------------------------------- a second implementation


def _loop_gwet(rows, cats, w, kind):
    """Gwet (2014) ch. 2-3, written as loops over units: p_a over units with r_i >= 2, pi_k over
    units with r_i >= 1; AC: p_e = T_w / (q (q - 1)) * sum pi_k (1 - pi_k); Fleiss:
    p_e = sum_kl w_kl pi_k pi_l."""
    q = len(cats)
    counts = [[sum(1 for v in row if v == c) for c in cats] for row in rows]
    rated = [c for c in counts if sum(c) >= 1]
    pairs = [c for c in counts if sum(c) >= 2]
    pa = 0.0
    for c in pairs:
        r = sum(c)
        pa += sum(c[k] * (sum(w[k][j] * c[j] for j in range(q)) - 1) for k in range(q)) / (r * (r - 1))
    pa /= len(pairs)
    pi = [sum(c[k] / sum(c) for c in rated) / len(rated) for k in range(q)]
    if kind == "ac":
        tw = sum(sum(r) for r in w)
        pe = tw / (q * (q - 1)) * sum(p * (1 - p) for p in pi)
    else:
        pe = sum(w[k][j] * pi[k] * pi[j] for k in range(q) for j in range(q))
    return (pa - pe) / (1 - pe)


@pytest.mark.parametrize("weights", ["linear", "quadratic", "ordinal"])
def test_weighted_ac2_and_fleiss_match_a_loop_over_the_books_formulas(weights):
    cats = [1, 2, 3, 4, 5]
    w = stats.agreement_weights(cats, weights).tolist()
    rows = [[v for v in row] for row in GWET_4x12]
    assert stats.gwet_ac2(GWET_4x12, weights=weights) == pytest.approx(_loop_gwet(rows, cats, w, "ac"))
    assert stats.fleiss_kappa(GWET_4x12, weights=weights) == pytest.approx(_loop_gwet(rows, cats, w, "fleiss"))


def test_ac2_with_identity_weights_is_ac1_and_unused_categories_count():
    assert stats.gwet_ac2(GWET_4x12, weights="identity") == pytest.approx(stats.gwet_ac1(GWET_4x12))
    # a 0-2 rubric where nobody used 0: naming the scale changes AC's chance term (q = 3, not 2)
    rows = [[1, 2], [2, 2], [2, 2], [1, 1], [2, 1], [2, 2]]
    with_scale = stats.gwet_ac2(rows, weights="ordinal", categories=[0, 1, 2])
    w = stats.agreement_weights([0, 1, 2], "ordinal").tolist()
    assert with_scale == pytest.approx(_loop_gwet(rows, [0, 1, 2], w, "ac"))
    assert with_scale != pytest.approx(stats.gwet_ac2(rows, weights="ordinal"))


def test_weighted_cohen_kappa_by_hand():
    # 2 raters, 3 ordered categories, linear weights; p_o and p_e computed by hand
    a = [1, 1, 2, 2, 3, 3, 1, 3]
    b = [1, 2, 2, 3, 3, 3, 3, 1]
    w = stats.agreement_weights([1, 2, 3], "linear")
    p = np.zeros((3, 3))
    for x, y in zip(a, b):
        p[x - 1, y - 1] += 1 / len(a)
    po = (w * p).sum()
    pe = (w * np.outer(p.sum(1), p.sum(0))).sum()
    assert stats.cohen_kappa(a, b, weights="linear") == pytest.approx((po - pe) / (1 - pe))
    # units one rater skipped are left out
    assert stats.cohen_kappa(a + [2, None], b + [None, 1], weights="linear") == pytest.approx((po - pe) / (1 - pe))


# --------------------------------------------------------------------------- Krippendorff oracle


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_alpha_matches_the_krippendorff_package(level):
    kp = pytest.importorskip("krippendorff", reason="the krippendorff package (test extra) is not installed")
    rng = np.random.default_rng(3)
    for trial in range(5):
        truth = rng.integers(1, 6, size=40)
        data = np.array([[t if rng.random() < 0.7 else rng.integers(1, 6) for t in truth] for _ in range(3)], dtype=float).T
        data[rng.random(data.shape) < 0.15] = np.nan
        ours = stats.krippendorff_alpha(data, level=level)
        theirs = kp.alpha(reliability_data=data.T, level_of_measurement=level)
        assert ours == pytest.approx(theirs, abs=1e-9), (trial, level)
    assert stats.krippendorff_alpha(GWET_4x12, level=level) == pytest.approx(
        kp.alpha(reliability_data=np.array(GWET_4x12, dtype=float).T, level_of_measurement=level), abs=1e-9
    )


# --------------------------------------------------------------------------- edge cases


def test_undefined_coefficients_are_none_not_nan():
    same = [["x", "x"], ["x", "x"], ["x", "x"]]
    assert stats.cohen_kappa(["x"] * 3, ["x"] * 3) is None  # chance agreement 1
    assert stats.fleiss_kappa(same) is None
    assert stats.gwet_ac1(same) == 1.0  # one category: AC's chance agreement is 0 (as in irrCAC)
    assert stats.percent_agreement(same) == 1.0
    assert stats.percent_agreement([[1, None], [None, 2]]) is None  # no unit with two ratings
    res = stats.agreement([[1, None], [None, 2]], "gwet_ac1")
    assert res.value is None and res.units == 0 and res.lo is None
    assert stats.gwet_ac1([[1, 1], [2, 2], [1, 2]], categories=[1, 2, 3]) is not None


@pytest.mark.parametrize("coefficient", stats.AGREEMENT_COEFFICIENTS)
def test_no_ratings_give_none_with_a_reason(coefficient):
    res = stats.agreement([], coefficient)
    assert (res.value, res.lo, res.hi, res.units, res.ratings) == (None, None, None, 0, 0)
    assert res.reason == "no ratings" and res.as_dict()["reason"] == "no ratings"
    assert stats.agreement([[1, None], [None, 2]], coefficient).reason in ("no unit has two ratings", "no unit rated by both raters")
    assert stats.agreement([[1, 1], [2, 2], [1, 2]], coefficient).reason is None


def test_the_point_functions_on_empty_input_are_none():
    assert stats.cohen_kappa([], []) is None
    assert stats.krippendorff_alpha([]) is None
    for fn in (stats.fleiss_kappa, stats.gwet_ac1, stats.gwet_ac2, stats.percent_agreement):
        assert fn([]) is None
    assert "chance agreement is 1" in stats.agreement([["x", "x"], ["x", "x"]], "cohen_kappa").reason


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="outside the categories"):
        stats.gwet_ac1([[1, 2], [3, 1]], categories=[1, 2])
    with pytest.raises(ValueError, match="two raters"):
        stats.agreement(GWET_4x12, "cohen_kappa")
    with pytest.raises(ValueError, match="coefficient must be one of"):
        stats.agreement(GWET_4x12, "scott_pi")
    with pytest.raises(ValueError, match="every row the same length"):
        stats.gwet_ac1([[1, 2], [1]])
    with pytest.raises(ValueError, match="numeric"):
        stats.krippendorff_alpha(LETTERS_4x12, level="interval")
    with pytest.raises(ValueError, match="level must be one of"):
        stats.krippendorff_alpha(GWET_4x12, level="cosine")


# --------------------------------------------------------------------------- bootstrap intervals


@pytest.mark.parametrize("coefficient", [c for c in stats.AGREEMENT_COEFFICIENTS if c != "cohen_kappa"])
def test_bootstrap_interval_over_units_holds_the_estimate_and_is_seeded(coefficient):
    res = stats.agreement(GWET_4x12, coefficient, seed=1)
    again = stats.agreement(GWET_4x12, coefficient, seed=1)
    assert res == again
    assert res.lo is not None and res.lo <= res.value <= res.hi <= 1.0
    assert res.units == 11 and res.ratings in (40, 41)  # alpha drops the unit rated once
    assert res.resamples > 1000
    d = res.as_dict()
    assert set(d) >= {"coefficient", "value", "lo", "hi", "units", "pa", "pe"}
    assert all(isinstance(v, (int, float, str, type(None))) for v in d.values())


def test_bootstrap_interval_narrows_with_more_units_and_covers_the_truth():
    rng = np.random.default_rng(0)

    def rate(n):
        truth = rng.integers(0, 3, size=n)
        noisy = [[t, t if rng.random() < 0.8 else rng.integers(0, 3)] for t in truth]
        return stats.agreement(noisy, "gwet_ac2", weights="ordinal", categories=[0, 1, 2], n_resamples=1000)

    small, large = rate(30), rate(600)
    assert (large.hi - large.lo) < (small.hi - small.lo)
    assert large.lo < large.value < large.hi
    cohen = stats.agreement([[0, 0], [1, 1], [2, 1], [1, 1], [0, 0], [2, 2], [1, 0], [2, 2]], "cohen_kappa", weights="quadratic")
    assert cohen.weights == "quadratic" and cohen.lo is not None and cohen.lo <= cohen.value <= cohen.hi


def test_agreement_fmt():
    res = stats.agreement(GWET_4x12, "gwet_ac1")
    assert res.fmt().startswith("0.775 [") and res.fmt().endswith("(n=11)")
    assert stats.agreement([[1, None]], "gwet_ac1").fmt() == "— (n=0)"
    assert math.isclose(res.value, 0.775444068126995, rel_tol=1e-12)


def test_cluster_bootstrap_resamples_whole_clusters():
    # singleton clusters are the row bootstrap, draw for draw
    plain = stats.agreement(GWET_4x12, "gwet_ac1", n_resamples=500, seed=3)
    single = stats.agreement(GWET_4x12, "gwet_ac1", n_resamples=500, seed=3, clusters=list(range(12)))
    assert (single.lo, single.hi) == (plain.lo, plain.hi)
    # every unit twice: as independent rows the interval narrows, as clusters of two it is the original's width
    twice = GWET_4x12 + GWET_4x12
    naive = stats.agreement(twice, "gwet_ac1", n_resamples=2000, seed=3)
    clustered = stats.agreement(twice, "gwet_ac1", n_resamples=2000, seed=3, clusters=list(range(12)) * 2)
    original = stats.agreement(GWET_4x12, "gwet_ac1", n_resamples=2000, seed=3)
    assert clustered.value == pytest.approx(original.value)
    assert clustered.hi - clustered.lo > naive.hi - naive.lo
    assert clustered.hi - clustered.lo == pytest.approx(original.hi - original.lo, rel=0.25)
    with pytest.raises(ValueError, match="one cluster per row"):
        stats.agreement(GWET_4x12, "gwet_ac1", clusters=[1, 2])
