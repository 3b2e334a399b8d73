"""Coherence suppression (Table 3): the expected distributions by hand (linear and sigmoid shifts), the
observed against the expected mean per gap, and its verdict with known answers: about the nominal rate
without suppression, a pass under the paper's (socsim.coherence.analysis.measures, .tests)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from socsim.coherence import analysis as an
from support.studies.coherence import ALT, _gaps, _suppressed

# -- expected distributions and suppression ----------------------------------------------------------


def test_expected_distributions_by_hand():
    p0 = np.array([0.0, 0.0, 0.2, 0.3, 0.5])
    lin = an.expected_distributions(p0, "linear")
    assert lin[0].tolist() == pytest.approx(p0.tolist())
    assert lin[4].tolist() == pytest.approx([0.5, 0.3, 0.2, 0.0, 0.0])
    assert lin[2].tolist() == pytest.approx([0.25, 0.15, 0.2, 0.15, 0.25])
    assert (an.SCORES * lin[4]).sum() == pytest.approx(1.7)  # 0.5*1 + 0.3*2 + 0.2*3
    sig = an.expected_distributions(p0, "sigmoid")
    assert sig[2].tolist() == pytest.approx(lin[2].tolist())  # both shifts are half way at gap 2
    assert 0 < an.shift_weight(1, "sigmoid") < an.shift_weight(1, "linear")


def test_suppression_on_synthetic_gap0():
    # gap 0: 50% fives, 30% fours, 20% threes -> mean 4.3; expected at gap 4: mean 1.7.
    gap0 = [5] * 50 + [4] * 30 + [3] * 20
    gap4 = [4] * 60 + [3] * 40  # observed mean 3.6
    df = pd.DataFrame({"gap": [0] * 100 + [4] * 100, "agreement": gap0 + gap4})
    out = an.suppression(df, "linear", {"draw": 100, "repeats": 500, "level": 0.95}, seed=0).set_index("gap")
    assert out.loc[4, "expected"] == pytest.approx(1.7) and out.loc[4, "observed"] == pytest.approx(3.6)
    assert out.loc[4, "difference"] == pytest.approx(1.9) and out.loc[4, "suppression"] == pytest.approx(3.6 / 1.7)
    assert out.loc[0, "difference"] == pytest.approx(0.0)
    assert out.loc[4, "expected_p1"] == pytest.approx(0.5) and out.loc[4, "observed_p4"] == pytest.approx(0.6)


# -- the sigmoid's steepness -------------------------------------------------------------------------


def test_sigmoid_steepness():
    s = lambda x, k: 1 / (1 + math.exp(-k * (x - 2)))  # noqa: E731
    for k in (0.5, 2.0, 6.0):
        by_hand = (s(1, k) - s(0, k)) / (s(4, k) - s(0, k))
        assert an.shift_weight(1, "sigmoid", k) == pytest.approx(by_hand)
        assert an.shift_weight(0, "sigmoid", k) == pytest.approx(0) and an.shift_weight(4, "sigmoid", k) == 1
    assert an.shift_weight(1, "sigmoid") == an.shift_weight(1, "sigmoid", 2.0)  # the default
    assert an.shift_weight(1, "sigmoid", 1e-4) == pytest.approx(0.25, abs=1e-4)  # flat: linear
    assert an.shift_weight(1, "sigmoid", 50) < 1e-9 and an.shift_weight(3, "sigmoid", 50) > 1 - 1e-9  # a step
    p0 = np.array([0.0, 0.0, 0.2, 0.3, 0.5])
    assert an.expected_distributions(p0, "sigmoid", 6.0)[1].tolist() == pytest.approx(
        (p0 + an.shift_weight(1, "sigmoid", 6.0) * (p0[::-1] - p0)).tolist()
    )
    with pytest.raises(ValueError):
        an.shift_weight(1, "sigmoid", 0)


def test_suppression_holds_at_about_the_nominal_rate_without_suppression():
    # null at the paper's shape: gap 0 as the paper's Table 3, every gap as the linear expectation
    p0, _ = ALT
    expected = an.expected_distributions(p0, "linear")
    per_gap = {g: 0 for g in (1, 2, 3, 4)}
    held, reps = 0, 50
    for rep in range(reps):
        verdicts, claim = _suppressed(_gaps(np.random.default_rng(rep), 40, lambda g: expected[g]))
        held += claim.holds is True
        for g, v in verdicts.items():
            per_gap[g] += v.holds is True
    assert held <= 0.1 * reps  # the claim (all four gaps) in at most 10 % of null runs
    # each gap's one-sided test rejects at about alpha = 0.05 (a test ignoring the error of the
    # expected mean, which comes from the gap-0 sample, would reject more often)
    assert sum(per_gap.values()) <= 0.1 * 4 * reps and max(per_gap.values()) <= 0.15 * reps, per_gap


def test_suppression_holds_with_the_papers_suppression():
    p0, p4 = ALT  # gap 4 observed mean 3.6 where 1.8 is expected; gaps 1-3 suppressed alike
    lam = float((p4 - p0[::-1])[0] / (p0 - p0[::-1])[0])
    expected = an.expected_distributions(p0, "linear")
    suppressed = {g: (1 - lam) * expected[g] + lam * p0 for g in range(5)}
    held = sum(
        _suppressed(_gaps(np.random.default_rng(rep), 80, lambda g: suppressed[g]))[1].holds is True
        for rep in range(20)
    )
    assert held >= 18  # every gap must hold; gap 1's suppression is the smallest
    # too few conversations: inconclusive with the n and what it needs, not a yes
    verdicts, claim = _suppressed(_gaps(np.random.default_rng(0), 3, lambda g: suppressed[g]))
    assert claim.holds is None and claim.label.startswith("inconclusive (n = 3 conversations at gap 0, needs 30")
    # enough at gap 0, one conversation at gap 4: that gap is inconclusive, so is the claim
    df = _gaps(np.random.default_rng(0), 40, lambda g: suppressed[g])
    df = pd.concat([df[df["gap"] != 4], df[df["gap"] == 4].head(1)])
    verdicts, claim = _suppressed(df)
    assert verdicts[4].label == "inconclusive (n = 1 conversations at gap 4 (40 at gap 0), needs 30)"
    assert claim.holds is None
