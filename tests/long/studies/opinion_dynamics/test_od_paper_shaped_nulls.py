"""Opinion-dynamics verdicts under paper-shaped nulls (issue 34): 15 topics x 2 framings x 3 bias levels x 2
memories, the whole findings per run; the small designs are in tests/studies/opinion_dynamics/test_od_verdicts.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.studies.od_synthetic import per_sim_rows
from support.studies.opinion_dynamics import KEY, THREE, _at_most, _findings

# -- paper-shaped, every finding under every null (slow) --------------------------------------------------

# (D per bias level, B per framing, the findings whose claim is true in the design)
DESIGNS: dict[str, tuple[dict[str, float], dict[str, float], set[str]]] = {
    "d falls from none to weak": ({"none": 1.0, "weak": 0.8, "strong": 1.6}, {"false": 0.0, "true": 0.0}, set()),
    "none = weak": ({"none": 1.0, "weak": 1.0, "strong": 1.6}, {"false": 0.0, "true": 0.0}, set()),
    "negativity in both framings": (
        {"none": 0.6, "weak": 1.0, "strong": 1.4},
        {"false": -0.5, "true": -0.5},
        {"d_rises"},
    ),
    "no effect at all": (dict.fromkeys(THREE, 1.0), {"false": 0.0, "true": 0.0}, set()),
    "every claim true": (
        {"none": 0.6, "weak": 1.0, "strong": 1.4},
        {"false": -1.0, "true": 0.0},
        {"d_rises", "false_negative", "true_higher"},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("design", list(DESIGNS))
def test_paper_shaped_nulls_say_yes_at_most_at_the_nominal_rate(design: str):
    """15 topics x 2 framings x 3 bias levels x 2 memories (two scopes of the whole findings per run):
    each finding whose claim is false says "yes" at most at 2.5 %, each true one holds in >= 90 % of runs,
    and on "no effect at all" none says "no" above 2.5 % either."""
    d_of, b_of, true = DESIGNS[design]
    rng = np.random.default_rng(list(DESIGNS).index(design))
    reps = 150
    yes: dict[str, int] = {"false_negative": 0, "true_higher": 0, "d_rises": 0}
    no = dict.fromkeys(yes, 0)
    for _ in range(reps):
        ps = pd.concat(
            [per_sim_rows(rng, 15, d_of, b_of, topic_sd=0.3, memory=m) for m in ("cumulative", "reflective")],
            ignore_index=True,
        )
        found = _findings(ps)
        for scope in (KEY, (*KEY[:3], "reflective")):
            for k in yes:
                yes[k] += found[scope][k].verdict.holds is True
                no[k] += found[scope][k].verdict.holds is False
    n = 2 * reps
    for k in yes:
        if k in true:
            assert yes[k] / n >= 0.9, (design, k, yes[k])
        else:
            assert _at_most(yes[k], n), (design, k, yes[k])
    if design == "no effect at all":
        assert all(_at_most(v, n) for v in no.values()), no
