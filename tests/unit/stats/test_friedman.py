"""The Friedman test for any number of treatments: scipy's with 3 or more, the same statistic with 2."""

import numpy as np
import pytest
from scipy import stats

from socsim.stats.friedman import friedman


def test_three_or_more_treatments_are_scipys():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 4, size=(9, 4)).astype(float)  # ties within blocks
    chi2, p = friedman(data)
    ref = stats.friedmanchisquare(*data.T)
    assert chi2 == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)


def test_the_statistic_by_hand_agrees_with_scipy_where_both_apply():
    from socsim.stats.friedman import _statistic

    rng = np.random.default_rng(4)
    data = np.round(rng.normal(size=(8, 3)), 1)
    assert _statistic(data) == pytest.approx(tuple(stats.friedmanchisquare(*data.T)))


def test_two_treatments_are_the_sign_test_statistic():
    # without ties, k = 2: chi2 = (n_plus - n_minus)^2 / n
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    b = a + np.array([1, 1, 1, 1, 1, -1, 1]) * 0.5
    chi2, p = friedman(np.column_stack([a, b]))
    assert chi2 == pytest.approx((6 - 1) ** 2 / 7)
    assert p == pytest.approx(stats.chi2.sf((6 - 1) ** 2 / 7, 1))


def test_every_block_tied_is_undefined_and_too_small_is_an_error():
    assert friedman(np.ones((5, 2))) == (None, None)
    with pytest.raises(ValueError):
        friedman(np.ones((1, 3)))
