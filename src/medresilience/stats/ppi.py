"""Label-corrected rates: prediction-powered inference (PPI) over a run whose label audit holds a
second reading (a person or a reader model) of a sample of its units.

A headline rate is computed from the rule reader's labels on every unit ("machine" labels). Where
an audit re-read a sample of the units, that sample measures how far the machine labels are off,
and PPI (Angelopoulos et al., Science 2023; PPI++ power tuning, Angelopoulos, Duchi & Zrnic 2023)
corrects the rate and widens its interval by exactly the uncertainty that label error adds.

API (all inputs one row per unit, in the same order):

- ``ppi_mean(machine, human, strata=None, clusters=None, confidence=0.95)`` -> ``PPIRate``: a mean
  over units (accuracy, PCR, PCS, a flip rate over a fixed set of units). ``machine`` holds the
  machine value of every unit; ``human`` holds the audited value, and None/NaN for units nobody
  audited.
- ``ppi_ratio(machine_num, machine_den, human_num, human_den, strata=None, clusters=None)`` ->
  ``PPIRate``: a ratio of two unit means whose numerator and denominator both depend on labels
  (the attack success rate: num = clean correct and stressed incorrect, den = clean correct; the
  targeted one: num = clean correct and the stressed answer is the injected target). ``human_num`` and ``human_den`` are None/NaN on
  exactly the same (unaudited) units.
- ``ppi_mean_ci(Y, Yhat, Yhat_unlabeled, confidence=0.95, lam=None)``: the textbook PPI / PPI++
  mean interval on a labelled set and a separate unlabelled set, the same numbers as
  ``ppi_py.ppi_mean_ci`` (checked in tests/spine/stats/test_ppi.py).
- ``PPIRate.label_error_line()``: "label error widens the interval by 2.3 points (41%)".

What goes in (the caller decides, this module never reads a reply):
- Values are numbers per unit: 0/1 indicators for accuracy and flip rates, a score for PCS.
- "Unread" is the caller's rule. For an estimand "correct", a unit the reader left unread is
  either 0 (not correct; the rate over all units) or left out of the rate (the rate over read
  units, as the read-only attack success rate does). To leave it out of a *mean*, drop the unit from every array; to leave
  it out of a *ratio*, fold "read" into the denominator (den = clean correct and stressed read,
  num = den and stressed incorrect) with each reader's own reading, so that the second reader can
  read what the rule reader could not.
- ``strata``: the audit's stratum of each unit (any hashable; default one stratum). Within a
  stratum h with N_h units the audit must have read n_h units drawn uniformly without replacement;
  strata may be sampled at different rates (more flips, unread or stressed units), which the
  estimator undoes by weighting each stratum by N_h / N. A stratum with fewer than 2 audited units
  (and not fully audited) has no measurable label error variance: the estimate is refused
  (``estimate`` None) and ``refused`` says which strata; the audit should read at least
  ``MIN_AUDITED_PER_STRATUM`` units per stratum.
- ``clusters``: the item of each unit, when several units share one item (several probes of one
  question sharing one clean answer). Units are still the audit's sampling units; the item
  correlation enters the part of the variance that comes from the items themselves (below).

The estimator (a two-phase, or "double", sample: phase 1 = the N units of the run with machine
labels; phase 2 = the stratified audit sample with human labels):

    theta = lam * mean_N(machine) + sum_h (N_h / N) * mean_{n_h}(human - lam * machine)
    var   = S_y^2 / N + C  +  sum_h (N_h / N)^2 * (1/n_h - 1/N_h) * s_h^2(human - lam * machine)

(s_h^2 with Agresti-Coull's 4 pseudo-units added, see ``_two_phase``, so that a stratum whose
audit happened to see no disagreement does not get zero label error.)

With lam = 1 this is the mean of the machine labels over all units plus the mean rectifier
(human - machine) of each stratum; lam = 0 is the human-only (stratified) estimate. The first
variance terms are the sampling variance of the units themselves (what the rate would have if every
unit were audited): S_y^2 / N, with S_y^2 estimated by the same two-phase estimator from its two
moments, and C, the covariance of units of one item (0 without clusters; see
``_cluster_cross_term``: measured on the machine labels of all N units, scaled up by the reader's
attenuation measured on the audit). The last is the label-error term. Because the audit sample is
part of the N units (not a separate set as in the PPI paper), the finite-population factor
(1/n_h - 1/N_h) replaces 1/n_h and no separate "machine mean" variance term is added: the machine
mean over the same N units is part of phase 1. With one stratum this is the same estimator as PPI
with the audited units as the labelled set, the rest as the unlabelled set and
lam' = lam * (1 - n/N), and its interval agrees with ppi_python's to within 1% of width
(without the pseudo-units; with them it is up to 10% wider on the test's datasets).
``lam`` (one for all strata) minimises the label-error term, clipped to [0, 1], so the interval is
never wider than the human-only one (lam = 0) by more than estimation noise. When the strata are
built from the machine reading itself (flip / kept / unread), the machine value is constant within
each stratum and lam has no effect: the estimate is then the stratified mean of the human labels.

Ratios use the delta method (linearisation): theta = mu_num / mu_den with both means estimated as
above with one shared lam, and var(theta) = var(estimate of mean(num - theta * den)) / mu_den^2,
the two-phase variance of the linearised unit values, which carries the covariance of numerator
and denominator. A bootstrap would have to redraw both the units and the stratified audit of each
resample to be right; the linearisation is closed-form, vectorises over simulations, and its
coverage is checked by simulation in the tests.

The plain interval beside it is the rate on machine labels alone: Wilson (clustered bootstrap when
units share items) for 0/1 values, the normal interval of a mean for scores. It treats the machine
labels as truth; the ratio of the two widths is what label error costs.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
from scipy.stats import norm

from .checks import check_confidence, cluster_codes
from .rates import cluster_interval, wilson

__all__ = ["MIN_AUDITED_PER_STRATUM", "PPIRate", "ppi_mean", "ppi_mean_ci", "ppi_ratio"]

MIN_AUDITED_PER_STRATUM = 2


class _Plain(TypedDict):
    """The fields of a PPIRate every estimator fills alike: the counts and the plain rate."""

    n_audited: int
    n_total: int
    plain: float | None
    plain_lo: float | None
    plain_hi: float | None


@dataclass(frozen=True)
class PPIRate:
    """A label-corrected rate beside the plain one.

    ``estimate``/``lo``/``hi`` are the PPI estimate and interval (None when refused or undefined);
    ``plain``/``plain_lo``/``plain_hi`` the machine-only rate and interval; ``n_audited`` units
    with a second reading of ``n_total``; ``lam`` the power-tuning weight; ``refused`` the reason
    when the data cannot give a label-corrected interval."""

    kind: str
    estimate: float | None
    lo: float | None
    hi: float | None
    n_audited: int
    n_total: int
    plain: float | None
    plain_lo: float | None
    plain_hi: float | None
    lam: float | None
    confidence: float
    n_strata: int
    refused: str | None = None

    @property
    def width(self) -> float | None:
        return None if self.lo is None or self.hi is None else self.hi - self.lo

    @property
    def plain_width(self) -> float | None:
        return None if self.plain_lo is None or self.plain_hi is None else self.plain_hi - self.plain_lo

    @property
    def widening(self) -> float | None:
        """PPI interval width over plain interval width (1.4 = 40% wider); None when undefined."""
        w, pw = self.width, self.plain_width
        if w is None or pw is None or pw <= 0:
            return None
        return w / pw

    def label_error_line(self, pct: bool = True) -> str:
        """One line: how much wider label error makes the interval (points when ``pct``)."""
        if self.refused:
            return f"no label-corrected interval: {self.refused}"
        w, pw, ratio = self.width, self.plain_width, self.widening
        if w is None or pw is None:
            return "no label-corrected interval: the rate is undefined"
        diff = (w - pw) * (100 if pct else 1)
        unit = "points" if pct else ""
        verb = "widens" if diff >= 0 else "narrows"
        share = f" ({abs(ratio - 1) * 100:.0f}%)" if ratio is not None else ""
        amount = f"{abs(diff):.1f} {unit}".strip() if pct else f"{abs(diff):.3f}"
        return f"label error {verb} the interval by {amount}{share}"

    def fmt(self, pct: bool = True) -> str:
        """``"61.2% [55.7, 66.1] (audited 150 of 2150)"`` (pct) or ``"0.612 [0.557, 0.661] ..."``;
        ``"— (...)"`` when refused or undefined."""
        tail = f"(audited {self.n_audited} of {self.n_total})"
        if self.estimate is None or self.lo is None or self.hi is None:
            return f"— {tail}"
        if pct:
            return f"{self.estimate * 100:.1f}% [{self.lo * 100:.1f}, {self.hi * 100:.1f}] {tail}"
        return f"{self.estimate:.3f} [{self.lo:.3f}, {self.hi:.3f}] {tail}"

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "estimate": self.estimate,
            "lo": self.lo,
            "hi": self.hi,
            "n_audited": self.n_audited,
            "n_total": self.n_total,
            "plain": self.plain,
            "plain_lo": self.plain_lo,
            "plain_hi": self.plain_hi,
            "lam": self.lam,
            "confidence": self.confidence,
            "n_strata": self.n_strata,
            "widening": self.widening,
            "refused": self.refused,
        }


# ------------------------------------------------------------------------- textbook PPI


def ppi_mean_ci(
    Y: Sequence[float], Yhat: Sequence[float], Yhat_unlabeled: Sequence[float], confidence: float = 0.95, lam: float | None = None
) -> tuple[float, float, float, float]:
    """PPI / PPI++ mean on a labelled set (``Y`` with predictions ``Yhat``) and a separate
    unlabelled set (``Yhat_unlabeled``): (estimate, lo, hi, lam). ``lam=None`` tunes lam as
    ``ppi_py.ppi_mean_ci`` does (clipped to [0, 1]); ``lam=1`` is plain PPI. The same estimator,
    variance and z interval as ppi_python 0.2.3."""
    y = _floats(Y, "Y")
    f = _floats(Yhat, "Yhat")
    fu = _floats(Yhat_unlabeled, "Yhat_unlabeled")
    if y.size != f.size:
        raise ValueError(f"Y and Yhat differ in length ({y.size} vs {f.size})")
    if y.size < 2 or fu.size < 2:
        raise ValueError("ppi_mean_ci needs at least 2 labelled and 2 unlabelled units")
    z = norm.ppf(0.5 + check_confidence(confidence) / 2)
    n, big_n = y.size, fu.size
    if lam is None:
        theta1 = fu.mean() + (y - f).mean()
        g, gh = y - theta1, f - theta1
        cov = ((g - g.mean()) * (gh - gh.mean())).mean()
        var_f = np.var(np.concatenate([f, fu]), ddof=1)
        lam = float(np.clip(cov / ((1 + n / big_n) * var_f), 0.0, 1.0)) if var_f > 0 else 1.0
    theta = float(lam * fu.mean() + (y - lam * f).mean())
    se = math.sqrt(np.var(lam * fu) / big_n + np.var(y - lam * f) / n)
    return theta, theta - z * se, theta + z * se, float(lam)


# ------------------------------------------------------------------ the audit's two-phase design


@dataclass(frozen=True)
class _Design:
    """Strata and clusters of the N units, and which units were audited."""

    codes: np.ndarray  # stratum code per unit
    audited: np.ndarray  # bool per unit
    weight: np.ndarray  # N_h / N per stratum
    fpc: np.ndarray  # 1/n_h - 1/N_h per stratum (0 where fully audited)
    n_h: np.ndarray
    clusters: np.ndarray | None  # cluster code per unit, None when every unit is its own item
    refused: str | None


def _floats(values: Sequence[object], name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold numbers: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds a missing or non-finite value")
    return arr


def _audited_floats(values: Sequence[object], name: str) -> np.ndarray:
    """Human values with NaN where the unit was not audited (None and NaN both mean that)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiub":
        arr = values.astype(np.float64)
    else:
        try:
            arr = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must hold numbers or None: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} holds an infinite value")
    return arr


def _codes(values: Sequence[Hashable]) -> tuple[np.ndarray, list[object]]:
    """Integer code per unit and the value of each code (numpy arrays of numbers or strings by
    np.unique, anything else by first appearance)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuUS":
        uniq, codes = np.unique(values, return_inverse=True)
        return codes.reshape(-1), uniq.tolist()
    codes = cluster_codes(values)
    return codes, list(dict.fromkeys(values))


def _design(n_units: int, audited: np.ndarray, strata: Sequence[Hashable] | None, clusters: Sequence[Hashable] | None) -> _Design:
    if strata is None:
        codes = np.zeros(n_units, dtype=np.int64)
        names: list[object] = ["all"]
    else:
        if len(strata) != n_units:
            raise ValueError(f"strata has {len(strata)} entries for {n_units} units")
        codes, names = _codes(strata)
    big_n_h = np.bincount(codes).astype(np.float64)
    n_h = np.bincount(codes[audited], minlength=big_n_h.size).astype(np.float64)
    short = [
        f"{names[h]!r} ({int(n_h[h])} of {int(big_n_h[h])} audited)" for h in range(big_n_h.size) if n_h[h] < MIN_AUDITED_PER_STRATUM and n_h[h] < big_n_h[h]
    ]
    refused = None
    if short:
        refused = f"fewer than {MIN_AUDITED_PER_STRATUM} audited units in stratum " + ", ".join(short)
    with np.errstate(divide="ignore", invalid="ignore"):
        fpc = np.where(n_h >= big_n_h, 0.0, 1.0 / np.maximum(n_h, 1.0) - 1.0 / big_n_h)
    ccodes = None
    if clusters is not None:
        if len(clusters) != n_units:
            raise ValueError(f"clusters has {len(clusters)} entries for {n_units} units")
        ccodes, _ = _codes(clusters)
        if int(ccodes.max(initial=-1)) + 1 == n_units:
            ccodes = None
    return _Design(codes, audited, big_n_h / n_units, fpc, n_h, ccodes, refused)


def _stratum_moments(d: _Design, y: np.ndarray, f: np.ndarray) -> dict[str, np.ndarray]:
    """Per-stratum audited means, variances and covariance of human y and machine f (ddof=1)."""
    c, a = d.codes[d.audited], d.audited
    ya, fa = y[a], f[a]
    size = d.weight.size
    n = np.maximum(d.n_h, 1.0)
    my = np.bincount(c, weights=ya, minlength=size) / n
    mf = np.bincount(c, weights=fa, minlength=size) / n
    dy, df = ya - my[c], fa - mf[c]
    den = np.maximum(d.n_h - 1.0, 1.0)
    return {
        "my": my,
        "mf": mf,
        "vy": np.bincount(c, weights=dy * dy, minlength=size) / den,
        "vf": np.bincount(c, weights=df * df, minlength=size) / den,
        "cyf": np.bincount(c, weights=dy * df, minlength=size) / den,
        "m2y": np.bincount(c, weights=ya * ya, minlength=size) / n,
        "m2f": np.bincount(c, weights=fa * fa, minlength=size) / n,
    }


def _tuned_lam(d: _Design, m: dict[str, np.ndarray]) -> float:
    """The lam in [0, 1] minimising the label-error term sum_h a_h s_h^2(y - lam f)."""
    a = d.weight**2 * d.fpc
    den = float((a * m["vf"]).sum())
    if den <= 0:
        return 1.0
    return float(np.clip((a * m["cyf"]).sum() / den, 0.0, 1.0))


KAPPA_FLOOR = 0.5
PSEUDO_UNITS = 4.0


def _cluster_cross_term(d: _Design, f: np.ndarray, m: dict[str, np.ndarray]) -> float:
    """The part of var(mean of y over N units) that comes from units of one item moving together:
    (sum over items of the squared item total, with the G/(G-1) of the cluster-robust variance,
    minus the sum of squares) / N^2, measured on the machine values of all N units (the human ones
    exist only on the audit) and divided by kappa^2, kappa = cov(y, f) / var(y) from the audit:
    if the machine value is kappa * y plus reading noise independent between the units of an item,
    the machine's cross-products are kappa^2 times the truth's. Reading noise shared by an item's
    units (a misread clean answer) only raises the machine's cross-products, so the term errs wide.
    kappa lies in [KAPPA_FLOOR, 1] (a reader that weak gets at most 4x, never less than 1x); the
    term is never below 0. 0 without clusters."""
    if d.clusters is None:
        return 0.0
    n = f.size
    g = int(d.clusters.max()) + 1
    if g < 2:
        return 0.0
    fc = f - f.mean()
    tot = np.bincount(d.clusters, weights=fc, minlength=g)
    cross = (g / (g - 1) * float((tot**2).sum()) - float((fc**2).sum())) / n**2
    w = d.weight
    my, mf = float((w * m["my"]).sum()), float((w * m["mf"]).sum())
    cov_yf = float((w * (m["cyf"] + (m["my"] - my) * (m["mf"] - mf))).sum())
    var_y = float((w * (m["vy"] + (m["my"] - my) ** 2)).sum())
    kappa = float(np.clip(cov_yf / var_y, KAPPA_FLOOR, 1.0)) if var_y > 0 else 1.0
    return max(cross, 0.0) / kappa**2


def _two_phase(d: _Design, y: np.ndarray, f: np.ndarray, lam: float | None) -> tuple[float, float, float]:
    """(theta, variance, lam) of the two-phase estimator of mean(y); lam None = tuned."""
    m = _stratum_moments(d, y, f)
    if lam is None:
        lam = _tuned_lam(d, m)
    theta = float(lam * f.mean() + (d.weight * (m["my"] - lam * m["mf"])).sum())
    s2_resid = np.maximum(m["vy"] - 2 * lam * m["cyf"] + lam**2 * m["vf"], 0.0)
    # Each stratum's residual variance as if PSEUDO_UNITS more audited units had shown residuals
    # of variance span^2 / 4 (span: the range of the values; span^2 / 4 is the variance of a
    # coin-flip label): an audit that saw no or one disagreement in a stratum would otherwise claim
    # the reader is perfect there, the Wald interval's failure. This is Agresti-Coull's remedy
    # (add z^2 ~ 4 observations, half of each kind). Simulated (bench/bench_ppi_coverage.py),
    # without it 40 audited units in a stratum of 1000 covered 93%; with it 95-98% in every setting.
    span = max(float(np.ptp(f)) if f.size else 0.0, float(np.ptp(y[d.audited])) if d.audited.any() else 0.0)
    dof = np.maximum(d.n_h - 1.0, 0.0)
    s2_resid = (s2_resid * dof + PSEUDO_UNITS * span**2 / 4) / (dof + PSEUDO_UNITS)
    label_term = float((d.weight**2 * d.fpc * s2_resid).sum())
    # S_y^2 = E[y^2] - E[y]^2 with both moments estimated the same two-phase way (for 0/1 values
    # this is theta * (1 - theta)): the machine values of all N units carry most of it.
    m2 = float(lam * (f * f).mean() + (d.weight * (m["m2y"] - lam * m["m2f"])).sum())
    s2_y = max(m2 - theta**2, 0.0) * f.size / max(f.size - 1, 1)
    unit_term = s2_y / f.size + _cluster_cross_term(d, f, m)
    return theta, unit_term + label_term, lam


def _is_binary(*arrays: np.ndarray) -> bool:
    return all(bool(np.all((x[~np.isnan(x)] == 0) | (x[~np.isnan(x)] == 1))) for x in arrays)


def _plain_rate(ok: np.ndarray, clusters: np.ndarray | None, conf: float) -> tuple[float, float, float]:
    """Machine-only rate of 0/1 values: Wilson, or the cluster bootstrap of ``stats.clustered_rate``
    when some item holds several units (``clusters``: item code per unit)."""
    k, n = int(ok.sum()), int(ok.size)
    w = wilson(k, n, conf)
    if clusters is not None:
        size = np.bincount(clusters)
        keep = size > 0
        if int(keep.sum()) < n:
            lo, hi = cluster_interval(np.bincount(clusters, weights=ok)[keep].astype(np.int64), size[keep], conf)
            return float(w.p), float(lo), float(hi)  # type: ignore[arg-type]
    return float(w.p), float(w.lo), float(w.hi)  # type: ignore[arg-type]


def _plain_mean(f: np.ndarray, clusters: np.ndarray | None, conf: float) -> tuple[float, float, float]:
    if _is_binary(f):
        return _plain_rate(f, clusters, conf)
    z = norm.ppf(0.5 + conf / 2)
    se = float(np.std(f, ddof=1)) / math.sqrt(f.size)
    return float(f.mean()), float(f.mean()) - z * se, float(f.mean()) + z * se


def _interval(theta: float, var: float, conf: float, clip01: bool) -> tuple[float, float]:
    half = float(norm.ppf(0.5 + conf / 2)) * math.sqrt(max(var, 0.0))
    lo, hi = theta - half, theta + half
    if clip01:
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return lo, hi


def ppi_mean(
    machine: Sequence[float],
    human: Sequence[float | None],
    strata: Sequence[Hashable] | None = None,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    lam: float | None = None,
) -> PPIRate:
    """Label-corrected mean of a unit value (see the module docstring). ``human`` is None/NaN
    on units nobody audited; ``lam=None`` tunes the weight (PPI++), ``lam=1`` is plain PPI."""
    conf = check_confidence(confidence)
    f = _floats(machine, "machine")
    y = _audited_floats(human, "human")
    if y.size != f.size:
        raise ValueError(f"machine and human differ in length ({f.size} vs {y.size})")
    audited = ~np.isnan(y)
    if f.size == 0:
        return PPIRate("mean", None, None, None, 0, 0, None, None, None, None, conf, 0, "no units")
    d = _design(f.size, audited, strata, clusters)
    plain, plo, phi = _plain_mean(f, d.clusters, conf)
    common: _Plain = {"n_audited": int(audited.sum()), "n_total": int(f.size), "plain": plain, "plain_lo": plo, "plain_hi": phi}
    if d.refused:
        return PPIRate("mean", None, None, None, **common, lam=None, confidence=conf, n_strata=d.weight.size, refused=d.refused)
    theta, var, lam_used = _two_phase(d, np.where(audited, y, 0.0), f, lam)
    lo, hi = _interval(theta, var, conf, clip01=_is_binary(f, y))
    return PPIRate("mean", theta, lo, hi, **common, lam=lam_used, confidence=conf, n_strata=d.weight.size)


def ppi_ratio(
    machine_num: Sequence[float],
    machine_den: Sequence[float],
    human_num: Sequence[float | None],
    human_den: Sequence[float | None],
    strata: Sequence[Hashable] | None = None,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    lam: float | None = None,
) -> PPIRate:
    """Label-corrected ratio sum(num) / sum(den) over units (attack success rates; see the module docstring),
    by the delta method on the two-phase estimates of both means with one shared lam."""
    conf = check_confidence(confidence)
    fn, fd = _floats(machine_num, "machine_num"), _floats(machine_den, "machine_den")
    yn, yd = _audited_floats(human_num, "human_num"), _audited_floats(human_den, "human_den")
    if not fn.size == fd.size == yn.size == yd.size:
        raise ValueError(f"ratio inputs differ in length ({fn.size}, {fd.size}, {yn.size}, {yd.size})")
    audited = ~np.isnan(yn)
    if not np.array_equal(audited, ~np.isnan(yd)):
        raise ValueError("human_num and human_den must be audited (not None/NaN) on the same units")
    binary = _is_binary(fn, fd, yn, yd) and bool(np.all(fn <= fd)) and bool(np.all(yn[audited] <= yd[audited]))
    d = _design(fn.size, audited, strata, clusters)
    plain: tuple[float | None, float | None, float | None] = (None, None, None)
    if binary and fd.sum() > 0:
        rows = fd.astype(bool)
        plain = _plain_rate(fn[rows], None if d.clusters is None else d.clusters[rows], conf)
    elif fd.sum() > 0:
        plain = (float(fn.sum() / fd.sum()), None, None)
    common: _Plain = {"n_audited": int(audited.sum()), "n_total": int(fn.size), "plain": plain[0], "plain_lo": plain[1], "plain_hi": plain[2]}
    if d.refused:
        return PPIRate("ratio", None, None, None, **common, lam=None, confidence=conf, n_strata=d.weight.size, refused=d.refused)
    yn0, yd0 = np.where(audited, yn, 0.0), np.where(audited, yd, 0.0)
    mu_n1, _, _ = _two_phase(d, yn0, fn, 1.0)
    mu_d1, _, _ = _two_phase(d, yd0, fd, 1.0)
    if mu_d1 <= 0:
        return PPIRate(
            "ratio", None, None, None, **common, lam=None, confidence=conf, n_strata=d.weight.size, refused="the corrected denominator is not positive"
        )
    theta0 = mu_n1 / mu_d1
    # One lam for numerator and denominator: the one that minimises the label-error term of the
    # linearised unit value num - theta * den.
    _, _, lam_used = _two_phase(d, yn0 - theta0 * yd0, fn - theta0 * fd, lam)
    mu_n, _, _ = _two_phase(d, yn0, fn, lam_used)
    mu_d, _, _ = _two_phase(d, yd0, fd, lam_used)
    if mu_d <= 0:
        return PPIRate(
            "ratio", None, None, None, **common, lam=lam_used, confidence=conf, n_strata=d.weight.size, refused="the corrected denominator is not positive"
        )
    theta = mu_n / mu_d
    _, var_lin, _ = _two_phase(d, yn0 - theta * yd0, fn - theta * fd, lam_used)
    lo, hi = _interval(theta, var_lin / mu_d**2, conf, clip01=binary)
    return PPIRate("ratio", theta, lo, hi, **common, lam=lam_used, confidence=conf, n_strata=d.weight.size)
