"""Coherence verdicts under paper-shaped nulls (issue 34): 800 agents of one topic with LLM-like answers and
their own agreeableness (Tests 1 and 5 at the agent as unit), Test 4's topic-level test on 9 topics, and
suppression per gap on coherent data; the small designs are in tests/studies/coherence/test_coherence_nulls.py."""

from __future__ import annotations

import numpy as np
import pytest

from socsim.coherence import analysis as an
from socsim.coherence.analysis import units
from support.studies import coherence as tc  # the coherence tests' shared helpers
from support.studies.coherence import ALPHA, LLM_LIKE_OPENNESS, _agent_design, _agreeable, _topics

# -- paper-shaped nulls (slow) -----------------------------------------------------------------------------


@pytest.mark.slow
def test_paper_shaped_agent_null_tests_1_and_5():
    """Paper-shaped: 800 agents of one topic with LLM-like skewed answers, the project's pairing (a rare
    profile's agent in 80 or more conversations); each agent its own agreeableness, no preference or
    openness effect. At alpha = 0.01 with the agent as unit (one-sided), Tests 1 and 5 pass in at most 3 of 100
    test runs (nominal 1) and fail in at most 3 (nominal 1); the paper's conversation-level p, beside them, rejects
    in many more."""
    sides, pref, open_ = _agent_design(800, 1, (0.5, 0.05, 0.05, 0.1, 0.3), LLM_LIKE_OPENNESS)
    assert np.bincount(sides.ravel()).max() >= 80
    passes = fails = paper = 0
    for rep in range(50):
        df = _agreeable(sides, pref, open_, np.random.default_rng(rep))
        for t in (1, 5):
            row = an.correlation_test(df, t, ALPHA, rep, 999, "")
            passes += row.verdict.holds is True
            fails += row.verdict.holds is False
            paper += row.p_paper < ALPHA
    assert passes <= 3 and fails <= 3 and paper >= 10, (passes, fails, paper)


@pytest.mark.slow
def test_paper_shaped_topic_and_suppression_nulls():
    """Paper-shaped Test 4 null (9 topics, 5 preference pairs, 200 conversations a cell, topic SD 0.2):
    the topic-level test rejects at alpha = 0.01 in at most 2 of 60 runs; suppression per gap on coherent
    data at 30 and 100 a side: at most 3 % a gap over 200 runs (nominal 1 %)."""
    rejected = 0
    for rep in range(60):
        df = _topics(np.random.default_rng(rep), 200, 0.2)
        cells = units.topic_cells(df)
        rejected += units.assignment_p(cells.counts, units.assignments(cells.levels, rep), an.MIN_GROUP)[1] < ALPHA
    assert rejected <= 2
    p0, _ = tc.ALT
    expected = an.expected_distributions(p0, "linear")
    for n in (30, 100):
        per_gap = {g: 0 for g in (1, 2, 3, 4)}
        for rep in range(200):
            verdicts, _ = tc._suppressed(tc._gaps(np.random.default_rng(rep), n, lambda g: expected[g]), ALPHA)
            for g, v in verdicts.items():
                per_gap[g] += v.holds is True
        assert max(per_gap.values()) <= 6, (n, per_gap)  # nominal 2 (sd 1.4); measured at most 4


@pytest.mark.slow
def test_test2_on_asymmetric_scores_unrelated_to_the_gap_passes_at_most_two_percent():
    """No gap effect (gap 4 drawn as gap 0) with asymmetric score distributions (12 drawn from a flat Dirichlet,
    seeded), 100 conversations a side, 40 runs each: Test 2 ("agreement amplifies, disagreement dampens": gap 4
    as the inverted gap 0) passes in at most 2 % of the 480 runs at alpha 0.01 (measured 2026-12-02: 2 of 480)."""
    shapes = np.random.default_rng(9).dirichlet(np.ones(5), 12)
    held = 0
    for k, p in enumerate(shapes):
        for rep in range(40):
            rng = np.random.default_rng(1000 * k + rep)
            g0, g4 = rng.choice(an.SCORES, 100, p=p), rng.choice(an.SCORES, 100, p=p)
            rows = [(3, 3, 0, 0, 1, int(s)) for s in g0] + [(1, 5, 0, 0, 1, int(s)) for s in g4]
            held += an.test2(tc._table(rows), ALPHA, tc.ALT).verdict.holds is True
    assert held <= 0.02 * len(shapes) * 40, held
