"""The DEBATE study (paper 003) on the planted model and its null twin, end to end: Snakemake starts both servers
(engine `planted`), the study replays the planted humans (data source `planted`: 4 groups on each of the 7 Depth
topics) in Mode 3, each control's tweets and utterances are annotated by the control itself, and the report's
findings say "yes" to both planted claims (the twins converge more than the humans; they follow their round-1
partner more than the humans) on the planted model, and on the null twin hold at most as often as chance allows.
Sect. 6 is judged on each agent model, each finding naming its model in its typed scope (socsim.io.findings),
so one run's analysis judges both."""

from __future__ import annotations

import pandas as pd
import pytest

from socsim.scorecard import null_allowance

PLANTED_CLAIMS = ("deb.twins_converge", "deb.twins_follow_partner")  # their finding ids


def _model_findings(findings: pd.DataFrame, model: str) -> pd.DataFrame:
    """The findings judged on `model`'s twins (their typed scope)."""
    return findings[(findings.scope_kind == "model") & (findings.scope == model)]


@pytest.mark.slow
def test_the_planted_claims_hold_on_the_planted_model_and_not_on_its_null_twin(control_run):
    project = control_run  # params.control.yaml, run once for every study (conftest.py)
    results = project / "results" / "debate"

    # a control's texts are annotated by the control alone
    ann = pd.concat(pd.read_parquet(p) for p in sorted((results / "annotations").glob("*.parquet")))
    assert set(ann.model) == {"planted", "planted-null"} and (ann.annotator == ann.model).all()

    findings = pd.read_parquet(results / "analysis" / "findings.parquet")
    planted = _model_findings(findings, "planted")
    for fid in PLANTED_CLAIMS:
        mine = planted[planted.finding_id == fid]
        assert len(mine) == 1 and mine.verdict.iloc[0] == "yes", planted[["claim", "verdict"]].to_string()
    null = _model_findings(findings, "planted-null")
    for fid in (*PLANTED_CLAIMS, "deb.twins_drift_up"):  # Sect. 6, both models
        assert ((planted.finding_id == fid).sum(), (null.finding_id == fid).sum()) == (1, 1), fid
    assert null.holds.eq(True).sum() <= null_allowance(len(null)), null[["claim", "verdict"]].to_string()
