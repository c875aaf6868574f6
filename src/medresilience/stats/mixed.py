"""A mixed-effects logistic model with one random intercept (the reviewer), its intraclass
correlation and adjusted odds ratios: MedMisBench's model of serious harm per annotation with
fixed effects for the moderators and reviewer identity as a random intercept.

Method: statsmodels' BinomialBayesMixedGLM fitted by mean-field variational Bayes (`fit_vb`):
logit P(y) = X b + u_reviewer, u ~ N(0, s^2); normal priors on the fixed effects (sd `fe_prior`)
and on log s (sd `vc_prior`). Odds ratios are exp(b) with the variational posterior's central
interval exp(b +- z sd(b)); the ICC is s^2 / (s^2 + pi^2 / 3) (the latent-scale ICC of a
logistic model), s = exp(the posterior mean of log s). Each factor is coded as indicators against
its reference level (given, else its most frequent level; ties by name)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

METHOD = "Bayesian mixed-effects logistic regression (statsmodels BinomialBayesMixedGLM, variational Bayes fit_vb), reviewer random intercept"


@dataclass(frozen=True)
class OddsRatio:
    factor: str
    level: str
    reference: str
    odds_ratio: float
    lo: float
    hi: float
    n: int  # annotations at this level

    def as_dict(self) -> dict[str, Any]:
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n": self.n,
            "events": self.events,
            "groups": self.groups,
            "intercept": self.intercept,
            "group_sd": self.group_sd,
            "icc": self.icc,
            "confidence": self.confidence,
            "references": dict(self.references),
            "odds_ratios": [o.as_dict() for o in self.odds_ratios],
        }


def _reference(values: pd.Series, given: str | None, factor: str) -> str:
    levels = values.value_counts()
    if given is not None:
        if given not in levels.index:
            raise ValueError(f"reference level {given!r} of {factor} does not occur (levels: {', '.join(sorted(levels.index))})")
        return given
    top = levels.max()
    return sorted(str(k) for k, v in levels.items() if v == top)[0]


def mixed_logistic(
    outcome: Sequence[bool],
    factors: Mapping[str, Sequence[Any]],
    groups: Sequence[Any],
    *,
    references: Mapping[str, str] | None = None,
    confidence: float = 0.95,
    fe_prior: float = 2.0,
    vc_prior: float = 1.0,
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
    columns: dict[str, np.ndarray] = {"intercept": np.ones(n)}
    labels: list[tuple[str, str, str, int]] = []
    refs: dict[str, str] = {}
    for name, vals in factors.items():
        s = pd.Series([str(v) for v in vals])
        refs[name] = ref = _reference(s, references.get(name), name)
        for level in sorted(set(s) - {ref}):
            ind = (s == level).to_numpy(dtype=float)
            columns[f"{name}={level}"] = ind
            labels.append((name, level, ref, int(ind.sum())))
    exog = np.column_stack(list(columns.values()))
    if np.linalg.matrix_rank(exog) < exog.shape[1]:
        raise ValueError("the factors are collinear (a level always occurs with another): drop a factor")
    g = pd.Series([str(v) for v in groups])
    names = sorted(set(g))
    exog_vc = np.column_stack([(g == k).to_numpy(dtype=float) for k in names])
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    model = BinomialBayesMixedGLM(y, exog, exog_vc, np.zeros(len(names), dtype=int), vcp_p=vc_prior, fe_p=fe_prior, fep_names=list(columns))
    res = model.fit_vb()
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    fe, sd = np.asarray(res.fe_mean), np.asarray(res.fe_sd)
    group_sd = float(math.exp(float(np.asarray(res.vcp_mean)[0])))
    icc = group_sd**2 / (group_sd**2 + math.pi**2 / 3)
    ors = [
        OddsRatio(f, lv, ref, float(math.exp(fe[i + 1])), float(math.exp(fe[i + 1] - z * sd[i + 1])), float(math.exp(fe[i + 1] + z * sd[i + 1])), k)
        for i, (f, lv, ref, k) in enumerate(labels)
    ]
    return MixedLogit(METHOD, n, int(y.sum()), len(names), float(fe[0]), group_sd, float(icc), ors, refs, confidence)
