"""socsim.stats.divergence against independent computations: scipy's own KDE and Jensen-Shannon distance (the
authors' code path), a divergence written out from its definition, and the margin by numerical integration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.spatial.distance import jensenshannon
from scipy.stats import gaussian_kde, norm

from socsim.stats import divergence as dv


def _authors(a: np.ndarray, b: np.ndarray) -> float:
    """The revised release's compute_js_divergence, written again from its text."""
    grid = np.linspace(0, 1, 50)
    p, q = gaussian_kde(a)(grid), gaussian_kde(b)(grid)
    return float(jensenshannon(p / p.sum(), q / q.sum()) ** 2)


def _by_definition(p: np.ndarray, q: np.ndarray) -> float:
    m = (p + q) / 2
    kl = lambda x, y: float(np.sum(np.where(x > 0, x * np.log(np.where(x > 0, x, 1) / y), 0.0)))  # noqa: E731
    return (kl(p, m) + kl(q, m)) / 2


def test_js_is_the_authors_divergence_where_theirs_is_defined():
    rng = np.random.default_rng(4)
    for n_a, n_b, shift in ((40, 60, 0.0), (12, 150, 0.05), (200, 30, 0.2)):
        a, b = rng.normal(0.6, 0.08, n_a), rng.normal(0.6 + shift, 0.1, n_b)
        assert dv.js(a, b) == pytest.approx(_authors(a, b), rel=1e-9, abs=1e-12)
        assert dv.js(a, b) == pytest.approx(_by_definition(dv.mass(a), dv.mass(b)), rel=1e-9, abs=1e-12)
    narrow = rng.normal(0.85, 0.01, 46)  # Scott's bandwidth below a grid step: still the authors' estimator
    wide = rng.normal(0.9, 0.05, 133)
    assert dv.js(narrow, wide) == pytest.approx(_authors(narrow, wide), rel=1e-9)
    same = rng.normal(0.5, 0.1, 80)
    assert dv.js(same, same) == pytest.approx(0.0, abs=1e-12)
    far = dv.js(rng.normal(0.1, 0.01, 50), rng.normal(0.9, 0.01, 50))
    assert far == pytest.approx(np.log(2), abs=1e-6)  # disjoint: the bound ln 2


def test_a_sample_without_spread_or_a_denormal_density_still_gives_a_number():
    """The authors' code fails on both (a singular KDE; an infinite divergence); ours takes one grid step as the
    bandwidth where Scott's gives no density on the grid, and counts densities below 1e-200 as none."""
    point = np.full(10, 0.893)
    nearly = 0.893 + np.arange(10) * 1e-9
    spread = np.random.default_rng(0).normal(0.85, 0.05, 150)
    for x in (point, nearly):
        assert np.isfinite(dv.js(x, spread)) and dv.mass(x).argmax() == np.abs(dv.GRID - 0.893).argmin()
    rng = np.random.default_rng(0)
    for _ in range(300):  # the draw that made the authors' divergence infinite (a density of 2e-322)
        a, b = rng.normal(0.85, 0.05, 150), rng.normal(0.85, 0.05, 20)
        assert np.isfinite(dv.js(a, b))
    assert np.isnan(dv.js([0.5], spread)) and np.isnan(dv.js([], spread))


def test_the_margin_is_the_divergence_of_two_normals_half_an_sd_apart():
    def kl_half(f, g, m):
        return quad(lambda x: f(x) * np.log(f(x) / m(x)), -15, 15, limit=200)[0]

    f, g = norm(0, 1).pdf, norm(0.5, 1).pdf
    m = lambda x: (f(x) + g(x)) / 2  # noqa: E731
    exact = (kl_half(f, g, m) + kl_half(g, f, m)) / 2
    assert dv.normal_js(0.5) == pytest.approx(exact, rel=1e-6)
    assert dv.CLOSE == pytest.approx(exact, abs=5e-5)
    assert dv.normal_js(0.2) < dv.CLOSE < dv.normal_js(0.8)


def test_the_interval_covers_the_estimate_and_narrows_with_more_discussions():
    rng = np.random.default_rng(7)
    widths = []
    for n in (20, 200):
        a, b = rng.normal(0.8, 0.05, n), rng.normal(0.85, 0.05, n)
        lo, hi = dv.interval(dv.resampled(a, b, np.random.default_rng(1), 300))
        widths.append(hi - lo)
        assert lo <= dv.js(a, b) + 0.05 and lo < hi
    assert widths[1] < widths[0]
    draws = dv.resampled(np.arange(5.0) / 10, np.arange(5.0) / 10, np.random.default_rng(2), 20)
    again = dv.resampled(np.arange(5.0) / 10, np.arange(5.0) / 10, np.random.default_rng(2), 20)
    assert np.array_equal(draws, again)  # seeded: the same draws
    assert dv.interval(np.full(3, np.nan)) is None


def test_the_permutation_p_of_one_distribution_is_uniform_on_a_null_and_small_on_two():
    rng = np.random.default_rng(8)
    null = [dv.permutation_p(rng.normal(0.5, 0.1, 8), rng.normal(0.5, 0.1, 40), rng, 99) for _ in range(60)]
    assert sum(p < 0.05 for p in null) <= 8  # about 5 % (3 expected; 8 is the 0.999 binomial bound)
    apart = dv.permutation_p(rng.normal(0.3, 0.05, 20), rng.normal(0.7, 0.05, 20), rng, 99)
    assert apart == pytest.approx(1 / 100)  # no relabelling reaches the observed divergence
