"""Intervals and tests for the numbers medresilience reports.

Every rate carries an interval, every clean-vs-stressed comparison on the same items gets a paired
test, and families of tests across strata get a multiplicity correction. Where scipy or statsmodels
already implement a procedure we call them; the only code written here is the glue (input checks,
edge cases, plain-Python results that serialise to JSON) and the cluster bootstrap, which neither
library offers in vectorised form.

The package holds one module per job: ``rates`` (rates and their intervals), ``tests`` (exact and
clustered tests, bootstraps), ``agreement`` (inter-rater agreement), ``mixed`` (a mixed-effects
logistic model with a random intercept per reviewer), ``ppi`` (label-corrected, prediction-powered
rates from a label audit) and ``checks`` (the input checks they share). Its API is this package: ``from medresilience import stats`` then
``stats.wilson(...)``, or ``from medresilience.stats import wilson``; the names below in
``__all__`` are that API. The package imports only numpy, pandas, scipy and statsmodels, never
another medresilience module.

Conventions
- Booleans in, plain Python numbers out (no numpy scalars), so results go straight into JSON.
- Inputs are checked: counts must be integers with 0 <= k <= n, boolean sequences must hold only
  True/False (or 0/1), values must be finite. Bad input raises ValueError; nothing is coerced
  silently into a score.
- Randomness is seeded (``seed``), so the same call gives the same interval on any machine with
  the same numpy/scipy.
- p-values come only from exact or clustered tests (exact McNemar, Durkalski's clustered McNemar,
  Fisher's exact test, the exact paired permutation / sign test), which hold at every sample
  size; Holm's correction is applied to those. The bootstraps give intervals, never a p-value.
- A statistic the data cannot define (no units, one cluster) is None, not an error and not a
  default number.

Its libraries are numpy, scipy, statsmodels and pandas; of medresilience it uses only the
collector helper.

May import: runtime."""

from .agreement import (
    AGREEMENT_COEFFICIENTS,
    Agreement,
    agreement,
    agreement_weights,
    cohen_kappa,
    fleiss_kappa,
    full_agreement,
    gwet_ac1,
    gwet_ac2,
    krippendorff_alpha,
    percent_agreement,
)
from .mixed import MixedLogit, OddsRatio, mixed_logistic
from .ppi import MIN_AUDITED_PER_STRATUM, PPIRate, ppi_mean, ppi_mean_ci, ppi_ratio
from .rates import CLUSTER_RESAMPLES, Rate, cluster_bootstrap_rate, cluster_interval, clustered_rate, rate_from_bools, wilson
from .tests import (
    binomial_test,
    bootstrap_mean,
    cluster_mcnemar,
    durkalski,
    fisher_one_sided,
    holm,
    mcnemar_exact,
    mcnemar_from_pairs,
    paired_bootstrap_diff,
    paired_cluster_diff,
    paired_mcnemar,
    paired_permutation_test,
    several_pairs,
    sign_flip_test,
)

__all__ = [
    "AGREEMENT_COEFFICIENTS",
    "CLUSTER_RESAMPLES",
    "MIN_AUDITED_PER_STRATUM",
    "Agreement",
    "MixedLogit",
    "OddsRatio",
    "PPIRate",
    "Rate",
    "agreement",
    "agreement_weights",
    "binomial_test",
    "bootstrap_mean",
    "cluster_bootstrap_rate",
    "cluster_interval",
    "cluster_mcnemar",
    "clustered_rate",
    "cohen_kappa",
    "durkalski",
    "fisher_one_sided",
    "fleiss_kappa",
    "full_agreement",
    "gwet_ac1",
    "gwet_ac2",
    "holm",
    "krippendorff_alpha",
    "mcnemar_exact",
    "mcnemar_from_pairs",
    "mixed_logistic",
    "paired_bootstrap_diff",
    "paired_cluster_diff",
    "paired_mcnemar",
    "paired_permutation_test",
    "percent_agreement",
    "ppi_mean",
    "ppi_mean_ci",
    "ppi_ratio",
    "rate_from_bools",
    "several_pairs",
    "sign_flip_test",
    "wilson",
]
