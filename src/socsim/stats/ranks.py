"""The Mann-Whitney U test as the claims use it: its p (NaN below two values a side) and a directed
form whose p, where the estimate lies against the claim, is one-sided the other way (so that a
significant p means "the other way", a fail by the verdict rule)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import stats as sps


def mwu_p(a: npt.ArrayLike, b: npt.ArrayLike, alternative: str) -> float:
    """scipy's Mann-Whitney U p of `a` against `b`; NaN with fewer than two values a side."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    return float(sps.mannwhitneyu(a, b, alternative=alternative).pvalue)


def directed_mwu(a: npt.ArrayLike, b: npt.ArrayLike, direction: int) -> tuple[float, float]:
    """(estimate, p) of a one-sided U test of a against b: the estimate is U / (n_a n_b) - 1/2 (> 0:
    a tends to be larger); p is one-sided in the claimed `direction` when the estimate agrees with
    it, else one-sided in the estimate's direction (so that a significant p means "the other way")."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return float("nan"), float("nan")
    est = float(sps.mannwhitneyu(a, b).statistic) / (len(a) * len(b)) - 0.5
    along = est * direction > 0
    claimed = "greater" if direction > 0 else "less"
    other = "less" if direction > 0 else "greater"
    return est, mwu_p(a, b, claimed if along else other)
