"""The DEBATE study's twins (paper 003): what each mode and ablation puts in memory (scripted
speakers), the engine-driven schedule (the humans' partners, turn counts and speaker order), the
annotators' parsing."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from socsim.debate import annotate, setups, simulate
from socsim.debate.ingest import SLOTS
from socsim.llm import LLMClient
from support.llm import Scripted
from support.project import ROOT

PROMPTS = yaml.safe_load((ROOT / "data/debate/prompts.yaml").read_text())
W = ["aaaaa111", "bbbbb222", "ccccc333", "ddddd444"]
SCHEDULE = {1: [(0, 1), (2, 3)], 2: [(0, 2), (1, 3)], 3: [(0, 3), (1, 2)]}
DP = {"max_tokens": 16, "opinion_max_tokens": 48}
SESSION = {
    "session_id": "S1",
    "statement": "Angels are real.",
    "topic_set": "depth",
    "topic_dir": "Angels_are_real",
    "reverse": False,
    "complete": True,
}


def group():
    demo = json.dumps(
        {k: f"{k}-value" for k in SLOTS},
        sort_keys=True,
    )
    people = [
        {
            "session_id": "S1",
            "worker_id": w,
            "name": w[:5],
            "o_init": -1.5 + i,
            "j_init": f"because {i}",
            "o_final": None,
            "j_final": None,
            "demographics": demo,
        }
        for i, w in enumerate(W)
    ]
    tweets, utts = [], []
    for r, pairs in SCHEDULE.items():
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                tweets.append(
                    {
                        "session_id": "S1",
                        "round": r,
                        "worker_id": W[x],
                        "partner_id": W[y],
                        "text": f"human tweet r{r} {W[x][:5]}",
                        "event_order": 1,
                    }
                )
            dyad = "|".join(sorted((W[a], W[b])))
            first, second = (b, a) if r == 2 and a == 0 else (a, b)  # one dyad-round where the partner opens
            for k, (s, p) in enumerate([(first, second), (second, first), (first, second)], 1):
                utts.append(
                    {
                        "session_id": "S1",
                        "round": r,
                        "dyad": dyad,
                        "k": k,
                        "speaker": W[s],
                        "partner": W[p],
                        "text": f"human r{r} k{k} {W[s][:5]}",
                        "first_event_order": k,
                        "n_merged": 1,
                        "validity": "VALID",
                    }
                )
    return people, tweets, utts


def run(mode: int, ablation: str = "original"):
    backend = Scripted(lambda req: f"sim {len(backend.requests)}")
    client = LLMClient(backend, None)
    people, tweets, utts = group()
    design = {"agent_models": ["m"], "modes": [mode], "ablations": [ablation], "topic_sets": ["depth"]}
    rows_in = setups.build({**design, "sessions_per_set": None}, 7, [SESSION], people)
    rows = asyncio.run(simulate.run_setups(rows_in, people, tweets, utts, PROMPTS, DP, {"m": client}))
    return rows, backend.requests


def texts(req) -> str:
    return "\n".join(m["content"] for m in req.message_dicts())


def test_twins_keep_the_humans_schedule_turn_counts_and_speaker_order():
    rows, reqs = run(2)
    _, _, utts = group()
    sim = [r for r in rows if r["kind"] == "utterance"]
    assert len(sim) == len(utts) == 18
    key = lambda u: (u["round"], u["dyad"], u["k"])  # noqa: E731
    human = {key(u): (u["speaker"], u["partner"]) for u in utts}
    assert {key(s): (s["speaker"], s["partner"]) for s in sim} == human
    assert all(m["role"] != "assistant" for q in reqs for m in q.message_dicts())


def test_mode1_sees_only_human_history_mode2_its_own():
    rows, reqs = run(1)
    r3 = [q for q in reqs if "human tweet r3" in texts(q)]
    last = r3[-1]  # a round-3 request: rounds 1-2 blocks and the current human utterances
    body = texts(last)
    assert "human r1 k1" in body and "human r2 k3" in body and "sim " not in body
    assert body.count("My response") + body.count("'s response") >= 6
    rows2, reqs2 = run(2)
    body2 = texts([q for q in reqs2 if "human tweet r3" in texts(q)][-1])
    assert "human r1" not in body2 and "sim " in body2 and "human tweet r2" in body2  # human tweets, simulated talk


def test_mode3_writes_tweets_and_a_final_opinion():
    rows, reqs = run(3)
    tweets = [r for r in rows if r["kind"] == "tweet"]
    assert sorted((t["round"], t["speaker"]) for t in tweets) == sorted((r, w) for r in (2, 3) for w in W)
    r2 = [q for q in reqs if "You now talk with" in texts(q) and tweets[0]["text"] in texts(q)]
    assert r2  # round 2's conversations see the simulated tweets
    ops = [r for r in rows if r["kind"] == "opinion"]
    assert len(ops) == 4 and all(not o["parse_ok"] and o["opinion"] is None for o in ops)  # scripted text is no JSON
    final = [q for q in reqs if q.constraint is not None]
    assert len(final) == 4 and all("human tweet r1" in texts(q) for q in final)


@pytest.mark.parametrize(
    "ablation,gone,kept",
    [
        ("no_demographics", ["age-value"], ["because", "human tweet r1"]),
        ("no_initial_opinion", ["because"], ["age-value", "human tweet r1"]),
        ("no_private_profile", ["age-value", "because"], ["human tweet r1"]),
        ("no_prior_chats", ["Below was your conversation"], ["age-value", "because"]),
    ],
)
def test_each_ablation_removes_exactly_its_component(ablation, gone, kept):
    _, base = run(2)
    _, reqs = run(2, ablation)
    assert len(reqs) == len(base)
    late = [texts(q) for q in reqs if "human tweet r3" in texts(q)]
    assert late
    for word in gone:
        assert all(word not in t for t in late), word
    for word in kept:
        assert any(word in t for t in late), word
    assert any("Below was your conversation" in texts(q) for q in base)
    assert PROMPTS["task"].split(".")[0].format(topic=SESSION["statement"]) in texts(reqs[0])  # task always kept


def test_clean_and_annotators_parse_or_flag():
    assert simulate.clean('  My response: "I think so."  ') == "I think so."
    assert simulate.clean("response:yes") == "yes"
    people, tweets, utts = group()
    items = [
        {"model": "human", "mode": 0, "ablation": "human", "topic_set": "depth", "kind": "utterance", **u}
        for u in utts[:3]
    ]
    items.append(
        {
            "model": "human",
            "mode": 0,
            "ablation": "human",
            "topic_set": "depth",
            "kind": "tweet",
            "session_id": "S1",
            "round": 1,
            "dyad": "",
            "k": 0,
            "speaker": W[0],
            "text": "a tweet",
        }
    )

    def answer(req):
        body = texts(req)
        if "VALID or INVALID" in body:
            latest = body.split("Latest message:")[1]
            return "VALID" if "k1" in latest else ("???" if "k2" in latest else "INVALID")
        text = body.split("Text:")[1]
        return {"k1": "Probably agree", "k2": "maybe", "k3": "Certainly disagree"}.get(
            next((k for k in ("k1", "k2", "k3") if k in text), ""), "Lean agree"
        )

    backend = Scripted(answer)
    seen = {(t["session_id"], t["round"], t["worker_id"]): t["text"] for t in tweets}
    rows = asyncio.run(
        annotate.annotate(
            items,
            seen,
            {p["worker_id"]: p["name"] for p in people},
            {"S1": SESSION["statement"]},
            PROMPTS,
            {"max_tokens": 8, "temperature": 0.0, "on_topic_prompt": "short"},  # the paper's: test_debate_on_topic.py
            LLMClient(backend, None),
            "judge",
            3,
        )
    )
    by = {(r["kind"], r["k"]): r for r in rows}
    u1, u2, u3, tw = by[("utterance", 1)], by[("utterance", 2)], by[("utterance", 3)], by[("tweet", 0)]
    assert (u1["stance"], u2["stance"], u3["stance"], tw["stance"]) == (1.5, None, -2.5, 0.5)
    assert u2["stance_raw"] == "maybe"
    assert (u1["on_topic"], u2["on_topic"], u3["on_topic"], tw["on_topic"]) == (True, None, False, None)
    on_topic_prompts = [texts(q) for q in backend.requests if "VALID or INVALID" in texts(q)]
    assert len(on_topic_prompts) == 3
    assert "human tweet r1" in on_topic_prompts[0] and "Cities should ban cars" in on_topic_prompts[0]
    third = [t for t in on_topic_prompts if 'Latest message: "aaaaa: human r1 k3' in t][0]
    assert "human r1 k1" in third and "human r1 k2" in third  # the round's history before it


def test_sect6_members_reverse_code_only_truth_framed_topics():
    import pandas as pd

    from socsim.debate import analysis

    sessions = pd.DataFrame(
        [
            {"session_id": "A", "topic_set": "depth", "reverse": False},
            {"session_id": "B", "topic_set": "depth", "reverse": True},
        ]
    )
    part = pd.DataFrame(
        [{"session_id": s, "worker_id": f"{s}{i}", "o_init": 1.5, "o_final": 0.5} for s in "AB" for i in range(2)]
    )
    tweets = pd.DataFrame(
        [
            {"session_id": s, "round": 1, "worker_id": f"{s}{i}", "partner_id": f"{s}{1 - i}"}
            for s in "AB"
            for i in range(2)
        ]
    )
    base = {"model": "m", "mode": 3, "ablation": "original", "topic_set": "depth", "dyad": "", "k": 0}
    sim = pd.DataFrame(
        [
            {**base, "session_id": s, "round": 4, "kind": "opinion", "speaker": f"{s}{i}", "opinion": -2.5}
            for s in "AB"
            for i in range(2)
        ]
    )
    ann = pd.DataFrame(
        [
            {**base, "session_id": s, "round": r, "kind": "tweet", "speaker": f"{s}{i}", "stance": 0.5 * r}
            for s in "AB"
            for i in range(2)
            for r in (2, 3)
        ]
    )
    hann = pd.DataFrame(
        [
            {"session_id": s, "round": r, "kind": "tweet", "speaker": f"{s}{i}", "stance": -0.5 * r}
            for s in "AB"
            for i in range(2)
            for r in (1, 2, 3)
        ]
    )
    mem = analysis.members(
        {
            "sessions": sessions,
            "participants": part,
            "tweets": tweets,
            "simulated": sim,
            "annotations": ann,
            "human_annotations": hann,
        },
        "m",
    )
    a = mem[(mem.session_id == "A")].set_index("source")
    b = mem[(mem.session_id == "B")].set_index("source")
    assert list(a.loc["human"].s1) == [-0.5, -0.5] and list(b.loc["human"].s1) == [0.5, 0.5]  # x -1 on B only
    assert list(a.loc["llm"].s1) == [-0.5, -0.5]  # the twins' round-1 tweet is the human's
    assert list(a.loc["llm"].s3) == [1.5, 1.5] and list(b.loc["llm"].s3) == [-1.5, -1.5]
    assert list(b.loc["llm"].o_final) == [2.5, 2.5] and list(b.loc["human"].o_init) == [-1.5, -1.5]
    assert set(mem.partner1) == {"A0", "A1", "B0", "B1"}


def test_mode1_is_teacher_forced_in_order_without_the_target():
    rows, reqs = run(1)
    # the request for round 1, dyad (a, b), position 3: sees human k1, k2 in order, not k3
    r1 = [texts(q) for q in reqs if "human tweet r1" in texts(q) and "human tweet r2" not in texts(q)]
    third = [t for t in r1 if "human r1 k2 aaaaa" in t or "human r1 k2 bbbbb" in t]
    assert third
    t = third[0]
    assert t.index("human r1 k1") < t.index("human r1 k2") and "human r1 k3" not in t


def test_mode3_never_sees_human_tweets_after_round_one_and_ablations_keep_round_one():
    _, reqs = run(3)
    assert not any("human tweet r2" in texts(q) or "human tweet r3" in texts(q) for q in reqs)
    _, base = run(2)
    _, ablated = run(2, "no_prior_chats")

    def first_round(rs):
        return [texts(q) for q in rs if "human tweet r2" not in texts(q) and "human tweet r3" not in texts(q)]

    assert first_round(base) == first_round(ablated)  # round 1 has no prior chats to drop
    late = [texts(q) for q in ablated if "human tweet r3" in texts(q)]
    assert late and all("human tweet r1" not in t for t in late)  # tau^1 dropped from later rounds


def test_settings_run_ablations_on_the_first_model_only():
    from socsim.debate.setups import settings

    dp = {
        "agent_models": ["a", "b"],
        "modes": [1, 3],
        "ablations": ["original", "no_prior_chats"],
        "topic_sets": ["depth"],
    }
    got = {(s["model"], s["mode"], s["ablation"]) for s in settings(dp)}
    assert got == {
        ("a", 1, "original"),
        ("a", 3, "original"),
        ("b", 1, "original"),
        ("b", 3, "original"),
        ("a", 1, "no_prior_chats"),
        ("a", 3, "no_prior_chats"),
    }
