"""A mixed-effects logistic model with one random intercept (the reviewer), its intraclass
correlation and adjusted odds ratios: MedMisBench's model of serious harm per annotation with
fixed effects for the moderators and reviewer identity as a random intercept.

Method: maximum likelihood, logit P(y) = X b + s z_reviewer with z ~ N(0, 1), the marginal
likelihood of each reviewer's ratings integrated over z by adaptive Gauss-Hermite quadrature
(`nodes` points centred on the mode of each reviewer's integrand and scaled by its curvature;
nodes=1 is the Laplace approximation, lme4's glmer default, which it reproduces on lme4's cbpp
example). The log-likelihood is maximised over (b, s) by BFGS (the likelihood is even in s; s is reported as |s|); odds ratios are exp(b)
with Wald intervals exp(b +- z se) from the observed information (the numerical Hessian of the
log-likelihood at the maximum, over b and s together; over b alone when s sits on its bound 0 and
the joint one is singular). The ICC is s^2 / (s^2 + pi^2 / 3) (the latent-scale ICC of a logistic
model). Each factor is coded as indicators against its reference level (given, else its most
frequent level; ties by name).

Separation: a level whose ratings are all events or all non-events has no finite maximum-likelihood
odds ratio. It is reported without one (odds ratio and interval None, with a note), and its
ratings are left out of the fit, which is the fit's limit as that level's coefficient runs to
infinity (those ratings' likelihood then tends to 1 whatever the other parameters). A reference
level in that state is an error: no other level of its factor has a finite odds ratio against it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as sps
from scipy.special import logsumexp

NODES = 15  # adaptive Gauss-Hermite points per reviewer
METHOD = "maximum-likelihood mixed-effects logistic regression (adaptive Gauss-Hermite quadrature, {nodes} nodes; Wald intervals), reviewer random intercept"
LAPLACE = "maximum-likelihood mixed-effects logistic regression (Laplace approximation; Wald intervals), reviewer random intercept"
UNSTABLE_SE = 10.0  # a log odds ratio with a larger standard error is flagged: near separation


@dataclass(frozen=True)
class OddsRatio:
    factor: str
    level: str
    reference: str
    odds_ratio: float | None  # None: no finite maximum-likelihood odds ratio (see `note`)
    lo: float | None
    hi: float | None
    n: int  # annotations at this level
    events: int = 0  # of those, the outcome
    note: str = ""

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class MixedLogit:
    method: str
    n: int
    events: int
    groups: int
    intercept: float
    group_sd: float
    icc: float
    odds_ratios: list[OddsRatio] = field(default_factory=list)
    references: dict[str, str] = field(default_factory=dict)
    confidence: float = 0.95
    loglik: float = float("nan")  # of the ratings fitted (Bernoulli, no constant)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "method": self.method,
            "n": self.n,
            "events": self.events,
            "groups": self.groups,
            "intercept": self.intercept,
            "group_sd": self.group_sd,
            "icc": self.icc,
            "confidence": self.confidence,
            "loglik": self.loglik,
            "references": dict(self.references),
            "odds_ratios": [o.as_dict() for o in self.odds_ratios],
            "notes": list(self.notes),
        }


def _reference(values: pd.Series, given: str | None, factor: str) -> str:
    levels = values.value_counts()
    if given is not None:
        if given not in levels.index:
            raise ValueError(f"reference level {given!r} of {factor} does not occur (levels: {', '.join(sorted(levels.index))})")
        return given
    top = levels.max()
    return sorted(str(k) for k, v in levels.items() if v == top)[0]


# --------------------------------------------------------------------------- the likelihood


class RandomInterceptLogit:
    """The marginal log-likelihood of logit P(y) = X b + s z_g, z_g ~ N(0, 1), one z per group,
    by adaptive Gauss-Hermite quadrature with `nodes` points (1: the Laplace approximation)."""

    def __init__(self, y: np.ndarray, exog: np.ndarray, codes: np.ndarray, nodes: int = NODES):
        self.y, self.exog, self.codes = y.astype(float), exog.astype(float), codes
        self.groups = int(codes.max()) + 1
        self.member = np.zeros((self.groups, y.size))
        self.member[codes, np.arange(y.size)] = 1.0
        x, w = np.polynomial.hermite.hermgauss(nodes)
        self.x, self.logw = x, np.log(w) + x**2  # weights for the integrand itself, not e^{-x^2} times it

    def _modes(self, eta: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
        """Each group's mode of log p(y_g | z) - z^2 / 2 and the curvature there (Newton steps)."""
        z = np.zeros(self.groups)
        for _ in range(100):
            p = 1.0 / (1.0 + np.exp(-(eta + s * z[self.codes])))
            grad = s * (self.member @ (self.y - p)) - z
            curv = s * s * (self.member @ (p * (1.0 - p))) + 1.0
            step = grad / curv
            z += step
            if np.max(np.abs(step)) < 1e-12:
                break
        p = 1.0 / (1.0 + np.exp(-(eta + s * z[self.codes])))
        return z, s * s * (self.member @ (p * (1.0 - p))) + 1.0

    def loglik(self, params: np.ndarray) -> float:
        return self._value(params)

    def loglik_and_gradient(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """The log-likelihood and its gradient (the derivative of each group's integral taken
        under the same quadrature rule, the nodes held where the mode put them)."""
        beta, s = params[:-1], float(params[-1])
        eta = self.exog @ beta
        mode, curv = self._modes(eta, s)
        scale = math.sqrt(2.0) / np.sqrt(curv)  # z = mode + scale * x at the nodes x
        z = mode[:, None] + scale[:, None] * self.x[None, :]  # groups x nodes
        lin = eta[:, None] + s * z[self.codes]  # ratings x nodes
        cond = self.member @ (self.y[:, None] * lin - np.logaddexp(0.0, lin))  # log p(y_g | z)
        integrand = cond - 0.5 * z**2 - 0.5 * math.log(2.0 * math.pi) + self.logw[None, :]
        per_group = logsumexp(integrand, axis=1)
        share = np.exp(integrand - per_group[:, None])[self.codes]  # each node's share of its group's integral
        resid = (self.y[:, None] - 1.0 / (1.0 + np.exp(-lin))) * share
        ll = float(np.sum(np.log(scale) + per_group))
        if self.x.size == 1:  # Laplace: the node moves with the parameters, so differentiate numerically
            return ll, self._numerical_gradient(params)
        return ll, np.append(self.exog.T @ resid.sum(axis=1), np.sum(resid * z[self.codes]))

    def _numerical_gradient(self, params: np.ndarray, h: float = 1e-6) -> np.ndarray:
        e = np.eye(params.size) * h
        return np.array([(self._value(params + e[i]) - self._value(params - e[i])) / (2.0 * h) for i in range(params.size)])

    def _value(self, params: np.ndarray) -> float:
        beta, s = params[:-1], float(params[-1])
        eta = self.exog @ beta
        mode, curv = self._modes(eta, s)
        scale = math.sqrt(2.0) / np.sqrt(curv)
        z = mode[:, None] + scale[:, None] * self.x[None, :]
        lin = eta[:, None] + s * z[self.codes]
        cond = self.member @ (self.y[:, None] * lin - np.logaddexp(0.0, lin))
        integrand = cond - 0.5 * z**2 - 0.5 * math.log(2.0 * math.pi) + self.logw[None, :]
        return float(np.sum(np.log(scale) + logsumexp(integrand, axis=1)))


def _hessian(grad, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central-difference Hessian from the gradient at x, symmetrised."""
    e = np.eye(x.size) * h
    out = np.column_stack([(grad(x + e[i]) - grad(x - e[i])) / (2.0 * h) for i in range(x.size)])
    return (out + out.T) / 2.0


def fit_random_intercept(y: np.ndarray, exog: np.ndarray, codes: np.ndarray, nodes: int = NODES) -> dict[str, Any]:
    """The maximum-likelihood fit: {"beta", "sd", "cov" (of beta), "loglik", "converged"}."""
    model = RandomInterceptLogit(y, exog, codes, nodes)
    mean = min(max(float(y.mean()), 1e-3), 1 - 1e-3)
    start = np.zeros(exog.shape[1] + 1)
    start[0], start[-1] = math.log(mean / (1 - mean)), 0.5

    def negative(p: np.ndarray) -> tuple[float, np.ndarray]:
        ll, g = model.loglik_and_gradient(p)
        return -ll, -g

    # the likelihood is even in s (z and -z are alike), so s is searched over the whole line and
    # reported as |s|; the Hessian is taken there too, across s = 0 when the maximum is at 0
    res = optimize.minimize(negative, start, jac=True, method="BFGS", options={"maxiter": 1000, "gtol": 1e-7})
    res.x[-1] = abs(res.x[-1])
    info = -_hessian(lambda p: model.loglik_and_gradient(p)[1], res.x)
    k = exog.shape[1]
    try:
        np.linalg.cholesky(info)
        cov = np.linalg.inv(info)[:k, :k]
    except np.linalg.LinAlgError:
        cov = np.linalg.inv(info[:k, :k])
    return {"beta": res.x[:k], "sd": float(res.x[-1]), "cov": cov, "loglik": -float(res.fun), "converged": bool(res.success)}


# --------------------------------------------------------------------------- the model


def _separated(y: np.ndarray, frame: pd.DataFrame, refs: dict[str, str]) -> tuple[np.ndarray, dict[tuple[str, str], str]]:
    """Rows kept and the separated (factor, level) -> note, dropping until no level is separated."""
    keep = np.ones(y.size, dtype=bool)
    notes: dict[tuple[str, str], str] = {}
    while True:
        found = False
        for name in frame.columns:
            col = frame[name].to_numpy()[keep]
            yk = y[keep]
            for level in sorted(set(col)):
                at = col == level
                k, n = int(yk[at].sum()), int(at.sum())
                if 0 < k < n:
                    continue
                what = "no events" if k == 0 else "only events"
                if level == refs[name]:
                    raise ValueError(
                        f"the reference level {level!r} of {name} has {what} ({k} of {n}): no odds ratio against it is finite; choose another reference"
                    )
                notes[(name, level)] = f"{what} ({k} of {n}): no finite odds ratio (separation); its ratings are left out of the fit"
                keep &= ~((frame[name] == level).to_numpy())
                found = True
        if not found:
            return keep, notes


def _design(frame: pd.DataFrame, refs: dict[str, str]) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """The intercept and one indicator per non-reference level, and the (factor, level) of each."""
    columns = [np.ones(len(frame))]
    labels: list[tuple[str, str]] = []
    for name in frame.columns:
        for level in sorted(set(frame[name]) - {refs[name]}):
            columns.append((frame[name] == level).to_numpy(dtype=float))
            labels.append((name, level))
    exog = np.column_stack(columns)
    if np.linalg.matrix_rank(exog) < exog.shape[1]:
        raise ValueError("the factors are collinear (a level always occurs with another): drop a factor")
    return exog, labels


def mixed_logistic(
    outcome: Sequence[bool],
    factors: Mapping[str, Sequence[object]],
    groups: Sequence[object],
    *,
    references: Mapping[str, str] | None = None,
    confidence: float = 0.95,
    nodes: int = NODES,
) -> MixedLogit:
    """Fit logit P(outcome) = intercept + factor effects + a random intercept per group."""
    y = np.asarray([bool(v) for v in outcome], dtype=float)
    n = len(y)
    if n == 0:
        raise ValueError("no observations")
    if any(len(v) != n for v in factors.values()) or len(groups) != n:
        raise ValueError("outcome, factors and groups must have the same length")
    if y.min() == y.max():
        raise ValueError("the outcome is the same for every observation: no model can be fitted")
    references = dict(references or {})
    unknown = sorted(set(references) - set(factors))
    if unknown:
        raise ValueError(f"reference levels for unknown factors: {', '.join(unknown)}")
    frame = pd.DataFrame({name: [str(v) for v in vals] for name, vals in factors.items()})
    refs = {name: _reference(frame[name], references.get(name), name) for name in frame.columns}
    _design(frame, refs)  # collinear factors are refused before anything else
    keep, separated = _separated(y, frame, refs)
    yk = y[keep]
    if yk.min() == yk.max():
        raise ValueError("the outcome is the same for every observation left after separation: no model can be fitted")
    exog, labels = _design(frame[keep].reset_index(drop=True), refs)
    g = pd.Series([str(v) for v in groups])[keep]
    codes = pd.factorize(g, sort=True)[0]
    fit = fit_random_intercept(yk, exog, codes, nodes)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    se = np.sqrt(np.maximum(np.diag(fit["cov"]), 0.0))
    index = {lab: i + 1 for i, lab in enumerate(labels)}
    notes = [] if fit["converged"] else ["the likelihood's maximiser stopped before it converged: read the odds ratios with care"]
    ors = []
    for name in frame.columns:
        for level in sorted(set(frame[name]) - {refs[name]}):
            at = (frame[name] == level).to_numpy()
            k, m = int(at.sum()), int(y[at].sum())
            if (name, level) not in index:  # separated, or every rating of it left out with a separated level
                why = separated.get((name, level), "every rating of it is at a separated level of another factor: no odds ratio")
                ors.append(OddsRatio(name, level, refs[name], None, None, None, k, m, why))
                notes.append(f"{name} {level}: {why}")
                continue
            i = index[(name, level)]
            b = float(fit["beta"][i])
            note = ""
            if se[i] > UNSTABLE_SE:
                note = f"standard error {se[i]:.1f} on the log scale: near separation, the odds ratio is not estimable"
                notes.append(f"{name} {level}: {note}")
            ors.append(OddsRatio(name, level, refs[name], math.exp(b), math.exp(b - z * se[i]), math.exp(b + z * se[i]), k, m, note))
    sd = fit["sd"]
    icc = sd**2 / (sd**2 + math.pi**2 / 3)
    method = LAPLACE if nodes == 1 else METHOD.format(nodes=nodes)
    return MixedLogit(method, int(keep.sum()), int(yk.sum()), int(codes.max()) + 1, float(fit["beta"][0]), sd, icc, ors, refs, confidence, fit["loglik"], notes)
