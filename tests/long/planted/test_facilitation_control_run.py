"""The facilitation study (paper 000) on the planted model and its null twin, end to end: Snakemake starts both
servers (engine `planted`), the study runs at a small design (params.control.yaml's), each control's comments
are annotated by the control itself, and the report's findings, judged per model (`<claim> [<model>]`), say
"yes" to every planted claim the design has power for (facilitators lower toxicity; toxicity differs across
strategies) on the planted model, and on the null twin hold at most as often as chance allows."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from socsim.io.findings import study_findings
from socsim.io.parquet import read_provenance
from socsim.planted import MODEL_IDS
from socsim.planted.facilitation import POWERED

ALPHA = 0.05


@pytest.mark.slow
def test_the_planted_claims_hold_on_the_planted_model_and_not_on_its_null_twin(control_run):
    project = control_run  # params.control.yaml, run once for every study (conftest.py)
    results = project / "results" / "facilitation"

    # a control's comments are annotated by the control alone (the configured annotation model is never asked)
    for model, variant in (("planted", "planted"), ("planted-null", "null")):
        answered = read_provenance(results / "annotations" / f"{model}.parquet")["model"]
        assert {k: v["model_id"] for k, v in answered.items()} == {model: MODEL_IDS[variant]}

    findings = pd.read_parquet(results / "analysis" / "findings.parquet")
    for model in ("planted", "planted-null"):
        mine = findings[(findings.scope_kind == "model") & (findings.scope == model)]
        across = findings.finding_id.isin([i for i, f in study_findings("facilitation").items() if f.across_models])
        alone = findings[(findings.scope_kind == "all") & ~across]
        assert len(mine) == len(alone)  # every pooled finding a model can be judged on alone, judged on the model
        powered = mine[mine.finding_id.isin(list(POWERED))]
        assert len(powered) == len(POWERED), mine.claim.tolist()
        if model == "planted":
            assert (powered.verdict == "yes").all(), powered[["claim", "verdict"]].to_string()
        else:  # at most the binomial allowance of false positives (1 in 100 runs may have more)
            allowance = int(stats.binom.isf(0.01, len(mine), ALPHA))
            assert mine.holds.eq(True).sum() <= allowance, mine[["claim", "verdict"]].to_string()

    # By construction a control writes from a small bank of sentences, so its discussions' diversity lies far below
    # people's: neither control "closely matches" the humans (Fig. 5a), judged in the humans' column, named by them.
    people = findings[findings.finding_id == "fac.humans_diversity_not_matched"].set_index("part")
    assert set(people.scope_kind) == {"humans"} and set(people.scope) == {"fixture (synthetic)"}
    assert people.loc[["planted", "planted-null"], "holds"].eq(True).all(), people[["verdict"]].to_string()
