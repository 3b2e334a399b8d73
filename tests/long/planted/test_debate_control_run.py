"""The DEBATE study (paper 003) on the planted model and its null twin, end to end: Snakemake starts both servers
(engine `planted`), the study replays the planted humans (data source `planted`: 4 groups on each of the 7 Depth
topics) in Mode 3, each control's tweets and utterances are annotated by the control itself, and the report's
findings say "yes" to both planted claims (the twins converge more than the humans; they follow their round-1
partner more than the humans) on the planted model, and on the null twin hold at most as often as chance allows.
Sect. 6 is judged on each agent model, each finding naming its model (socsim.scorecard.split_model reads it), so
one run's analysis judges both."""

from __future__ import annotations

import pandas as pd
import pytest

from socsim.scorecard import null_allowance, split_model

PLANTED_CLAIMS = (
    "Sect. 6: the twins' groups converge more than the humans'",
    "Sect. 6 / Fig. 3: the twins follow their round-1 partner more than the humans do",
)
MODELS = ["planted", "planted-null"]  # params.control.yaml's debate.agent_models


def _model_findings(findings: pd.DataFrame, model: str) -> pd.DataFrame:
    """The findings judged on `model`'s twins: those naming it (socsim.scorecard.split_model)."""
    return findings[[split_model(c, MODELS)[1] == model for c in findings.claim]]


@pytest.mark.slow
def test_the_planted_claims_hold_on_the_planted_model_and_not_on_its_null_twin(control_run):
    project = control_run  # params.control.yaml, run once for every study (conftest.py)
    results = project / "results" / "debate"

    # a control's texts are annotated by the control alone
    ann = pd.concat(pd.read_parquet(p) for p in sorted((results / "annotations").glob("*.parquet")))
    assert set(ann.model) == {"planted", "planted-null"} and (ann.annotator == ann.model).all()

    findings = pd.read_parquet(results / "analysis" / "findings.parquet")
    planted = _model_findings(findings, "planted")
    for claim in PLANTED_CLAIMS:
        mine = planted[planted.claim.str.startswith(claim)]
        assert len(mine) == 1 and mine.verdict.iloc[0] == "yes", planted[["claim", "verdict"]].to_string()
    null = _model_findings(findings, "planted-null")
    for claim in (*PLANTED_CLAIMS, "Sect. 6: the twins' public tweet stance drifts upwards"):  # Sect. 6, both models
        assert (planted.claim.str.startswith(claim).sum(), null.claim.str.startswith(claim).sum()) == (1, 1), claim
    assert null.holds.eq(True).sum() <= null_allowance(len(null)), null[["claim", "verdict"]].to_string()
