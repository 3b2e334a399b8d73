"""Coherence's six tests (Table 4) on data built to pass and to fail: coherent and sycophantic agents, too
little data, Test 6's rules (strict, our reading of the paper's text; pooled, ours), degenerate inputs in
place of pass and fail, Test 2's power (socsim.coherence.analysis.tests)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from socsim.coherence import analysis as an
from support.studies.coherence import ALT, _table

COHERENT = {0: (4, 5), 1: (3, 4), 2: (2, 3), 3: (1, 2), 4: (1, 2)}  # gap -> (low, high openness) score


def _coherent(n=40):
    """Agreement falls with the preference gap (gap 4 mirrors gap 0), rises with openness, ignores the
    topic's contentiousness, and is the same for shared negative and shared positive preferences."""
    rows = []
    for p1, p2 in itertools.combinations_with_replacement(range(1, 6), 2):
        for c in (1, 2, 3):
            for i in range(n):
                high = i % 2 == 0
                o = 9 if high else 0
                rows.append((p1, p2, o, o, c, COHERENT[p2 - p1][high]))
    return _table(rows)


def _sycophantic(n=40):
    """Agreement ignores the gap, follows contentiousness, punishes shared negative preferences, and is
    highest for the least open agents."""
    rows = []
    for p1, p2 in itertools.combinations_with_replacement(range(1, 6), 2):
        for c in (1, 2, 3):
            for i in range(n):
                high = i % 2 == 0
                o = 9 if high else 0
                score = {1: 3, 2: 4, 3: 5}[c] - (p1 == p2 == 1) - high
                rows.append((p1, p2, o, o, c, max(score, 1)))
    return _table(rows)


def test_six_tests_pass_on_coherent_and_fail_on_sycophantic_agents():
    # 300 conversations per preference pair and level, over 3 topics a level: Test 4's "no contentiousness
    # effect" needs the topic-level test's power >= 0.8 (9 topics, 280 groupings)
    good = an.six_tests(_coherent(300), alpha=0.01, alternative=ALT, permutations=499).set_index("test")
    bad = an.six_tests(_sycophantic(), alpha=0.01, alternative=ALT, permutations=499).set_index("test")
    for t in range(1, 7):  # sycophantic agents: every test rejects against the claim
        assert good.loc[t, "result"] == "pass" and bad.loc[t, "result"] == "fail", t
    assert good.loc[2, "power"] >= 0.8 and good.loc[4, "power"] >= 0.8
    assert good.loc[4, "n"] == 9 and good.loc[4, "unit"] == "topics (3 at C = 1, 3 at C = 2, 3 at C = 3)"
    assert good.loc[1, "unit"].startswith("agents") and good.loc[1, "n"] == 2 * 15 * 3 * 300  # own agents each
    # 40 per cell: no contentiousness effect found, but too little power to say there is none
    small = an.six_tests(_coherent(40), alpha=0.01, alternative=ALT, permutations=199).set_index("test")
    assert small.loc[4, "result"].startswith("inconclusive (p = 1 but power 0.")
    assert small.loc[4, "result"].endswith("< 0.8 at n = 9 topics)")
    assert small.loc[4, "raw_result"] == small.loc[4, "result"] and small.loc[1, "result"] == "pass"
    # without the paper's distributions Test 2's power is unknown: never a pass
    blind = an.six_tests(_coherent(40), alpha=0.01, permutations=199).set_index("test")
    assert blind.loc[2, "result"].startswith("inconclusive (p = 1 but power unknown")


def test_six_tests_without_data_are_not_applicable_or_too_few():
    tiny = _table([(1, 2, 0, 1, 1, 3), (2, 2, 1, 1, 1, 4)])
    out = an.six_tests(tiny, 0.01).set_index("test")
    # two conversations: too few for the correlations and the group tests (inconclusive, with the n and
    # what it needs: too little data is not a degenerate input); one contentiousness level: Test 4 n/a
    assert out.loc[1, "result"] == "inconclusive (n = 2 conversations, needs 10)"
    assert out.loc[5, "result"] == "inconclusive (n = 2 conversations, needs 10)"
    assert out.loc[2, "result"] == "inconclusive (n = 0 conversations a side (gap 0: 1, gap 4: 0), needs 5)"
    assert out.loc[3, "result"] == "inconclusive (n = 0 conversations in the smallest preference pair, needs 5)"
    assert out.loc[6, "result"] == "inconclusive (n = 0 (1-5) conversations, needs 5)"
    assert out.loc[4, "result"] == "n/a" and "two contentiousness levels" in out.loc[4, "detail"]
    assert out.loc[3, "detail"] == "needs 1-1, 2-5, 3-5, 4-5 pairs; missing: 1-1, 2-5, 3-5, 4-5"
    assert (out["flags"] == "").all()  # nothing degenerate: only too few
    empty = an.six_tests(tiny.iloc[:0], 0.01, empty_reason="no judged conversation")
    assert set(empty["result"]) == {"n/a"} and set(empty["detail"]) == {"no judged conversation"}


# -- Test 6's rule -----------------------------------------------------------------------------------


def _far_pairs(score_of, n=12, seed=0):
    """(1-5) pairs at every openness pairing (0-0 ... 9-9), n conversations each."""
    rng = np.random.default_rng(seed)
    rows = []
    for o1, o2 in itertools.combinations_with_replacement(range(10), 2):
        for _ in range(n):
            rows.append((1, 5, o1, o2, 1, int(np.clip(np.rint(score_of(o1 + o2) + rng.normal(0, 0.6)), 1, 5))))
    return _table(rows)


def test_test6_pooled_rule_passes_coherent_and_fails_incoherent_agents():
    coherent = _far_pairs(lambda s: 1 + 3 * s / 18)  # agreement rises with openness
    reversed_ = _far_pairs(lambda s: 4 - 3 * s / 18)  # the least open agree most
    flat = _far_pairs(lambda s: 3.0)  # openness ignored
    t6 = lambda df, rule: an.six_tests(df, 0.01, rule).set_index("test").loc[6]  # noqa: E731
    assert t6(coherent, "pooled")["result"] == "pass"
    assert t6(reversed_, "pooled")["result"] == "fail"  # significant the other way
    assert t6(flat, "pooled")["result"].startswith("inconclusive (")  # no effect found is not a fail
    strict = t6(coherent, "strict")
    # the strict rule cannot pass even these coherent agents (inconclusive: nothing rejects the other way) ...
    assert strict["result"].startswith("inconclusive (")
    assert 0 < strict["significant"] < strict["comparisons"] == 54  # ... since neighbours barely differ
    # the count of significant comparisons, computed independently
    from scipy.stats import mannwhitneyu

    base = coherent.loc[coherent["open_pair"] == "0-0", "agreement"]
    ps = [
        mannwhitneyu(base, g["agreement"], alternative="less").pvalue
        for pair, g in coherent.groupby("open_pair")
        if pair != "0-0"
    ]
    assert strict["significant"] == sum(min(p * len(ps), 1) < 0.01 for p in ps)
    assert t6(coherent, "pooled")["significant"] == strict["significant"]
    pooled_p = mannwhitneyu(base, coherent.loc[coherent["open_pair"] != "0-0", "agreement"], alternative="less").pvalue
    assert t6(coherent, "pooled")["p"] == pytest.approx(pooled_p)
    with pytest.raises(ValueError, match="test6_rule"):
        an.six_tests(coherent, 0.01, "some")


def test_test6_strict_is_our_reading_the_default_and_pooled_is_labelled_ours():
    """Known answers where the two rules disagree: agreement rises smoothly with openness, so the lowest
    pairing is below the others pooled (pooled passes) but not below its neighbours one by one (strict,
    our reading of the paper's text, cannot pass); and a step (only the least open agree less) that both
    pass."""
    from scipy.stats import mannwhitneyu

    smooth = _far_pairs(lambda s: 1 + 3 * s / 18)
    step = _far_pairs(lambda s: 1.0 if s == 0 else 4.0)

    def by_hand(df):
        """strict: every Bonferroni-corrected one-sided U significant; pooled: one U against the rest."""
        base = df.loc[df["open_pair"] == "0-0", "agreement"]
        others = [g["agreement"] for k, g in df.groupby("open_pair") if k != "0-0"]
        ps = [mannwhitneyu(base, g, alternative="less").pvalue for g in others]
        pooled = mannwhitneyu(base, df.loc[df["open_pair"] != "0-0", "agreement"], alternative="less").pvalue
        return all(min(p * len(ps), 1) < 0.01 for p in ps), bool(pooled < 0.01)

    assert by_hand(smooth) == (False, True) and by_hand(step) == (True, True)  # the data do what they claim
    default = an.six_tests(smooth, 0.01).set_index("test").loc[6]
    strict = an.six_tests(smooth, 0.01, "strict").set_index("test").loc[6]
    pooled = an.six_tests(smooth, 0.01, "pooled").set_index("test").loc[6]
    assert default["result"] == strict["result"] and default["rule"] == strict["rule"]  # strict is the default
    assert strict["result"].startswith("inconclusive (") and pooled["result"] == "pass"
    assert strict["rule"] == an.TEST6_RULE_LABELS["strict"]
    assert strict["rule"].startswith("strict, our reading of the paper's text")
    assert pooled["rule"].startswith("pooled, ours (not a reading of the paper's text)")
    assert strict["detail"].startswith("strict rule (our reading of the paper's text): ")
    assert pooled["detail"].startswith("pooled rule (ours): ")
    # the "any Bonferroni-corrected comparison significant" reading stands beside either rule, without a
    # verdict of its own: on the smooth data it would pass where strict cannot
    k = int(strict["significant"])
    assert k > 0 and strict["beside"] == (
        f"{an.TEST6_ANY_LABEL} (no verdict of its own): pass ({k} of {int(strict['comparisons'])} comparisons "
        "significant)"
    )
    assert pooled["beside"] == strict["beside"]
    # the verdict's reason (what the scorecard shows) names its rule and its counts, not only the first failure
    n_others = smooth["open_pair"].nunique() - 1
    along = an.test6(smooth, 0.01, "strict").verdict.reason
    assert along.startswith(f"strict rule: the lowest openness pairing 0-0 below each of the {n_others} others, ")
    assert f" of {n_others} significant; " in along, along
    assert an.test6(step, 0.01, "pooled").verdict.reason.startswith("pooled rule: the lowest openness pairing 0-0")
    flat = an.six_tests(_far_pairs(lambda s: 3.0), 0.01).set_index("test").loc[6]
    assert flat["beside"].endswith(": inconclusive (0 of 54 comparisons significant)")
    for rule in ("strict", "pooled"):
        assert an.six_tests(step, 0.01, rule).set_index("test").loc[6, "result"] == "pass", rule
    # the other tests carry no rule; Test 6 carries it even without data
    assert set(an.six_tests(smooth, 0.01).query("test != 6")["rule"]) == {""}
    empty = an.six_tests(smooth.iloc[:0], 0.01, "pooled", empty_reason="none").set_index("test")
    assert empty.loc[6, "rule"] == an.TEST6_RULE_LABELS["pooled"]
    assert "our reading of the paper's text" in an.spec_of_test(6, "strict")[1]
    assert "ours" in an.spec_of_test(6, "pooled")[1] and "the paper's rule" not in an.spec_of_test(6, "strict")[1]


def test_degeneracy_flags_replace_pass_and_fail():
    from socsim.stats.degeneracy import Flag

    flag = Flag("coherence preferences (m)", "97% of 30 answers are 1 (threshold 90%)")
    flags = {1: [flag], 6: [flag]}
    out = an.six_tests(_coherent(40), 0.01, flags=flags, alternative=ALT, permutations=199).set_index("test")
    assert (
        out.loc[1, "result"] == "degenerate input: coherence preferences (m): 97% of 30 answers are 1 (threshold 90%)"
    )
    assert out.loc[1, "raw_result"] == "pass" and out.loc[6, "result"].startswith("degenerate input")
    assert (out.loc[[2, 3, 5], "result"] == "pass").all()
    assert out.loc[4, "result"] == out.loc[4, "raw_result"] and out.loc[4, "flags"] == ""  # unflagged: its own


def test_too_few_conversations_are_worded_by_the_rule():
    rows = [(3, 3, 0, 1, 1, 3)] * 3 + [(1, 5, 0, 1, 1, 3)] * 2  # 3 conversations at gap 0, 2 at gap 4
    out = an.six_tests(_table(rows), 0.01).set_index("test")
    assert out.loc[2, "detail"] == "n = 2 conversations a side (gap 0: 3, gap 4: 2), needs 5"
    assert out.loc[2, "result"] == f"inconclusive ({out.loc[2, 'detail']})"


def test_test2_at_n5_under_the_papers_suppression_is_inconclusive_not_pass():
    p0, p4 = ALT
    results, not_rejected = [], 0
    for rep in range(20):
        rng = np.random.default_rng(rep)
        rows = [(3, 3, 0, 0, 1, int(s)) for s in rng.choice(an.SCORES, 5, p=p0)]  # gap 0
        rows += [(1, 5, 0, 0, 1, int(s)) for s in rng.choice(an.SCORES, 5, p=p4)]  # gap 4
        t2 = an.six_tests(_table(rows), 0.01, alternative=ALT).set_index("test").loc[2]
        results.append(t2["result"])
        not_rejected += t2["p"] >= 0.01
        assert t2["power"] < 0.8
    assert not_rejected >= 10  # the KS test mostly fails to reject here: the old rule passed it
    assert "pass" not in results and all(r.startswith("inconclusive (") or r == "fail" for r in results)
    # Test 2's power is the KS test's own (simulated), far below a t test's at the same n
    from socsim.stats.power import ks_power
    from socsim.stats.verdict import power_t

    assert ks_power(*ALT, 10, 10, 0.01, mirror=True) < 0.5 < power_t(2.4, 10, 10, alpha=0.01)


def test_the_latent_shift_moves_the_mean_by_d_sd():
    """Test 4's power moves score distributions on a latent normal scale (socsim.stats.power: latent_shift,
    moved)."""
    from socsim.stats.power import shifted

    # the alternative moves the mean by d SD: 50 / 50 -> 25 / 75 (SD 0.5, mean + 0.25), and back down
    assert shifted([0, 0, 0, 0.5, 0.5], 0.5) == pytest.approx([0, 0, 0, 0.25, 0.75], abs=1e-8)
    assert shifted([0, 0, 0, 0.5, 0.5], -0.5) == pytest.approx([0, 0, 0, 0.75, 0.25], abs=1e-8)
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    mean, sd = (an.SCORES * p).sum(), np.sqrt(((an.SCORES - (an.SCORES * p).sum()) ** 2 * p).sum())
    for d in (0.5, -0.5, 0.2):
        assert (an.SCORES * shifted(p, d)).sum() == pytest.approx(mean + d * sd, abs=1e-8)
    assert shifted([0, 0, 0, 0.05, 0.95], 0.5) is None  # no room above: the mean cannot rise by 0.5 SD
    assert shifted([0, 0, 0, 0, 1.0], 0.5) is None  # no spread: nothing to shift
    assert shifted(p, 0) == pytest.approx(p)
