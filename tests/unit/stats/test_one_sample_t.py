"""The one-sample t test against 0: a paired t test on the differences, t and p None when undefined."""

import numpy as np
import pytest
from scipy import stats

from socsim.stats import ttest


def test_on_the_differences_it_is_the_paired_t_test():
    rng = np.random.default_rng(8)
    before = rng.normal(size=12)
    after = before + rng.normal(0.3, 1.0, size=12)
    after[3] = np.nan  # a pair without both values is left out
    r = ttest.one_sample_test(after - before)
    ok = np.isfinite(after)
    ref = stats.ttest_rel(after[ok], before[ok])
    assert (r.t, r.p, r.n, r.note) == (ref.statistic, ref.pvalue, 11, None)
    assert r.mean == pytest.approx(np.mean(after[ok] - before[ok]))
    assert ttest.one_sample_t(after - before) == (r.mean, r.p, r.n, None)


def test_undefined_says_why_in_the_callers_words():
    few = ttest.one_sample_test(np.array([0.4, np.nan]), too_few="{n} group(s); need 2")
    assert few.t is None and few.p is None and few.n == 1 and few.note == "1 group(s); need 2"
    same = ttest.one_sample_test(np.full(4, 0.25), constant="the change is {value:.4g} in every group")
    assert same.t is None and same.mean == 0.25
    assert same.note == f"{ttest.NO_VARIANCE} (the change is 0.25 in every group): the t-test is undefined"
    assert (
        ttest.one_sample_t(np.full(4, 0.25))[3] == f"{ttest.NO_VARIANCE} (every one is 0.25): the t-test is undefined"
    )
