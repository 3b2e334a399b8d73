"""Multiple-testing corrections."""

from __future__ import annotations

import numpy as np


def holm(pvalues) -> np.ndarray:
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


def bonferroni(pvalues) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    return np.minimum(p * p.size, 1.0)
