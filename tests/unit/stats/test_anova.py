"""The one-way ANOVA and its planned contrasts: a hand-worked answer, statsmodels' OLS on random
groups, and no variance within any group (a degenerate input, never an F)."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats as sps

from socsim.stats.anova import contrast, one_way
from socsim.stats.multitest import bonferroni_fixed


def test_hand_worked_anova_and_contrast():
    # means 2, 5, 8, grand mean 5: SS between = 3 x (9 + 0 + 9) = 54 on 2 df, SS within = 3 x 2 = 6 on 6 df:
    # F = 27 / 1 = 27; the contrast (-1, 0, 1) = 6 with SE sqrt(1 x (1/3 + 1/3)), t = 6 / sqrt(2/3)
    groups = {"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0], "c": [7.0, 8.0, 9.0]}
    fit = one_way(list(groups.values()), "x")
    assert (fit.df_between, fit.df_within, fit.mse, fit.flag) == (2, 6, 1.0, None)
    assert fit.F == pytest.approx(27.0) and fit.p == pytest.approx(sps.f.sf(27.0, 2, 6))
    t, p = contrast(groups, {"a": -1, "b": 0, "c": 1}, fit)
    assert t == pytest.approx(6 / math.sqrt(2 / 3)) and p == pytest.approx(2 * sps.t.sf(6 / math.sqrt(2 / 3), 6))


def test_anova_and_contrasts_match_statsmodels():
    rng = np.random.default_rng(3)
    groups = {"none": rng.normal(0.6, 0.2, 7), "weak": rng.normal(0.9, 0.3, 9), "strong": rng.normal(1.3, 0.2, 8)}
    fit = one_way(list(groups.values()), "x")
    df = pd.DataFrame([{"g": g, "y": v} for g, vs in groups.items() for v in vs])
    ols = smf.ols("y ~ C(g)", df).fit()
    assert fit.F == pytest.approx(ols.fvalue) and fit.p == pytest.approx(ols.f_pvalue)
    assert fit.mse == pytest.approx(ols.mse_resid) and fit.df_within == ols.df_resid
    assert list(ols.params.index) == ["Intercept", "C(g)[T.strong]", "C(g)[T.weak]"]  # reference: none
    # (-2, 1, 1) = (strong - none) + (weak - none); (0, -1, 1) = strong - weak
    for weights, L in (
        ({"none": -2, "weak": 1, "strong": 1}, [0, 1, 1]),
        ({"none": 0, "weak": -1, "strong": 1}, [0, 1, -1]),
    ):
        t, p = contrast(groups, weights, fit)
        ref = ols.t_test(np.array(L, dtype=float))
        assert t == pytest.approx(float(np.ravel(ref.tvalue)[0])) and p == pytest.approx(float(np.ravel(ref.pvalue)[0]))


def test_no_variance_within_any_group_is_a_degenerate_input():
    fit = one_way([[1.0, 1.0], [2.0, 2.0, 2.0]], "D by bias", "bias level")
    assert fit.F is None and fit.p is None
    assert (
        fit.flag is not None
        and fit.flag.message == "degenerate input: D by bias: no variance within any bias level: F is infinite"
    )
    assert one_way([[1.0, 1.0], [2.0, 2.5]], "x").flag is None  # one group varies: F is finite


def test_bonferroni_over_a_fixed_family():
    assert bonferroni_fixed(0.01, 6) == pytest.approx(0.06)
    assert (
        bonferroni_fixed(0.4, 6) == 1.0
        and bonferroni_fixed(None, 6) is None
        and bonferroni_fixed(float("nan"), 6) is None
    )
