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


def test_every_verdict_states_its_sidedness_and_level():
    """One sidedness rule (docs/honest-results.md): a directional claim is one-sided in the claimed direction, at
    alpha / 2 for a two-sided p read in its direction, at alpha for a one-sided p; any difference is two-sided. The
    rule rides on every verdict `effect` builds, inconclusive ones included, and a finding's test text says it."""
    from socsim.io.report import Finding

    two = vd.effect(0.01, -0.3, 10, 3, "discussions", -1)
    assert two.rule == "one-sided in the claimed direction at 0.025: two-sided p < 0.05, estimate in that direction"
    assert vd.effect(0.01, 0.3, 2, 3, "discussions", -1).rule == two.rule  # too few: the same rule
    assert vd.effect(0.002, 0.3, 10, 3, "agents", +1, alpha=0.01, sides=1).rule == (
        "one-sided in the claimed direction, p < 0.01"
    )
    assert vd.effect(0.01, 0.3, 10, 3, "discussions").rule == "any difference: p < 0.05"
    assert vd.no_difference(0.5, 0.9, 10, 3, "pairs").rule == "no difference: no rejection at 0.05 and power >= 0.8"
    for sides, direction in ((1, 0), (3, 1)):
        with pytest.raises(ValueError, match="sides"):
            vd.effect(0.01, 0.3, 10, 3, "discussions", direction, sides=sides)
    # a claim of parts names each part's rule once, also when a part is itself a claim of parts
    one = vd.effect(0.002, 0.3, 10, 3, "agents", +1, alpha=0.01, sides=1)
    nested = vd.all_of([vd.all_of([two, one]), two])
    assert nested.rule == f"{two.rule} / {one.rule}" and vd.all_of([vd.Verdict(None, "by hand")]).rule == ""
    finding = Finding("c", "s", 0.1, "Welch t over discussions", "discussions", 10, two)
    assert finding.test_text == f"Welch t over discussions; {two.rule}"
    said = Finding("c", "s", 0.1, f"Welch t; {two.rule}", "discussions", 10, two)
    assert said.test_text == said.test  # a test text that says its rule is not told twice


def test_the_stated_one_sided_level_is_the_null_rate_of_holds():
    """On null samples, "holds" comes at the stated one-sided level: alpha / 2 from scipy's two-sided t read in the
    claimed direction, alpha from its one-sided p (4,000 replicates; the binomial sd is about 0.25 and 0.34 points)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4000, 12))
    mean = x.mean(axis=1)
    two = sps.ttest_1samp(x, 0, axis=1).pvalue
    greater, less = (sps.ttest_1samp(x, 0, axis=1, alternative=a).pvalue for a in ("greater", "less"))
    one = np.where(mean > 0, greater, less)  # one-sided in the estimate's direction, as `sides=1` takes it
    held2 = np.mean([vd.effect(p, m, 12, 3, "units", +1).holds is True for p, m in zip(two, mean)])
    held1 = np.mean([vd.effect(p, m, 12, 3, "units", +1, sides=1).holds is True for p, m in zip(one, mean)])
    assert abs(held2 - 0.025) < 0.01 and abs(held1 - 0.05) < 0.013, (held2, held1)


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
    # a part built by hand carries no p: its "no" cannot be re-judged and stands
    assert vd.all_of([yes, inc]) == inc and vd.all_of([inc, no]) == no
    assert vd.all_of([]).holds is None


def _part(p: float, estimate: float, family: int = 1) -> vd.Verdict:
    return vd.effect(p, estimate, 10, 3, "topics", +1, family=family)


def test_all_of_says_no_only_at_the_claims_level():
    """Issue 34: a "no" of k parts needs one part reversed at alpha / k (Bonferroni over the parts); a
    "yes" needs every part at alpha (an intersection-union test: no correction)."""
    yes = _part(0.01, 0.4)
    reversed_03, reversed_02 = _part(0.03, -0.4), _part(0.02, -0.4)
    assert reversed_03.holds is False and reversed_03.p == 0.03 and reversed_03.alpha == 0.05
    one = vd.all_of([yes, reversed_03])
    assert one.holds is None and one.label == (
        "inconclusive (significant in the opposite direction, p = 0.03, n = 10 topics; not at the claim's level "
        '(2 parts, Bonferroni): a "no" needs p < 0.025)'
    )
    two = vd.all_of([yes, reversed_02])
    assert two.holds is False and two.label.startswith("no (significant in the opposite direction, p = 0.02")
    assert two.p == pytest.approx(0.04)  # the claim's Bonferroni-adjusted p: it can be a part of another claim
    assert vd.all_of([reversed_03]) == reversed_03  # one part: its own level, as before
    # a part already Bonferroni-adjusted over a family of m tests: alpha * min(m, k) / k on that p
    assert vd.all_of([yes, yes, _part(0.04, -0.4, family=6)]).holds is False  # m >= k: alpha on p_adj
    assert vd.all_of([yes, yes, yes, _part(0.03, -0.4, family=2)]).holds is None  # needs p_adj < 0.05 * 2 / 4
    assert vd.no_level(_part(0.03, -0.4, family=2), 4) == pytest.approx(0.025)
    # "yes": every part at alpha, and the claim's p is the largest (the intersection-union p)
    both = vd.all_of([_part(0.01, 0.4), _part(0.049, 0.2)])
    assert both.holds is True and both.p == pytest.approx(0.049)
    # a degenerate part first, a "no" before an inconclusive one
    flag = dg.Flag("ratings", "95% of 20 answers are 1 (threshold 90%)")
    degenerate = vd.effect(0.01, 0.4, 10, 3, "topics", +1, flags=[flag])
    assert vd.all_of([reversed_02, degenerate]) == degenerate
    assert vd.all_of([_part(0.5, 0.1), _part(0.01, -0.4), yes]).holds is False
    assert vd.all_of([_part(0.5, 0.1), reversed_02, yes]).holds is None  # 0.02 >= 0.05 / 3
    # no_difference parts: a difference found says "no" at alpha / k as well
    nd = [vd.no_difference(0.04, 0.9, 30, 3, "groups"), vd.no_difference(0.5, 0.9, 30, 3, "groups")]
    assert nd[0].holds is False and vd.all_of(nd).holds is None and "needs p < 0.025" in vd.all_of(nd).reason


def test_named_parts_keep_what_they_were_judged_on():
    v = vd.named("weak - none", _part(0.02, -0.4))
    assert v.reason.startswith("weak - none: significant in the opposite") and (v.p, v.alpha) == (0.02, 0.05)
    flag = dg.Flag("ratings", "one value")
    degenerate = vd.effect(0.01, 0.4, 10, 3, "topics", +1, flags=[flag])
    assert vd.named("x", degenerate) == degenerate and vd.named("x", vd.Verdict(None)) == vd.Verdict(None)


def test_all_of_no_is_a_bonferroni_over_its_parts_as_statsmodels_computes_it():
    """On random parts: all_of says "no" exactly when statsmodels' Bonferroni over the k parts' p rejects a
    reversed part, and "yes" exactly when every part is significant in its direction at alpha."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(34)
    for _ in range(500):
        k = int(rng.integers(1, 5))
        p = rng.uniform(0, 0.12, k)
        est = rng.choice([-1.0, 1.0], k)
        got = vd.all_of([_part(float(pi), float(ei)) for pi, ei in zip(p, est)])
        reject = multipletests(p, alpha=0.05, method="bonferroni")[0]
        assert (got.holds is False) == bool((reject & (est < 0)).any())
        assert (got.holds is True) == bool(((p < 0.05) & (est > 0)).all())


def _null_parts(rng: np.random.Generator, reps: int, effects: list[float], n: int = 12) -> list[list[vd.Verdict]]:
    """Per replicate, one part per effect: a one-sample t (scipy) of n normal values around it, claimed > 0."""
    x = rng.normal(np.asarray(effects)[None, :, None], 1.0, (reps, len(effects), n))
    res = sps.ttest_1samp(x, 0.0, axis=2)
    return [
        [vd.effect(float(p), float(m), n, 3, "units", +1) for p, m in zip(ps, ms)]
        for ps, ms in zip(res.pvalue, x.mean(axis=2))
    ]


def _plausible(count: int, reps: int, rate: float) -> bool:
    """`count` of `reps` is no more than replicate noise above `rate` (binomial tail >= 0.001)."""
    return bool(sps.binom.sf(count - 1, reps, rate) >= 0.001)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_all_of_on_null_parts_says_yes_and_no_at_most_at_one_parts_rate(k: int):
    """Every part null: "yes" and "no" each at most alpha / 2 (one part's rate in its direction); the old
    rule (a "no" from any part reversed at alpha) says "no" about k times as often."""
    rng = np.random.default_rng(100 + k)
    reps = 4000
    runs = _null_parts(rng, reps, [0.0] * k)
    verdicts = [vd.all_of(parts) for parts in runs]
    yes = sum(v.holds is True for v in verdicts)
    no = sum(v.holds is False for v in verdicts)
    old_no = sum(any(v.holds is False for v in parts) for parts in runs)
    assert _plausible(yes, reps, 0.025) and _plausible(no, reps, 0.025), (yes, no)
    expected_old = 1 - (1 - 0.025) ** k  # the parts are independent here
    assert old_no / reps == pytest.approx(expected_old, abs=4 * np.sqrt(expected_old / reps))
    assert not _plausible(old_no, reps, 0.025)  # the old rule's rate is above one part's: the test can fail


def test_all_of_says_yes_at_one_parts_rate_when_one_part_is_null_and_the_others_certain():
    """The intersection-union test is exact at its level: with one null part and the others certain,
    "yes" comes at that part's rate (alpha / 2), neither above nor far below it."""
    rng = np.random.default_rng(7)
    reps = 4000
    yes = sum(vd.all_of(parts).holds is True for parts in _null_parts(rng, reps, [0.0, 3.0, 3.0]))
    assert _plausible(yes, reps, 0.025) and sps.binom.cdf(yes, reps, 0.025) >= 0.001, yes


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
