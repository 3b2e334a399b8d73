"""DEBATE verdicts under paper-shaped nulls and true effects (issue 34): 31 groups over 7 topics, 300
replicates; the small designs and what each null is are in tests/studies/debate/test_debate_nulls.py."""

from __future__ import annotations

import numpy as np
import pytest

from socsim.debate import analysis
from socsim.debate.analysis import stats
from support.studies.debate import (
    SHIFT_DZ_04,
    SHIFT_DZ_04_TOPICS,
    TOPIC_HALF_SD,
    _group_claims,
    _moderation_null,
    _no_change,
    _one_sample_yes,
    _partner_parts,
    limit,
)
from support.studies.debate_synthetic import by_session, sect6

# --- paper-shaped: 31 groups over 7 topics (slow) -------------------------------------------------


@pytest.mark.slow
def test_paper_shaped_nulls_and_true_effects():
    reps = 300
    got = _moderation_null(reps, 31, seed=201)
    for claim in ("convergence", "drift", "partner"):
        assert got[claim] <= limit(reps), (claim, got)
    assert got["paper convergence"] >= 0.8 * reps and got["paper drift"] >= 0.3 * reps, got

    rng = np.random.default_rng(202)
    runs = [_partner_parts(*sect6(rng, 31, twin_constant=0.5, human_partner=0.1)) for _ in range(100)]
    assert sum(r[0] for r in runs) <= limit(100) and sum(r[1] for r in runs) >= 60
    runs = [_partner_parts(*sect6(rng, 120, twin_constant=0.5, human_partner=0.1)) for _ in range(100)]
    assert sum(r[0] for r in runs) <= limit(100) and sum(r[1] for r in runs) >= 90

    drift, over_groups = 0, 0
    for _ in range(reps):
        m, topics = sect6(rng, 31, topic_sd=0.5)
        drift += _group_claims(m, topics)[1]
        changes = stats.group_changes(stats.group_level(m)[0], stats.MODEL_WRITTEN_TESTS)
        over_groups += _one_sample_yes(changes[("tweet mean, rounds 2-3", "llm change")], +1)
    assert drift <= limit(reps) and over_groups >= 0.1 * reps

    counts = [0, 0, 0]
    ran = {(m, a) for m in (1, 2) for a in ("original", "no_private_profile")}
    for _ in range(reps):
        s, topics = by_session(rng, 31, topic_sd=2.0, modes=(1, 2))
        orig = s[s.ablation == "original"]
        order = analysis.mode_order(orig, topics, [])
        assert order is not None
        counts[0] += order.verdict.holds is True
        counts[1] += analysis.llm_longer(orig, topics, []).verdict.holds is True
        counts[2] += analysis.ablation_claim(s, "m", "depth", ran, {}, topics).verdict.holds is True
    assert max(counts) <= limit(reps), counts

    # "does not change", judged over topics: a change of d_z 0.4, uniform or varying by topic (half its variance
    # between topics), at the paper's 31 groups and at 120, says yes at most at EQUIVALENCE_ALPHA; no change that
    # varies by topic around 0 says no at most at ALPHA (benchmarks/debate_no_change.py prints the counts)
    own = np.random.default_rng(203)  # (its own stream: the true effects below keep theirs)
    for groups in (31, 120):
        for kw in ({"human_shift": SHIFT_DZ_04}, {"human_shift": SHIFT_DZ_04_TOPICS, "human_topic_sd": TOPIC_HALF_SD}):
            runs = [_no_change(*sect6(own, groups, **kw)) for _ in range(reps)]
            assert sum(r[0] for r in runs) <= limit(reps, analysis.EQUIVALENCE_ALPHA), (groups, kw)
        zero = [_no_change(*sect6(own, groups, human_topic_sd=TOPIC_HALF_SD)) for _ in range(reps)]
        assert sum(r[1] for r in zero) <= limit(reps, 0.05), groups

    # true effects at the paper's shape
    drift_true = [_group_claims(*sect6(rng, 31, drift=0.5, moderate=True))[1] for _ in range(50)]
    conv_true = [_group_claims(*sect6(rng, 31, converge=0.4))[0] for _ in range(50)]
    assert sum(drift_true) >= 40 and sum(conv_true) >= 40, (sum(drift_true), sum(conv_true))
