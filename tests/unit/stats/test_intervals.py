"""The estimates, intervals and p of socsim.stats.intervals against computations written from their definitions
(Welch-Satterthwaite by hand, the one-sample t interval, the sign test's binomial sums and the order statistics of
the median's interval by math.comb, OLS by least squares), on data whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from socsim.stats import intervals as iv


def test_welch_is_the_welch_satterthwaite_interval_by_hand():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.3, 1.0, 14), rng.normal(0.0, 2.0, 9)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    diff, se = a.mean() - b.mean(), math.sqrt(va + vb)
    half = sps.t.ppf(0.975, df) * se
    got = iv.welch(a, b)
    assert got.estimate == pytest.approx(diff) and got.n == 9
    assert got.ci == pytest.approx((diff - half, diff + half))
    assert got.p == pytest.approx(2 * sps.t.sf(abs(diff) / se, df))
    assert iv.welch(np.ones(5), np.ones(4)).ci is None  # no variance: no interval, no p


def test_one_sample_is_the_t_interval_of_the_difference_from_mu():
    x = np.array([0.9, 1.0, 0.7, 0.95, 1.0, 0.8])
    m, se = x.mean() - 0.5, x.std(ddof=1) / math.sqrt(len(x))
    half = sps.t.ppf(0.975, len(x) - 1) * se
    got = iv.one_sample(x, 0.5)
    assert got.estimate == pytest.approx(m) and got.ci == pytest.approx((m - half, m + half))
    assert got.p == pytest.approx(2 * sps.t.sf(m / se, len(x) - 1)) and got.n == 6


def _binom_cdf(k: int, n: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def test_sign_test_p_and_the_medians_order_statistic_interval_by_hand():
    rng = np.random.default_rng(2)
    for n in (6, 11, 30):
        x = np.round(rng.uniform(0.5, 1.0, n), 2)
        mu = 0.8
        above, below = int((x > mu).sum()), int((x < mu).sum())
        m = above + below
        p = min(1.0, 2 * _binom_cdf(min(above, below), m)) if above != below else 1.0
        # the largest r with P(Bin(n, 1/2) <= r - 1) <= 0.025: the interval [x_(r), x_(n - r + 1)] (1-based)
        r = max([r for r in range(1, n + 1) if _binom_cdf(r - 1, n) <= 0.025], default=1)
        s = np.sort(x)
        got = iv.sign_test(x, mu)
        assert got.p == pytest.approx(p) and got.n == n
        assert got.estimate == pytest.approx(np.median(x) - mu)
        assert got.ci == pytest.approx((s[r - 1] - mu, s[n - r] - mu))
    # coverage of the median's interval on a skewed distribution whose median is known: at least 95 %
    cover = 0
    for _ in range(400):
        x = rng.exponential(1.0, 25)
        lo, hi = iv.sign_test(x, 0.0).ci
        cover += lo <= math.log(2) <= hi
    assert cover >= 0.93 * 400
    assert iv.sign_test(np.array([]), 0.5) == iv.Tested(None, None, None, 0)


def test_slope_test_is_least_squares_with_dummies_and_its_t_interval():
    rng = np.random.default_rng(3)
    n = 40
    df = pd.DataFrame({"x": rng.integers(0, 4, n).astype(float), "g": rng.choice(["a", "b", "c"], n)})
    df["y"] = 0.2 * df["x"] + df["g"].map({"a": 0.0, "b": 1.0, "c": -1.0}) + rng.normal(0, 0.3, n)
    X = np.column_stack([np.ones(n), df["x"], df["g"] == "b", df["g"] == "c"]).astype(float)
    beta, *_ = np.linalg.lstsq(X, df["y"].to_numpy(), rcond=None)
    resid = df["y"].to_numpy() - X @ beta
    sigma2 = resid @ resid / (n - X.shape[1])
    se = math.sqrt(sigma2 * np.linalg.inv(X.T @ X)[1, 1])
    half = sps.t.ppf(0.975, n - X.shape[1]) * se
    got = iv.slope_test(df, "y", "x", ["g"])
    assert got.estimate == pytest.approx(beta[1]) and got.ci == pytest.approx((beta[1] - half, beta[1] + half))
    assert got.p == pytest.approx(2 * sps.t.sf(abs(beta[1]) / se, n - X.shape[1])) and got.n == n
    assert iv.slope_test(df.assign(x=1.0), "y", "x", ["g"]).p is None  # no variance in x: untestable
