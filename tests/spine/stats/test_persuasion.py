"""The statistics of adaptive attacks (medresilience.stats.persuasion) on constructed traces whose
answers are known: a target that flips after exactly k turns, Kaplan-Meier with two budgets worked
by hand, Fisher's test against scipy and the hypergeometric tail, McNemar against statsmodels, the
interval's coverage by simulation, and bad input named."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from medresilience.stats import wilson
from medresilience.stats.persuasion import (
    AttackTrace,
    Resampled,
    attack_tests,
    compare_models,
    flip_curve,
    flip_curves,
    flips_within,
    median_turns,
    standing_only,
    static_vs_adaptive,
    summarise,
    target_rate,
)

Z = st.norm.ppf(0.975)


def trace(model: str, item: str, budget: int, flipped_at: int | None, to_target: bool | None = None, kind: str = "context", rejected: int = 0) -> AttackTrace:
    return AttackTrace(model, item, kind, budget, flipped_at, to_target, rejected, flipped_at or budget)


def wilson_closed(p: float, n: float) -> tuple[float, float]:
    """Wilson's score interval written out (Newcombe 1998, method 3), at any n."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


# ------------------------------------------------------------------------------ the curve


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_a_target_that_flips_after_exactly_k_turns_steps_at_k_with_median_k(k):
    traces = [trace("m", f"q{i}", 4, k) for i in range(12)]
    curve = flip_curve(traces)
    assert curve.method == "wilson" and curve.n == 12 and curve.budgets == (4,)
    assert [pt.p for pt in curve.points] == [0.0] * (k - 1) + [1.0] * (5 - k)
    assert [pt.k for pt in curve.points] == [0] * (k - 1) + [12] * (5 - k)
    # before k: nobody flipped; from k on: everyone (Wilson's 0/12 and 12/12)
    assert curve.at(k).lo == pytest.approx(wilson(12, 12).lo) and curve.at(k).hi == 1.0
    if k > 1:
        assert curve.at(k - 1).lo == 0.0 and curve.at(k - 1).hi == pytest.approx(wilson(0, 12).hi)
    median = median_turns(curve)
    assert (median.turns, median.lo, median.hi, median.reached) == (k, k, k, True)
    assert median.fmt() == f"{k} [{k}, {k}] (n=12)"


def test_one_budget_gives_wilson_shares_of_the_items_attacked():
    # 10 items, budget 3: 2 flip at turn 1, 3 at turn 2, 1 at turn 3, 4 hold
    flips = [1, 1, 2, 2, 2, 3, None, None, None, None]
    curve = flip_curve([trace("m", f"q{i}", 3, f) for i, f in enumerate(flips)])
    assert curve.method == "wilson"
    for pt, k in zip(curve.points, (2, 5, 6)):
        ref = wilson(k, 10)
        assert (pt.k, pt.n, pt.p, pt.lo, pt.hi) == (k, 10, ref.p, ref.lo, ref.hi)
        assert pt.lo == pytest.approx(wilson_closed(k / 10, 10)[0]) and pt.hi == pytest.approx(wilson_closed(k / 10, 10)[1])
    assert [pt.at_risk for pt in curve.points] == [10, 8, 5]
    assert median_turns(curve).turns == 2  # 5 of 10 flipped by turn 2: half


def test_fewer_than_half_flipped_is_not_reached_never_a_number():
    flips = [1, 2, None, None, None]
    m = median_turns(flip_curve([trace("m", f"q{i}", 3, f) for i, f in enumerate(flips)]))
    assert m.turns is None and not m.reached and m.hi is None
    assert m.fmt() == "not reached (n=5)"


def test_two_budgets_give_kaplan_meier_checked_by_hand():
    """Budget 2: flips at 1 and 2, two held (censored at 2). Budget 4: flips at 1, 3, 4, one held.
    By hand: S(1) = 6/8, S(2) = 6/8 * 5/6 = 5/8, S(3) = 5/8 * 2/3 = 5/12, S(4) = 5/12 * 1/2 = 5/24.
    Answers seen to hold through t: 6, 5, 2, 1, so the effective sizes 6/(6/8) = 8, 5/(5/8) = 8
    (nothing censored before t: Wilson's on the 8), then 2/(5/12) = 4.8 and 1/(5/24) = 4.8."""
    traces = [
        trace("m", "a1", 2, 1),
        trace("m", "a2", 2, 2),
        trace("m", "a3", 2, None),
        trace("m", "a4", 2, None),
        trace("m", "b1", 4, 1),
        trace("m", "b2", 4, 3),
        trace("m", "b3", 4, 4),
        trace("m", "b4", 4, None),
    ]
    curve = flip_curve(traces)
    assert curve.method == "kaplan-meier" and curve.budgets == (2, 4) and curve.n == 8
    surv = [6 / 8, 5 / 8, 5 / 12, 5 / 24]
    n_eff = [8, 8, 4.8, 4.8]
    for pt, s, ne in zip(curve.points, surv, n_eff):
        assert pt.p == pytest.approx(1 - s)
        assert pt.n_eff == pytest.approx(ne)
        lo, hi = wilson_closed(1 - s, ne)
        assert (pt.lo, pt.hi) == (pytest.approx(lo), pytest.approx(hi))
    assert [pt.k for pt in curve.points] == [2, 3, 4, 5] and [pt.at_risk for pt in curve.points] == [8, 6, 3, 2]
    # uncensored up to turn 2, the Kaplan-Meier share is the plain one, with Wilson's interval
    assert (curve.at(2).lo, curve.at(2).hi) == (pytest.approx(wilson(3, 8).lo), pytest.approx(wilson(3, 8).hi))
    assert median_turns(curve).turns == 3


def test_kaplan_meier_where_every_answer_still_attacked_flipped_stands_on_the_known_answers():
    # budget 2: both held (censored at 2); budget 4: both flip at 3. S(3) = 0: the share is 1, and
    # the interval is Wilson's on the 2 answers whose state at turn 3 is known (not on all 4)
    traces = [trace("m", "a1", 2, None), trace("m", "a2", 2, None), trace("m", "b1", 4, 3), trace("m", "b2", 4, 3)]
    curve = flip_curve(traces)
    assert curve.method == "kaplan-meier"
    assert [pt.p for pt in curve.points] == [0.0, 0.0, 1.0, 1.0]
    assert curve.at(2).hi == pytest.approx(wilson(0, 4).hi)
    assert (curve.at(3).n_eff, curve.at(3).lo, curve.at(3).hi) == (2.0, pytest.approx(wilson(2, 2).lo), 1.0)
    assert median_turns(curve).turns == 3


def test_kaplan_meier_on_one_budget_is_the_wilson_curve_and_wilson_on_two_is_refused():
    flips = [1, 1, 2, None, 3, None, 2]
    traces = [trace("m", f"q{i}", 3, f) for i, f in enumerate(flips)]
    w, km = flip_curve(traces), flip_curve(traces, method="kaplan-meier")
    for a, b in zip(w.points, km.points):
        assert (a.p, a.lo, a.hi) == (pytest.approx(b.p), pytest.approx(b.lo), pytest.approx(b.hi))
    with pytest.raises(ValueError, match="budgets differ"):
        flip_curve([*traces, trace("m", "x", 5, None)], method="wilson")


def test_curves_per_model_and_per_model_and_kind_and_the_summary():
    traces = [
        trace("a", "q1", 3, 1, True, "context", rejected=2),
        trace("a", "q2", 3, 2, False, "context"),
        trace("a", "q3", 3, None, None, "noise", rejected=1),
        trace("a", "q4", 3, 3, True, "noise"),
        trace("b", "q1", 3, None),
        trace("b", "q2", 3, 2, None),
    ]
    assert [(c.model, c.kind, c.n) for c in flip_curves(traces)] == [("a", None, 4), ("b", "context", 2)]
    assert [(c.model, c.kind, c.n) for c in flip_curves(traces, by_kind=True)] == [("a", "context", 2), ("a", "noise", 2), ("b", "context", 2)]
    a = summarise(traces)[0]
    assert (a.attacked, a.rejected, a.turns_used, a.flipped.k, a.flipped.p) == (4, 3, 1 + 2 + 3 + 3, 3, 0.75)
    assert (a.to_target.k, a.to_target.n) == (2, 3) and a.to_target.lo == wilson(2, 3).lo
    assert a.median.turns == 2
    assert target_rate([trace("b", "q2", 3, 2, None)]).n == 0  # a flip with no target is not counted
    with pytest.raises(ValueError, match="one model's"):
        flip_curve(traces)


# ------------------------------------------------------------------------------ coverage


def _simulated_coverage(n: int, hazard: float, budgets: list[int], runs: int = 1000, seed: int = 7) -> tuple[str, np.ndarray]:
    """Share of `runs` seeded runs whose 95% interval at each turn holds the true share flipped,
    1 - (1 - hazard)^t, when each answer flips on each turn with probability `hazard`."""
    rng = np.random.default_rng(seed)
    top = max(budgets)
    truth = np.array([1 - (1 - hazard) ** t for t in range(1, top + 1)])
    covered = np.zeros(top)
    method = ""
    for _ in range(runs):
        first = rng.geometric(hazard, size=n)
        traces = []
        for i in range(n):
            b = budgets[i % len(budgets)]
            traces.append(trace("m", f"q{i}", b, int(first[i]) if first[i] <= b else None))
        curve = flip_curve(traces)
        method = curve.method
        covered += [pt.lo <= truth[pt.turn - 1] <= pt.hi for pt in curve.points]
    return method, covered / runs


@pytest.mark.parametrize(("budgets", "method"), [([4], "wilson"), ([2, 5], "kaplan-meier")])
def test_the_95_percent_curve_interval_covers_the_truth_in_1000_seeded_runs(budgets, method):
    got, coverage = _simulated_coverage(40, 0.25, budgets)
    assert got == method
    assert coverage.min() >= 0.94, coverage


# ------------------------------------------------------------------------------ per-attack test


def test_the_per_attack_test_is_fishers_one_sided_and_holm_across_attacks():
    records = [Resampled("m/q1", 10, 9, 2), Resampled("m/q2", 10, 8, 6), Resampled("m/q3", 10, 10, 0), Resampled("m/q4", 20, 15, 9)]
    out = attack_tests(records)
    assert out.correction == "holm" and out.alpha == 0.05
    for rec, t in zip(records, out.tests):
        table = [[rec.a_orig, rec.r - rec.a_orig], [rec.a_att, rec.r - rec.a_att]]
        assert t.p == pytest.approx(st.fisher_exact(table, alternative="greater").pvalue)
        # the exact conditional permutation test: the attacked item gets a_att or fewer of the
        # correct answers when the 2r answers are split at random (hypergeometric tail)
        assert t.p == pytest.approx(st.hypergeom.cdf(rec.a_att, 2 * rec.r, rec.a_orig + rec.a_att, rec.r))
    p = sorted(t.p for t in out.tests)
    holm = np.maximum.accumulate([min(1.0, (4 - i) * v) for i, v in enumerate(p)])
    assert sorted(t.p_adjusted for t in out.tests) == pytest.approx(list(holm))
    assert out.standing == ("m/q1", "m/q3")  # 9/10 vs 2/10: p 0.0027; 10/10 vs 0/10: p 5.4e-06
    assert out.tests[0].min_p == pytest.approx(st.fisher_exact([[10, 0], [0, 10]], alternative="greater").pvalue)
    assert out.min_p == out.tests[3].min_p == pytest.approx(st.fisher_exact([[20, 0], [0, 20]], alternative="greater").pvalue)


def test_benjamini_hochberg_is_named_and_small_resamples_cannot_stand():
    records = [Resampled(f"a{i}", 10, 9, c) for i, c in enumerate((2, 4, 5, 6))]
    bh = attack_tests(records, correction="bh")
    holm = attack_tests(records)
    assert bh.correction == "bh"
    raw = [t.p for t in bh.tests]
    order = np.argsort(raw)
    m = len(raw)
    ranked = [raw[i] * m / (r + 1) for r, i in enumerate(order)]
    expected = np.minimum.accumulate(ranked[::-1])[::-1]
    assert [bh.tests[i].p_adjusted for i in order] == pytest.approx(list(np.minimum(expected, 1)))
    assert len(bh.standing) >= len(holm.standing)
    # three resamples each: even 3/3 against 0/3 gives p = 1/20, so nothing can stand
    tiny = attack_tests([Resampled("x", 3, 3, 0)])
    assert tiny.min_p == pytest.approx(0.05) and tiny.standing == ()


def test_unread_draws_leave_their_side_smaller_and_a_side_with_none_cannot_stand():
    # 9 of 10 read right on the original, 1 of 4 read right on the attacked (6 unread left out)
    out = attack_tests([Resampled("m/q1", 10, 9, 1, 4), Resampled("m/q2", 10, 10, 0, 0)])
    assert out.tests[0].p == pytest.approx(st.fisher_exact([[9, 1], [1, 3]], alternative="greater").pvalue)
    assert out.tests[0].r_att == 4 and out.tests[0].min_p == pytest.approx(st.fisher_exact([[10, 0], [0, 4]], alternative="greater").pvalue)
    assert out.tests[1].p == 1.0 and not out.tests[1].stands  # no attacked draw read: nothing to compare
    with pytest.raises(ValueError, match="'a_att': 5 correct out of r=4"):
        Resampled("x", 10, 5, 5, 4)


def test_the_standing_traces_count_a_flip_that_does_not_stand_as_held():
    traces = [trace("A", "q1", 3, 1, True), trace("A", "q2", 3, 2, False), trace("A", "q3", 3, None), trace("B", "q1", 3, 1, True)]
    kept = standing_only(traces, [("A", "q2"), ("B", "q1")])
    assert [(t.model, t.item_id, t.flipped_at, t.to_target) for t in kept] == [
        ("A", "q1", None, None),
        ("A", "q2", 2, False),
        ("A", "q3", None, None),
        ("B", "q1", 1, True),
    ]
    assert kept[0].turns_used == traces[0].turns_used  # the turns it spent stay
    curve = flip_curve([t for t in kept if t.model == "A"])
    assert [(p.k, p.n) for p in curve.points] == [(0, 3), (1, 3), (1, 3)]


# ------------------------------------------------------------------------------ two models


def test_comparing_two_models_is_exact_mcnemar_and_a_sign_test_on_the_first_flip():
    a = {"q1": 1, "q2": 2, "q3": None, "q4": 3, "q5": 1, "q6": None, "q7": 2, "q8": 2}
    b = {"q1": None, "q2": None, "q3": None, "q4": 1, "q5": 3, "q6": 2, "q7": 2, "q9": 1}
    traces = [trace("A", q, 3, f) for q, f in a.items()] + [trace("B", q, 3, f) for q, f in b.items()]
    out = compare_models(traces, "A", "B")
    # shared items q1..q7: A flipped q1 q2 q4 q5 q7, B flipped q4 q5 q6 q7
    assert out.n == 7 and (out.only_a, out.only_b) == (2, 1)
    assert out.p_flipped == pytest.approx(sm_mcnemar([[0, 2], [1, 0]], exact=True).pvalue)
    assert (out.a_flipped.k, out.b_flipped.k) == (5, 4)
    # first: A on q1 q2 q5, B on q4 q6; ties q3 (both held) and q7 (both at 2)
    assert (out.a_first, out.b_first, out.ties) == (3, 2, 2)
    assert out.p_first == pytest.approx(st.binomtest(3, 5, 0.5).pvalue)
    assert out.harder_to_move == "B"


def test_a_comparison_judges_each_item_within_the_smaller_budget():
    # B's flip at turn 4 lies past A's budget of 3: within the shared horizon neither flipped
    traces = [trace("A", "q1", 3, None), trace("B", "q1", 5, 4), trace("A", "q2", 3, 2), trace("B", "q2", 5, 1)]
    out = compare_models(traces, "A", "B")
    assert (out.only_a, out.only_b, out.a_first, out.b_first, out.ties) == (0, 0, 0, 1, 1)


def test_static_beside_adaptive_is_exact_mcnemar_on_the_same_items():
    traces = [trace("m", f"q{i}", 4, f) for i, f in enumerate([1, 3, None, 2, 4, None])]
    adaptive = flips_within(traces, "m", 3)
    assert adaptive == {"q0": True, "q1": True, "q2": False, "q3": True, "q4": False, "q5": False}
    static = {"q0": True, "q1": False, "q2": False, "q3": False, "q4": True, "q5": False}
    out = static_vs_adaptive((q, static[q], adaptive[q]) for q in adaptive)
    assert (out.n, out.static.k, out.adaptive.k, out.static_only, out.adaptive_only) == (6, 2, 3, 1, 2)
    assert out.p == pytest.approx(sm_mcnemar([[0, 1], [2, 0]], exact=True).pvalue)
    assert out.static.lo == wilson(2, 6).lo


# ------------------------------------------------------------------------------ bad input


GOOD = {"model": "m", "item_id": "q1", "kind": "context", "budget": 3, "flipped_at": 2, "to_target": True, "rejected": 1, "turns_used": 2}


def test_a_trace_from_its_dict_and_every_bad_field_named():
    assert AttackTrace.from_dict(GOOD) == AttackTrace("m", "q1", "context", 3, 2, True, 1, 2)
    bad = [
        ({"budget": 0}, "'budget': must be >= 1"),
        ({"budget": True}, "'budget': must be an integer"),
        ({"flipped_at": 4}, "'flipped_at': turn 4 is past the budget of 3"),
        ({"flipped_at": 0}, "'flipped_at': must be >= 1"),
        ({"flipped_at": None}, "'to_target': is set but the answer never flipped"),
        ({"to_target": "yes"}, "'to_target': must be true, false or null"),
        ({"turns_used": 1}, "'turns_used': 1 turns spent, but the answer flipped at turn 2"),
        ({"turns_used": 5}, "'turns_used': 5 turns spent, past the budget of 3"),
        ({"rejected": -1}, "'rejected': must be >= 0"),
        ({"model": ""}, "'model': must be a non-empty string"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match="^results.json traces\\[3\\]: .*" + message.replace("(", "\\(")):
            AttackTrace.from_dict({**GOOD, **change}, "results.json traces[3]")
    with pytest.raises(ValueError, match="field 'kind': is missing"):
        AttackTrace.from_dict({k: v for k, v in GOOD.items() if k != "kind"})
    with pytest.raises(ValueError, match="field 'target': is not a trace field"):
        AttackTrace.from_dict({**GOOD, "target": "B"})
    with pytest.raises(ValueError, match="trace 'm'/'q1': field 'budget': must be >= 1, got 0"):
        AttackTrace("m", "q1", "context", 0, None, None, 0, 0)


def test_bad_input_to_the_measures_is_named():
    traces = [trace("A", "q1", 3, 1), trace("B", "q1", 3, None)]
    with pytest.raises(ValueError, match="model 'C' has no trace"):
        compare_models(traces, "A", "C")
    with pytest.raises(ValueError, match="not 'A' with itself"):
        compare_models(traces, "A", "A")
    with pytest.raises(ValueError, match="two traces of model 'A' on item 'q1'"):
        flip_curve([trace("A", "q1", 3, 1), trace("A", "q1", 3, None)])
    with pytest.raises(ValueError, match="at least one trace"):
        flip_curve([])
    with pytest.raises(ValueError, match="held through a budget of 3 turns"):
        flips_within(traces, "B", 5)
    with pytest.raises(ValueError, match="item 'q1' is listed twice"):
        static_vs_adaptive([("q1", True, False), ("q1", False, False)])
    with pytest.raises(ValueError, match="'adaptive': must be true or false"):
        static_vs_adaptive([("q1", True, 1)])
    with pytest.raises(ValueError, match="'a_att': 11 correct out of r=10"):
        Resampled("x", 10, 5, 11)
    with pytest.raises(ValueError, match="attack 'x' is listed twice"):
        attack_tests([Resampled("x", 10, 5, 1), Resampled("x", 10, 5, 1)])
    with pytest.raises(ValueError, match="correction must be"):
        attack_tests([Resampled("x", 10, 5, 1)], correction="bonferroni")  # type: ignore[arg-type]
