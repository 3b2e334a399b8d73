"""Multiple-testing corrections."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


def holm(pvalues: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm-Bonferroni step-down adjusted p-values (same order as the input)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    stepped = (m - np.arange(m)) * p[order]
    adjusted_sorted = np.minimum(np.maximum.accumulate(stepped), 1.0)
    out = np.empty(m)
    out[order] = adjusted_sorted
    return out


def bonferroni(pvalues: npt.ArrayLike) -> npt.NDArray[np.float64]:
    p = np.asarray(pvalues, dtype=float)
    out: npt.NDArray[np.float64] = np.minimum(p * p.size, 1.0)
    return out


def bonferroni_fixed(p: float | None, family: int) -> float | None:
    """A p Bonferroni-adjusted over a fixed family of `family` tests, whatever else was tested:
    min(1, family x p); None (or NaN: no test) stays None."""
    return None if p is None or math.isnan(float(p)) else min(1.0, float(p) * family)
