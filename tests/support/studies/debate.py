"""The DEBATE null-calibration helpers (issue 34) shared by the small designs (tests/studies/debate/
test_debate_nulls.py) and the paper-shaped ones (tests/long/studies/debate): the most "yes" a verdict at
its nominal rate gives (`limit`), and each claim judged on synthetic members or debates (support.studies.
debate_synthetic) as the study's analysis judges it, beside the paper's own reading."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.debate import analysis
from socsim.debate.analysis import stats
from socsim.stats import ttest
from socsim.stats import verdict as vd
from support.studies.debate_synthetic import sect6

NOMINAL = vd.ALPHA / 2  # a directional claim by a two-sided test at .05, in its direction
# the humans' round-3 shift that makes the group-mean tweet change d_z = 0.4: the change of a group of 4 has
# SD sqrt(2 NOISE^2 / 4) = 0.354 (NOISE = 0.5; the latent stance cancels)
SHIFT_DZ_04 = 0.4 * math.sqrt(2 * 0.5**2 / 4)
# A change of d_z 0.4 whose size varies by topic, half of its variance between topics: the groups' change has SD
# sqrt(2) times the uniform one's, and 0.4 of it as its mean.
TOPIC_HALF_SD = math.sqrt(2 * 0.5**2 / 4)
SHIFT_DZ_04_TOPICS = 0.4 * math.sqrt(2) * TOPIC_HALF_SD


def limit(reps: int, rate: float = NOMINAL) -> int:
    """The most "yes" a verdict at nominal `rate` gives in `reps` replicates, bar a 1-in-1000 chance."""
    return int(sps.binom.ppf(0.999, reps, rate))


def _group_claims(members: pd.DataFrame, topics: dict[str, str]) -> tuple[bool, bool, pd.DataFrame]:
    """(convergence holds, drift holds, the paper's Fig. 2 tests) on model-written points."""
    per_group, tests = stats.group_level(members)
    (conv, drift), _ = analysis.group_claims(per_group, topics, {})
    return conv.verdict.holds is True, drift.verdict.holds is True, tests


def _paper_rule(tests: pd.DataFrame, parts: list[tuple[str, str, int]]) -> bool:
    """The paper's reading of its Fig. 2 tests (round 3 vs 1, from the humans' start): every part
    significant at .05 in its direction (what the verdicts said before issue 34)."""
    t = tests.set_index(["quantity", "test"])
    return all(t.loc[(q, k), "p"] < vd.ALPHA and np.sign(t.loc[(q, k), "d_z"]) == d for q, k, d in parts)


PAPER_CONVERGENCE = [
    ("tweet SD", "llm change", -1),
    ("opinion SD", "llm change", -1),
    ("tweet SD", "llm change vs human change", -1),
    ("opinion SD", "llm change vs human change", -1),
]


PAPER_DRIFT = [("tweet mean", "llm change", +1), ("tweet mean", "llm change vs human change", +1)]


def _moderation_null(reps: int, groups: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    out = dict.fromkeys(("convergence", "drift", "partner", "paper convergence", "paper drift"), 0)
    for _ in range(reps):
        m, topics = sect6(rng, groups, moderate=True)
        conv, drift, tests = _group_claims(m, topics)
        partner, _ = analysis.partner_claim(m, topics, {})
        out["convergence"] += conv
        out["drift"] += drift
        out["partner"] += partner.verdict.holds is True
        out["paper convergence"] += _paper_rule(tests, PAPER_CONVERGENCE)
        out["paper drift"] += _paper_rule(tests, PAPER_DRIFT)
    return out


def _partner_parts(members: pd.DataFrame, topics: dict[str, str]) -> tuple[bool, bool]:
    """(the partner claim holds, the paper's r of the change score with partner minus own: twins above
    humans at .05, tweets and opinions, by its bootstrap over groups)."""
    f, _ = analysis.partner_claim(members, topics, {})
    paper = [stats.correlation_difference(members, o, "partner minus own", repeats=400) for o in ("tweet", "opinion")]
    return f.verdict.holds is True, all(r["p"] is not None and r["p"] < vd.ALPHA and r["diff"] > 0 for r in paper)


def _one_sample_yes(x: pd.Series, direction: int) -> bool:
    mean, p, _, _ = ttest.one_sample_t(x.to_numpy(dtype=float))
    return p is not None and p < vd.ALPHA and mean is not None and mean * direction > 0


def _no_change(members: pd.DataFrame, topics: dict[str, str]) -> tuple[bool, bool]:
    """(the humans' "tweet mean does not change" says yes, says no): judged over the topics the groups nest in."""
    per_group, tested = stats.group_level(members)
    row = next(r for r in tested.itertuples(index=False) if r.quantity == "tweet mean" and r.test == "human change")
    changes = stats.group_changes(per_group, stats.GROUP_TESTS)[("tweet mean", "human change")]
    f = analysis.group_finding(row, {"t": -0.55, "p": 0.59}, [], changes, topics)
    assert f is not None and f.unit == "topics"
    return f.verdict.holds is True, f.verdict.holds is False
