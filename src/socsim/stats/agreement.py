"""Agreement of two raters: Cohen's kappa from their confusion matrix, and of two binary raters over the
items both labelled (counts, rate, kappa) (one function each for every study)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

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


def binary(a: Iterable[Any], b: Iterable[Any]) -> dict[str, Any]:
    """Agreement of two binary raters over the items both labelled (None / NaN = no label): n (pairs),
    unpaired (items missing a label), the 2x2 counts (both_1, a_only, b_only, both_0), the agreement rate
    and Cohen's kappa = (p_o - p_e) / (1 - p_e), p_e from the two raters' marginals; kappa is None (with
    a note) when p_e = 1 (both raters gave one and the same label: kappa undefined) or without pairs."""

    def label(x: Any) -> bool | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA else bool(x)

    pairs = [(label(x), label(y)) for x, y in zip(a, b, strict=True)]
    both = [(x, y) for x, y in pairs if x is not None and y is not None]
    n = len(both)
    counts = {
        "both_1": sum(x and y for x, y in both),
        "a_only": sum(x and not y for x, y in both),
        "b_only": sum(y and not x for x, y in both),
        "both_0": sum(not x and not y for x, y in both),
    }
    out: dict[str, Any] = {"n": n, "unpaired": len(pairs) - n, **counts, "agreement": None, "kappa": None, "note": ""}
    if not n:
        out["note"] = "no item has both labels"
        return out
    out["agreement"] = (counts["both_1"] + counts["both_0"]) / n
    out["kappa"] = cohen_kappa([[counts["both_1"], counts["a_only"]], [counts["b_only"], counts["both_0"]]])
    if out["kappa"] is None:
        out["note"] = "both raters gave one and the same label: kappa undefined"
    return out
