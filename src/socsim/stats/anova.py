"""One-way ANOVA of k independent groups, and planned contrasts on its pooled error.

`one_way` gives F and p (scipy.stats.f_oneway) and the pooled within-group mean square; where no
group varies within (every value equals its group's mean, up to socsim.stats.degeneracy's
tolerance) F is infinite and no test was computed: F and p are None and `flag` says why, a
degenerate input, never a verdict. `contrast` is the t of a weighted sum of the group means on the
ANOVA's pooled error (df n - k), two-sided.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from socsim.stats import degeneracy as dg


@dataclass(frozen=True)
class OneWay:
    F: float | None  # None: no variance within any group (`flag`)
    p: float | None
    df_between: int  # k - 1
    df_within: int  # n - k
    mse: float  # the pooled within-group mean square (sum of squares within / (n - k))
    flag: dg.Flag | None = None  # no variance within any group: F is infinite


def one_way(groups: Sequence[npt.ArrayLike], scope: str, group: str = "group") -> OneWay:
    """F and p of a one-way ANOVA of `groups` (each at least one value, at least two groups), and
    its pooled error. No variance within any group: F and p None, `flag` =
    Flag(scope, "no variance within any <group>: F is infinite")."""
    vals = [np.asarray(v, dtype=float) for v in groups]
    n, k = sum(len(v) for v in vals), len(vals)
    within = np.concatenate([v - v.mean() for v in vals])
    mse = float(sum(((v - v.mean()) ** 2).sum() for v in vals) / (n - k)) if n > k else float("nan")
    if dg.near_constant(within, scope) is not None:
        flag = dg.Flag(scope, f"no variance within any {group}: F is infinite")
        return OneWay(None, None, k - 1, n - k, mse, flag)
    f, p = sps.f_oneway(*vals)
    return OneWay(float(f), float(p), k - 1, n - k, mse)


def contrast(groups: Mapping[str, npt.ArrayLike], weights: Mapping[str, float], fit: OneWay) -> tuple[float, float]:
    """(t, two-sided p) of the contrast sum_g weights[g] x mean(g) on `fit`'s pooled error (df n - k);
    t and p NaN where its standard error is 0."""
    vals = {g: np.asarray(v, dtype=float) for g, v in groups.items()}
    est = sum(weights[g] * vals[g].mean() for g in vals)
    se = math.sqrt(fit.mse * sum(weights[g] ** 2 / len(vals[g]) for g in vals))
    t = est / se if se > 0 else float("nan")
    return float(t), float(2 * sps.t.sf(abs(t), fit.df_within))
