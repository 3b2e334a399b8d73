"""Paper 000's own data end to end: Snakemake imports, analyses and draws the synthetic fixture in the
release's format (tests/data/syndisco_release) with no LLM stage, vs_paper on the paper's own data."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from support.project import ROOT, copy_project, tool_env

FIXTURE = ROOT / "tests" / "data" / "syndisco_release"


@pytest.mark.slow
def test_snakemake_imports_analyses_and_draws_the_release_with_no_llm_stage(tmp_path):
    """`snakemake --configfile params.syndisco.yaml facilitation` on the fixture: import -> analyse -> figures,
    no model loaded, vs_paper on the paper's own data."""
    project = copy_project(tmp_path / "project")
    override = project / "release.yaml"
    humans = "  analysis:\n    human_reference: data/facilitation/humans_fixture.xlsx\n"  # (the release's: opt-in)
    override.write_text(f"facilitation:\n  data:\n    path: {FIXTURE}\n{humans}")
    cmd = ["snakemake", "--cores", "2", "--configfile", "params.syndisco.yaml", "release.yaml", "--", "facilitation"]
    proc = subprocess.run(cmd, cwd=project, env=tool_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = project / "results" / "facilitation"
    ran = {p.stem for p in (results / "metrics").glob("*.json")}
    assert ran == {"import", "humans", "analyse", "figures"}, ran
    assert not (results / "personas.parquet").exists() and not (results / "logs" / "simulate").exists()
    assert (results / "figures" / "fig3_pairwise_toxicity.png").is_file()
    vs = pd.read_parquet(results / "analysis" / "vs_paper.parquet")
    assert len(vs) and vs["comparable"].str.contains("paper's own data").all(), vs["comparable"].unique()
