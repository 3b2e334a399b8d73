"""The coherence study (paper 001) on the planted model and its null twin, end to end: Snakemake starts both
servers (engine `planted`), the study runs at a small design (params.control.yaml's), each control's
conversations are judged by the control itself, and the report's findings say "yes" to every planted claim
(Test 1: agreement falls with the preference gap; Test 5: it rises with openness) on the planted model, and on
the null twin hold at most as often as chance allows."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from socsim.planted import coherence as policy

ALPHA = 0.01  # coherence.alpha


@pytest.mark.slow
def test_the_planted_claims_hold_on_the_planted_model_and_not_on_its_null_twin(control_run):
    project = control_run  # params.control.yaml, run once for every study (conftest.py)
    results = project / "results" / "coherence"

    # a control's conversations are judged by the control alone (the configured judge is never asked)
    judgments = pd.concat(pd.read_parquet(p) for p in sorted((results / "judgments").glob("*.parquet")))
    model = judgments.conversation_id.str.split(".").str[0]
    assert (judgments.judge_model == model).all() and judgments.parse_ok.all()
    calibration = pd.read_parquet(results / "judge_calibration.parquet")
    assert sorted(calibration.judge_model.unique()) == ["planted", "planted-null"]

    findings = pd.read_parquet(results / "analysis" / "findings.parquet")
    for name in ("planted", "planted-null"):
        mine = findings[findings.scope == name]
        assert set(policy.POWERED) <= set(mine.finding_id), mine.claim.tolist()
        assert not mine.verdict.str.startswith("degenerate").any(), mine[["claim", "verdict"]].to_string()
        if name == "planted":
            powered = mine[mine.finding_id.isin(list(policy.POWERED))]
            assert (powered.verdict == "yes").all(), powered[["claim", "verdict"]].to_string()
        else:  # at most the binomial allowance of false positives (1 in 100 runs may have more)
            allowance = int(stats.binom.isf(0.01, len(mine), ALPHA))
            assert mine.holds.eq(True).sum() <= allowance, mine[["claim", "verdict"]].to_string()
