"""A sign-flip (randomisation) test of a mean over independent clusters.

When the units of a test (debates, groups) nest in a few clusters (topics), a claim about the clusters'
population needs the cluster as its unit: topic-specific effects that average zero would otherwise pass
a test over units. Here each cluster contributes one value (e.g. the mean of its units' differences);
under the null each value is symmetric about 0, so every assignment of signs is equally likely. The
two-sided p is the share of sign assignments whose mean is at least as far from 0 as the observed one:
exact over all 2^n assignments up to `EXACT_MAX` clusters, else a seeded Monte Carlo draw.

With n clusters the smallest exact two-sided p is 2 / 2^n: a test at alpha needs `min_clusters(alpha)`
clusters (6 at .05) before it can reject at all.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

EXACT_MAX = 16  # 2^16 assignments: exact; more clusters: Monte Carlo
DRAWS = 20_000  # Monte Carlo sign assignments
SEED = 20251127  # a fixed seed: the same values give the same p
TOL = 1e-9  # relative tolerance for "at least as far from 0" (ties of equal magnitude count)

Values = Iterable[float] | npt.NDArray[np.float64]


@dataclass(frozen=True)
class SignFlip:
    mean: float | None  # the mean of the cluster values (None without any)
    p: float | None  # two-sided p (None with no cluster)
    n: int  # clusters with a finite value
    exact: bool  # every assignment enumerated (else Monte Carlo)


def min_clusters(alpha: float) -> int:
    """The fewest clusters at which an exact two-sided sign-flip test can give p < `alpha`."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), not {alpha}")
    return math.floor(math.log2(2 / alpha)) + 1


def _signs(n: int) -> npt.NDArray[np.float64]:
    """Every one of the 2^n sign vectors (rows)."""
    codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)[None, :]
    out: npt.NDArray[np.float64] = 1.0 - 2.0 * (codes & 1).astype(float)
    return out


def sign_flip(values: Values, exact_max: int = EXACT_MAX, draws: int = DRAWS, seed: int = SEED) -> SignFlip:
    """Two-sided sign-flip test of mean(values) = 0 over the finite `values` (one per cluster)."""
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return SignFlip(None, None, 0, True)
    observed = abs(float(x.sum()))
    cut = observed - TOL * max(observed, float(np.abs(x).sum()), 1e-300)
    if n <= exact_max:
        sums = np.abs(_signs(n) @ x)
        return SignFlip(float(x.mean()), float(np.mean(sums >= cut)), n, True)
    rng = np.random.default_rng(seed)
    signs = rng.integers(0, 2, size=(draws, n)) * 2.0 - 1.0
    hits = int(np.sum(np.abs(signs @ x) >= cut))
    return SignFlip(float(x.mean()), (1 + hits) / (1 + draws), n, False)


def cluster_means(values: Mapping[Hashable, float] | pd.Series, clusters: Mapping[Hashable, Hashable]) -> pd.Series:
    """The mean of the finite `values` (unit -> value) within each cluster (`clusters`: unit ->
    cluster), sorted by cluster; a unit without a cluster raises."""
    s = values.astype(float) if isinstance(values, pd.Series) else pd.Series(values, dtype=float)
    x = s.to_numpy()
    ok = np.isfinite(x)
    units = s.index[ok]
    missing = [u for u in units if u not in clusters]
    if missing:
        raise KeyError(f"units without a cluster: {missing[:5]}")
    labels, inverse = np.unique(np.array([clusters[u] for u in units], dtype=object), return_inverse=True)
    sums = np.bincount(inverse, weights=x[ok], minlength=len(labels))
    counts = np.bincount(inverse, minlength=len(labels))
    return pd.Series(sums / np.maximum(counts, 1), index=pd.Index(labels), dtype=float)
