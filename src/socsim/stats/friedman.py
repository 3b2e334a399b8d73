"""The Friedman test of k treatments over n blocks (a rank test of repeated measures), for any k >= 2:
scipy's `friedmanchisquare` wants at least 3 treatments; with 2 the same statistic (mid-ranks within
each block, tie correction) is computed here."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import stats


def _statistic(data: np.ndarray) -> tuple[float | None, float | None]:
    """chi2 and p as scipy.stats.friedmanchisquare computes them, for any number of treatments."""
    n, k = data.shape
    ranks = np.apply_along_axis(stats.rankdata, 1, data)
    ties = 0.0
    for row in data:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts**3 - counts).sum())
    c = 1.0 - ties / (k * (k * k - 1) * n)
    if c <= 0:  # every block ties all treatments
        return None, None
    chi2 = (12.0 / (n * k * (k + 1)) * float((ranks.sum(axis=0) ** 2).sum()) - 3.0 * n * (k + 1)) / c
    return chi2, float(stats.chi2.sf(chi2, k - 1))


def friedman(data: npt.ArrayLike) -> tuple[float | None, float | None]:
    """(chi2, p) of the Friedman test of `data`, blocks (rows) x treatments (columns), k - 1 degrees
    of freedom; (None, None) when every block ties all treatments. Needs at least 2 blocks and 2
    treatments (ValueError otherwise). With 3 or more treatments it is scipy's friedmanchisquare (which
    returns NaN where every block ties)."""
    data = np.asarray(data, dtype=float)
    if data.ndim != 2 or data.shape[0] < 2 or data.shape[1] < 2:
        raise ValueError(f"friedman: needs blocks x treatments, at least 2 x 2, not shape {data.shape}")
    if data.shape[1] >= 3:
        res = stats.friedmanchisquare(*data.T)
        return float(res.statistic), float(res.pvalue)
    return _statistic(data)
