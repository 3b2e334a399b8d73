"""t tests for every study. One-sample (paired) t tests of changes: the test against 0 that says why it is
undefined, its effect size d_z = t / sqrt(n), and the exact equivalence test of |d_z| < margin (Wellek).
Two samples: the pooled SD, the power to find a raw difference, and the Welch test of a difference of
two differences (a difference of effects over four cells)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
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
    undefined: the verdict is inconclusive, never a pass). one_sample_test with its t."""
    r = one_sample_test(x)
    return r.mean, r.p, r.n, r.note


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


@dataclass(frozen=True)
class OneSampleT:
    """A one-sample t test against 0 (a paired t test on the differences): t and its two-sided p
    (None when undefined, `note` says why), n and the mean of the finite values."""

    t: float | None
    p: float | None
    n: int
    mean: float | None
    note: str | None = None


def one_sample_test(
    x: np.ndarray,
    too_few: str = "{n} value(s); a t-test needs at least 2",
    constant: str = "every one is {value:.4g}",
) -> OneSampleT:
    """The one-sample t test against 0 over the finite values of `x` (scipy's ttest_1samp; ttest_rel of
    two paired samples is this on their differences). Undefined with fewer than 2 values (the note:
    `too_few`, formatted with n) or zero variance (NO_VARIANCE, with `constant` formatted with the
    value): t and p None, the verdict inconclusive, never a pass."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    mean = float(x.mean()) if n else None
    if n < 2:
        return OneSampleT(None, None, n, mean, too_few.format(n=n))
    if float(np.var(x)) <= VAR_TOL:
        why = f"{NO_VARIANCE} ({constant.format(value=x[0])}): the t-test is undefined"
        return OneSampleT(None, None, n, mean, why)
    res = stats.ttest_1samp(x, 0.0)
    return OneSampleT(finite(res.statistic), finite(res.pvalue), n, mean)


def welch_tost(a: np.ndarray, b: np.ndarray, margin: float, alpha: float) -> tuple[float, float, float, float]:
    """Equivalence of two means by two one-sided Welch t tests (TOST, Schuirmann 1987), H0:
    |mean a - mean b| >= `margin` against H1: within it. Returns (difference, lo, hi, p): mean(a) - mean(b),
    its (1 - 2 alpha) Welch interval and the larger of the two one-sided p (equivalence is shown when
    p < alpha). The interval and p are NaN where a side has fewer than two values or neither varies."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    diff = float(a.mean() - b.mean()) if a.size and b.size else float("nan")
    va, vb = (float(x.var(ddof=1)) / x.size if x.size > 1 else float("nan") for x in (a, b))
    se = math.sqrt(va + vb) if math.isfinite(va + vb) else float("nan")
    if not se > 0:
        return diff, float("nan"), float("nan"), float("nan")
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    p = max(float(stats.t.sf((diff + margin) / se, dof)), float(stats.t.cdf((diff - margin) / se, dof)))
    half = float(stats.t.ppf(1 - alpha, dof)) * se
    return diff, diff - half, diff + half, p
