"""Coherence study: parsing, pairing, the Goodbye stop, the judge's window, bootstrap, expected
distributions and suppression, each of the six tests on data built to pass and to fail, Self-BLEU."""

from __future__ import annotations

import asyncio
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from socsim.coherence import agents as ag
from socsim.coherence import analysis as an
from socsim.coherence import dialogue
from socsim.config import read_yaml
from socsim.io.vs_paper import read_paper
from socsim.llm.types import Response
from socsim.seeds import derive_seed
from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.text import bleu, self_bleu, tokens
from support.llm import scripted_client
from support.project import ROOT

PROMPTS = read_yaml(ROOT / "data/coherence/prompts.yaml")
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


T_TOPICS = {"topics": [{"id": "t", "question": "Do you like taxes?"}]}


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


# -- bootstrap --------------------------------------------------------------------------------------


def test_bootstrap_interval_matches_closed_form():
    rng = np.random.default_rng(0)
    values = rng.integers(1, 6, size=200_000).astype(float)
    means = bootstrap_means(values, draw=100, repeats=20_000, rng=np.random.default_rng(1))
    lo, hi = interval(means, 0.95)
    # Means of 100 draws: normal with sd = sigma / sqrt(100).
    half = 1.959964 * values.std() / math.sqrt(100)
    assert lo == pytest.approx(values.mean() - half, abs=0.02) and hi == pytest.approx(values.mean() + half, abs=0.02)
    df = pd.DataFrame({"g": ["a"] * 50 + ["b"] * 50, "v": np.r_[np.ones(50), np.full(50, 5.0)]})
    out = grouped(df, "g", "v", 100, 200, 0.95, seed=3)
    assert out["mean"].tolist() == [1.0, 5.0] and out["lo"].tolist() == [1.0, 5.0]
    again = grouped(df[df.g == "b"], "g", "v", 100, 200, 0.95, seed=3)
    assert again.iloc[0].to_dict() == out.iloc[1].to_dict()  # a group's interval ignores the other groups


# -- expected distributions and suppression ----------------------------------------------------------


def test_expected_distributions_by_hand():
    p0 = np.array([0.0, 0.0, 0.2, 0.3, 0.5])
    lin = an.expected_distributions(p0, "linear")
    assert lin[0].tolist() == pytest.approx(p0.tolist())
    assert lin[4].tolist() == pytest.approx([0.5, 0.3, 0.2, 0.0, 0.0])
    assert lin[2].tolist() == pytest.approx([0.25, 0.15, 0.2, 0.15, 0.25])
    assert (an.SCORES * lin[4]).sum() == pytest.approx(1.7)  # 0.5*1 + 0.3*2 + 0.2*3
    sig = an.expected_distributions(p0, "sigmoid")
    assert sig[2].tolist() == pytest.approx(lin[2].tolist())  # both shifts are half way at gap 2
    assert 0 < an.shift_weight(1, "sigmoid") < an.shift_weight(1, "linear")


def test_suppression_on_synthetic_gap0():
    # gap 0: 50% fives, 30% fours, 20% threes -> mean 4.3; expected at gap 4: mean 1.7.
    gap0 = [5] * 50 + [4] * 30 + [3] * 20
    gap4 = [4] * 60 + [3] * 40  # observed mean 3.6
    df = pd.DataFrame({"gap": [0] * 100 + [4] * 100, "agreement": gap0 + gap4})
    out = an.suppression(df, "linear", {"draw": 100, "repeats": 500, "level": 0.95}, seed=0).set_index("gap")
    assert out.loc[4, "expected"] == pytest.approx(1.7) and out.loc[4, "observed"] == pytest.approx(3.6)
    assert out.loc[4, "difference"] == pytest.approx(1.9) and out.loc[4, "suppression"] == pytest.approx(3.6 / 1.7)
    assert out.loc[0, "difference"] == pytest.approx(0.0)
    assert out.loc[4, "expected_p1"] == pytest.approx(0.5) and out.loc[4, "observed_p4"] == pytest.approx(0.6)


# -- the six tests ----------------------------------------------------------------------------------


def _table(rows, topics_per_level=3) -> pd.DataFrame:
    """A conversation table: each conversation its own two agents, `topics_per_level` topics per
    contentiousness level (conversations spread over them in turn)."""
    df = pd.DataFrame(rows, columns=["P1", "P2", "O1", "O2", "contentiousness", "agreement"])
    df["B1"] = df["B2"] = 0
    df["conversation_id"] = [f"c{i}" for i in range(len(df))]
    df["agent1_id"] = [f"a{i}" for i in range(len(df))]
    df["agent2_id"] = [f"b{i}" for i in range(len(df))]
    df["topic"] = [f"t{c}.{i % topics_per_level}" for i, c in enumerate(df["contentiousness"])]
    return an.finish_table(df)


COHERENT = {0: (4, 5), 1: (3, 4), 2: (2, 3), 3: (1, 2), 4: (1, 2)}  # gap -> (low, high openness) score


def _coherent(n=40):
    """Agreement falls with the preference gap (gap 4 mirrors gap 0), rises with openness, ignores the
    topic's contentiousness, and is the same for shared negative and shared positive preferences."""
    rows = []
    for p1, p2 in itertools.combinations_with_replacement(range(1, 6), 2):
        for c in (1, 2, 3):
            for i in range(n):
                high = i % 2 == 0
                o = 9 if high else 0
                rows.append((p1, p2, o, o, c, COHERENT[p2 - p1][high]))
    return _table(rows)


def _sycophantic(n=40):
    """Agreement ignores the gap, follows contentiousness, punishes shared negative preferences, and is
    highest for the least open agents."""
    rows = []
    for p1, p2 in itertools.combinations_with_replacement(range(1, 6), 2):
        for c in (1, 2, 3):
            for i in range(n):
                high = i % 2 == 0
                o = 9 if high else 0
                score = {1: 3, 2: 4, 3: 5}[c] - (p1 == p2 == 1) - high
                rows.append((p1, p2, o, o, c, max(score, 1)))
    return _table(rows)


PAPER = read_paper(ROOT / "data/coherence/paper.yaml")
ALT = an.paper_suppression(PAPER)  # the paper's gap-0 distribution and its suppressed gap 4


def test_six_tests_pass_on_coherent_and_fail_on_sycophantic_agents():
    # 300 conversations per preference pair and level, over 3 topics a level: Test 4's "no contentiousness
    # effect" needs the topic-level test's power >= 0.8 (9 topics, 280 groupings)
    good = an.six_tests(_coherent(300), alpha=0.01, alternative=ALT, permutations=499).set_index("test")
    bad = an.six_tests(_sycophantic(), alpha=0.01, alternative=ALT, permutations=499).set_index("test")
    for t in range(1, 7):  # sycophantic agents: every test rejects against the claim
        assert good.loc[t, "result"] == "pass" and bad.loc[t, "result"] == "fail", t
    assert good.loc[2, "power"] >= 0.8 and good.loc[4, "power"] >= 0.8
    assert good.loc[4, "n"] == 9 and good.loc[4, "unit"] == "topics (3 at C = 1, 3 at C = 2, 3 at C = 3)"
    assert good.loc[1, "unit"].startswith("agents") and good.loc[1, "n"] == 2 * 15 * 3 * 300  # own agents each
    # 40 per cell: no contentiousness effect found, but too little power to say there is none
    small = an.six_tests(_coherent(40), alpha=0.01, alternative=ALT, permutations=199).set_index("test")
    assert small.loc[4, "result"].startswith("inconclusive (p = 1 but power 0.")
    assert small.loc[4, "result"].endswith("< 0.8 at n = 9 topics)")
    assert small.loc[4, "raw_result"] == small.loc[4, "result"] and small.loc[1, "result"] == "pass"
    # without the paper's distributions Test 2's power is unknown: never a pass
    blind = an.six_tests(_coherent(40), alpha=0.01, permutations=199).set_index("test")
    assert blind.loc[2, "result"].startswith("inconclusive (p = 1 but power unknown")


def test_six_tests_without_data_are_not_applicable_or_too_few():
    tiny = _table([(1, 2, 0, 1, 1, 3), (2, 2, 1, 1, 1, 4)])
    out = an.six_tests(tiny, 0.01).set_index("test")
    # two conversations: too few for the correlations and the group tests (inconclusive, with the n and
    # what it needs: too little data is not a degenerate input); one contentiousness level: Test 4 n/a
    assert out.loc[1, "result"] == "inconclusive (n = 2 conversations, needs 10)"
    assert out.loc[5, "result"] == "inconclusive (n = 2 conversations, needs 10)"
    assert out.loc[2, "result"] == "inconclusive (n = 0 conversations a side (gap 0: 1, gap 4: 0), needs 5)"
    assert out.loc[3, "result"] == "inconclusive (n = 0 conversations in the smallest preference pair, needs 5)"
    assert out.loc[6, "result"] == "inconclusive (n = 0 (1-5) conversations, needs 5)"
    assert out.loc[4, "result"] == "n/a" and "two contentiousness levels" in out.loc[4, "detail"]
    assert out.loc[3, "detail"] == "needs 1-1, 2-5, 3-5, 4-5 pairs; missing: 1-1, 2-5, 3-5, 4-5"
    assert (out["flags"] == "").all()  # nothing degenerate: only too few
    empty = an.six_tests(tiny.iloc[:0], 0.01, empty_reason="no judged conversation")
    assert set(empty["result"]) == {"n/a"} and set(empty["detail"]) == {"no judged conversation"}


# -- Self-BLEU --------------------------------------------------------------------------------------


def test_bleu_and_self_bleu():
    a = tokens("the cat sat on the mat", drop_mentions=False)
    assert bleu(a, [a]) == pytest.approx(1.0)
    # No shared n-gram: every precision is smoothed to 0.1 / (number of hypothesis n-grams), and the
    # 6-token hypothesis is shorter than the 7-token reference (brevity penalty exp(1 - 7/6)).
    by_hand = (0.1 / 6 * 0.1 / 5 * 0.1 / 4 * 0.1 / 3) ** 0.25 * math.exp(1 - 7 / 6)
    assert bleu(a, [tokens("dogs bark loudly at night again today")]) == pytest.approx(by_hand)
    half = tokens("the cat sat on a rug", drop_mentions=False)  # 1-grams 4/6, 2-grams 3/5, 3-grams 2/4, 4-grams 1/3
    assert bleu(half, [a]) == pytest.approx((4 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)
    assert self_bleu(["same sentence here again", "same sentence here again"]) == pytest.approx(1.0)
    assert self_bleu(["alpha beta gamma delta", "one two three four"]) == pytest.approx(
        (0.1 / 4 * 0.1 / 3 * 0.1 / 2 * 0.1 / 1) ** 0.25
    )
    assert math.isnan(self_bleu(["only one"]))
    utt = pd.DataFrame(
        {
            "conversation_id": ["c1"] * 5,
            "turn": range(5),
            "agent_id": ["q", "r", "s", "r", "s"],
            "text": [
                "question?",
                "I agree with you fully",
                "yes yes yes",
                "I agree with you fully",
                "no idea at all really",
            ],
        }
    )
    # The same agent ids under a second model that does not repeat itself: r is repetitive only
    # within model m1, so only m1's conversation with r goes.
    other = utt.assign(conversation_id="c2", text=["question?", "a b c d", "e f g h", "i j k l", "m n o p"])
    utt = pd.concat([utt.assign(model="m1"), other.assign(model="m2")], ignore_index=True)
    bleu_table = an.self_bleu_table(utt)
    table = bleu_table[bleu_table["model"] == "m1"].set_index("agent_id")["self_bleu"]
    assert table["r"] == pytest.approx(1.0) and table["s"] < 0.1 and "q" not in table
    assert (bleu_table.loc[bleu_table["model"] == "m2", "self_bleu"] < 0.1).all()
    df = pd.DataFrame({"model": ["m1", "m1", "m2"], "agent1_id": ["q", "s", "q"], "agent2_id": ["r", "t", "r"]})
    kept, removed = an.filter_repetitive(df, bleu_table, 0.5)
    assert removed == 1 and kept["agent1_id"].tolist() == ["s", "q"] and kept["model"].tolist() == ["m1", "m2"]


# -- who opens, turn budget (scripted backend) --------------------------------------------------------------


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


# -- Test 6's rule -----------------------------------------------------------------------------------


def _far_pairs(score_of, n=12, seed=0):
    """(1-5) pairs at every openness pairing (0-0 ... 9-9), n conversations each."""
    rng = np.random.default_rng(seed)
    rows = []
    for o1, o2 in itertools.combinations_with_replacement(range(10), 2):
        for _ in range(n):
            rows.append((1, 5, o1, o2, 1, int(np.clip(np.rint(score_of(o1 + o2) + rng.normal(0, 0.6)), 1, 5))))
    return _table(rows)


def test_test6_pooled_rule_passes_coherent_and_fails_incoherent_agents():
    coherent = _far_pairs(lambda s: 1 + 3 * s / 18)  # agreement rises with openness
    reversed_ = _far_pairs(lambda s: 4 - 3 * s / 18)  # the least open agree most
    flat = _far_pairs(lambda s: 3.0)  # openness ignored
    t6 = lambda df, rule: an.six_tests(df, 0.01, rule).set_index("test").loc[6]  # noqa: E731
    assert t6(coherent, "pooled")["result"] == "pass"
    assert t6(reversed_, "pooled")["result"] == "fail"  # significant the other way
    assert t6(flat, "pooled")["result"].startswith("inconclusive (")  # no effect found is not a fail
    strict = t6(coherent, "strict")
    # the strict rule cannot pass even these coherent agents (inconclusive: nothing rejects the other way) ...
    assert strict["result"].startswith("inconclusive (")
    assert 0 < strict["significant"] < strict["comparisons"] == 54  # ... since neighbours barely differ
    # the count of significant comparisons, computed independently
    from scipy.stats import mannwhitneyu

    base = coherent.loc[coherent["open_pair"] == "0-0", "agreement"]
    ps = [
        mannwhitneyu(base, g["agreement"], alternative="less").pvalue
        for pair, g in coherent.groupby("open_pair")
        if pair != "0-0"
    ]
    assert strict["significant"] == sum(min(p * len(ps), 1) < 0.01 for p in ps)
    assert t6(coherent, "pooled")["significant"] == strict["significant"]
    pooled_p = mannwhitneyu(base, coherent.loc[coherent["open_pair"] != "0-0", "agreement"], alternative="less").pvalue
    assert t6(coherent, "pooled")["p"] == pytest.approx(pooled_p)
    with pytest.raises(ValueError, match="test6_rule"):
        an.six_tests(coherent, 0.01, "some")


def test_test6_strict_is_our_reading_the_default_and_pooled_is_labelled_ours():
    """Known answers where the two rules disagree: agreement rises smoothly with openness, so the lowest
    pairing is below the others pooled (pooled passes) but not below its neighbours one by one (strict,
    our reading of the paper's text, cannot pass); and a step (only the least open agree less) that both
    pass."""
    from scipy.stats import mannwhitneyu

    smooth = _far_pairs(lambda s: 1 + 3 * s / 18)
    step = _far_pairs(lambda s: 1.0 if s == 0 else 4.0)

    def by_hand(df):
        """strict: every Bonferroni-corrected one-sided U significant; pooled: one U against the rest."""
        base = df.loc[df["open_pair"] == "0-0", "agreement"]
        others = [g["agreement"] for k, g in df.groupby("open_pair") if k != "0-0"]
        ps = [mannwhitneyu(base, g, alternative="less").pvalue for g in others]
        pooled = mannwhitneyu(base, df.loc[df["open_pair"] != "0-0", "agreement"], alternative="less").pvalue
        return all(min(p * len(ps), 1) < 0.01 for p in ps), bool(pooled < 0.01)

    assert by_hand(smooth) == (False, True) and by_hand(step) == (True, True)  # the data do what they claim
    default = an.six_tests(smooth, 0.01).set_index("test").loc[6]
    strict = an.six_tests(smooth, 0.01, "strict").set_index("test").loc[6]
    pooled = an.six_tests(smooth, 0.01, "pooled").set_index("test").loc[6]
    assert default["result"] == strict["result"] and default["rule"] == strict["rule"]  # strict is the default
    assert strict["result"].startswith("inconclusive (") and pooled["result"] == "pass"
    assert strict["rule"] == an.TEST6_RULE_LABELS["strict"]
    assert strict["rule"].startswith("strict, our reading of the paper's text")
    assert pooled["rule"].startswith("pooled, ours (not a reading of the paper's text)")
    assert strict["detail"].startswith("strict rule (our reading of the paper's text): ")
    assert pooled["detail"].startswith("pooled rule (ours): ")
    # the "any Bonferroni-corrected comparison significant" reading stands beside either rule, without a
    # verdict of its own: on the smooth data it would pass where strict cannot
    k = int(strict["significant"])
    assert k > 0 and strict["beside"] == (
        f"{an.TEST6_ANY_LABEL} (no verdict of its own): pass ({k} of {int(strict['comparisons'])} comparisons "
        "significant)"
    )
    assert pooled["beside"] == strict["beside"]
    flat = an.six_tests(_far_pairs(lambda s: 3.0), 0.01).set_index("test").loc[6]
    assert flat["beside"].endswith(": inconclusive (0 of 54 comparisons significant)")
    for rule in ("strict", "pooled"):
        assert an.six_tests(step, 0.01, rule).set_index("test").loc[6, "result"] == "pass", rule
    # the other tests carry no rule; Test 6 carries it even without data
    assert set(an.six_tests(smooth, 0.01).query("test != 6")["rule"]) == {""}
    empty = an.six_tests(smooth.iloc[:0], 0.01, "pooled", empty_reason="none").set_index("test")
    assert empty.loc[6, "rule"] == an.TEST6_RULE_LABELS["pooled"]
    assert "our reading of the paper's text" in an.spec_of_test(6, "strict")[1]
    assert "ours" in an.spec_of_test(6, "pooled")[1] and "the paper's rule" not in an.spec_of_test(6, "strict")[1]


def test_degeneracy_flags_replace_pass_and_fail():
    from socsim.stats.degeneracy import Flag

    flag = Flag("coherence preferences (m)", "97% of 30 answers are 1 (threshold 90%)")
    flags = {1: [flag], 6: [flag]}
    out = an.six_tests(_coherent(40), 0.01, flags=flags, alternative=ALT, permutations=199).set_index("test")
    assert (
        out.loc[1, "result"] == "degenerate input: coherence preferences (m): 97% of 30 answers are 1 (threshold 90%)"
    )
    assert out.loc[1, "raw_result"] == "pass" and out.loc[6, "result"].startswith("degenerate input")
    assert (out.loc[[2, 3, 5], "result"] == "pass").all()
    assert out.loc[4, "result"] == out.loc[4, "raw_result"] and out.loc[4, "flags"] == ""  # unflagged: its own


# -- the sigmoid's steepness -------------------------------------------------------------------------


def test_sigmoid_steepness():
    s = lambda x, k: 1 / (1 + math.exp(-k * (x - 2)))  # noqa: E731
    for k in (0.5, 2.0, 6.0):
        by_hand = (s(1, k) - s(0, k)) / (s(4, k) - s(0, k))
        assert an.shift_weight(1, "sigmoid", k) == pytest.approx(by_hand)
        assert an.shift_weight(0, "sigmoid", k) == pytest.approx(0) and an.shift_weight(4, "sigmoid", k) == 1
    assert an.shift_weight(1, "sigmoid") == an.shift_weight(1, "sigmoid", 2.0)  # the default
    assert an.shift_weight(1, "sigmoid", 1e-4) == pytest.approx(0.25, abs=1e-4)  # flat: linear
    assert an.shift_weight(1, "sigmoid", 50) < 1e-9 and an.shift_weight(3, "sigmoid", 50) > 1 - 1e-9  # a step
    p0 = np.array([0.0, 0.0, 0.2, 0.3, 0.5])
    assert an.expected_distributions(p0, "sigmoid", 6.0)[1].tolist() == pytest.approx(
        (p0 + an.shift_weight(1, "sigmoid", 6.0) * (p0[::-1] - p0)).tolist()
    )
    with pytest.raises(ValueError):
        an.shift_weight(1, "sigmoid", 0)


# -- the analyse and figures stages on synthetic Parquet inputs ---------------------------------------


def coherent_score(p1, p2, o1, o2, c):
    """Agreement falls with the gap and rises with openness; contentiousness plays no part."""
    return int(np.clip(5 - abs(p1 - p2) + (o1 + o2 >= 9), 1, 5))


def synthetic_run(
    tmp_path,
    models=("m",),
    topics=(("neutral", 1), ("medium", 2), ("hot", 3)),
    score=coherent_score,
    null_profile=False,
    calibration=(1, 2, 3, 4, 5),
    prefs=range(1, 6),
    texts=None,
):
    """agents, profiles, pairs, judgments, utterances and calibration Parquet files of the documented
    schemas (written and read back like the stages do), two agents per (topic, P, O) profile."""
    from socsim.coherence import schemas
    from socsim.io.parquet import write_table

    agents, profiles, pairs, judgments, utterances = [], [], [], [], []
    for topic, c in topics:
        for p in prefs:
            for o in (0, 3, 6, 9):
                for k in range(2):
                    aid = f"{topic}.{p}.{o}.{k}"
                    agents.append(
                        {
                            "agent_id": aid,
                            "topic": topic,
                            "contentiousness": c,
                            "bias_level": 2 * k,
                            "bias_direction": "favor" if k else "none",
                            "background": 0,
                            "region": "r",
                            "age": "a",
                            "gender": "g",
                            "urbanicity": "u",
                            "education": "e",
                            "persona_prompt": "You are someone.",
                            "bias_prompt": None,
                        }
                    )
                    for m in models:
                        profiles.append(
                            {
                                "agent_id": aid,
                                "model": m,
                                "preference": p,
                                "preference_raw": str(p),
                                "preference_ok": True,
                                "openness": o,
                                "openness_answers": ["Yes"] * 9,
                                "openness_ok": True,
                            }
                        )
    if null_profile:  # one agent whose preference did not parse
        profiles[0].update(preference=None, preference_raw="maybe", preference_ok=False)
    prof = {(r["model"], r["agent_id"]): r for r in profiles}
    for m in models:
        for topic, c in topics:
            ids = [a["agent_id"] for a in agents if a["topic"] == topic]
            for i, (a1, a2) in enumerate(itertools.combinations(ids, 2)):
                cid = f"{m}.{topic}.{i:05d}"
                pairs.append(
                    {
                        "conversation_id": cid,
                        "model": m,
                        "topic": topic,
                        "agent1_id": a1,
                        "agent2_id": a2,
                        "profile1": "",
                        "profile2": "",
                        "opener": 1 + i % 2,
                        "question": "Q?",
                        "agent1_system_prompt": "s1",
                        "agent2_system_prompt": "s2",
                        "seed": 1,
                    }
                )
                p1, p2 = prof[(m, a1)], prof[(m, a2)]
                if p1["preference"] is None or p2["preference"] is None:
                    continue
                s = score(p1["preference"], p2["preference"], p1["openness"], p2["openness"], c)
                for t in range(5):  # each agent speaks twice after the question (Self-BLEU needs two)
                    judgments.append(
                        {
                            "conversation_id": cid,
                            "turn": t,
                            "score": s if t == 4 else 3,
                            "raw_answer": str(s),
                            "parse_ok": True,
                            "judge_model": "j",
                        }
                    )
                    utterances.append(
                        {
                            "conversation_id": cid,
                            "turn": t,
                            "speaker": 1 + t % 2,
                            "agent_id": (a1, a2)[t % 2],
                            "model": m,
                            "says_goodbye": False,
                            "text": texts(t)
                            if texts
                            else " ".join(f"w{(len(utterances) * 7919 + j * 104729) % 1000003}" for j in range(10)),
                        }
                    )
    cal = [
        {"judge_model": "j", "example": i, "reference": i + 1, "score": s, "raw_answer": str(s), "parse_ok": True}
        for i, s in enumerate(calibration)
    ]
    paths = {}
    for name, rows, schema, key in (
        ("agents", agents, schemas.AGENTS, ["agent_id"]),
        ("profiles", profiles, schemas.PROFILES, ["model", "agent_id"]),
        ("pairs", pairs, schemas.PAIRS, ["conversation_id"]),
        ("judgments", judgments, schemas.JUDGMENTS, ["conversation_id", "turn"]),
        ("utterances", utterances, schemas.UTTERANCES, ["conversation_id", "turn"]),
        ("calibration", cal, schemas.JUDGE_CALIBRATION, ["judge_model", "example"]),
    ):
        paths[name] = tmp_path / f"{name}.parquet"
        write_table(paths[name], rows, schema, key, {})
    paths.update(
        paper_file=ROOT / "data/coherence/paper.yaml",
        analysis=tmp_path / "analysis",
        figures=tmp_path / "figures",
        metrics=tmp_path / "metrics.json",
    )
    return paths


def analysis_inputs(paths, paper):
    """The analysis's inputs (socsim.io.report.AnalysisInputs) of a synthetic run, with `paper`'s numbers."""
    from socsim import config
    from socsim.io.report import AnalysisInputs

    names = ("agents", "profiles", "pairs", "judgments", "utterances", "calibration")
    cp = config.validate({"seed": 1, "coherence": {"bootstrap": {"repeats": 50}}})["coherence"]
    return AnalysisInputs({k: pd.read_parquet(paths[k]) for k in names}, cp, paper, seed=1)


def run_stages(paths, captured=None, monkeypatch=None, **coherence):
    """socsim coherence analyse + figures; with `captured`, the figures are kept (not only saved)."""
    import json

    from socsim.coherence import figures, stages

    if captured is not None:
        real = figures.save
        monkeypatch.setattr(
            figures, "save", lambda fig, out, name: captured.setdefault(name, fig) and real(fig, out, name)
        )
    from socsim import config
    from socsim.stages import StageContext

    params = config.validate({"seed": 1, "coherence": {"bootstrap": {"repeats": 50}, **coherence}})
    for name in ("analyse", "figures"):  # the real stages with the real context, without the CLI
        ctx = StageContext(
            stages.STUDY,
            stages.STUDY.stage(name),
            params,
            {**paths, "metrics": paths["metrics"].with_name(f"{name}.json")},
        )
        ctx.stage.run(ctx)
    a = paths["analysis"]
    strict = lambda text: json.loads(text, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))  # noqa: E731
    from socsim.io.report import read

    return {
        "summary": strict((a / "summary.json").read_text()),
        "tests": read(a, "six_tests"),
        "table4_md": (a / "table4_tests.md").read_text(),
        "table4_csv": read(a, "table4_tests"),
        "table4_tex": (a / "table4_tests.tex").read_text(),
        "vs_paper": read(a, "vs_paper"),
        "suppression": read(a, "suppression"),
        "findings": read(a, "findings"),
        "metrics": json.loads(paths["metrics"].with_name("analyse.json").read_text()),
        "figures": sorted(p.name for p in paths["figures"].glob("*.png")),
    }


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


FIGS = [
    "fig4_agreement_by_gap.png",
    "fig5_suppression.png",
    "fig6_anchors.png",
    "fig7_contentiousness.png",
    "fig8_openness.png",
]


def test_stages_on_coherent_synthetic_data(tmp_path):
    out = run_stages(synthetic_run(tmp_path))
    tests = out["tests"].set_index("test")
    assert tests.loc[1, "result"] == "pass" and tests.loc[5, "result"] == "pass"
    # contentiousness plays no part, but it cannot be shown: one topic a level, and a test with the
    # topic as unit cannot reject with 3 topics (every grouping of them is the same comparison)
    assert tests.loc[4, "raw_result"] == (
        "inconclusive (the topic-level test cannot reject at 0.01 with 3 topics (1 at C = 1, 1 at C = 2, "
        "1 at C = 3): its smallest p is 1)"
    )
    assert out["summary"]["degeneracy_flags"] == [] and out["figures"] == FIGS
    assert "degenerate" not in out["table4_md"]
    vs = out["vs_paper"].set_index("quantity")
    # Table 3's gap-0 distribution, computed independently from the inputs
    conv = pd.read_csv(tmp_path / "analysis/conversations.csv")
    gap0 = conv.loc[conv["gap"] == 0, "agreement"]
    for k in range(1, 6):
        row = vs.loc[f"Table 3: P(score {k}) at gap 0, observed (m)"]
        assert row["ours"] == pytest.approx((gap0 == k).mean(), abs=1e-6)
        assert row["difference"] == pytest.approx(row["ours"] - row["paper"], abs=1e-6)
    assert vs.loc["Table 3: P(score 1) at gap 0, observed (m)", "paper"] == pytest.approx(0.000204)
    assert vs.loc["Table 4: Test 1 passed (1) or failed (0) (m)", "finding_holds"] == "yes"
    assert pd.isna(vs.loc["Table 4: Test 2 passed (1) or failed (0) (m)", "paper"])  # no paper row for "m"
    d4 = vs.loc["Observed - expected mean at gap 4, linear shift (m)"]
    # by hand: the expected gap-4 distribution is gap 0's inverted (s -> 6 - s), so its mean is 6 - mean(gap 0)
    by_hand = conv.loc[conv["gap"] == 4, "agreement"].mean() - (6 - gap0.mean())
    assert d4["ours"] == pytest.approx(by_hand, abs=1e-6) and d4["paper"] == pytest.approx(1.8)
    assert d4["finding_holds"] == ("yes" if by_hand > 0 else "no")


def test_a_paper_model_is_compared_with_its_own_table4_row(tmp_path):
    from socsim.coherence.analysis.vs_paper import ACROSS_DESIGN

    out = run_stages(synthetic_run(tmp_path, models=("qwen2.5-7b",)))
    vs = out["vs_paper"].set_index("quantity")
    t1, t2, t3 = (vs.loc[f"Table 4: Test {t} passed (1) or failed (0) (qwen2.5-7b)"] for t in (1, 2, 3))
    # the paper's Qwen2.5-7B is judged by Llama3.1-8B on 5 statements and 9 topics, ours by "j" on 2 and 3
    for r in (t1, t2, t3):
        assert r["comparable"].startswith("no: judge model, statements per agent, topics")
        assert ACROSS_DESIGN in r["note"] and "paper row: Qwen2.5-7B" in r["note"]
    assert t1["comparable"].endswith(", Test 1 unit") and t2["comparable"].endswith(", topics")
    assert "the paper's p (conversations as unit, no verdict): " in t1["note"]
    assert t1["paper"] == 1 and t1["ours"] == 1 and t1["finding_holds"] == "yes"
    assert t1["finding"] == "qwen2.5-7b passes Test 1 (our run)"
    # both fail Test 2: across a design difference that is no "yes, the paper's result holds", only
    # our run's own verdict (the test fails: "no"), the paper's claim in the note
    assert t2["paper"] == 0 and t2["ours"] == 0 and t2["finding"] == "qwen2.5-7b passes Test 2 (our run)"
    assert t2["finding_holds"].startswith("no (a difference was found") and "ours fails" not in t2["finding_holds"]
    assert "paper: Qwen2.5-7B fails Test 2" in t2["note"]
    assert t3["paper"] == 0 and t3["ours"] == 1 and t3["finding_holds"] == "yes"  # ours passes, whatever the paper
    supp = vs.loc["Observed - expected mean at gap 4, linear shift (qwen2.5-7b)"]
    assert supp["finding_holds"] == "yes" and ACROSS_DESIGN in supp["note"]


def test_only_a_like_for_like_row_says_whether_the_papers_result_holds(tmp_path):
    from socsim.coherence.analysis import vs_paper as vp
    from socsim.io.vs_paper import table

    paths = synthetic_run(tmp_path, models=("qwen2.5-7b",))
    assert an.gather(analysis_inputs(paths, PAPER)).design["qwen2.5-7b"] == {
        "agent model": "qwen2.5-7b",
        "judge model": ["j"],
        "statements per agent": 2,
        "topics": 3,
    }
    same = {**PAPER, "design": {**PAPER["design"], "judge_model": "j", "statements_per_agent": 2, "topics": 3}}
    rows = {}
    for name, paper in (("differs", PAPER), ("same", same)):
        df = table(an.analyse(analysis_inputs(paths, paper)).vs_paper).set_index("quantity")
        rows[name] = {t: df.loc[f"Table 4: Test {t} passed (1) or failed (0) (qwen2.5-7b)"] for t in (1, 2, 3)}
    like = rows["same"]
    assert all(like[t]["comparable"] == "yes" and vp.ACROSS_DESIGN not in like[t]["note"] for t in (2, 3))
    # like with like: the paper's claim, and whether it holds in our run
    assert like[2]["finding"] == "Qwen2.5-7B fails Test 2" and like[2]["finding_holds"] == "yes"
    assert like[3]["finding"] == "Qwen2.5-7B fails Test 3" and like[3]["finding_holds"].startswith("no (ours passes")
    # Test 1's unit is ours (agents), the paper's the conversation: a design difference even here
    assert like[1]["comparable"] == "no: Test 1 unit"
    assert like[1]["finding"] == "qwen2.5-7b passes Test 1 (our run)" and like[1]["finding_holds"] == "yes"
    # the same numbers across a design difference: our verdicts only
    differs = rows["differs"]
    assert [differs[t]["finding_holds"][:3] for t in (1, 2, 3)] == ["yes", "no ", "yes"]
    assert all(differs[t]["finding"] == f"qwen2.5-7b passes Test {t} (our run)" for t in (1, 2, 3))


def test_vs_paper_and_table4_say_which_test6_rule_ran(tmp_path):
    """The synthetic run's (1-5) pairs agree 1 at openness 0-0 and 0-3 alike, 2 from O1 + O2 >= 9 on: the
    strict rule (our reading of the paper's text) cannot pass (0-0 is not below 0-3), the pooled rule (ours)
    passes. The vs_paper row and Table 4 say which rule ran; every rule is a design difference ("Test 6
    rule": the paper does not say whether every or any corrected comparison must be significant), so a
    Test 6 row never gives a verdict of agreement with the paper, even where all else matches."""
    from scipy.stats import mannwhitneyu

    from socsim.coherence.analysis import vs_paper as vp
    from socsim.coherence.analysis.vs_paper import ACROSS_DESIGN
    from socsim.io.vs_paper import table

    paths = synthetic_run(tmp_path, models=("qwen2.5-7b",))
    default = run_stages(paths)
    t6 = default["tests"].set_index("test").loc[6]
    assert t6["result"].startswith("inconclusive (") and t6["rule"] == an.TEST6_RULE_LABELS["strict"]
    row = default["vs_paper"].set_index("quantity").loc["Table 4: Test 6 passed (1) or failed (0) (qwen2.5-7b)"]
    assert "Test 6 rule: strict, our reading of the paper's text" in row["note"]
    assert row["comparable"].endswith(", Test 6 rule") and ACROSS_DESIGN in row["note"]
    assert f"{an.TEST6_ANY_LABEL} (no verdict of its own): pass (" in row["note"]  # the other reading beside
    assert row["finding"] == "qwen2.5-7b passes Test 6 (our run)"
    assert f"Test 6 rule: {an.TEST6_RULE_LABELS['strict']}." in default["table4_md"]
    assert default["summary"]["test6_rule"] == "strict"
    finding = default["findings"].set_index("claim").loc["Test 6: " + an.TEST_NAMES[6] + " (qwen2.5-7b)"]
    assert "our reading of the paper's text" in finding["test"]
    notes = (tmp_path / "analysis/vs_paper.md").read_text()
    assert (
        "Test 6 rule: ours strict (our reading of the paper's text), paper not stated (every or any "
        "Bonferroni-corrected comparison significant)"
    ) in notes
    # a run whose design matches the paper's in every other way: the Test 6 row still says "our run" only
    same = {**PAPER, "design": {**PAPER["design"], "judge_model": "j", "statements_per_agent": 2, "topics": 3}}
    like = table(an.analyse(analysis_inputs(paths, same)).vs_paper).set_index("quantity")
    r6 = like.loc["Table 4: Test 6 passed (1) or failed (0) (qwen2.5-7b)"]
    assert r6["comparable"] == "no: Test 6 rule" and r6["finding"] == "qwen2.5-7b passes Test 6 (our run)"
    assert vp.design_of_test6_rule("strict", "strict") == []  # a paper that stated our rule would match

    pooled = run_stages(paths, test6_rule="pooled")
    conv = pd.read_csv(tmp_path / "analysis/conversations.csv", dtype={"pref_pair": str, "open_pair": str})
    far = conv[conv["pref_pair"] == "1-5"]
    p = mannwhitneyu(
        far.loc[far["open_pair"] == "0-0", "agreement"],
        far.loc[far["open_pair"] != "0-0", "agreement"],
        alternative="less",
    ).pvalue
    t6 = pooled["tests"].set_index("test").loc[6]
    assert p < 0.01 and t6["result"] == "pass" and t6["p"] == pytest.approx(p)
    row = pooled["vs_paper"].set_index("quantity").loc["Table 4: Test 6 passed (1) or failed (0) (qwen2.5-7b)"]
    assert row["comparable"].startswith("no: ") and row["comparable"].endswith(", Test 6 rule")
    assert "Test 6 rule: pooled, ours (not a reading of the paper's text)" in row["note"]
    assert ACROSS_DESIGN in row["note"]
    # our run's verdict only (it passes), never "the paper's Qwen2.5-7B fails Test 6" turned into agreement
    assert row["finding"] == "qwen2.5-7b passes Test 6 (our run)" and row["finding_holds"] == "yes"
    t5 = pooled["vs_paper"].set_index("quantity").loc["Table 4: Test 5 passed (1) or failed (0) (qwen2.5-7b)"]
    assert "Test 6 rule" not in t5["comparable"] + t5["note"]  # only Test 6's row
    assert "pooled, ours (not a reading of the paper's text)" in pooled["table4_md"]
    notes = (tmp_path / "analysis/vs_paper.md").read_text()
    assert "Test 6 rule: ours pooled (ours, not a reading of the paper's text), paper not stated" in notes
    finding = pooled["findings"].set_index("claim").loc["Test 6: " + an.TEST_NAMES[6] + " (qwen2.5-7b)"]
    assert "ours, not a reading of the paper's text" in finding["test"]


def test_table4_claim_gives_no_agreement_verdict_across_a_design_difference():
    from socsim.coherence.analysis.vs_paper import ACROSS_DESIGN, table4_claim
    from socsim.stats.verdict import Verdict

    fails = Verdict(False, "a difference was found, p = 0.001")
    unclear = Verdict(None, "p = 0.2 but power 0.30 < 0.8")
    # like with like: the paper's "fails" holds when ours fails too
    like = table4_claim("q", 2, "Q fails Test 2", False, fails, [])
    assert like == ("Q fails Test 2", Verdict(True, fails.reason), "")
    # any design difference: our run's verdict as it is, never turned into agreement
    finding, verdict, note = table4_claim("q", 2, "Q fails Test 2", False, fails, ["judge model: ours j, paper J"])
    assert (finding, verdict) == ("q passes Test 2 (our run)", fails) and verdict.label.startswith("no (")
    assert note == f"{ACROSS_DESIGN}; paper: Q fails Test 2"
    assert table4_claim("q", 2, "Q fails Test 2", False, unclear, ["topics"])[1] == unclear
    assert table4_claim("q", 4, "", None, fails, ["topics"]) == ("", None, "")  # no claim of the paper


def test_one_unparsed_answer_keeps_integer_profiles(tmp_path, monkeypatch):
    captured = {}
    paths = synthetic_run(tmp_path, null_profile=True)
    from socsim.io.parquet import read_table

    assert read_table(paths["profiles"]).to_pandas()["preference"].dtype == float  # the null makes it float
    out = run_stages(paths, captured, monkeypatch)
    conv = pd.read_csv(tmp_path / "analysis/conversations.csv", dtype={"pref_pair": str, "open_pair": str})
    assert set(conv["pref_pair"]) == {f"{a}-{b}" for a, b in itertools.combinations_with_replacement(range(1, 6), 2)}
    assert not conv["open_pair"].str.contains(".", regex=False).any()
    tests = out["tests"].set_index("test")
    assert tests.loc[3, "raw_result"] in ("pass", "fail")
    # Test 6 (the strict rule by default) ran its comparisons on integer openness pairings
    assert tests.loc[6, "comparisons"] >= 1 and tests.loc[6, "detail"].startswith(
        "strict rule (our reading of the paper's text): lowest 0-0 "
    )
    labels = [t.get_text() for ax in captured["fig6_anchors"].axes for t in ax.texts]
    assert "1-5" in labels and "1-1" in labels and not any("." in t for t in labels)


def test_several_models_are_drawn_apart_on_sorted_axes(tmp_path, monkeypatch):
    captured = {}
    out = run_stages(synthetic_run(tmp_path, models=("m2", "m1")), captured, monkeypatch)
    assert sorted(out["tests"]["model"].unique()) == ["m1", "m2"]
    fig5, fig6, fig7 = captured["fig5_suppression"], captured["fig6_anchors"], captured["fig7_contentiousness"]
    assert len(fig5.axes) == 2 * 3 and len(fig6.axes) == 2 and len(fig7.axes) == 2 * 2
    for fig in (fig5, fig6, fig7, captured["fig4_agreement_by_gap"]):
        for ax in fig.axes:
            lo, hi = ax.get_ylim()
            assert lo <= 1 and hi >= 5 and lo > 0.5 and hi < 5.5  # the score scale
    assert [ax.get_title().split(":")[0] for ax in fig5.axes[::3]] == ["m1", "m2"]
    assert "m1" in fig6.axes[0].get_title() and "m2" in fig6.axes[1].get_title()
    ticks = [t.get_text() for t in fig7.axes[0].get_xticklabels()]
    assert ticks == sorted(ticks) and ticks[0] == "1-1" and ticks[-1] == "5-5"
    # every line of a panel belongs to one model: m1's panel has as many points as m1's table rows
    by = pd.read_csv(tmp_path / "analysis/bootstrap_by_pref_pair_contentiousness.csv")
    drawn = sum(len(line.get_xdata()) for line in fig7.axes[0].get_lines() if line.get_linestyle() == "-")
    assert drawn == ((by["model"] == "m1") & (by["contentiousness"] > 1)).sum()


def test_no_judgments_keeps_the_model_row(tmp_path, monkeypatch):
    from socsim.coherence import schemas
    from socsim.io.parquet import write_table

    paths = synthetic_run(tmp_path)
    write_table(paths["judgments"], [], schemas.JUDGMENTS, ["conversation_id", "turn"], {})
    captured = {}
    out = run_stages(paths, captured, monkeypatch)
    tests = out["tests"]
    assert list(tests["model"]) == ["m"] * 6 and set(tests["result"]) == {"n/a"}
    assert tests["detail"].iloc[0].startswith("none of ") and "parsed final judgment" in tests["detail"].iloc[0]
    assert out["table4_md"].count("n/a [1]") == 6 and "[1] n/a: none of" in out["table4_md"]
    assert out["table4_csv"].iloc[0]["test1"].startswith("n/a: none of")
    assert out["summary"]["no_data"]["m"].startswith("none of") and out["figures"] == FIGS
    for name in ("fig4_agreement_by_gap", "fig5_suppression", "fig6_anchors", "fig7_contentiousness", "fig8_openness"):
        assert any(t.startswith("no data") for t in _texts(captured[name])), name
    assert (out["vs_paper"]["finding_holds"].fillna("").isin(["n/a", ""])).all()


def test_all_removed_by_self_bleu(tmp_path, monkeypatch):
    paths = synthetic_run(tmp_path, texts=lambda t: "I agree completely with everything you say")
    captured = {}
    out = run_stages(paths, captured, monkeypatch)
    assert out["summary"]["conversations"] == 0 and out["summary"]["removed_by_self_bleu"] > 0
    assert set(out["tests"]["result"]) == {"n/a"}
    assert "removed by the Self-BLEU filter" in out["tests"]["detail"].iloc[0]
    assert out["suppression"]["note"].str.contains("removed by the Self-BLEU filter").all()
    assert any("Self-BLEU" in t for t in _texts(captured["fig5_suppression"]))


def test_one_topic(tmp_path, monkeypatch):
    captured = {}
    out = run_stages(synthetic_run(tmp_path, topics=(("neutral", 1),)), captured, monkeypatch)
    tests = out["tests"].set_index("test")
    assert tests.loc[4, "result"] == "n/a" and "two contentiousness levels" in tests.loc[4, "detail"]
    assert tests.loc[1, "result"] == "pass"
    assert any("one contentiousness level" in t for t in _texts(captured["fig7_contentiousness"]))


def test_degenerate_model_says_so_everywhere(tmp_path):
    # SmolLM2-135M-like: every preference "1", calibration examples judged 1, 1, 1, 1, 1
    paths = synthetic_run(tmp_path, prefs=[1], calibration=(1, 1, 1, 1, 1))
    out = run_stages(paths)
    flags = out["summary"]["degeneracy_flags"]
    scopes = {f["scope"] for f in flags}
    assert {"coherence preferences (m)", "coherence judge calibration (j)"} <= scopes
    pref = next(f for f in flags if f["scope"] == "coherence preferences (m)")
    assert pref["reason"] == "100% of 24 answers are 1 (threshold 90%)"
    assert pref["message"] == "degenerate input: coherence preferences (m): " + pref["reason"]
    cal = next(f for f in flags if f["scope"] == "coherence judge calibration (j)")
    assert cal["reason"].startswith("scores its calibration examples 1, 1, 1, 1, 1")
    assert out["summary"]["degenerate"] is True
    assert all(r.startswith("degenerate input: ") for r in out["tests"]["result"])
    assert out["table4_md"].count("degenerate input [") == 6 and "degenerate input: coherence" in out["table4_md"]
    assert "degenerate input" in out["table4_tex"]
    assert all(str(c).startswith("degenerate input: ") for c in out["table4_csv"].iloc[0, 1:])
    vs = out["vs_paper"]
    claims = vs[vs["finding"] != ""]  # suppression, Table 4 (Tests 1, 2, 3, 5), Finding 3: each says the flag
    assert len(claims) == 8 + 4 + 1 and claims["finding_holds"].str.startswith("degenerate input").all()
    assert (vs["flags"] != "").sum() >= len(vs) - 1  # all but the Self-BLEU share rest on the flagged inputs
    assert out["suppression"]["note"].str.startswith("degenerate input").all()
    assert out["metrics"]["degeneracy_flags"] == len(flags)


def test_panel_notes_take_their_flags_from_the_report(tmp_path):
    """One flag protocol: a panel's note shows the flags the report records on the table it draws
    (Report.flags_on), built after every flag is recorded; the openness panel shows no preference flag."""
    paths = synthetic_run(tmp_path, prefs=[1], calibration=(1, 1, 1, 1, 1))
    rep = an.analyse(analysis_inputs(paths, PAPER))
    drawn = {
        "fig4_agreement_by_gap": ["bootstrap_by_gap"],
        "fig5_suppression": ["suppression"] * 3,
        "fig6_anchors": ["bootstrap_by_pref_pair"],
        "fig7_contentiousness": ["bootstrap_by_pref_pair_contentiousness", "bootstrap_by_pref_pair_contentiousness_b2"],
        "fig8_openness": ["bootstrap_by_open_sum", "openness_vs_baseline"],
    }
    for fig, tables in drawn.items():
        for panel, table in zip(rep.plots[fig], tables, strict=True):
            flags = rep.flags_on(f"{table} (m)")
            assert flags and panel.note[0] == "; ".join(flags), (fig, panel.name)
    open_sum = rep.plots["fig8_openness"][0].note[0]
    assert "coherence judge calibration (j)" in open_sum and "coherence preferences (m)" not in open_sum


def test_too_few_conversations_are_worded_by_the_rule():
    rows = [(3, 3, 0, 1, 1, 3)] * 3 + [(1, 5, 0, 1, 1, 3)] * 2  # 3 conversations at gap 0, 2 at gap 4
    out = an.six_tests(_table(rows), 0.01).set_index("test")
    assert out.loc[2, "detail"] == "n = 2 conversations a side (gap 0: 3, gap 4: 2), needs 5"
    assert out.loc[2, "result"] == f"inconclusive ({out.loc[2, 'detail']})"


def test_judge_calibration_alone_flags_the_tests(tmp_path):
    out = run_stages(synthetic_run(tmp_path, calibration=(5, 4, 3, 2, 1)))  # answers reversed
    assert [f["scope"] for f in out["summary"]["degeneracy_flags"]] == ["coherence judge calibration (j)"]
    assert all(r.startswith("degenerate input: coherence judge calibration (j)") for r in out["tests"]["result"])


def test_degenerate_inputs_come_before_no_data(tmp_path):
    # SmolLM2-like preferences, and every conversation repetitive: the inputs' degeneracy is the reason
    paths = synthetic_run(
        tmp_path, topics=(("neutral", 1),), prefs=[1], texts=lambda t: "I agree completely with everything you say"
    )
    out = run_stages(paths)
    assert out["summary"]["conversations"] == 0
    tests = out["tests"]
    assert tests["result"].str.startswith("degenerate input: coherence preferences (m)").sum() == 5
    # Test 5 does not depend on preferences, but on the judge's scores (all 5 at gap 0)
    assert tests.set_index("test").loc[5, "result"].startswith("degenerate input: coherence final judge scores (m)")
    assert tests["detail"].str.contains("removed by the Self-BLEU filter").all()
    assert out["suppression"]["note"].str.startswith("degenerate input").all()


# -- verdicts with known answers (issue 20) ------------------------------------------------------------

BOOT = {"draw": 100, "repeats": 50, "level": 0.95}


def _gaps(rng, n, dist_of_gap):
    """Final scores per gap drawn from dist_of_gap(gap) (a distribution over 1-5), n at each gap."""
    return pd.DataFrame(
        [{"gap": g, "agreement": int(s)} for g in range(5) for s in rng.choice(an.SCORES, n, p=dist_of_gap(g))]
    )


def _suppressed(df, alpha=0.05):
    part = an.suppression(df, "linear", BOOT, seed=0)
    _, verdicts = an.with_verdicts(part, alpha, [])
    from socsim.stats.verdict import all_of

    return verdicts, all_of(verdicts[g] for g in (1, 2, 3, 4))


def test_suppression_holds_at_about_the_nominal_rate_without_suppression():
    # null at the paper's shape: gap 0 as the paper's Table 3, every gap as the linear expectation
    p0, _ = ALT
    expected = an.expected_distributions(p0, "linear")
    per_gap = {g: 0 for g in (1, 2, 3, 4)}
    held, reps = 0, 50
    for rep in range(reps):
        verdicts, claim = _suppressed(_gaps(np.random.default_rng(rep), 40, lambda g: expected[g]))
        held += claim.holds is True
        for g, v in verdicts.items():
            per_gap[g] += v.holds is True
    assert held <= 0.1 * reps  # the claim (all four gaps) in at most 10 % of null runs
    # each gap's one-sided test rejects at about alpha = 0.05 (a test ignoring the error of the
    # expected mean, which comes from the gap-0 sample, would reject more often)
    assert sum(per_gap.values()) <= 0.1 * 4 * reps and max(per_gap.values()) <= 0.15 * reps, per_gap


def test_suppression_holds_with_the_papers_suppression():
    p0, p4 = ALT  # gap 4 observed mean 3.6 where 1.8 is expected; gaps 1-3 suppressed alike
    lam = float((p4 - p0[::-1])[0] / (p0 - p0[::-1])[0])
    expected = an.expected_distributions(p0, "linear")
    suppressed = {g: (1 - lam) * expected[g] + lam * p0 for g in range(5)}
    held = sum(
        _suppressed(_gaps(np.random.default_rng(rep), 80, lambda g: suppressed[g]))[1].holds is True
        for rep in range(20)
    )
    assert held >= 18  # every gap must hold; gap 1's suppression is the smallest
    # too few conversations: inconclusive with the n and what it needs, not a yes
    verdicts, claim = _suppressed(_gaps(np.random.default_rng(0), 3, lambda g: suppressed[g]))
    assert claim.holds is None and claim.label.startswith("inconclusive (n = 3 conversations at gap 0, needs 30")
    # enough at gap 0, one conversation at gap 4: that gap is inconclusive, so is the claim
    df = _gaps(np.random.default_rng(0), 40, lambda g: suppressed[g])
    df = pd.concat([df[df["gap"] != 4], df[df["gap"] == 4].head(1)])
    verdicts, claim = _suppressed(df)
    assert verdicts[4].label == "inconclusive (n = 1 conversations at gap 4 (40 at gap 0), needs 30)"
    assert claim.holds is None


def test_test2_at_n5_under_the_papers_suppression_is_inconclusive_not_pass():
    p0, p4 = ALT
    results, not_rejected = [], 0
    for rep in range(20):
        rng = np.random.default_rng(rep)
        rows = [(3, 3, 0, 0, 1, int(s)) for s in rng.choice(an.SCORES, 5, p=p0)]  # gap 0
        rows += [(1, 5, 0, 0, 1, int(s)) for s in rng.choice(an.SCORES, 5, p=p4)]  # gap 4
        t2 = an.six_tests(_table(rows), 0.01, alternative=ALT).set_index("test").loc[2]
        results.append(t2["result"])
        not_rejected += t2["p"] >= 0.01
        assert t2["power"] < 0.8
    assert not_rejected >= 10  # the KS test mostly fails to reject here: the old rule passed it
    assert "pass" not in results and all(r.startswith("inconclusive (") or r == "fail" for r in results)
    # Test 2's power is the KS test's own (simulated), far below a t test's at the same n
    from socsim.stats.power import ks_power
    from socsim.stats.verdict import power_t

    assert ks_power(*ALT, 10, 10, 0.01, mirror=True) < 0.5 < power_t(2.4, 10, 10, alpha=0.01)


def test_the_latent_shift_moves_the_mean_by_d_sd():
    """Test 4's power moves score distributions on a latent normal scale (socsim.stats.power: latent_shift,
    moved)."""
    from socsim.stats.power import shifted

    # the alternative moves the mean by d SD: 50 / 50 -> 25 / 75 (SD 0.5, mean + 0.25), and back down
    assert shifted([0, 0, 0, 0.5, 0.5], 0.5) == pytest.approx([0, 0, 0, 0.25, 0.75], abs=1e-8)
    assert shifted([0, 0, 0, 0.5, 0.5], -0.5) == pytest.approx([0, 0, 0, 0.75, 0.25], abs=1e-8)
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    mean, sd = (an.SCORES * p).sum(), np.sqrt(((an.SCORES - (an.SCORES * p).sum()) ** 2 * p).sum())
    for d in (0.5, -0.5, 0.2):
        assert (an.SCORES * shifted(p, d)).sum() == pytest.approx(mean + d * sd, abs=1e-8)
    assert shifted([0, 0, 0, 0.05, 0.95], 0.5) is None  # no room above: the mean cannot rise by 0.5 SD
    assert shifted([0, 0, 0, 0, 1.0], 0.5) is None  # no spread: nothing to shift
    assert shifted(p, 0) == pytest.approx(p)


def test_flags_and_n_travel_with_their_numbers(tmp_path, monkeypatch):
    # preferences 1 and 5 only: gaps 0 and 4, nothing between; every preference of one value would
    # be degenerate, so two values
    captured = {}
    out = run_stages(synthetic_run(tmp_path, prefs=[1, 5], calibration=(1, 1, 1, 1, 1)), captured, monkeypatch)
    fig5 = captured["fig5_suppression"]
    ax = fig5.axes[0]
    texts = [t.get_text().replace("\n", " ") for t in ax.texts]
    assert any("n = " in t and "no data at gaps 1, 2, 3" in t for t in texts), texts
    assert any(t.startswith("degenerate input: coherence judge calibration (j)") for t in texts)
    observed = ax.get_lines()[0].get_ydata()
    assert np.isnan(np.asarray(observed[1:4], dtype=float)).all()  # no line through gaps 1-3
    assert sum(t == "no data" for t in texts) == 3
    # Table 4 and vs_paper rows carry their own inputs' flags, not the run's first
    vs = out["vs_paper"].set_index("quantity")
    assert "judge calibration" in vs.loc["Table 4: Test 5 passed (1) or failed (0) (m)", "flags"]
    assert vs["comparable"].str.startswith("no: agent model").all()  # our model is not the paper's
    design = out["summary"]["design_differences"]
    assert {"agent model: ours m, paper Qwen2.5-7B", "statements per agent: ours 2, paper 5"} <= set(design)
    where = {f["scope"]: f["where"] for f in out["summary"]["degeneracy_flags"]}
    assert "fig5_suppression (m)" in where["coherence judge calibration (j)"]
    claims = out["findings"].set_index("claim")
    supp = claims.loc[
        "disagreement suppressed: observed mean above the expected one at every gap 1-4, linear shift (m)"
    ]
    assert supp["verdict"].startswith("degenerate input: coherence judge calibration (j)") and supp["n"] > 0


def test_test5_row_does_not_carry_the_preference_flag(tmp_path):
    out = run_stages(synthetic_run(tmp_path, prefs=[1]))  # preferences degenerate, openness and judge fine
    vs = out["vs_paper"].set_index("quantity")
    assert vs.loc["Table 4: Test 1 passed (1) or failed (0) (m)", "flags"].startswith(
        "degenerate input: coherence preferences (m)"
    )
    t5 = vs.loc["Table 4: Test 5 passed (1) or failed (0) (m)"]
    assert "coherence preferences" not in t5["flags"] and "coherence preferences" not in t5["finding_holds"]
    tests = out["tests"].set_index("test")
    assert "coherence preferences" not in tests.loc[5, "flags"]
    assert tests.loc[1, "flags"].startswith("degenerate input: coherence preferences (m)")


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


def test_the_report_is_its_claims_in_order_and_the_figures_draw_only_plot_tables(tmp_path):
    """analyse = the base report plus each claim's findings and vs_paper rows in CLAIMS' order; the
    figures read only the plot tables (one per figure, declared by the analysis folder) and import
    nothing from the analysis."""
    import ast

    from socsim.coherence import schemas, stages
    from socsim.io.claims import judge_all

    paths = synthetic_run(tmp_path)
    inputs = analysis_inputs(paths, PAPER)
    rep = an.analyse(inputs)
    judged = judge_all(an.CLAIMS, an.gather(inputs))
    assert [c.name for c, _ in judged][:2] == ["disagreement_suppressed", "test1"]
    assert [f.claim for f in rep.findings] == [f.claim for _, j in judged for f in j.findings]
    assert [r.quantity for r in rep.vs_paper] == [r.quantity for _, j in judged for r in j.rows]
    assert list(rep.plots) == list(schemas.FIGURES)
    assert stages.ARTIFACTS["analysis"].tables == tuple(f"plot_{f}" for f in schemas.FIGURES)
    source = (ROOT / "src/socsim/coherence/figures.py").read_text()
    imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module is not None}
    assert not any(m.startswith("socsim.coherence.analysis") for m in imported), imported
