"""t tests for every study. One-sample (paired) t tests of changes: the test against 0 that says why it is
undefined, its effect size d_z = t / sqrt(n), and the exact equivalence test of |d_z| < margin (Wellek).
Two samples: the pooled SD, the power to find a raw difference, and the Welch test of a difference of
two differences (a difference of effects over four cells)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from socsim.stats import verdict

VAR_TOL = 1e-12  # a variance at most this is none: the t test is undefined
NO_VARIANCE = "no variance in the changes"


def finite(x: Any) -> float | None:
    """`x` as a float, None when it is not finite."""
    x = float(x)
    return x if math.isfinite(x) else None


def d_z(t: float | None, n: int) -> float | None:
    """The paired (one-sample) effect size d_z = mean change / SD of the changes = t / sqrt(n): unlike
    t, it does not grow with the number of units."""
    return None if t is None or n < 1 or not math.isfinite(t) else float(t) / math.sqrt(n)


def one_sample_t(x: np.ndarray) -> tuple[float | None, float | None, int, str | None]:
    """(mean, two-sided p of the one-sample t test against 0, n, note) over the finite values of `x`;
    p is None, and the note says why, with fewer than 2 values or zero variance (the test is
    undefined: the verdict is inconclusive, never a pass)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    mean = float(x.mean()) if n else None
    if n < 2:
        return mean, None, n, f"{n} value(s); a t-test needs at least 2"
    if float(np.var(x)) <= VAR_TOL:
        return mean, None, n, f"{NO_VARIANCE} (every one is {x[0]:.4g}): the t-test is undefined"
    return mean, finite(stats.ttest_1samp(x, 0.0).pvalue), n, None


def equivalence_p(t: float | None, n: int, margin: float) -> float | None:
    """p of the exact one-sample (paired) t test for equivalence, H0: |d_z| >= `margin` against
    H1: |d_z| < `margin` (Wellek, Testing Statistical Hypotheses of Equivalence, 2010, Sect. 5.3): the
    chance, at |d_z| = margin, of a t at most as far from 0 as the observed: P(|T| <= |t|) for T
    noncentral t with n - 1 degrees of freedom and noncentrality margin * sqrt(n). Equivalence is shown
    when p < alpha; under H0 that happens at most at rate alpha. None when t is undefined or n < 2."""
    if t is None or not math.isfinite(t) or n < 2 or margin <= 0:
        return None
    nc = margin * math.sqrt(n)
    a = abs(float(t))
    return finite(float(stats.nct.cdf(a, n - 1, nc) - stats.nct.cdf(-a, n - 1, nc)))


def pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    """The pooled standard deviation of two samples (NaN with fewer than 3 values or an empty side)."""
    dof = len(a) + len(b) - 2
    if not len(a) or not len(b) or dof < 1:
        return float("nan")
    ss = float(((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum())
    return float(np.sqrt(ss / dof))


def power_to_find(effect: float, a: np.ndarray, b: np.ndarray) -> float | None:
    """Power of a two-sample t test at these group sizes to find a difference of `effect` (raw
    units), standardised by the samples' pooled SD (None when that SD is zero or undefined)."""
    sd = pooled_sd(a, b)
    return verdict.power_t(effect / sd, len(a), len(b)) if np.isfinite(sd) and sd > 0 else None


def difference_of_effects(cells: Sequence[np.ndarray], dd: float) -> float | None:
    """Two-sided p of `dd` = (mean a1 - mean a0) - (mean b1 - mean b0) for `cells` [a1, a0, b1, b0]: its
    SE from the four cells' variances, dof by Welch-Satterthwaite (None when the SE is zero or undefined)."""
    var = [float(np.var(c, ddof=1)) / len(c) if len(c) > 1 else np.nan for c in cells]
    se = float(np.sqrt(np.sum(var)))
    if not (np.isfinite(se) and se > 0):
        return None
    dof = np.sum(var) ** 2 / np.sum([v**2 / (len(c) - 1) for v, c in zip(var, cells)])
    return float(2 * stats.t.sf(abs(dd / se), dof))
