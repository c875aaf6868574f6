"""Reference numbers for tests/spine/stats/test_ppi.py from ppi_python's own ``ppi_mean_ci``.

ppi_python is not a dependency of medresilience; run this in a separate environment:

    python3 -m venv /tmp/ppi-venv && /tmp/ppi-venv/bin/pip install ppi-python==0.2.3 numpy
    /tmp/ppi-venv/bin/python bench/ppi_reference.py

It builds the fixed datasets of the test (seeded numpy draws, reproduced in the test by the same
function) and prints, for each, ppi_py.ppi_mean_ci with lam=1 (PPI) and with lam tuned (PPI++),
and with lam = 1 - n/(n+N) (the audit design's plain PPI), at alpha 0.05; each as
(estimate, lo, hi). Paste the printed
literals into REFERENCE in tests/spine/stats/test_ppi.py."""

from __future__ import annotations

import numpy as np


def datasets() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(Y, Yhat, Yhat_unlabeled) per name; the test holds a copy of this function."""
    out = {}
    for name, seed, n, big_n, p, flip in [("balanced", 11, 150, 2000, 0.6, 0.1), ("noisy", 12, 80, 900, 0.35, 0.3), ("rare", 13, 300, 5000, 0.08, 0.05)]:
        rng = np.random.default_rng(seed)
        y_all = (rng.random(n + big_n) < p).astype(float)
        yhat_all = np.where(rng.random(n + big_n) < flip, 1 - y_all, y_all)
        out[name] = (y_all[:n], yhat_all[:n], yhat_all[n:])
    return out


def main() -> None:
    import ppi_py

    print(f"# ppi_python {ppi_py.__version__ if hasattr(ppi_py, '__version__') else '0.2.3'}")
    for name, (y, yhat, yhat_u) in datasets().items():
        lo1, hi1 = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=1)
        est1 = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=1)
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
        est = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u)
        # The audit's design (the labelled units are part of all units) with lam = 1 is PPI on
        # labelled = audited, unlabelled = the rest, with lam' = 1 - n / (n + N).
        lam_overlap = 1 - y.size / (y.size + yhat_u.size)
        lo_o, hi_o = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=lam_overlap)
        est_o = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam_overlap)
        vals = [float(np.squeeze(v)) for v in (est1, lo1, hi1, est, lo, hi, est_o, lo_o, hi_o)]
        print(f'    "{name}": (' + ", ".join(f"{v!r}" for v in vals) + "),")


if __name__ == "__main__":
    main()
