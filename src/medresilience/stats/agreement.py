"""Inter-rater agreement (clinician review): percent agreement, Cohen's and Fleiss' kappa, Gwet's
AC1/AC2 and Krippendorff's alpha, each with a bootstrap interval over units."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .checks import check_confidence, check_resamples

#
# Ratings are a units x raters table (rows: the rated things, columns: the raters); a missing
# rating is None, NaN or pd.NA. The Gwet-family coefficients follow Gwet (2014), Handbook of
# Inter-Rater Reliability, 4th ed., chapter 2 and 3 (the formulas of his irrCAC package, missing
# ratings included): percent agreement is averaged over units with two or more ratings, the
# category shares over units with at least one. Krippendorff's alpha is computed from the
# coincidence matrix of pairable values (units with two or more ratings), with his nominal,
# ordinal (rank-based on the pooled marginals), interval and ratio difference functions.
#
# Every coefficient here is a function of per-unit sums, so a bootstrap resample of units is a
# vector of multiplicities (how often each unit was drawn): all resamples are computed at once
# as matrix products. Intervals are percentile intervals of the resamples in which the
# coefficient is defined (a resample in which every rating falls in one category has no kappa).

AGREEMENT_COEFFICIENTS = ("percent_agreement", "cohen_kappa", "fleiss_kappa", "gwet_ac1", "gwet_ac2", "krippendorff_alpha")
AGREEMENT_WEIGHTS = ("identity", "linear", "quadratic", "ordinal")
KRIPPENDORFF_LEVELS = ("nominal", "ordinal", "interval", "ratio")

__all__ = [
    "AGREEMENT_COEFFICIENTS",
    "Agreement",
    "agreement",
    "agreement_weights",
    "cohen_kappa",
    "fleiss_kappa",
    "gwet_ac1",
    "gwet_ac2",
    "krippendorff_alpha",
    "percent_agreement",
]

#: a units x raters table of ratings (a rating: any category value; missing: None, NaN or pd.NA)
Ratings = pd.DataFrame | np.ndarray | Sequence[Sequence[Hashable]]


@dataclass(frozen=True)
class Agreement:
    """One agreement coefficient with its bootstrap interval. ``value`` is None when the
    coefficient is undefined on the data (no unit with two ratings, or chance agreement of 1);
    ``lo``/``hi`` are None with fewer than two units or when too few resamples define it.
    ``pa``/``pe``: observed and chance agreement (for alpha: 1 - observed and expected
    disagreement's ratio terms, ``pa`` = 1 - D_o, ``pe`` = 1 - D_e)."""

    coefficient: str
    value: float | None
    lo: float | None
    hi: float | None
    units: int  # units that carry information (two ratings or more; for Cohen's kappa: both raters)
    ratings: int
    pa: float | None
    pe: float | None
    weights: str | None = None
    confidence: float = 0.95
    resamples: int = 0  # resamples in which the coefficient was defined
    reason: str | None = None  # why value is None

    def as_dict(self) -> dict[str, object]:
        return {
            "coefficient": self.coefficient,
            "value": self.value,
            "lo": self.lo,
            "hi": self.hi,
            "units": self.units,
            "ratings": self.ratings,
            "pa": self.pa,
            "pe": self.pe,
            "weights": self.weights,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "reason": self.reason,
        }

    def fmt(self, digits: int = 3) -> str:
        """``"0.775 [0.52, 0.95] (n=12)"``; ``"— (n=0)"`` when undefined."""
        if self.value is None:
            return f"— (n={self.units})"
        ival = f" [{self.lo:.{digits}f}, {self.hi:.{digits}f}]" if self.lo is not None and self.hi is not None else ""
        return f"{self.value:.{digits}f}{ival} (n={self.units})"


def _is_missing(v: object) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(isinstance(v, (float, np.floating)) and math.isnan(v))
    except TypeError:  # pragma: no cover - exotic scalars
        return False


def _norm_cat(v: Hashable) -> Hashable:
    """A rating as a category key: numbers compare by value (1 == 1.0), numpy scalars unwrapped."""
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _rating_rows(ratings: Ratings) -> list[list[Hashable]]:
    if isinstance(ratings, pd.DataFrame):
        rows = ratings.astype(object).values.tolist()
    else:
        arr = ratings.tolist() if isinstance(ratings, np.ndarray) else ratings
        rows = [list(r) for r in arr]
    if rows and len({len(r) for r in rows}) != 1:
        raise ValueError("ratings must be a units x raters table (every row the same length)")
    return rows


def _sort_key(v: Hashable) -> tuple[int, float | str]:
    return (0, float(v)) if isinstance(v, (int, float)) else (1, str(v))


def _categories_of(rows: list[list[Hashable]], categories: Sequence[Hashable] | None) -> tuple[Hashable, ...]:
    seen = {_norm_cat(v) for r in rows for v in r if not _is_missing(v)}
    if categories is None:
        return tuple(sorted(seen, key=_sort_key))
    cats = tuple(_norm_cat(c) for c in categories)
    if len(set(cats)) != len(cats):
        raise ValueError(f"categories repeat a value: {list(categories)!r}")
    unknown = seen - set(cats)
    if unknown:
        raise ValueError(f"ratings outside the categories {list(cats)!r}: {sorted(map(str, unknown))}")
    return cats


def _codes(ratings: Ratings, categories: Sequence[Hashable] | None) -> tuple[np.ndarray, tuple[Hashable, ...]]:
    """(units x raters integer codes, -1 for a missing rating; the categories in order)."""
    rows = _rating_rows(ratings)
    cats = _categories_of(rows, categories)
    index = {c: i for i, c in enumerate(cats)}
    codes = np.array([[-1 if _is_missing(v) else index[_norm_cat(v)] for v in r] for r in rows], dtype=np.int64)
    return codes.reshape(len(rows), len(rows[0]) if rows else 0), cats


def _count_matrix(codes: np.ndarray, q: int) -> np.ndarray:
    """units x categories: how many raters put each unit in each category."""
    counts = np.zeros((codes.shape[0], q), dtype=np.float64)
    for j in range(codes.shape[1]):
        col = codes[:, j]
        ok = col >= 0
        np.add.at(counts, (np.nonzero(ok)[0], col[ok]), 1.0)
    return counts


def _category_values(cats: Sequence[Hashable]) -> np.ndarray:
    """Numeric positions of the categories: their values when all are numbers, else ranks 1..q."""
    if cats and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in cats):
        return np.asarray(cats, dtype=np.float64)
    return np.arange(1, len(cats) + 1, dtype=np.float64)


def agreement_weights(categories: Sequence[Hashable], kind: str | None = "identity") -> np.ndarray:
    """Gwet's agreement weights (q x q, 1 on the diagonal) for ordered categories: ``identity``
    (unweighted), ``linear`` 1 - |k - l| / (max - min), ``quadratic`` 1 - (k - l)^2 / (max - min)^2
    (on the category values when all are numbers, else on their ranks) and ``ordinal`` (ranks:
    1 - C(|k - l| + 1, 2) / max)."""
    q = len(categories)
    kind = (kind or "identity").lower()
    if kind in ("identity", "unweighted", "nominal"):
        return np.eye(q)
    if kind not in AGREEMENT_WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(AGREEMENT_WEIGHTS)}, not {kind!r}")
    if q < 2:
        return np.ones((q, q))
    if kind == "ordinal":
        ranks = np.arange(1, q + 1, dtype=np.float64)
        nkl = np.abs(ranks[:, None] - ranks[None, :]) + 1
        m = nkl * (nkl - 1) / 2
        return 1.0 - m / m.max()
    v = _category_values(categories)
    span = float(v.max() - v.min())
    d = np.abs(v[:, None] - v[None, :]) / span
    return 1.0 - (d if kind == "linear" else d**2)


def _weights_matrix(cats: Sequence[Hashable], weights: str | np.ndarray | None) -> tuple[np.ndarray, str]:
    if isinstance(weights, np.ndarray) or (weights is not None and not isinstance(weights, str)):
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(cats), len(cats)):
            raise ValueError(f"a weight matrix must be {len(cats)} x {len(cats)} (one row per category), got {w.shape}")
        return w, "custom"
    kind = (weights or "identity").lower()
    return agreement_weights(cats, kind), ("identity" if kind in ("unweighted", "nominal") else kind)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    out[~np.isfinite(out) | (np.abs(den) < 1e-12)] = np.nan
    return out


class _Gwet:
    """Percent agreement, Fleiss' kappa and Gwet's AC1/AC2 from a count matrix, for any
    multiplicities of the units (rows of F: one resample each)."""

    def __init__(self, counts: np.ndarray, w: np.ndarray):
        self.q = counts.shape[1]
        self.w = w
        r = counts.sum(axis=1)
        self.m2 = (r >= 2).astype(np.float64)
        self.m1 = (r >= 1).astype(np.float64)
        star = counts @ w.T
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (counts * (star - 1.0)).sum(axis=1) / (r * (r - 1.0))
            shares = counts / r[:, None]
        self.a = np.where(r >= 2, a, 0.0)
        self.shares = np.where((r >= 1)[:, None], shares, 0.0)

    def pa(self, f: np.ndarray) -> np.ndarray:
        return _ratio(f @ (self.a * self.m2), f @ self.m2)

    def pi(self, f: np.ndarray) -> np.ndarray:
        return (f @ self.shares) / np.maximum(f @ self.m1, 1e-300)[:, None]

    def pe(self, f: np.ndarray, kind: str) -> np.ndarray:
        pi = self.pi(f)
        if kind == "fleiss":
            return np.einsum("rk,kl,rl->r", pi, self.w, pi)
        if kind == "gwet":
            if self.q < 2:
                return np.zeros(f.shape[0])
            return self.w.sum() / (self.q * (self.q - 1)) * (pi * (1.0 - pi)).sum(axis=1)
        return np.zeros(f.shape[0])  # percent agreement


def _chance_corrected(pa: np.ndarray, pe: np.ndarray) -> np.ndarray:
    out = _ratio(pa - pe, 1.0 - pe)
    out[np.isnan(pa)] = np.nan
    return out


def _krippendorff_delta(cats: Sequence[Hashable], level: str, nc: np.ndarray) -> np.ndarray:
    """Squared differences delta^2 (R x q x q; nc: R x q pooled category totals)."""
    q = len(cats)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(q), (nc.shape[0], q, q))
    if level == "ordinal":
        cum = np.cumsum(nc, axis=1)
        lo = np.minimum(np.arange(q)[:, None], np.arange(q)[None, :])
        hi = np.maximum(np.arange(q)[:, None], np.arange(q)[None, :])
        between = cum[:, hi] - cum[:, lo] + nc[:, lo]  # sum of n_g for g from lo to hi
        d = between - (nc[:, :, None] + nc[:, None, :]) / 2.0
        return d**2
    v = _category_values(cats)
    if not (cats and all(isinstance(c, (int, float)) for c in cats)):
        raise ValueError(f"Krippendorff's alpha at the {level} level needs numeric ratings")
    if level == "interval":
        d = (v[:, None] - v[None, :]) ** 2
    else:  # ratio
        with np.errstate(divide="ignore", invalid="ignore"):
            d = ((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2
        d = np.nan_to_num(d)
    return np.broadcast_to(d, (nc.shape[0], q, q))


class _Krippendorff:
    def __init__(self, counts: np.ndarray, cats: Sequence[Hashable], level: str):
        r = counts.sum(axis=1)
        keep = r >= 2
        c = counts[keep]
        q = counts.shape[1]
        per = (c[:, :, None] * c[:, None, :] - np.einsum("uk,kl->ukl", c, np.eye(q))) / (r[keep] - 1.0)[:, None, None]
        self.o = np.zeros((counts.shape[0], q * q))
        if per.size:
            self.o[keep] = per.reshape(-1, q * q)
        self.q, self.cats, self.level = q, cats, level

    def parts(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(alpha, 1 - D_o, 1 - D_e) per row of f."""
        q = self.q
        o = (f @ self.o).reshape(-1, q, q)
        nc = o.sum(axis=2)
        n = nc.sum(axis=1)
        delta = _krippendorff_delta(self.cats, self.level, nc)
        with np.errstate(divide="ignore", invalid="ignore"):
            do = (o * delta).sum(axis=(1, 2)) / n
            de = (nc[:, :, None] * nc[:, None, :] * delta).sum(axis=(1, 2)) / (n * (n - 1.0))
        alpha = 1.0 - _ratio(do, de)
        bad = ~np.isfinite(do) | (n < 2)
        alpha[bad] = np.nan
        return alpha, 1.0 - do, 1.0 - de


def _cohen_parts(codes: np.ndarray, q: int, w: np.ndarray):
    """Cohen's kappa as a function of the multiplicities of the units both raters rated."""
    both = (codes[:, 0] >= 0) & (codes[:, 1] >= 0)
    cells = np.zeros((codes.shape[0], q * q))
    idx = np.nonzero(both)[0]
    cells[idx, codes[idx, 0] * q + codes[idx, 1]] = 1.0

    def fn(f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = f @ cells
        tot = t.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = (t / tot[:, None]).reshape(-1, q, q)
        pa = (p * w).sum(axis=(1, 2))
        pe = np.einsum("rk,kl,rl->r", p.sum(axis=2), w, p.sum(axis=1))
        pa[tot == 0] = np.nan
        return _chance_corrected(pa, pe), pa, pe

    return fn


def _coefficient(ratings: Ratings, coefficient: str, weights: str | np.ndarray | None, level: str | None, categories: Sequence[Hashable] | None):
    """(function of multiplicities -> (value, pa, pe), units kept, informative units, ratings,
    weights name, the mask of the rows kept)."""
    if coefficient not in AGREEMENT_COEFFICIENTS:
        raise ValueError(f"coefficient must be one of {', '.join(AGREEMENT_COEFFICIENTS)}, not {coefficient!r}")
    codes, cats = _codes(ratings, categories)
    q = len(cats)
    if coefficient == "krippendorff_alpha":
        lvl = (level or "nominal").lower()
        if lvl not in KRIPPENDORFF_LEVELS:
            raise ValueError(f"level must be one of {', '.join(KRIPPENDORFF_LEVELS)}, not {level!r}")
        counts = _count_matrix(codes, q)
        keep = counts.sum(axis=1) >= 2
        k = _Krippendorff(counts[keep], cats, lvl)
        return k.parts, int(keep.sum()), int(keep.sum()), int(counts[keep].sum()), lvl, keep
    if coefficient == "gwet_ac2" and weights is None:
        weights = "quadratic"
    if coefficient == "gwet_ac1":
        weights = None
    w, wname = _weights_matrix(cats, weights)
    if coefficient == "cohen_kappa":
        if not codes.size:
            codes = codes.reshape(0, 2)
        if codes.shape[1] != 2:
            raise ValueError(f"Cohen's kappa takes two raters (two columns), got {codes.shape[1]}")
        both = (codes[:, 0] >= 0) & (codes[:, 1] >= 0)
        fn = _cohen_parts(codes[both], q, w)
        return fn, int(both.sum()), int(both.sum()), int(2 * both.sum()), wname, both
    counts = _count_matrix(codes, q)
    r = counts.sum(axis=1)
    keep = r >= 1
    g = _Gwet(counts[keep], w)
    kind = {"percent_agreement": "none", "fleiss_kappa": "fleiss"}.get(coefficient, "gwet")

    def fn2(f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pa, pe = g.pa(f), g.pe(f, kind)
        value = pa.copy() if kind == "none" else _chance_corrected(pa, pe)
        return value, pa, pe

    return fn2, int(keep.sum()), int((r >= 2).sum()), int(r.sum()), wname, keep


def _point(
    ratings: Ratings, coefficient: str, weights: str | np.ndarray | None = None, level: str | None = None, categories: Sequence[Hashable] | None = None
) -> float | None:
    fn, n_keep, informative, _, _, _ = _coefficient(ratings, coefficient, weights, level, categories)
    if informative == 0:
        return None
    value = float(fn(np.ones((1, n_keep)))[0][0])
    return value if math.isfinite(value) else None


def percent_agreement(ratings: Ratings, *, weights: str | np.ndarray | None = None, categories: Sequence[Hashable] | None = None) -> float | None:
    """Share of agreeing rater pairs, averaged over units with two or more ratings (Gwet's p_a;
    weighted with ``weights``). None when no unit has two ratings."""
    return _point(ratings, "percent_agreement", weights, None, categories)


def full_agreement(ratings: Ratings) -> tuple[int, int]:
    """(units on which every rater gave the same category, units with two or more ratings): the
    share of full agreement across all raters (Cancer-Myth's 83% of three physicians); missing
    ratings are left out, a unit left with fewer than two is not counted."""
    rows = _rating_rows(ratings)
    k = n = 0
    for row in rows:
        vals = [_norm_cat(v) for v in row if not _is_missing(v)]
        if len(vals) >= 2:
            n += 1
            k += int(len(set(vals)) == 1)
    return k, n


def cohen_kappa(
    rater_a: Sequence[Hashable], rater_b: Sequence[Hashable], *, weights: str | np.ndarray | None = None, categories: Sequence[Hashable] | None = None
) -> float | None:
    """Cohen's kappa of two raters on the units both rated (weighted with ``weights``: linear,
    quadratic, ordinal or a matrix). None when undefined (no shared unit, or chance agreement 1)."""
    a, b = list(rater_a), list(rater_b)
    if len(a) != len(b):
        raise ValueError(f"the two raters rate different numbers of units ({len(a)} vs {len(b)})")
    return _point([[x, y] for x, y in zip(a, b)], "cohen_kappa", weights, None, categories)


def fleiss_kappa(ratings: Ratings, *, weights: str | np.ndarray | None = None, categories: Sequence[Hashable] | None = None) -> float | None:
    """Fleiss' kappa for any number of raters, missing ratings allowed (Gwet's generalisation)."""
    return _point(ratings, "fleiss_kappa", weights, None, categories)


def gwet_ac1(ratings: Ratings, *, categories: Sequence[Hashable] | None = None) -> float | None:
    """Gwet's AC1 (unweighted), any number of raters, missing ratings allowed."""
    return _point(ratings, "gwet_ac1", None, None, categories)


def gwet_ac2(ratings: Ratings, *, weights: str | np.ndarray = "quadratic", categories: Sequence[Hashable] | None = None) -> float | None:
    """Gwet's AC2: AC1 with agreement weights for ordered categories (ordinal, linear, quadratic
    or a matrix). Pass ``categories`` to count scale points nobody used."""
    return _point(ratings, "gwet_ac2", weights, None, categories)


def krippendorff_alpha(ratings: Ratings, *, level: str = "nominal", categories: Sequence[Hashable] | None = None) -> float | None:
    """Krippendorff's alpha (nominal, ordinal, interval or ratio) from the coincidence matrix of
    pairable values; units with fewer than two ratings carry no information."""
    return _point(ratings, "krippendorff_alpha", None, level, categories)


def agreement(
    ratings: Ratings,
    coefficient: str,
    *,
    weights: str | np.ndarray | None = None,
    level: str | None = None,
    categories: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    clusters: Sequence[Hashable] | None = None,
) -> Agreement:
    """One coefficient (``AGREEMENT_COEFFICIENTS``) with a percentile bootstrap interval that
    resamples units (rows) with replacement, or, given ``clusters`` (one key per row: the answer
    several paragraphs belong to), whole clusters. ``weights`` for the Gwet family, Fleiss' and
    Cohen's kappa (AC2 defaults to quadratic), ``level`` for Krippendorff's alpha. Cohen's kappa
    takes a two-column table (units rated by both)."""
    conf = check_confidence(confidence)
    n_resamples = check_resamples(n_resamples)
    fn, n_keep, informative, n_ratings, wname, kept = _coefficient(ratings, coefficient, weights, level, categories)
    if clusters is not None and len(clusters) != len(kept):
        raise ValueError(f"clusters must name one cluster per row ({len(kept)} rows, {len(clusters)} clusters)")
    base = {"coefficient": coefficient, "units": informative, "ratings": n_ratings, "weights": wname, "confidence": conf}
    if informative == 0:
        rated = bool((_codes(ratings, categories)[0] >= 0).any())
        why: str | None = "no ratings" if not rated else ("no unit rated by both raters" if coefficient == "cohen_kappa" else "no unit has two ratings")
        return Agreement(value=None, lo=None, hi=None, pa=None, pe=None, reason=why, **base)
    value, pa, pe = (float(x[0]) for x in fn(np.ones((1, n_keep))))

    def clean(x: float) -> float | None:
        return x if math.isfinite(x) else None

    if not math.isfinite(value) or informative < 2:
        why = None if math.isfinite(value) else "undefined on these ratings (chance agreement is 1: one category throughout)"
        return Agreement(value=clean(value), lo=None, hi=None, pa=clean(pa), pe=clean(pe), reason=why, **base)
    rng = np.random.default_rng(seed)
    # each kept row's cluster (its own when none are given): a resample draws clusters, and a
    # row weighs as often as its cluster was drawn
    if clusters is None:
        codes, n_clusters = np.arange(n_keep), n_keep
    else:
        kept_keys = [c for c, k in zip(clusters, kept) if k]
        index: dict[Hashable, int] = {}
        codes = np.array([index.setdefault(c, len(index)) for c in kept_keys], dtype=np.int64)
        n_clusters = len(index)
    block = max(1, 2_000_000 // n_keep)
    parts = []
    for start in range(0, n_resamples, block):
        m = min(block, n_resamples - start)
        f = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=m).astype(np.float64)[:, codes]
        parts.append(fn(f)[0])
    dist = np.concatenate(parts)
    dist = dist[np.isfinite(dist)]
    lo = hi = None
    if dist.size >= max(10, n_resamples // 2):
        alpha = 1.0 - conf
        q = np.quantile(dist, [alpha / 2, 1 - alpha / 2])
        lo, hi = min(float(q[0]), value), max(float(q[1]), value)
    return Agreement(value=value, lo=lo, hi=hi, pa=clean(pa), pe=clean(pe), resamples=int(dist.size), **base)
