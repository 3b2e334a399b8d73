"""Tests that report an estimate with its 95 % interval beside the two-sided p (the revised facilitation study's
per-model table: socsim.facilitation.revision.claims), each on the unit it is given:

- `welch`: mean a - mean b by Welch's t, its Welch-Satterthwaite interval;
- `one_sample`: mean x - mu by the one-sample t, its t interval;
- `sign_test`: median x - mu by the two-sided sign test (values equal to mu dropped), with the distribution-free
  interval of the median from its order statistics (rates that pile up at 1 leave a t test without variance, a
  sign test not);
- `slope_test`: an OLS coefficient adjusted for categorical covariates, its t interval.

The p of `welch` and `one_sample` is socsim.stats.verdict's (the one verdict rule reads it); tests/unit/stats/
test_intervals.py checks each against a computation written from its definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.stats import verdict as vd


@dataclass(frozen=True)
class Tested:
    """One test's result: its estimate and 95 % interval, two-sided p, and n (the smaller side)."""

    estimate: float | None
    ci: tuple[float, float] | None
    p: float | None
    n: int


def _ci(res: Any) -> tuple[float, float] | None:
    try:
        ci = res.confidence_interval(0.95)
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return None
    lo, hi = float(ci.low), float(ci.high)
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else None


def welch(a: np.ndarray, b: np.ndarray) -> Tested:
    """mean a - mean b by Welch's t (vd.welch's p), with its interval."""
    diff, p = vd.welch(a, b)
    ci = _ci(sps.ttest_ind(a, b, equal_var=False)) if p is not None else None
    return Tested(diff, ci, p, min(len(a), len(b)))


def one_sample(x: np.ndarray, mu: float) -> Tested:
    diff, p = vd.one_sample(x, mu)
    ci = _ci(sps.ttest_1samp(x, mu)) if p is not None else None
    return Tested(diff, (ci[0] - mu, ci[1] - mu) if ci else None, p, len(x))


def sign_test(x: np.ndarray, mu: float) -> Tested:
    """Median x - mu by the two-sided sign test (values equal to mu dropped), with the distribution-free
    interval of the median (order statistics at the binomial's 2.5 % quantile): rates that pile up at 1
    leave a t test without variance, a sign test not."""
    above, below = int((x > mu).sum()), int((x < mu).sum())
    p = float(sps.binomtest(above, above + below).pvalue) if above + below else None
    if not len(x):
        return Tested(None, None, p, 0)
    s = np.sort(x)
    k = max(int(sps.binom.ppf(0.025, len(s), 0.5)) - 1, 0)
    ci = (float(s[k] - mu), float(s[len(s) - 1 - k] - mu)) if len(s) > 1 else None
    return Tested(float(np.median(x) - mu), ci, p, len(x))


def slope_test(df: pd.DataFrame, y: str, x: str, covariates: Sequence[str] = ()) -> Tested:
    """The OLS coefficient of `x` on `y` over the rows, adjusted for categorical `covariates` (those with
    more than one level), with its t interval; untestable (None) with too few rows or no variance."""
    import statsmodels.formula.api as smf

    df = df.dropna(subset=[y, x])
    used = [c for c in covariates if df[c].nunique() > 1]
    if len(df) < len(used) + 3 or np.ptp(df[x].to_numpy(dtype=float)) == 0 or np.ptp(df[y].to_numpy(dtype=float)) == 0:
        return Tested(None, None, None, len(df))
    fit = smf.ols(" + ".join([f"{y} ~ {x}", *(f"C({c})" for c in used)]), data=df).fit()
    lo, hi = (float(v) for v in fit.conf_int().loc[x])
    return Tested(float(fit.params[x]), (lo, hi), float(fit.pvalues[x]), len(df))
