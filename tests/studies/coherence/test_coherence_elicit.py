"""Coherence elicit: the agents' grid and materials, the preference (P) and openness (O) answers parsed
(socsim.coherence.agents)."""

from __future__ import annotations

import pytest

from socsim.coherence import agents as ag
from socsim.config import read_yaml
from socsim.llm.types import Response
from support.project import ROOT
from support.studies.coherence import PROMPTS

TOPICS = read_yaml(ROOT / "data/coherence/topics.yaml")


def resp(text, constraint):
    value, ok, err = constraint.parse(text)
    return Response(
        text=text,
        value=value,
        parse_ok=ok,
        parse_error=err,
        prompt_tokens=0,
        completion_tokens=0,
        finish_reason="stop",
        cached=False,
    )


# -- materials, P and O parsing ------------------------------------------------------------------


def test_grid_and_agents():
    backgrounds = ag.grid(PROMPTS)
    assert len(backgrounds) == 960 and len({tuple(b.values()) for b in backgrounds}) == 960
    assert len(TOPICS["topics"]) == 9 and sorted(t["C"] for t in TOPICS["topics"]) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    cp = {"topics": ["taxes", "favorite_beverage"], "bias_levels": [0, 1, 2], "agents_per_cell": 4}
    rows = ag.build_agents(cp, 7, TOPICS, PROMPTS)
    assert len(rows) == 2 * 5 * 4 and len({r["agent_id"] for r in rows}) == 40
    assert ag.build_agents(cp, 7, TOPICS, PROMPTS) == rows  # seeded
    r = next(r for r in rows if r["bias_level"] == 2 and r["bias_direction"] == "against" and r["topic"] == "taxes")
    assert r["bias_prompt"] == "You do not like taxes of any kind and think they harm the community."
    system = ag.system_prompt(r, PROMPTS, "conversation_instruction")
    assert system.startswith("You are a ") and "United States" in system and "Goodbye." in system
    assert "maintain consistency with these background details" in system


@pytest.mark.parametrize("pref,expected", [("4", 4), (" 2\n", 2), ("", None), ("seven", None), ("9", None)])
def test_preference_parsing(pref, expected):
    agent = {"agent_id": "a", "topic": "taxes"}
    responses = [resp(pref, ag.PREFERENCE)] + [resp("Yes", ag.YES_NO)] * 9
    [row] = ag.profile_rows([agent], responses, PROMPTS, "count", "m")
    assert row["preference"] == expected and row["preference_ok"] is (expected is not None)
    assert row["preference_raw"] == pref


def test_openness_count_reverse_keying_and_failures():
    answers = ["Yes", "Yes", "No", "No", "Yes", "No", "No", "No", "No"]  # items 2 (Yes) and 9 (No) reversed
    items = PROMPTS["openness_items"]
    assert [i + 1 for i, it in enumerate(items) if it["reverse"]] == [2, 9]
    assert ag.openness_score(answers, items, "count") == 3
    # reverse keying: item 2 Yes no longer counts, item 9 No now counts
    assert ag.openness_score(answers, items, "reverse_keyed") == 3 - 1 + 1
    responses = [resp("3", ag.PREFERENCE)] + [resp(a, ag.YES_NO) for a in ["yes", "", "No"] + ["No"] * 6]
    [row] = ag.profile_rows([{"agent_id": "a"}], responses, PROMPTS, "count", "m")
    assert row["openness"] is None and not row["openness_ok"]  # an empty answer: no score, raw kept
    assert row["openness_answers"][:3] == ["yes", "", "No"]
    responses = [resp("3", ag.PREFERENCE)] + [resp(a, ag.YES_NO) for a in ["yes", "NO"] + ["No"] * 7]
    [row] = ag.profile_rows([{"agent_id": "a"}], responses, PROMPTS, "count", "m")
    assert row["openness"] == 1 and row["openness_ok"]
