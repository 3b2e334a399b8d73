"""The scorecard of the recorded tiny run (support.recorded: `snakemake --cores 2` on the tiny config, its default
target): the last stage of the run, over every study's report, its cells the reports' own verdicts."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from socsim import scorecard as sc
from socsim import studies

pytestmark = pytest.mark.slow  # the recorded tiny run (support.recorded)


def test_the_run_ends_with_the_scorecard_of_every_study(tiny_run):
    out = tiny_run.project / "results" / "scorecard"
    long = pd.read_parquet(out / "scorecard.parquet")
    assert set(long["study"]) == {s.name for s in studies.all_studies()}
    prov = json.loads((out / "provenance.json").read_text())
    assert sorted(r["path"] for r in prov["reports"]) == sorted(f"results/{s}/analysis" for s in set(long["study"]))
    # Each column is a model that answered in the run, with the identity its stages' metrics recorded.
    for study in set(long["study"]):
        answered = {}
        for f in (tiny_run.project / "results" / study / "metrics").rglob("*.json"):
            answered |= {n: m["identity"] for n, m in (json.loads(f.read_text()).get("models") or {}).items()}
        cells = long[(long["study"] == study) & sc.judged(long)]
        # (the humans' column is named by their data; a finding that compares the models stands on them together)
        models = cells[~cells["model"].str.startswith("humans (") & (cells["model"] != sc.POOLED)]
        assert set(models["model"]) <= set(answered), study
        for model, identity in models.groupby("model")["identity"].first().items():
            assert identity.startswith(str(answered[model]["model_id"])), (study, model)
    # Every cell that ran is its report's finding: the same verdicts, counted independently per study.
    for study, cells in long[sc.judged(long)].groupby("study"):
        findings = pd.read_parquet(tiny_run.project / "results" / study / "analysis" / "findings.parquet")
        degenerate = findings["verdict"].str.startswith("degenerate input")
        holds = findings["holds"].fillna(False).astype(bool)
        assert (cells["verdict"] == "degenerate").sum() <= degenerate.sum()
        assert (cells["verdict"] == "holds").sum() <= holds.sum()
        assert len(cells) <= len(findings)
    # The run says it on the console (the job's line), and the table people read has every claim.
    assert "scorecard of 4 studies" in tiny_run.console
    table = pd.read_csv(out / "scorecard_table.csv")
    assert len(table) == long.drop_duplicates(["study", "finding_id", "part"]).shape[0]
    assert list(table.columns[:4]) == ["study", "claim", "version", "the paper"]  # the paper's result first
    assert (out / "scorecard.png").stat().st_size > 10_000


def test_every_model_of_the_run_stands_beside_paper_000s_humans(tiny_run):
    """Fig. 5a against the humans (the default human reference: socsim's synthetic fixture), one row per model of the
    run in the humans' column, named by their data."""
    long = pd.read_parquet(tiny_run.project / "results" / "scorecard" / "scorecard.parquet")
    people = long[(long["study"] == "facilitation") & (long["model"] == "humans (fixture (synthetic))")]
    setups = pd.read_parquet(tiny_run.project / "results" / "facilitation" / "setups.parquet")
    main = setups.loc[setups["condition"] == "main", "model"]
    fig5a = people[people["finding_id"] == "fac.humans_diversity_not_matched"]
    assert set(fig5a["part"]) == set(main) and len(fig5a) == main.nunique(), fig5a[["part", "verdict"]]
    assert fig5a["claim"].str.startswith("none of the models closely matches").all()
