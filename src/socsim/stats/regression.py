"""OLS with plain and cluster-robust standard errors, and regression tables.

An OLS that cannot be estimated meaningfully (constant outcome, too few rows, a missing reference
level) is returned by `unavailable` with its reason: the table keeps one row per term with NaN
coefficients, so that tables print "n/a" and the reason instead of +-0.000*** and Adj. R2 = -inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import patsy  # type: ignore[import-untyped]  # ships no py.typed; not in pyproject's ignore_missing_imports list
import statsmodels.formula.api as smf

if TYPE_CHECKING:
    from socsim.stats.degeneracy import Flag

COLUMNS = ["coef", "se", "p", "se_cluster", "p_cluster"]


@dataclass
class OLSResult:
    table: pd.DataFrame  # one row per term: coef, se, p, se_cluster, p_cluster
    adj_r2: float
    r2: float
    nobs: int
    n_clusters: int
    formula: str
    note: str = ""
    resid_ss: float = float("nan")  # sum of squared residuals (0 for a perfect fit)
    unavailable: str | None = None  # why no coefficient is reported (the table is all NaN)
    flags: list[Flag] = field(default_factory=list)  # degeneracy flags of the inputs (stars withheld)


def _finite_or_nan(x: float) -> float:
    x = float(x)
    return x if math.isfinite(x) else float("nan")


def ols_plain_and_clustered(data: pd.DataFrame, formula: str, cluster: str) -> OLSResult:
    """Fit OLS once; report classical errors and errors clustered by `cluster`
    (statsmodels' CR1 small-sample correction, p from t with G - 1 degrees of freedom)."""
    model = smf.ols(formula, data=data)
    plain = model.fit()
    groups = pd.factorize(data.loc[plain.model.data.row_labels, cluster])[0]
    # t with G - 1 degrees of freedom, not the normal: with few clusters the normal rejects far too often.
    clustered = model.fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    table = pd.DataFrame(
        {
            "coef": plain.params,
            "se": plain.bse,
            "p": plain.pvalues,
            "se_cluster": clustered.bse,
            "p_cluster": clustered.pvalues,
        }
    )
    table.index.name = "term"
    return OLSResult(
        table=table,
        adj_r2=_finite_or_nan(plain.rsquared_adj),
        r2=_finite_or_nan(plain.rsquared),
        nobs=int(plain.nobs),
        n_clusters=int(len(np.unique(groups))),
        formula=formula,
        resid_ss=float(plain.ssr),
    )


def design_terms(data: pd.DataFrame, formula: str) -> list[str]:
    """The names of the model's terms (columns of its design matrix), without fitting it."""
    try:
        _, X = patsy.dmatrices(formula, data, return_type="dataframe")
    except Exception:  # noqa: BLE001 - e.g. no rows at all: no terms to name
        return []
    return list(X.columns)


def unavailable(
    data: pd.DataFrame, formula: str, cluster: str, reason: str, flags: list[Flag] | None = None, note: str = ""
) -> OLSResult:
    """An OLS reported as n/a with its reason: every term present, every number NaN."""
    terms = design_terms(data, formula) if len(data) else []
    table = pd.DataFrame(np.nan, index=pd.Index(terms, name="term"), columns=COLUMNS)
    n_clusters = int(data[cluster].nunique()) if cluster in data else 0
    return OLSResult(
        table=table,
        adj_r2=float("nan"),
        r2=float("nan"),
        nobs=int(len(data)),
        n_clusters=n_clusters,
        formula=formula,
        note=note,
        unavailable=reason,
        flags=list(flags or []),
    )


def stars(p: float, marginal: bool = True) -> str:
    """*** p < .001, ** p < .01, * p < .05, and "." for p < .1 when `marginal` (R's convention; some papers
    print no such mark)."""
    if p is None or not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "." if marginal and p < 0.1 else ""


@dataclass
class MixedResult:
    """A linear mixed model with a random intercept per group (statsmodels MixedLM, REML)."""

    table: pd.DataFrame  # one row per fixed-effect term: coef, se, z, p
    nobs: int
    n_groups: int
    group_var: float
    llf: float
    converged: bool
    formula: str


def mixed_lm(data: pd.DataFrame, formula: str, groups: str) -> MixedResult:
    """`formula` with a random intercept per value of `groups`, fit as statsmodels' MixedLM defaults do
    (REML, lbfgs): the fit paper 000's revision printed. Warnings of a boundary fit (group variance near
    0) are kept out of the console; `converged` says whether the optimiser converged."""
    import warnings

    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = smf.mixedlm(formula, data=data, groups=data[groups]).fit()
    fe = result.fe_params
    table = pd.DataFrame(
        {"coef": fe, "se": result.bse_fe, "z": fe / result.bse_fe, "p": result.pvalues[fe.index]}, index=fe.index
    )
    table.index.name = "term"
    return MixedResult(
        table=table,
        nobs=int(result.nobs),
        n_groups=int(result.model.n_groups),
        group_var=float(result.cov_re.iloc[0, 0]),
        llf=_finite_or_nan(result.llf),
        converged=bool(result.converged),
        formula=formula,
    )
