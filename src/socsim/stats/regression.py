"""OLS with plain and cluster-robust standard errors, and regression tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf


@dataclass
class OLSResult:
    table: pd.DataFrame  # one row per term: coef, se, p, se_cluster, p_cluster
    adj_r2: float
    r2: float
    nobs: int
    n_clusters: int
    formula: str
    note: str = ""


def ols_plain_and_clustered(data: pd.DataFrame, formula: str, cluster: str) -> OLSResult:
    """Fit OLS once; report classical errors and errors clustered by `cluster`
    (statsmodels' CR1 small-sample correction)."""
    model = smf.ols(formula, data=data)
    plain = model.fit()
    groups = pd.factorize(data.loc[plain.model.data.row_labels, cluster])[0]
    clustered = model.fit(cov_type="cluster", cov_kwds={"groups": groups})
    table = pd.DataFrame({
        "coef": plain.params,
        "se": plain.bse,
        "p": plain.pvalues,
        "se_cluster": clustered.bse,
        "p_cluster": clustered.pvalues,
    })
    table.index.name = "term"
    return OLSResult(table=table, adj_r2=float(plain.rsquared_adj), r2=float(plain.rsquared), nobs=int(plain.nobs),
                     n_clusters=int(len(np.unique(groups))), formula=formula)


def stars(p: float) -> str:
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "." if p < 0.1 else ""
