"""The DEBATE study (paper 003) on the planted model and its null twin, end to end: Snakemake starts both servers
(engine `planted`), the study replays the planted humans (data source `planted`: 4 groups on each of the 7 Depth
topics) in Mode 3, each control's tweets and utterances are annotated by the control itself, and the report's
findings say "yes" to both planted claims (the twins converge more than the humans; they follow their round-1
partner more than the humans) on the planted model, and on the null twin hold at most as often as chance allows.
Sect. 6 is judged on the first agent model, so the null twin's Sect. 6 findings come from the same run's analysis
with the null twin named first."""

from __future__ import annotations

import shlex
import subprocess

import pandas as pd
import pytest
import yaml

from socsim.scorecard import null_allowance
from support.planted import control_models
from support.project import copy_project, tool_env

DESIGN = {
    "shard_by": ["model"],
    "data": {"source": "planted", "groups_per_topic": 4},
    "sessions_per_set": None,
    "agent_models": ["planted", "planted-null"],
    "modes": [3],
    "annotator": {"model": "planted"},
}
PLANTED_CLAIMS = (
    "Sect. 6: the twins' groups converge more than the humans'",
    "Sect. 6 / Fig. 3: the twins follow their round-1 partner more than the humans do",
)
SECT6 = "Sect. 6"  # the claims judged on the first agent model (the others name the model they were judged on)


def _model_findings(findings: pd.DataFrame, model: str) -> pd.DataFrame:
    """The findings about `model`'s twins: those naming it, and Sect. 6's (judged on the first model)."""
    return findings[findings.claim.str.contains(f", {model})", regex=False) | findings.claim.str.startswith(SECT6)]


@pytest.mark.slow
def test_the_planted_claims_hold_on_the_planted_model_and_not_on_its_null_twin(tmp_path):
    project = copy_project(tmp_path / "project")
    (project / "ctl.yaml").write_text(yaml.safe_dump({"models": control_models(), "debate": DESIGN}))
    cmd = ["snakemake", "--cores", "2", "--configfile", "ctl.yaml", "--", "debate"]
    proc = subprocess.run(cmd, cwd=project, env=tool_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = project / "results" / "debate"

    # a control's texts are annotated by the control alone
    ann = pd.concat(pd.read_parquet(p) for p in sorted((results / "annotations").glob("*.parquet")))
    assert set(ann.model) == {"planted", "planted-null"} and (ann.annotator == ann.model).all()

    # the same run's analysis with the null twin first: its Sect. 6 findings
    (project / "null_first.yaml").write_text(yaml.safe_dump({"debate": {"agent_models": ["planted-null", "planted"]}}))
    argv = [
        "socsim", "debate", "analyse", "--params", "params.yaml", "--params", "ctl.yaml", "--params", "null_first.yaml",
        "--comparison", "results/debate/comparison", "--sessions", "results/debate/sessions.parquet",
        "--participants", "results/debate/participants.parquet", "--tweets", "results/debate/tweets.parquet",
        "--human-utterances", "results/debate/human_utterances.parquet",
        "--simulated", *sorted(str(p.relative_to(project)) for p in (results / "simulated").glob("*.parquet")),
        "--annotations", *sorted(str(p.relative_to(project)) for p in (results / "annotations").glob("*.parquet")),
        "--human-annotations", "results/debate/human_annotations.parquet", "--paper-file", "data/debate/paper.yaml",
        "--analysis", "null_analysis", "--metrics", "null_analysis.json",
    ]  # fmt: skip
    proc = subprocess.run(argv, cwd=project, env=tool_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, shlex.join(argv) + "\n" + proc.stderr[-3000:]

    planted = _model_findings(pd.read_parquet(results / "analysis" / "findings.parquet"), "planted")
    for claim in PLANTED_CLAIMS:
        mine = planted[planted.claim.str.startswith(claim)]
        assert len(mine) == 1 and mine.verdict.iloc[0] == "yes", planted[["claim", "verdict"]].to_string()
    null = _model_findings(pd.read_parquet(project / "null_analysis" / "findings.parquet"), "planted-null")
    assert all(null.claim.str.startswith(c).any() for c in PLANTED_CLAIMS)
    assert null.holds.eq(True).sum() <= null_allowance(len(null)), null[["claim", "verdict"]].to_string()
