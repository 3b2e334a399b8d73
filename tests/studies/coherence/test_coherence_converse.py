"""Coherence converse on the scripted backend: the turn budget per agent, each agent's side of the
conversation and its seeds, the Goodbye stop (socsim.coherence.dialogue.converse)."""

from __future__ import annotations

import asyncio

import pytest

from socsim.coherence import dialogue
from socsim.seeds import derive_seed
from support.llm import scripted_client


def _converse(opener, turns, reply, stop="first_goodbye", client=None):
    pair = {
        "conversation_id": "c0",
        "model": "m",
        "agent1_id": "x",
        "agent2_id": "y",
        "opener": opener,
        "question": "Do you like taxes?",
        "agent1_system_prompt": "You are x.",
        "agent2_system_prompt": "You are y.",
        "seed": 1,
    }
    cp = {"turns_per_agent": turns, "stop": stop, "utterance_max_tokens": 16}
    return asyncio.run(dialogue.converse(pair, cp, client or scripted_client(reply)))


@pytest.mark.parametrize("opener", [1, 2])
@pytest.mark.parametrize("turns", [1, 3, 5])
def test_each_agent_generates_turns_per_agent_statements(opener, turns):
    n = iter(range(100))
    convo = _converse(opener, turns, lambda req: f"statement {next(n)}")
    assert convo[0]["speaker"] == opener and convo[0]["text"] == "Do you like taxes?"
    assert convo[0]["agent_id"] == {1: "x", 2: "y"}[opener]
    generated = convo[1:]
    assert len(generated) == 2 * turns
    assert [u["speaker"] for u in generated] == [3 - opener, opener] * turns  # alternating, other one first
    for s in (1, 2):
        assert sum(u["speaker"] == s for u in generated) == turns


def test_each_agent_sees_the_conversation_from_its_side_with_seeds_from_ids():
    client = scripted_client(lambda req: "Hm.")
    convo = _converse(1, 2, None, client=client)
    reqs = client.backend.requests
    assert [r.seed for r in reqs] == [derive_seed(1, "coherence", "converse", "c0", t) for t in range(1, 5)]
    assert reqs[1].message_dicts() == [
        {"role": "system", "content": "You are x."},
        {"role": "assistant", "content": "Do you like taxes?"},
        {"role": "user", "content": "Hm."},
    ]
    assert reqs[0].messages[0] == ("system", "You are y.") and reqs[0].sampling.max_tokens == 16
    assert [u["agent_id"] for u in convo] == ["x", "y", "x", "y", "x"]


def test_goodbye_ends_the_conversation_early():
    def reply(req):  # the second generated statement says goodbye
        return "Well, goodbye!" if len(req.messages) == 3 else "I see your point."

    convo = _converse(2, 5, reply)
    assert [u["text"] for u in convo] == ["Do you like taxes?", "I see your point.", "Well, goodbye!"]
    assert convo[-1]["says_goodbye"] and convo[-1]["speaker"] == 2
    both = _converse(1, 5, reply, stop="both_goodbye")
    assert len(both) == 11  # only one agent ever says it: the full budget
