"""Label-corrected (prediction-powered) rates: stats.ppi against ppi_python's own numbers, its
input rules, and its coverage by simulation (a known truth, a reader of known error, a stratified
audit weighted toward the units the headline number turns on, 1,000 seeded runs)."""

from __future__ import annotations

import numpy as np
import pytest

from medresilience.stats import ppi as ppi_module
from medresilience.stats.ppi import MIN_AUDITED_PER_STRATUM, PPIRate, ppi_mean, ppi_mean_ci, ppi_ratio


def reference_datasets() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(Y, Yhat, Yhat_unlabeled) per name: a copy of bench/ppi_reference.py's ``datasets``."""
    out = {}
    for name, seed, n, big_n, p, flip in [("balanced", 11, 150, 2000, 0.6, 0.1), ("noisy", 12, 80, 900, 0.35, 0.3), ("rare", 13, 300, 5000, 0.08, 0.05)]:
        rng = np.random.default_rng(seed)
        y_all = (rng.random(n + big_n) < p).astype(float)
        yhat_all = np.where(rng.random(n + big_n) < flip, 1 - y_all, y_all)
        out[name] = (y_all[:n], yhat_all[:n], yhat_all[n:])
    return out


# These numbers came from ppi_python 0.2.3 (ppi_py.ppi_mean_ci and ppi_py.ppi_mean_pointestimate,
# alpha=0.05) on exactly the datasets above, printed by bench/ppi_reference.py run in a separate
# environment (ppi_python is not a dependency). Per dataset: PPI (lam=1) estimate, lo, hi; PPI++
# (lam tuned, clipped to [0, 1]) estimate, lo, hi; lam = 1 - n/(n+N) estimate, lo, hi.
REFERENCE = {
    "balanced": (
        0.5945,
        0.5443820611310327,
        0.6446179388689673,
        0.6044802812478433,
        0.5578899251912327,
        0.6510706373044538,
        0.5972093023255814,
        0.5488826792135181,
        0.6455359254376448,
    ),
    "noisy": (
        0.47500000000000003,
        0.3507749608321367,
        0.5992250391678634,
        0.3843279306606823,
        0.2850646383404627,
        0.48359122298090196,
        0.46479591836734696,
        0.34565329033705267,
        0.5839385463976412,
    ),
    "rare": (
        0.10366666666666667,
        0.08425043968246682,
        0.12308289365086653,
        0.08077852610153267,
        0.06366950460915631,
        0.09788754759390904,
        0.10119496855345912,
        0.08276271098537825,
        0.11962722612153999,
    ),
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_textbook_ppi_matches_ppi_python(name):
    y, yhat, yhat_u = reference_datasets()[name]
    ref = REFERENCE[name]
    est, lo, hi, lam = ppi_mean_ci(y, yhat, yhat_u, lam=1.0)
    assert (est, lo, hi) == pytest.approx(ref[0:3], abs=1e-12)
    assert lam == 1.0
    est, lo, hi, lam = ppi_mean_ci(y, yhat, yhat_u)
    assert (est, lo, hi) == pytest.approx(ref[3:6], abs=1e-12)
    assert 0.0 <= lam <= 1.0


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_audit_design_is_ppi_with_audited_units_labelled(name, monkeypatch):
    """The audit reads a sample of the run's own units: with one stratum and lam = 1 the estimate
    is ppi_python's with labelled = audited, unlabelled = the rest and lam' = 1 - n/(n+N); the
    interval (finite-population two-phase variance) agrees with its one to within 1% of width
    without the pseudo-units of label variance, and is wider by at most 10% with them."""
    y, yhat, yhat_u = reference_datasets()[name]
    ref = REFERENCE[name]
    machine = np.concatenate([yhat, yhat_u])
    human = np.concatenate([y, np.full(yhat_u.size, np.nan)])
    r = ppi_mean(machine, human, lam=1.0)
    assert r.estimate == pytest.approx(ref[6], abs=1e-12)
    assert 1.0 < (r.hi - r.lo) / (ref[8] - ref[7]) < 1.10
    with monkeypatch.context() as m:
        m.setattr(ppi_module, "PSEUDO_UNITS", 0.0)
        bare = ppi_mean(machine, human, lam=1.0)
    assert bare.estimate == r.estimate
    assert (bare.hi - bare.lo) == pytest.approx(ref[8] - ref[7], rel=0.01)
    assert (r.n_audited, r.n_total, r.lam, r.n_strata) == (y.size, machine.size, 1.0, 1)
    tuned = ppi_mean(machine, human)
    human_only = ppi_mean(machine, human, lam=0.0)
    assert human_only.estimate == pytest.approx(y.mean(), abs=1e-12)
    # PPI++: never wider than the human-only interval nor than untuned PPI on the same design.
    assert tuned.width <= human_only.width + 1e-12
    assert tuned.width <= r.width + 1e-12


def test_none_marks_unaudited_units_and_plain_interval_is_wilson():
    from medresilience.stats import wilson

    machine = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1]
    human = [1, 0, 0, None, None, 1, None, 1, None, None]
    r = ppi_mean(machine, human)
    w = wilson(7, 10)
    assert (r.plain, r.plain_lo, r.plain_hi) == (w.p, w.lo, w.hi)
    assert r.n_audited == 5 and r.n_total == 10
    assert 0.0 <= r.lo <= r.estimate <= r.hi <= 1.0
    d = r.as_dict()
    assert d["estimate"] == r.estimate and d["widening"] == r.widening and d["refused"] is None


def test_a_stratum_with_one_audited_unit_is_refused_with_its_name():
    machine = [1, 0, 1, 1, 0, 1, 1, 0]
    human = [1, 0, 1, None, 1, None, None, None]
    strata = ["flip", "flip", "flip", "flip", "unread", "unread", "unread", "unread"]
    r = ppi_mean(machine, human, strata=strata)
    assert r.estimate is None and r.lo is None
    assert "'unread' (1 of 4 audited)" in r.refused
    assert r.label_error_line().startswith("no label-corrected interval: fewer than 2 audited")
    assert MIN_AUDITED_PER_STRATUM == 2
    # A stratum read in full needs no variance of its own: one unit of one is fine.
    r = ppi_mean([1, 0, 1, 1, 0], [1, 0, None, None, 1], strata=["a", "a", "a", "a", "b"])
    assert r.refused is None and r.estimate is not None


def test_bad_input_is_an_error():
    with pytest.raises(ValueError, match="differ in length"):
        ppi_mean([1, 0, 1], [1, None])
    with pytest.raises(ValueError, match="machine holds a missing"):
        ppi_mean([1, float("nan"), 1], [1, None, None])
    with pytest.raises(ValueError, match="same units"):
        ppi_ratio([0, 1, 0], [1, 1, 0], [0, None, None], [1, 1, None])
    with pytest.raises(ValueError, match="strata has 2 entries"):
        ppi_mean([1, 0, 1], [1, 0, None], strata=["a", "b"])


def test_a_score_mean_is_machine_mean_plus_rectifier_with_a_normal_plain_interval():
    """A score (PCS-like, 0..2), one stratum, lam = 1: the estimate by hand; the plain interval is
    the normal interval of the machine mean; the label-corrected one is in the right place."""
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, 400).astype(float)
    machine = np.clip(truth + rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], 400), 0, 2)
    audited = np.zeros(400, dtype=bool)
    audited[rng.choice(400, 60, replace=False)] = True
    human = np.where(audited, truth, np.nan)
    r = ppi_mean(machine, human, lam=1.0)
    assert r.estimate == pytest.approx(machine.mean() + (truth - machine)[audited].mean(), abs=1e-12)
    half = 1.959963984540054 * machine.std(ddof=1) / np.sqrt(400)
    assert (r.plain_lo, r.plain_hi) == pytest.approx((machine.mean() - half, machine.mean() + half), abs=1e-12)
    assert r.lo < truth.mean() < r.hi
    assert r.hi - r.lo > r.plain_hi - r.plain_lo


def test_clustered_units_get_the_clustered_plain_interval():
    from medresilience.stats import clustered_rate

    rng = np.random.default_rng(8)
    item = np.repeat(np.arange(150), 4)
    truth = np.repeat(rng.random(150) < 0.6, 4).astype(float)
    machine = np.where(rng.random(600) < 0.1, 1 - truth, truth)
    human = np.where(rng.random(600) < 0.2, truth, np.nan)
    r = ppi_mean(machine, human, clusters=item)
    c = clustered_rate(machine.astype(bool), list(item))
    assert (r.plain, r.plain_lo, r.plain_hi) == pytest.approx((c.p, c.lo, c.hi), abs=1e-12)
    # Units of one item move together: the interval is wider than with every unit its own item.
    assert r.width > ppi_mean(machine, human).width


def test_label_error_line():
    r = PPIRate("mean", 0.6, 0.55, 0.65, 150, 2000, 0.62, 0.6, 0.64, 0.8, 0.95, 1)
    assert r.widening == pytest.approx(2.5)
    assert r.label_error_line() == "label error widens the interval by 6.0 points (150%)"
    assert r.fmt() == "60.0% [55.0, 65.0] (audited 150 of 2000)"
    assert r.fmt(pct=False) == "0.600 [0.550, 0.650] (audited 150 of 2000)"


# --------------------------------------------------------------------------- coverage simulation

RUNS = 1000


def stratified_audit(rng: np.random.Generator, strata: np.ndarray, quota: dict[int, int]) -> np.ndarray:
    """The audit's draw: ``quota[h]`` units uniformly without replacement within stratum h."""
    keys = rng.random(strata.size)
    audited = np.zeros(strata.size, dtype=bool)
    for h, k in quota.items():
        idx = np.flatnonzero(strata == h)
        audited[idx[np.argsort(keys[idx])[:k]]] = True
    return audited


def read(rng: np.random.Generator, truth: np.ndarray, wrong_if_right: float, wrong_if_wrong: float, unread: float) -> tuple[np.ndarray, np.ndarray]:
    """A reader of known error on a 0/1 "correct" truth: unread at a rate (then counted not
    correct), and wrong at a rate that depends on the truth (a correct answer misread as wrong more
    often than the reverse). Returns (machine "correct", machine unread)."""
    u = rng.random(truth.size)
    is_unread = u < unread
    flip = rng.random(truth.size) < np.where(truth == 1, wrong_if_right, wrong_if_wrong)
    machine = np.where(is_unread, 0, np.where(flip, 1 - truth, truth))
    return machine.astype(float), is_unread


def test_accuracy_interval_covers_the_truth_under_a_reader_of_known_error():
    rng = np.random.default_rng(20261129)
    p_true, units = 0.7, 2000
    quota = {0: 50, 1: 70, 2: 80}  # unread, read incorrect, read correct: 200 audited
    ppi_cover = plain_cover = 0
    widening = []
    for _ in range(RUNS):
        truth = (rng.random(units) < p_true).astype(float)
        machine, unread = read(rng, truth, wrong_if_right=0.08, wrong_if_wrong=0.03, unread=0.05)
        strata = np.where(unread, 0, np.where(machine == 0, 1, 2))
        audited = stratified_audit(rng, strata, quota)
        r = ppi_mean(machine, np.where(audited, truth, np.nan), strata=strata)
        ppi_cover += r.lo <= p_true <= r.hi
        plain_cover += r.plain_lo <= p_true <= r.plain_hi
        widening.append(r.widening)
    ppi_rate, plain_rate = ppi_cover / RUNS, plain_cover / RUNS
    print(
        f"accuracy: PPI 95% interval covered {ppi_rate:.3f}, plain {plain_rate:.3f} (shortfall {0.95 - plain_rate:.3f}), median widening {np.median(widening):.2f}x"
    )
    assert ppi_rate >= 0.94
    assert plain_rate < ppi_rate - 0.2


def test_accuracy_interval_covers_the_truth_with_strata_by_condition_and_tuned_lam():
    """Strata that are not the machine reading (two conditions, the stressed one audited at 3.5x
    the rate of the clean one), so the machine varies within strata and PPI++ tunes lam."""
    rng = np.random.default_rng(7)
    per, p_clean, p_stressed = 1000, 0.75, 0.55
    p_true = (p_clean + p_stressed) / 2
    strata = np.repeat([0, 1], per)
    ppi_cover = plain_cover = 0
    lams = []
    for _ in range(RUNS):
        truth = (rng.random(2 * per) < np.repeat([p_clean, p_stressed], per)).astype(float)
        machine, _ = read(rng, truth, wrong_if_right=0.08, wrong_if_wrong=0.03, unread=0.05)
        audited = stratified_audit(rng, strata, {0: 40, 1: 140})
        r = ppi_mean(machine, np.where(audited, truth, np.nan), strata=strata)
        ppi_cover += r.lo <= p_true <= r.hi
        plain_cover += r.plain_lo <= p_true <= r.plain_hi
        lams.append(r.lam)
    ppi_rate, plain_rate = ppi_cover / RUNS, plain_cover / RUNS
    print(
        f"accuracy, condition strata: PPI++ covered {ppi_rate:.3f}, plain {plain_rate:.3f} (shortfall {0.95 - plain_rate:.3f}), median lam {np.median(lams):.2f}"
    )
    assert ppi_rate >= 0.94
    assert plain_rate < ppi_rate - 0.2
    assert 0.5 < float(np.median(lams)) < 1.0


def test_asr_interval_covers_the_truth_with_probes_clustered_by_item():
    rng = np.random.default_rng(41)
    items, probes = 700, 3  # 2,100 pairs; the probes of an item share its clean answer
    p_clean, asr_true = 0.7, 0.25
    quota = {0: 80, 1: 80, 2: 40}  # machine flips, clean-correct kept, clean not correct
    item = np.repeat(np.arange(items), probes)
    ppi_cover = plain_cover = 0
    widening = []
    for _ in range(RUNS):
        clean = np.repeat((rng.random(items) < p_clean).astype(float), probes)
        # Items differ in how easily they are swayed (Beta with mean asr_true): probes of an item
        # flip together more often than independent pairs would.
        sway = np.repeat(rng.beta(1.0, 3.0, items), probes)
        stressed = np.where(clean == 1, (rng.random(items * probes) >= sway).astype(float), (rng.random(items * probes) < 0.2).astype(float))
        m_clean_item, _ = read(rng, clean[::probes], 0.04, 0.02, 0.02)
        m_clean = np.repeat(m_clean_item, probes)
        m_stressed, _ = read(rng, stressed, 0.08, 0.03, 0.05)
        num, den = clean * (1 - stressed), clean
        m_num, m_den = m_clean * (1 - m_stressed), m_clean
        strata = np.where(m_num == 1, 0, np.where(m_den == 1, 1, 2))
        audited = stratified_audit(rng, strata, quota)
        r = ppi_ratio(m_num, m_den, np.where(audited, num, np.nan), np.where(audited, den, np.nan), strata=strata, clusters=item)
        ppi_cover += r.lo <= asr_true <= r.hi
        plain_cover += r.plain_lo <= asr_true <= r.plain_hi
        widening.append(r.widening)
    ppi_rate, plain_rate = ppi_cover / RUNS, plain_cover / RUNS
    print(
        f"ASR: PPI 95% interval covered {ppi_rate:.3f}, plain {plain_rate:.3f} (shortfall {0.95 - plain_rate:.3f}), median widening {np.median(widening):.2f}x"
    )
    assert ppi_rate >= 0.94
    assert plain_rate < ppi_rate - 0.2
