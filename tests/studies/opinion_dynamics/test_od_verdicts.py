"""Issue 34, opinion dynamics: verdicts that a null cannot pass. The study's own analysis
(`analysis.paper_tests`, the claims' findings (od_synthetic.findings), `analysis.d_rises`) on
synthetic per-simulation rows (od_synthetic) with no effect but the nuisance real runs have (a
topic's offset shared by its framings and bias levels), against the old rules computed independently
with scipy on the same data:

- D falling from none to weak, and none = weak: "D rises (none < weak < strong)" is judged by adjacent
  steps; the paper's planned contrasts (-2, 1, 1) and (0, -1, 1) say "yes" on both nulls;
- negativity in both framings: "B < 0 under false framing" is judged with the framing test;
- scopes added: the paired t is Bonferroni-adjusted over a fixed family, so a scope's verdict does not
  depend on what else the run has;
- every part null: a claim of several parts says "no" at most at one part's rate (socsim.stats.verdict.all_of).

A claim read in its direction from a two-sided test at alpha = 0.05 has a nominal rate of 2.5 %. The
fast lane runs small designs; the paper-shaped ones (15 topics, 3 bias levels, 2 memories, the whole
findings) are `slow` (tests/long/studies/opinion_dynamics/test_od_paper_shaped_nulls.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from socsim.io.report import Finding
from socsim.opinion_dynamics import analysis
from support.studies.od_synthetic import per_sim_rows
from support.studies.opinion_dynamics import ALPHA, KEY, NOMINAL, THREE, _at_most, _findings

CLAIM = "D rises with confirmation bias (none < weak < strong)"


def _about(count: int, reps: int, rate: float = NOMINAL) -> bool:
    """`count` of `reps` is within replicate noise of `rate` on either side (binomial tails >= 0.001)."""
    return _at_most(count, reps, rate) and bool(stats.binom.cdf(count, reps, rate) >= 0.001)


def _d_rises(ps: pd.DataFrame, biases: list[str] = THREE) -> Finding:
    """The finding as the claims make it for one scope (test_findings_use_the_same_d_rises checks that)."""
    part = "cumulative, complete"
    return analysis.d_rises(ps, biases, [], CLAIM, f"m, {part}", ALPHA, model="m", part=part)


def _per_topic_d(ps: pd.DataFrame) -> pd.DataFrame:
    """Independently: a topic's D per bias level, averaged over framings (topics x levels)."""
    return ps.groupby(["topic", "bias"]).D.mean().unstack("bias")


def _directed(scores: np.ndarray | pd.Series, direction: int) -> tuple[bool, bool]:
    """(significant in `direction`, significant against it): one-sample t against 0 by scipy, at ALPHA."""
    t = stats.ttest_1samp(np.asarray(scores, dtype=float), 0.0)
    sig = bool(t.pvalue < ALPHA)
    return sig and t.statistic * direction > 0, sig and t.statistic * direction < 0


def _contrasts_rule(per: pd.DataFrame) -> bool:
    """The old verdict, computed with scipy: (-2, 1, 1) and (0, -1, 1) of the per-topic D both > 0."""
    c1 = -2 * per["none"] + per["weak"] + per["strong"]
    c2 = per["strong"] - per["weak"]
    return _directed(c1, +1)[0] and _directed(c2, +1)[0]


def _d_design(rng: np.random.Generator, d_of: Mapping[str, float], topics: int = 15) -> pd.DataFrame:
    return per_sim_rows(rng, topics, d_of, topic_sd=0.3)


# -- D rises: adjacent steps ----------------------------------------------------------------------------


def test_findings_use_the_same_d_rises():
    ps = _d_design(np.random.default_rng(1), {"none": 0.6, "weak": 0.9, "strong": 1.2})
    assert _findings(ps)[KEY]["d_rises"].verdict == _d_rises(ps).verdict


def test_d_falling_from_none_to_weak_never_says_d_rises():
    """D falls from none to weak and rises to strong enough that (-2, 1, 1) > 0: the contrasts say
    "yes" in most runs, adjacent steps in none; where the fall is significant at alpha / 2 they say "no"."""
    rng = np.random.default_rng(34)
    reps = 150
    yes = no = old_yes = fall = 0
    for _ in range(reps):
        ps = _d_design(rng, {"none": 1.0, "weak": 0.8, "strong": 1.6})
        v = _d_rises(ps).verdict
        per = _per_topic_d(ps)
        yes += v.holds is True
        no += v.holds is False
        old_yes += _contrasts_rule(per)
        fall += _directed(per["weak"] - per["none"], +1)[1]
    assert _at_most(yes, reps), yes
    assert old_yes / reps >= 0.5, old_yes  # the null bites: the contrasts' verdict passes it
    assert fall / reps >= 0.5 and no >= fall // 2, (fall, no)  # a significant fall is mostly a "no"


def test_d_equal_at_none_and_weak_says_d_rises_at_one_steps_rate():
    """none = weak < strong: one step null, the other certain. Adjacent steps: "yes" at about 2.5 %
    (the null step's rate); the contrasts: in almost every run."""
    rng = np.random.default_rng(35)
    reps = 150
    yes = old_yes = 0
    for _ in range(reps):
        ps = _d_design(rng, {"none": 1.0, "weak": 1.0, "strong": 1.6})
        yes += _d_rises(ps).verdict.holds is True
        old_yes += _contrasts_rule(_per_topic_d(ps))
    assert _about(yes, reps), yes
    assert old_yes / reps >= 0.9, old_yes


def test_d_rises_on_a_true_rise_and_no_on_a_flat_d_at_most_at_one_parts_rate():
    """A true rise at every step passes; a flat D says "yes", and "no" (a step falling at alpha / 2), at
    most at one step's rate, where a "no" from any step falling at alpha (the old all_of, by scipy) says
    it more often."""
    rng = np.random.default_rng(36)
    reps = 150
    rise = yes = no = old_no = 0
    for _ in range(reps):
        rise += _d_rises(_d_design(rng, {"none": 0.6, "weak": 0.9, "strong": 1.2})).verdict.holds is True
        flat = _d_design(rng, dict.fromkeys(THREE, 1.0))
        v = _d_rises(flat).verdict
        yes += v.holds is True
        no += v.holds is False
        per = _per_topic_d(flat)
        old_no += _directed(per["weak"] - per["none"], +1)[1] or _directed(per["strong"] - per["weak"], +1)[1]
    assert rise / reps >= 0.9, rise
    assert _at_most(yes, reps) and _at_most(no, reps) and no <= old_no, (yes, no, old_no)


# -- B follows the truth: judged with the framing test ----------------------------------------------------


def test_negativity_in_both_framings_does_not_follow_the_truth():
    """B = -0.5 in both framings: every false-framing B is negative, but B is not higher under true
    framing. "B < 0 under false framing" alone (scipy) says yes in most runs; judged with the framing
    test, it and "B higher under true framing" say yes at most at the nominal rate."""
    rng = np.random.default_rng(37)
    reps = 120
    yes = {"false_negative": 0, "true_higher": 0}
    old_yes = 0
    for _ in range(reps):
        ps = per_sim_rows(rng, 10, {"none": 1.0}, {"false": -0.5, "true": -0.5}, topic_sd=0.3)
        found = _findings(ps)[KEY]
        for k in yes:
            yes[k] += found[k].verdict.holds is True
        old_yes += _directed(ps[ps.framing == "false"].groupby("topic").B.mean(), -1)[0]
    assert all(_at_most(v, reps) for v in yes.values()), yes
    assert old_yes / reps >= 0.6, old_yes


def test_b_following_the_truth_passes_and_needs_both_framings():
    rng = np.random.default_rng(38)
    reps = 30
    got = {"false_negative": 0, "true_higher": 0}
    for _ in range(reps):
        found = _findings(per_sim_rows(rng, 15, {"none": 1.0}, {"false": -1.0, "true": 0.0}, topic_sd=0.3))[KEY]
        for k in got:
            got[k] += found[k].verdict.holds is True
    assert all(v / reps >= 0.9 for v in got.values()), got
    ps = per_sim_rows(rng, 10, {"none": 1.0}, {"false": -1.0, "true": 0.0})
    only_false = _findings(ps[ps.framing == "false"])[KEY]
    assert "true_higher" not in only_false
    assert only_false["false_negative"].verdict.label == (
        "inconclusive (needs both framings: B < 0 under false framing alone does not follow the truth)"
    )


# -- Bonferroni over a fixed family: scopes added ---------------------------------------------------------


def test_a_scopes_verdict_does_not_depend_on_the_scopes_the_run_adds():
    """The paired t's p_adj = min(1, 6 p) (scipy's paired t; the paper's family of 3 bias levels x 2
    memories) whatever else runs: a scope's data give the same findings alone and beside five other scopes,
    and the same "yes" count, where a Bonferroni over every paired test of the run (the old rule, by
    scipy on the same data) loses "yes" as scopes are added."""
    rng = np.random.default_rng(39)
    reps = 30
    alone_yes = old_alone = old_added = 0
    for rep in range(reps):
        mine = per_sim_rows(rng, 10, {"none": 1.0, "strong": 1.0}, {"false": -0.45, "true": 0.45}, topic_sd=0.3)
        alone = _findings(mine)[KEY]
        alone_yes += alone["true_higher"].verdict.holds is True
        raw = {}
        for b in ("none", "strong"):
            w = mine[mine.bias == b].pivot(index="topic", columns="framing", values="B")
            raw[b] = stats.ttest_rel(w["true"], w["false"])
        old_alone += all(t.pvalue * 2 < ALPHA and t.statistic > 0 for t in raw.values())  # 2 paired tests
        old_added += all(t.pvalue * 10 < ALPHA and t.statistic > 0 for t in raw.values())  # 10, as below
        if rep >= 3:
            continue  # the run with other scopes, on the first replicates (deterministic: equality)
        others = [
            per_sim_rows(rng, 10, {"none": 1.0, "strong": 1.0}, model=model, memory=memory)
            for model, memory in (("m", "reflective"), ("m2", "cumulative"), ("m2", "reflective"))
        ] + [per_sim_rows(rng, 10, {"none": 1.0}, model=m) for m in ("m3", "m4")]
        run = pd.concat([mine, *others], ignore_index=True)
        assert _findings(run)[KEY] == alone  # every finding of the scope: claim, value, n and verdict (its p)
        rows = [r for r, _ in analysis.paper_tests(run, {}, ALPHA) if r["test"] == "paired t: B true vs false"]
        assert len(rows) == 10
        for b, t in raw.items():
            (row,) = [r for r in rows if (r["model"], r["memory"], r["bias"]) == ("m", "cumulative", b)]
            assert row["p"] == pytest.approx(t.pvalue) and row["p_adj"] == pytest.approx(min(1.0, 6 * t.pvalue))
    assert alone_yes >= 10 and old_added < old_alone, (alone_yes, old_alone, old_added)
