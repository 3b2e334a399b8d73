"""The one verdict rule (socsim.stats.verdict) on cases whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd


def test_a_claim_holds_only_when_a_test_with_enough_units_rejects_in_its_direction():
    assert vd.effect(0.01, -0.3, 10, 3, "discussions", direction=-1).label == "yes"
    assert vd.effect(0.01, -0.3, 2, 3, "discussions", direction=-1).label == (
        "inconclusive (n = 2 discussions, needs 3)"
    )
    assert vd.effect(0.30, -0.3, 10, 3, "discussions", -1).label.startswith("inconclusive (p = 0.3 >= 0.05")
    opposite = vd.effect(0.01, 0.3, 10, 3, "discussions", -1)
    assert opposite.holds is False and "opposite direction" in opposite.label
    assert vd.effect(0.30, 0.3, 10, 3, "discussions", -1).holds is None  # opposite, not significant
    assert vd.effect(None, -0.3, 10, 3, "discussions", -1).label.startswith("inconclusive (the test could not")
    assert vd.effect(0.01, 0.3, 10, 3, "discussions").holds is True  # any direction
    flag = dg.Flag("ratings", "95% of 20 answers are 1 (threshold 90%)")
    v = vd.effect(0.001, -1.0, 10, 3, "discussions", -1, flags=[flag])
    assert v.holds is None and v.degenerate and v.label == flag.message


def test_no_difference_needs_power_and_is_never_passed_by_small_samples():
    assert vd.no_difference(0.5, 0.31, 5, 2, "conversations").label == (
        "inconclusive (p = 0.5 but power 0.31 < 0.8 at n = 5 conversations)"
    )
    assert vd.no_difference(0.5, 0.95, 60, 2, "conversations").holds is True
    assert vd.no_difference(0.01, 0.95, 60, 2, "conversations").holds is False
    assert vd.no_difference(0.5, None, 60, 2, "conversations").holds is None


def test_all_of_needs_every_part():
    yes, inc, no = vd.Verdict(True, "a"), vd.Verdict(None, "b"), vd.Verdict(False, "c")
    assert vd.all_of([yes, yes]).holds is True
    assert vd.all_of([yes, inc]) == inc and vd.all_of([inc, no]) == no
    assert vd.all_of([]).holds is None


def test_power_matches_a_simulation():
    """Noncentral-t power against the rejection rate of simulated t tests."""
    rng = np.random.default_rng(3)
    for d, n, n2 in ((0.5, 20, None), (0.8, 10, 12)):
        sims = 4000
        if n2 is None:
            x = rng.normal(d, 1, (sims, n))
            rate = float((sps.ttest_1samp(x, 0, axis=1).pvalue < 0.05).mean())
        else:
            a, b = rng.normal(d, 1, (sims, n)), rng.normal(0, 1, (sims, n2))
            rate = float((sps.ttest_ind(a, b, axis=1).pvalue < 0.05).mean())
        assert vd.power_t(d, n, n2) == pytest.approx(rate, abs=0.025)
    assert vd.power_t(0.5, 1) is None


def test_welch_and_one_sample_match_scipy_and_handle_constant_samples():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 12), rng.normal(0.5, 2, 9)
    diff, p = vd.welch(a, b)
    assert diff == pytest.approx(a.mean() - b.mean())
    assert p == pytest.approx(sps.ttest_ind(a, b, equal_var=False).pvalue)
    assert vd.one_sample(a, 0.2)[1] == pytest.approx(sps.ttest_1samp(a, 0.2).pvalue)
    # no variance, or one value: the test is undefined, so never a pass
    assert vd.welch([1, 1, 1], [0, 0, 0]) == (1.0, None)
    assert vd.welch([1], [0, 1])[1] is None
    assert vd.one_sample([1.0, 1.0, 1.0], 0.9) == (pytest.approx(0.1), None)
    assert vd.effect(None, 0.1, 3, 3, "discussions", +1).label.startswith("inconclusive (the test could not")


def test_power_stays_finite_where_the_noncentral_t_gives_up():
    assert vd.power_t(0.8, 1000, 1000) == pytest.approx(1.0)
    assert 0.0 < vd.power_t(0.05, 2000, 2000) < 1.0
