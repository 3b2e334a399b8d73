"""The planted model in the coherence study (socsim.planted.coherence): the study's own agents, elicitation,
pairing, conversations and judge against the real planted server on loopback (HTTP), so the effects reach
Tests 1 and 5 only through the prompts the study builds, what the agents write and what its judge reads; and
chains that lose an effect (the persona dropped from the prompts, the partner's words hidden from an agent,
the judge shown one turn too few) lose it. The whole run on Snakemake, with the report's verdicts, is
tests/long/planted/test_coherence_control_run.py."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
import yaml

from socsim import config, models
from socsim.coherence import agents, dialogue
from socsim.coherence.analysis import measures
from socsim.coherence.analysis import tests as coherence_tests
from socsim.coherence.analysis.flags import input_flags
from socsim.llm import Sampling
from socsim.planted import Ask
from socsim.planted import coherence as policy
from socsim.sim import views
from support.planted import PlantedServer
from support.project import ROOT

pytestmark = pytest.mark.slow  # the planted model's chains over HTTP: tens of seconds (tests/long)

DATA = ROOT / "data" / "coherence"
PROMPTS = yaml.safe_load((DATA / "prompts.yaml").read_text())
TOPICS = yaml.safe_load((DATA / "topics.yaml").read_text())
DESIGN = {
    "topics": ["taxes", "remote_work", "favorite_beverage"],
    "bias_levels": [0, 1, 2],
    "agents_per_cell": 3,
    "pairing": {"max_pairs_per_topic": 30},
    "turns_per_agent": 2,
}
SEED = 7


@pytest.fixture(scope="module")
def servers():
    with PlantedServer("planted") as planted, PlantedServer("null") as null:
        yield {"planted": planted, "null": null}


def _params(server: PlantedServer) -> dict[str, Any]:
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    section = {**DESIGN, "agent_models": ["planted"], "judge_model": "planted"}
    return config.validate(config.deep_merge(base, {"models": {"planted": server.entry()}, "coherence": section}))


def run_chain(
    server: PlantedServer,
    prompts: dict[str, Any] = PROMPTS,
    seen: Callable[[list[dict[str, str]]], list[dict[str, str]]] = lambda m: m,
) -> dict[str, pd.DataFrame]:
    """The study's chain on the planted server: agents -> elicit -> pair -> converse (each agent shown
    `seen(messages)` of its history) -> judge and calibrate; its tables by name."""
    params = _params(server)
    cp = params["coherence"]

    def client():  # no call cache: every chain asks the server
        return models.client(params, models.resolve(params, "planted"), cache_path="")

    agent_rows = agents.build_agents(cp, SEED, TOPICS, prompts)
    c = client()
    reqs = agents.elicitation_requests(agent_rows, TOPICS, prompts, SEED, "planted", c.sampling(max_tokens=4))
    profiles = agents.profile_rows(agent_rows, c.run(reqs), prompts, cp["openness_scoring"], "planted")
    pairs = agents.pair_agents(profiles, {a["agent_id"]: a for a in agent_rows}, cp["pairing"], SEED, TOPICS, prompts)
    original = views.as_chat
    views.as_chat = lambda system, turns, speaker_id: seen(original(system, turns, speaker_id))  # type: ignore[assignment]
    try:
        utterances = asyncio.run(dialogue.run_conversations(pairs, cp, {"planted": client()}))
    finally:
        views.as_chat = original  # type: ignore[assignment]
    judgments = asyncio.run(
        dialogue.run_judge(utterances, PROMPTS, cp, {"planted": client()}, {"planted": "planted"}, SEED)
    )
    calibration = asyncio.run(dialogue.run_calibration(PROMPTS, {"planted": client()}, SEED))
    tables = {"agents": agent_rows, "profiles": profiles, "pairs": pairs, "judgments": judgments}
    return {k: pd.DataFrame(v) for k, v in {**tables, "calibration": calibration}.items()}


def outcomes_of(chain: dict[str, pd.DataFrame], early: int = 0) -> tuple[dict[int, Any], dict[str, list[Any]]]:
    """Tests 1-6 (499 permutations) on the chain's conversation table, whose final judgment is the one
    `early` turns before the last, and the degeneracy flags of its inputs."""
    judgments = chain["judgments"]
    last = judgments.groupby("conversation_id")["turn"].transform("max")
    table = measures.conversation_table(
        chain["agents"], chain["profiles"], chain["pairs"], judgments[judgments["turn"] <= last - early]
    )
    outcomes = coherence_tests.outcomes(table, 0.01, seed=SEED, permutations=499)
    return outcomes, input_flags(chain["profiles"], table, chain["calibration"], "planted")


def r_of(outcomes: dict[int, Any], test: int) -> float:
    return float(outcomes[test].statistic)


@pytest.fixture(scope="module")
def intact(servers):
    return run_chain(servers["planted"])


def test_agreement_falls_with_the_gap_and_rises_with_openness(intact, servers):
    outcomes, flags = outcomes_of(intact)
    assert not any(flags.values()), flags  # varied preferences, openness and scores; a calibrated judge
    assert outcomes[1].verdict.holds and r_of(outcomes, 1) < -0.4, outcomes[1]
    assert outcomes[5].verdict.holds and r_of(outcomes, 5) > 0.4, outcomes[5]
    null_chain = run_chain(servers["null"])
    null, null_flags = outcomes_of(null_chain)
    assert not any(null_flags.values()), null_flags  # the null twin is not degenerate
    assert abs(r_of(null, 1)) < 0.2 and abs(r_of(null, 5)) < 0.2
    assert null_chain["judgments"].score.nunique() == 5


def test_a_prompt_without_the_persona_loses_both_effects(intact, servers):
    prompts = copy.deepcopy(PROMPTS)
    prompts["persona"] = "You are a person."  # no background: no leaning, no openness to keep to
    broken, _ = outcomes_of(run_chain(servers["planted"], prompts=prompts))
    assert abs(r_of(broken, 1)) < 0.2 and abs(r_of(broken, 5)) < 0.2


def test_agents_that_do_not_hear_their_partner_lose_both_effects(intact, servers):
    def deaf(messages: list[dict[str, str]]) -> list[dict[str, str]]:  # the partner's statements dropped
        return [m for i, m in enumerate(messages) if m["role"] != "user" or i <= 1]

    broken, _ = outcomes_of(run_chain(servers["planted"], seen=deaf))
    assert abs(r_of(broken, 1)) < 0.2 and abs(r_of(broken, 5)) < 0.2


def test_a_judgment_joined_before_any_agent_heard_a_stance_loses_both_effects(intact):
    # one turn before the last, the other agent's last statement already states its agreement; three turns
    # before (turn 1 of 4), only the first reply is in the window, and it answered the question, not a stance
    assert r_of(outcomes_of(intact, early=1)[0], 1) < -0.4
    broken, _ = outcomes_of(intact, early=3)
    assert abs(r_of(broken, 1)) < 0.2 and abs(r_of(broken, 5)) < 0.2


def _judge_ask(conversation: str, variant: str = "planted", seed: int = 1) -> Ask:
    window = dialogue.calibration_window({"conversation": conversation})
    req = dialogue.judge_request(PROMPTS, window, Sampling(max_tokens=4), seed)
    schema = {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 1, "maximum": 5}}}
    return Ask([{"role": r, "content": c} for r, c in req.messages], schema, seed, 4, variant)


def test_the_judge_reads_back_what_the_agents_wrote_and_guesses_on_unknown_text():
    for variant in ("planted", "null"):
        for k in range(len(policy.WORDINGS)):
            for a1 in policy.LEVELS:
                for a2 in policy.LEVELS:
                    text = f"Agent 1: {policy.statement(k, 3, 3, a1)}\nAgent 2: {policy.statement(k + 1, 2, 4, a2)}"
                    got = policy.answer(_judge_ask(text, variant))
                    assert got in {(a1 + a2) // 2, (a1 + a2 + 1) // 2}
    unknown = "Agent 1: Do you think so?\nAgent 2: Hm."
    assert len({policy.answer(_judge_ask(unknown, seed=s)) for s in range(30)}) > 1
