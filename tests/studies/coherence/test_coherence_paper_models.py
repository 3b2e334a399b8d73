"""Coherence on the paper's models (params.paper.yaml): Table 4's models with the paper's judges, and
Olmo-7B's context too small for the paper's conversations, named by the plan."""

from __future__ import annotations

import pytest

from socsim.coherence import dialogue
from support.project import ROOT
from support.studies.coherence import PAPER

# -- the paper's models (params.paper.yaml) ------------------------------------------------------------


def _paper_params():
    from socsim import config, studies

    params = config.load([str(ROOT / "params.yaml"), str(ROOT / "params.paper.yaml")])
    studies.check_models(params)  # every name a stage uses is in the registry
    return params


def test_paper_params_list_table4s_models_with_the_papers_judges():
    params = _paper_params()
    cp, registry = params["coherence"], params["models"]
    table4 = PAPER["table4"]["models"]
    ours = {}  # Table 4 name -> our registry name (by paper.yaml's aliases)
    for name, entry in table4.items():
        found = [a for a in entry["aliases"] if a in registry]
        assert len(found) == 1, (name, found)
        ours[name] = found[0]
        assert registry[found[0]]["backend"] == "openai" and registry[found[0]]["serve"]["engine"] == "vllm"
    # every Table 4 model is an agent model but Olmo-7B (its 2048-token context: the next test)
    assert sorted(cp["agent_models"]) == sorted(v for k, v in ours.items() if k != "Olmo-7B")
    judges = dialogue.judges_for(list(cp["agent_models"]), cp["judge_model"], cp["judge_models"])
    paper_judge = {a.lower() for a in table4[PAPER["design"]["judge_model"]]["aliases"]}
    for name, model in ours.items():
        if model not in judges:
            continue
        own = table4[name].get("judge")
        expected = ours[own] if own else ours[PAPER["design"]["judge_model"]]
        assert judges[model] == expected and judges[model] != model, name
    assert cp["judge_model"] in paper_judge


def test_the_papers_olmo_overflows_the_papers_conversations_and_the_plan_names_it(monkeypatch):
    """Olmo-7B's 2048 tokens cannot hold 5 statements a side of up to 256 tokens: the plan refuses it by name.
    The same design on a context of 4096 fits (the error is the context, not the design)."""
    from socsim import plan, studies

    params = _paper_params()
    assert params["models"]["olmo-7b"]["n_ctx"] == 2048 and "olmo-7b" not in params["coherence"]["agent_models"]
    coherence = studies.study("coherence")
    monkeypatch.setattr(studies, "all_studies", lambda: [coherence])  # plan coherence only
    small = ["coherence.agent_models=[olmo-7b]", "coherence.topics=[taxes]", "coherence.agents_per_cell=2"]
    small += ["coherence.pairing.max_pairs_per_topic=2"]  # the paper's turns and utterance tokens stay
    files = [str(ROOT / "params.yaml"), str(ROOT / "params.paper.yaml")]
    p = plan.plan_params(files, small)
    assert (p["coherence"]["turns_per_agent"], p["coherence"]["utterance_max_tokens"]) == (5, 256)
    plans, _, skipped = plan.run(p, ROOT)
    assert skipped == []
    with pytest.raises(plan.PlanError) as info:
        plan.check_overflow(plans, p)
    text = str(info.value)
    assert "coherence converse on olmo-7b" in text and "n_ctx = 2048" in text
    assert "elicit" not in text and "judge" not in text  # only the conversations overflow
    wide = plan.plan_params(files, [*small, "models.olmo-7b.n_ctx=4096"])
    plan.check_overflow(plan.run(wide, ROOT)[0], wide)
