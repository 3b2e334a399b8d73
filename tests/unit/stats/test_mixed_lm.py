"""socsim.stats.regression.mixed_lm reads statsmodels' convergence and refits when it failed: a first fit made to
fail (one iteration) is refit and lands on the optimum an unhindered fit finds; a fit that never converges says so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from socsim.stats import regression as rg


def _data(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(40):
        u = rng.normal(0, 0.3)
        for t in range(12):
            rows.append({"g": f"g{g}", "s": "ab"[g % 2], "t": t - 5.5, "y": 1 + 0.2 * (g % 2) + 0.05 * t + u})
    df = pd.DataFrame(rows)
    return df.assign(y=df["y"] + rng.normal(0, 0.5, len(df)))


def test_a_fit_that_converges_is_kept_as_statsmodels_gives_it():
    df = _data()
    fit = rg.mixed_lm(df, "y ~ s * t", "g")
    ref = smf.mixedlm("y ~ s * t", df, groups=df["g"]).fit()
    assert fit.converged and fit.optimizer == rg.DEFAULT_OPTIMIZER and fit.note == ""
    assert fit.llf == pytest.approx(ref.llf, rel=1e-12) and fit.table["coef"].to_numpy() == pytest.approx(ref.fe_params)


def test_a_fit_that_did_not_converge_is_refit_and_keeps_the_best_converged_optimum():
    df = _data()
    stopped = rg.mixed_lm(df, "y ~ s * t", "g", first={"maxiter": 1})  # the default optimiser stopped at once
    ref = smf.mixedlm("y ~ s * t", df, groups=df["g"]).fit()
    assert stopped.converged and stopped.optimizer in rg.REFITS
    assert "the default optimiser did not converge" in stopped.note and f"{stopped.optimizer} kept" in stopped.note
    assert stopped.llf == pytest.approx(ref.llf, abs=1e-4)  # the optimum an unhindered fit finds
    assert stopped.table["coef"].to_numpy() == pytest.approx(ref.fe_params.to_numpy(), abs=1e-4)


def test_a_fit_that_never_converges_says_so(monkeypatch):
    monkeypatch.setattr(rg, "REFITS", ())
    fit = rg.mixed_lm(_data(), "y ~ s * t", "g", first={"maxiter": 1})
    assert not fit.converged and fit.note.startswith("did not converge with the default optimiser")
