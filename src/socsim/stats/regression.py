"""OLS with plain and cluster-robust standard errors, and regression tables.

An OLS that cannot be estimated meaningfully (constant outcome, too few rows, a missing reference
level) is returned by `unavailable` with its reason: the table keeps one row per term with NaN
coefficients, so that tables print "n/a" and the reason instead of +-0.000*** and Adj. R2 = -inf.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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


DEFAULT_OPTIMIZER = "statsmodels' default (bfgs, then lbfgs and cg)"
REFITS = ("nm", "powell", "cg")  # derivative-free first: the gradient is what fails near the boundary
FAILED = ("failed to converge", "Gradient optimization failed", "optimization failed")


@dataclass
class MixedResult:
    """A linear mixed model with a random intercept per group (statsmodels MixedLM, REML)."""

    table: pd.DataFrame  # one row per fixed-effect term: coef, se, z, p
    nobs: int
    n_groups: int
    group_var: float
    llf: float
    converged: bool  # statsmodels' own word, no optimiser failure on the way (mixed_lm)
    formula: str
    optimizer: str = DEFAULT_OPTIMIZER  # the optimiser of the optimum kept
    note: str = ""  # what was refit and why ("" when statsmodels' default converged at once)


def _fit_mixed(model: Any, **options: Any) -> tuple[Any, bool, list[str]]:
    """One fit: the result, whether it converged (statsmodels' flag and no optimiser failure among its warnings:
    statsmodels retries another optimiser after a failure and can then flag a worse point converged), the
    failures' words."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = model.fit(**options)
    failures = [str(w.message) for w in caught if any(f in str(w.message) for f in FAILED)]
    return result, bool(result.converged) and not failures, failures


def mixed_lm(data: pd.DataFrame, formula: str, groups: str, first: Mapping[str, Any] | None = None) -> MixedResult:
    """`formula` with a random intercept per value of `groups`, fit as statsmodels' MixedLM defaults do (REML):
    the fit paper 000's revision printed. When that fit did not converge (statsmodels' flag, or an optimiser that
    failed on the way), it is refit with each of REFITS and the converged optimum of the highest likelihood is kept,
    its optimiser and why recorded; a fit that never converges says so (`converged` False). `first`: the first
    fit's options (tests make it fail)."""
    model = smf.mixedlm(formula, data=data, groups=data[groups])
    result, converged, failures = _fit_mixed(model, **(first or {}))
    optimizer, note = DEFAULT_OPTIMIZER, ""
    if not converged:
        tried = [(name, *_fit_mixed(model, method=[name], maxiter=5000)) for name in REFITS]
        good = [(name, r) for name, r, ok, _ in tried if ok and np.isfinite(r.llf)]
        why = failures[-1] if failures else "statsmodels: not converged"
        if good:
            optimizer, best = max(good, key=lambda t: t[1].llf)
            note = (
                f"the default optimiser did not converge ({why}; log-likelihood {result.llf:.3f}); refit with "
                f"{', '.join(REFITS)}: {optimizer} kept (log-likelihood {best.llf:.3f})"
            )
            result, converged = best, True
        else:
            note = f"did not converge with the default optimiser ({why}) nor with {', '.join(REFITS)}"
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
        converged=converged,
        formula=formula,
        optimizer=optimizer,
        note=note,
    )
