"""Coherence pairing: every profile pair, never an agent with itself, who opens (a seeded fair coin per
pair), each pair a self-contained episode (socsim.coherence.agents.pair_agents)."""

from __future__ import annotations

import itertools

import numpy as np

from socsim.coherence import agents as ag
from support.studies.coherence import PROMPTS, T_TOPICS

# -- pairing --------------------------------------------------------------------------------------


def _profiles(n=30, seed=0):
    rng = np.random.default_rng(seed)
    agents, profiles = {}, []
    for i in range(n):
        aid = f"t.{i}"
        agents[aid] = {
            "agent_id": aid,
            "topic": "t",
            "bias_level": int(rng.integers(0, 3)),
            "persona_prompt": f"You are agent {i}.",
            "bias_prompt": "You like taxes." if i % 2 else None,
        }
        profiles.append(
            {
                "agent_id": aid,
                "model": "m",
                "preference": int(rng.integers(1, 6)),
                "openness": int(rng.integers(0, 3)),
                "preference_ok": True,
                "openness_ok": True,
            }
        )
    profiles.append(
        {
            "agent_id": "t.bad",
            "model": "m",
            "preference": None,
            "openness": None,
            "preference_ok": False,
            "openness_ok": False,
        }
    )
    agents["t.bad"] = {"agent_id": "t.bad", "topic": "t", "bias_level": 0, "persona_prompt": "", "bias_prompt": None}
    return agents, profiles


def test_pairing_covers_every_profile_pair_and_never_self_pairs():
    agents, profiles = _profiles()
    pairs = ag.pair_agents(
        profiles, agents, {"unit": "profile", "k": 2, "max_pairs_per_topic": None}, 1, T_TOPICS, PROMPTS
    )
    by_profile = {}
    for p in profiles[:-1]:
        by_profile.setdefault(
            ag.profile_key(p["preference"], p["openness"], agents[p["agent_id"]]["bias_level"], "profile"), []
        ).append(p["agent_id"])
    expected = {
        (u, v)
        for u, v in itertools.combinations_with_replacement(sorted(by_profile), 2)
        if u != v or len(by_profile[u]) >= 2
    }
    got = {(p["profile1"], p["profile2"]) for p in pairs}
    assert got == expected
    assert len(pairs) == 2 * len(expected)
    assert all(p["agent1_id"] != p["agent2_id"] for p in pairs)
    assert all("t.bad" not in (p["agent1_id"], p["agent2_id"]) for p in pairs)
    for p in pairs:  # each agent has the profile its side says
        for side in (1, 2):
            assert p[f"agent{side}_id"] in by_profile[p[f"profile{side}"]]
    capped = ag.pair_agents(
        profiles, agents, {"unit": "profile", "k": 1, "max_pairs_per_topic": 5}, 1, T_TOPICS, PROMPTS
    )
    assert len(capped) == 5
    binned = ag.pair_agents(
        profiles, agents, {"unit": "bins", "k": 1, "max_pairs_per_topic": None}, 1, T_TOPICS, PROMPTS
    )
    assert all(p["profile1"].split("-")[1] in {"low", "mid", "high"} for p in binned)


# -- who opens ----------------------------------------------------------------------------------------------


def _many_profiles(n_agents=400, seed=0):
    rng = np.random.default_rng(seed)
    agents, profiles = {}, []
    for i in range(n_agents):
        aid = f"t.{i}"
        agents[aid] = {"agent_id": aid, "topic": "t", "bias_level": 0, "persona_prompt": "p", "bias_prompt": None}
        profiles.append(
            {
                "agent_id": aid,
                "model": "m",
                "preference": int(rng.integers(1, 6)),
                "openness": int(rng.integers(0, 10)),
                "preference_ok": True,
                "openness_ok": True,
            }
        )
    return agents, profiles


def test_opener_is_a_seeded_fair_coin_per_pair():
    agents, profiles = _many_profiles()
    pairing = {"unit": "profile", "k": 2, "max_pairs_per_topic": None}
    pairs = ag.pair_agents(profiles, agents, pairing, 3, T_TOPICS, PROMPTS)
    assert len(pairs) > 2000 and {p["opener"] for p in pairs} == {1, 2}
    share = np.mean([p["opener"] == 1 for p in pairs])
    assert abs(share - 0.5) < 0.04  # binomial sd ~0.011 at n > 2000
    pref = {p["agent_id"]: p["preference"] for p in profiles}
    far = [p for p in pairs if {pref[p["agent1_id"]], pref[p["agent2_id"]]} == {1, 5}]
    low_opens = [pref[p[f"agent{p['opener']}_id"]] == 1 for p in far]
    assert len(far) > 50 and 0.3 < np.mean(low_opens) < 0.7  # the P = 1 agent no longer always opens
    again = ag.pair_agents(profiles, agents, pairing, 3, T_TOPICS, PROMPTS)
    assert [p["opener"] for p in again] == [p["opener"] for p in pairs]  # seeded
    other = ag.pair_agents(profiles, agents, pairing, 4, T_TOPICS, PROMPTS)
    assert [p["opener"] for p in other] != [p["opener"] for p in pairs]
    # derived from the conversation id alone, not from a shared RNG's state
    assert all(p["opener"] == ag.opener(3, p["conversation_id"]) for p in pairs)


def test_pairs_are_self_contained_episodes():
    agents, profiles = _profiles()
    pairs = ag.pair_agents(
        profiles, agents, {"unit": "profile", "k": 1, "max_pairs_per_topic": None}, 5, T_TOPICS, PROMPTS
    )
    for p in pairs:
        assert p["question"] == "Do you like taxes?" and p["seed"] == 5
        for k in (1, 2):
            a = agents[p[f"agent{k}_id"]]
            assert p[f"agent{k}_system_prompt"] == ag.system_prompt(a, PROMPTS, "conversation_instruction")
            assert p[f"agent{k}_system_prompt"].startswith(a["persona_prompt"])
    assert {p["agent1_system_prompt"] == p["agent2_system_prompt"] for p in pairs} == {False}
