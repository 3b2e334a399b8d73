"""The opinion-dynamics study (paper 002) on the planted model and its null twin, end to end: Snakemake starts both
servers (engine `planted`), the study runs at a small design (params.control.yaml's), each control's reports are
classified and judged by the control itself, and the report's findings say "yes" to every planted claim
(B follows the truth; D rises with confirmation bias) on the planted model, and on the null twin hold at most as
often as chance allows."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

ALPHA = 0.05
PLANTED_CLAIMS = ("od.truth_false_negative", "od.truth_true_higher", "od.d_rises_with_bias")  # their finding ids


@pytest.mark.slow
def test_the_planted_claims_hold_on_the_planted_model_and_not_on_its_null_twin(control_run):
    project = control_run  # params.control.yaml, run once for every study (conftest.py)
    results = project / "results" / "opinion_dynamics"

    # a control's outputs are read by the control alone (the configured classifier is never asked)
    ratings = pd.concat(pd.read_parquet(p) for p in sorted((results / "ratings").glob("*.parquet")))
    assert (ratings.classifier_model == ratings.model).all() and ratings.parse_ok.all()
    judged = pd.read_parquet(results / "outside_info.parquet")
    assert len(judged) and (judged.judge_model == judged.model).all()

    findings = pd.read_parquet(results / "analysis" / "findings.parquet")
    for model in ("planted", "planted-null"):
        mine = findings[(findings.scope_kind == "model") & (findings.scope == model)]
        assert sorted(set(mine.finding_id)) == sorted(PLANTED_CLAIMS)
        if model == "planted":
            assert (mine.verdict == "yes").all(), mine[["claim", "verdict"]].to_string()
        else:  # at most the binomial allowance of false positives (1 in 100 runs may have more)
            allowance = int(stats.binom.isf(0.01, len(mine), ALPHA))
            assert mine.holds.eq(True).sum() <= allowance, mine[["claim", "verdict"]].to_string()
