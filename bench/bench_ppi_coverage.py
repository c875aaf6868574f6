"""Coverage of the label-corrected (PPI) intervals of stats.ppi by simulation, over more runs and
settings than the test: a known truth, a reader of known error (wrong at a rate that depends on
the truth, unread at a rate and then counted not correct), a stratified audit weighted toward the
units a headline number turns on.

    python bench/bench_ppi_coverage.py [--runs 4000]

Prints, per setting, the coverage of the PPI 95% interval (tuned lam and lam = 1), of the plain
machine-only interval, and the median widening (PPI width / plain width)."""

from __future__ import annotations

import argparse

import numpy as np

from medresilience.stats import ppi_mean, ppi_ratio


def audit(rng: np.random.Generator, strata: np.ndarray, quota: dict[int, int]) -> np.ndarray:
    keys = rng.random(strata.size)
    audited = np.zeros(strata.size, dtype=bool)
    for h, k in quota.items():
        idx = np.flatnonzero(strata == h)
        audited[idx[np.argsort(keys[idx])[:k]]] = True
    return audited


def read(rng: np.random.Generator, truth: np.ndarray, wrong_if_right: float, wrong_if_wrong: float, unread: float) -> tuple[np.ndarray, np.ndarray]:
    is_unread = rng.random(truth.size) < unread
    flip = rng.random(truth.size) < np.where(truth == 1, wrong_if_right, wrong_if_wrong)
    return np.where(is_unread, 0, np.where(flip, 1 - truth, truth)).astype(float), is_unread


def accuracy(runs: int, seed: int, units: int, p: float, err: tuple[float, float, float], quota: dict[int, int]) -> list[float]:
    rng = np.random.default_rng(seed)
    hits = np.zeros(4)
    widen = []
    for _ in range(runs):
        truth = (rng.random(units) < p).astype(float)
        machine, unread = read(rng, truth, *err)
        strata = np.where(unread, 0, np.where(machine == 0, 1, 2))
        human = np.where(audit(rng, strata, quota), truth, np.nan)
        r = ppi_mean(machine, human, strata=strata)
        r1 = ppi_mean(machine, human, strata=strata, lam=1.0)
        hits += [r.lo <= p <= r.hi, r1.lo <= p <= r1.hi, r.plain_lo <= p <= r.plain_hi, 0]
        widen.append(r.widening)
    return [*(hits[:3] / runs), float(np.median(widen))]


def by_condition(runs: int, seed: int, per: int, quota: dict[int, int]) -> list[float]:
    """Two conditions (clean p=.75, stressed p=.55) as the strata, the stressed one audited more:
    the machine varies within strata, so lam matters."""
    rng = np.random.default_rng(seed)
    p = (0.75 + 0.55) / 2
    strata = np.repeat([0, 1], per)
    hits = np.zeros(3)
    widen = []
    for _ in range(runs):
        truth = (rng.random(2 * per) < np.repeat([0.75, 0.55], per)).astype(float)
        machine = read(rng, truth, 0.08, 0.03, 0.05)[0]
        human = np.where(audit(rng, strata, quota), truth, np.nan)
        r = ppi_mean(machine, human, strata=strata)
        r1 = ppi_mean(machine, human, strata=strata, lam=1.0)
        hits += [r.lo <= p <= r.hi, r1.lo <= p <= r1.hi, r.plain_lo <= p <= r.plain_hi]
        widen.append(r.widening)
    return [*(hits / runs), float(np.median(widen))]


def attack(runs: int, seed: int, items: int, probes: int, quota: dict[int, int]) -> list[float]:
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(items), probes)
    truth_rate = 0.25
    hits = np.zeros(3)
    widen = []
    for _ in range(runs):
        clean = np.repeat((rng.random(items) < 0.7).astype(float), probes)
        sway = np.repeat(rng.beta(1.0, 3.0, items), probes)
        u = rng.random(items * probes)
        stressed = np.where(clean == 1, (u >= sway).astype(float), (u < 0.2).astype(float))
        m_clean = np.repeat(read(rng, clean[::probes], 0.04, 0.02, 0.02)[0], probes)
        m_stressed = read(rng, stressed, 0.08, 0.03, 0.05)[0]
        num, den = clean * (1 - stressed), clean
        m_num, m_den = m_clean * (1 - m_stressed), m_clean
        strata = np.where(m_num == 1, 0, np.where(m_den == 1, 1, 2))
        a = audit(rng, strata, quota)
        args = (m_num, m_den, np.where(a, num, np.nan), np.where(a, den, np.nan))
        r = ppi_ratio(*args, strata=strata, clusters=item)
        r1 = ppi_ratio(*args, strata=strata, clusters=item, lam=1.0)
        hits += [r.lo <= truth_rate <= r.hi, r1.lo <= truth_rate <= r1.hi, r.plain_lo <= truth_rate <= r.plain_hi]
        widen.append(r.widening)
    return [*(hits / runs), float(np.median(widen))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4000)
    runs = ap.parse_args().runs
    print(f"{'setting':58} {'PPI++':>6} {'PPI':>6} {'plain':>6} {'widen':>6}")
    settings = [
        ("accuracy p=.7 N=2000 audit 200 (50/70/80)", lambda s: accuracy(runs, s, 2000, 0.7, (0.08, 0.03, 0.05), {0: 50, 1: 70, 2: 80})),
        ("accuracy p=.7 N=2000 audit 100 (25/35/40)", lambda s: accuracy(runs, s, 2000, 0.7, (0.08, 0.03, 0.05), {0: 25, 1: 35, 2: 40})),
        ("accuracy p=.5 N=5000 audit 300, reader 2% wrong 1% unread", lambda s: accuracy(runs, s, 5000, 0.5, (0.02, 0.02, 0.01), {0: 20, 1: 140, 2: 140})),
        ("accuracy, strata = 2 conditions of 1000, audit 40/140", lambda s: by_condition(runs, s, 1000, {0: 40, 1: 140})),
        ("attack 700 items x 3 probes, audit 200 (80/80/40)", lambda s: attack(runs, s, 700, 3, {0: 80, 1: 80, 2: 40})),
        ("attack 300 items x 5 probes, audit 120 (50/50/20)", lambda s: attack(runs, s, 300, 5, {0: 50, 1: 50, 2: 20})),
    ]
    for name, fn in settings:
        cov, cov1, plain, widen = fn(7)
        print(f"{name:58} {cov:6.3f} {cov1:6.3f} {plain:6.3f} {widen:5.2f}x")


if __name__ == "__main__":
    main()
