"""Coherence judge on the scripted backend: the judge's window (the last statements of each agent), a judge
per agent model, the calibration examples scored (socsim.coherence.dialogue)."""

from __future__ import annotations

import asyncio

import pytest

from socsim.coherence import dialogue
from socsim.seeds import derive_seed
from support.llm import scripted_client
from support.studies.coherence import PROMPTS

# -- judge window ------------------------------------------------------------------------------------


def test_judge_sees_the_last_three_statements_of_each_agent():
    convo = [{"conversation_id": "c", "turn": t, "speaker": 1 + t % 2, "text": f"s{t}"} for t in range(9)]
    client = scripted_client(lambda req: "3")
    rows = asyncio.run(dialogue.judge(convo, PROMPTS, {"judge_window": 3}, client, "j", seed=1))
    users = [r.messages[1][1] for r in client.backend.requests]
    assert (
        users[-1] == "Conversation:\n" + "\n".join(f"Agent {1 + t % 2}: s{t}" for t in range(3, 9)) + "\n\nScore (1-5):"
    )
    assert users[1] == "Conversation:\nAgent 1: s0\nAgent 2: s1\n\nScore (1-5):"
    assert client.backend.requests[0].messages[0][1].count("Example (score") == 5
    assert [r["turn"] for r in rows] == list(range(9)) and {r["score"] for r in rows} == {3}
    assert [r.seed for r in client.backend.requests] == [derive_seed(1, "coherence", "judge", "c", t) for t in range(9)]
    empty = asyncio.run(dialogue.judge([{**convo[0], "text": " "}], PROMPTS, {"judge_window": 3}, client, "j", 1))
    assert (
        empty
        == [{"conversation_id": "c", "turn": 0, "judge_model": "j", "score": -1, "raw_answer": "", "parse_ok": True}]
        and len(client.backend.requests) == 9
    )  # no call for an empty window


# -- a judge per agent model, calibration ---------------------------------------------------------


def test_judges_for_agent_models():
    default = "judge-a"
    assert dialogue.judges_for(["m1", "m2"], default, None) == {"m1": default, "m2": default}
    assert dialogue.judges_for(["m1", "m2"], default, {"m2": "judge-b"}) == {"m1": default, "m2": "judge-b"}
    with pytest.raises(ValueError, match="do not exist: m3"):
        dialogue.judges_for(["m1"], default, {"m3": "judge-b"})
    # a registry model this run leaves out (the paper's mapping with agent_models cut to a subset): no error
    assert dialogue.judges_for(["m1"], default, {"m3": "judge-b"}, {"m1", "m3"}) == {"m1": default}
    with pytest.raises(ValueError, match="do not exist: m4"):
        dialogue.judges_for(["m1"], default, {"m4": "judge-b"}, {"m1", "m3"})


def test_run_judge_uses_each_models_judge_and_scores_calibration_examples():
    utt = [
        {
            "conversation_id": f"{m}.c",
            "turn": t,
            "speaker": 1 + t % 2,
            "agent_id": f"{m}{t % 2}",
            "text": f"text {t}",
            "says_goodbye": False,
            "model": m,
        }
        for m in ("m1", "m2")
        for t in range(3)
    ]
    judge_a = scripted_client(lambda req: "2", "A")

    def b_reply(req):  # judge B scores the calibration examples right (their text is in the user message)
        user = req.messages[-1][1]
        for ex in PROMPTS["calibration_examples"]:
            if ex["conversation"].splitlines()[1].split(": ", 1)[1] in user:
                return str(ex["score"])
        return "4"

    judge_b = scripted_client(b_reply, "B")
    rows = asyncio.run(
        dialogue.run_judge(
            utt, PROMPTS, {"judge_window": 3}, {"A": judge_a, "B": judge_b}, {"m1": "A", "m2": "B"}, seed=1
        )
    )
    cal = asyncio.run(dialogue.run_calibration(PROMPTS, {"B": judge_b, "A": judge_a}, seed=1))
    by = {(r["conversation_id"], r["turn"]): r for r in rows}
    assert {r["judge_model"] for r in rows if r["conversation_id"] == "m1.c"} == {"A"}
    assert {r["judge_model"] for r in rows if r["conversation_id"] == "m2.c"} == {"B"}
    assert by[("m1.c", 2)]["score"] == 2 and by[("m2.c", 2)]["score"] == 4
    assert [(r["judge_model"], r["reference"], r["score"]) for r in cal] == (
        [("A", k, 2) for k in range(1, 6)] + [("B", k, k) for k in range(1, 6)]
    )
    # the calibration request is the judge prompt with the example as the conversation
    cal_req = next(
        r for r in judge_a.backend.requests if r.seed == derive_seed(1, "coherence", "judge", "calibration", "A", 0)
    )
    conv_req = next(r for r in judge_a.backend.requests if r.seed == derive_seed(1, "coherence", "judge", "m1.c", 0))
    assert cal_req.messages[0] == conv_req.messages[0] and cal_req.constraint == conv_req.constraint
    assert cal_req.messages[1][1].startswith("Conversation:\nAgent 1: Do you think that cities should ban cars")
