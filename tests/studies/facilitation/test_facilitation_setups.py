"""Facilitation setups and personas: only the facilitator told it may stay silent, no roles without their
traits, the ablations on their own model and Fig. 5's baseline from them (socsim.facilitation.setups,
.materials)."""

from __future__ import annotations

import pandas as pd
import pytest

from socsim.config import read_yaml
from socsim.facilitation import analysis
from support.project import ROOT


def test_only_the_facilitator_is_told_it_may_stay_silent():
    from socsim.facilitation import setups

    instructions = read_yaml(ROOT / "data" / "facilitation" / "instructions.yaml")
    strategies = read_yaml(ROOT / "data" / "facilitation" / "strategies.yaml")
    for variant in ("full", "basic"):
        assert "silent" not in setups.user_instructions(instructions, variant, False).lower()
        assert "silent" in setups.user_instructions(instructions, variant, True).lower()
    assert "silent" in setups.facilitator_prompt(strategies, "Rules Only").lower()


def test_no_roles_drops_the_role_traits_too():
    from socsim.facilitation import materials, setups

    roles = materials.read_roles(ROOT / "data" / "facilitation" / "roles.yaml")
    personas = materials.personas_from_file(ROOT / "data" / "facilitation" / "personas.jsonl", roles, 30)
    trolls = [p for p in personas if p["role"] == "troll"]
    assert trolls and all(p["role_traits"] for p in trolls)
    for p in trolls:
        with_roles = setups.participant_prompt(p, "Be brief.", True, True)
        without = setups.participant_prompt(p, "Be brief.", True, False)
        assert all(t in with_roles for t in p["role_traits"]) and p["special_instructions"] in with_roles
        assert not any(t in without for t in p["role_traits"]) and p["special_instructions"] not in without
        assert all(t in without for t in p["personality_characteristics"])


# -- ablations' model, Fig. 5 baseline and human-reference note -------------------------------------


def _fp(**over):
    from socsim import config

    base = {
        "models": ["llama", "qwen"],
        "strategies": ["No Moderator", "No Instructions"],
        "users_per_discussion": 3,
        **over,
    }
    return config.validate({"facilitation": base})["facilitation"]


def test_ablations_run_on_their_model_and_fig5_takes_the_baseline_from_them():
    from socsim.facilitation import setups

    conds = setups.conditions(_fp(ablations={"model": "qwen"}))
    assert all(models == ["qwen"] for c, models, _, _ in conds if c.name != "main")
    assert setups.ablation_model(_fp()) == "llama"  # null: the first model
    with pytest.raises(ValueError, match="ablations.model"):
        setups.ablation_model(_fp(ablations={"model": "gpt"}))
    div = pd.DataFrame(
        [
            {
                "discussion_id": "a",
                "condition": "main",
                "model": "llama",
                "strategy": "No Instructions",
                "turn_taking": "respond",
                "diversity": 0.5,
                "source": "synthetic",
            },
            {
                "discussion_id": "b",
                "condition": "main",
                "model": "qwen",
                "strategy": "No Instructions",
                "turn_taking": "respond",
                "diversity": 0.6,
                "source": "synthetic",
            },
            {
                "discussion_id": "c",
                "condition": "main",
                "model": "qwen",
                "strategy": "No Moderator",
                "turn_taking": "respond",
                "diversity": 0.7,
                "source": "synthetic",
            },
            {
                "discussion_id": "d",
                "condition": "tt_random",
                "model": "qwen",
                "strategy": "No Instructions",
                "turn_taking": "random",
                "diversity": 0.9,
                "source": "synthetic",
            },
        ]
    )
    base, label = analysis.ablation_baseline(div)
    assert base["discussion_id"].tolist() == ["b"] and "qwen" in label
    assert "not set" in analysis.human_note(div)
    one = {"discussion_id": "human.1", "diversity": 0.8, "source": "human", "humans": "fixture (synthetic)"}
    human = pd.concat([div, pd.DataFrame([one])])
    assert "not set" not in analysis.human_note(human) and "fixture (synthetic)" in analysis.human_note(human)
