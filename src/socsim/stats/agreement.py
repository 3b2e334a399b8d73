"""Agreement of two raters: Cohen's kappa from their confusion matrix (one function for every study)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TOL = 1e-12


def cohen_kappa(confusion: Sequence[Sequence[float]] | np.ndarray) -> float | None:
    """kappa = (p_o - p_e) / (1 - p_e) of a square confusion matrix (rows: rater a's labels, columns:
    rater b's, in the same order); p_e from the two raters' marginals. None when there are no pairs
    or p_e = 1 (both raters gave one and the same label: kappa undefined)."""
    m = np.asarray(confusion, dtype=float)
    n = m.sum()
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"cohen_kappa: a square confusion matrix is needed, got shape {m.shape}")
    if n == 0:
        return None
    p_o = np.trace(m) / n
    p_e = float(m.sum(axis=1) @ m.sum(axis=0)) / n**2
    return None if p_e >= 1 - TOL else float((p_o - p_e) / (1 - p_e))
