"""Coherence study: parsing, pairing, the Goodbye stop, the judge's window, bootstrap, expected
distributions and suppression, each of the six tests on data built to pass and to fail, Self-BLEU."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from socsim.coherence import agents as ag
from socsim.coherence import analysis as an
from socsim.coherence import dialogue
from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.text import bleu, self_bleu, tokens
from socsim.llm.types import Response

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
PROMPTS = ag.read_yaml(ROOT / "data/coherence/prompts.yaml")
TOPICS = ag.read_yaml(ROOT / "data/coherence/topics.yaml")


def resp(text, constraint):
    value, ok, err = constraint.parse(text)
    return Response(text=text, value=value, parse_ok=ok, parse_error=err, prompt_tokens=0, completion_tokens=0,
                    finish_reason="stop", cached=False)


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
        agents[aid] = {"agent_id": aid, "topic": "t", "bias_level": int(rng.integers(0, 3))}
        profiles.append({"agent_id": aid, "model": "m", "preference": int(rng.integers(1, 6)),
                         "openness": int(rng.integers(0, 3)), "preference_ok": True, "openness_ok": True})
    profiles.append({"agent_id": "t.bad", "model": "m", "preference": None, "openness": None,
                     "preference_ok": False, "openness_ok": False})
    agents["t.bad"] = {"agent_id": "t.bad", "topic": "t", "bias_level": 0}
    return agents, profiles


def test_pairing_covers_every_profile_pair_and_never_self_pairs():
    agents, profiles = _profiles()
    pairs = ag.pair_agents(profiles, agents, {"unit": "profile", "k": 2, "max_pairs_per_topic": None}, seed=1)
    by_profile = {}
    for p in profiles[:-1]:
        by_profile.setdefault(ag.profile_key(p["preference"], p["openness"], agents[p["agent_id"]]["bias_level"],
                                             "profile"), []).append(p["agent_id"])
    expected = {(u, v) for u, v in itertools.combinations_with_replacement(sorted(by_profile), 2)
                if u != v or len(by_profile[u]) >= 2}
    got = {(p["profile1"], p["profile2"]) for p in pairs}
    assert got == expected
    assert len(pairs) == 2 * len(expected)
    assert all(p["agent1_id"] != p["agent2_id"] for p in pairs)
    assert all("t.bad" not in (p["agent1_id"], p["agent2_id"]) for p in pairs)
    for p in pairs:  # each agent has the profile its side says
        for side in (1, 2):
            assert p[f"agent{side}_id"] in by_profile[p[f"profile{side}"]]
    capped = ag.pair_agents(profiles, agents, {"unit": "profile", "k": 1, "max_pairs_per_topic": 5}, seed=1)
    assert len(capped) == 5
    binned = ag.pair_agents(profiles, agents, {"unit": "bins", "k": 1, "max_pairs_per_topic": None}, seed=1)
    assert all(p["profile1"].split("-")[1] in {"low", "mid", "high"} for p in binned)


# -- conversation stop and judge window --------------------------------------------------------------

def test_goodbye_stop():
    assert dialogue.says_goodbye("I think we covered it. Goodbye.")
    assert dialogue.says_goodbye("Thanks! goodbye")
    assert not dialogue.says_goodbye("Goodbye. But wait, one more point about taxes.")
    u = [{"speaker": 1, "says_goodbye": False}, {"speaker": 2, "says_goodbye": True}]
    assert dialogue.finished(u, "first_goodbye") and not dialogue.finished(u, "both_goodbye")
    assert dialogue.finished(u + [{"speaker": 1, "says_goodbye": True}], "both_goodbye")


def test_judge_window_holds_last_three_statements_of_each_agent():
    convo = [{"turn": t, "speaker": 1 + t % 2, "text": f"s{t}"} for t in range(9)]
    window = dialogue.judge_window(convo, 3)
    assert [u["text"] for u in window] == ["s3", "s4", "s5", "s6", "s7", "s8"]
    assert [u["text"] for u in dialogue.judge_window(convo[:2], 3)] == ["s0", "s1"]
    msgs = dialogue.judge_messages(PROMPTS, window)
    assert "Agent 2: s3" in msgs[1]["content"] and "s2" not in msgs[1]["content"]
    assert msgs[0]["content"].count("Example (score") == 5
    their_view = dialogue.agent_messages("sys", convo[:3], speaker=2)
    assert [m["role"] for m in their_view] == ["system", "user", "assistant", "user"]


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

def _table(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["P1", "P2", "O1", "O2", "contentiousness", "agreement"])
    df["B1"] = df["B2"] = 0
    df["conversation_id"] = [f"c{i}" for i in range(len(df))]
    df["agent1_id"] = df["agent2_id"] = "x"
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


def test_six_tests_pass_on_coherent_and_fail_on_sycophantic_agents():
    good = an.six_tests(_coherent(), alpha=0.01).set_index("test")
    bad = an.six_tests(_sycophantic(), alpha=0.01).set_index("test")
    assert good.loc[1, "result"] == "pass" and bad.loc[1, "result"] == "fail"
    assert good.loc[2, "result"] == "pass" and bad.loc[2, "result"] == "fail"
    assert good.loc[3, "result"] == "pass" and bad.loc[3, "result"] == "fail"
    assert good.loc[4, "result"] == "pass" and bad.loc[4, "result"] == "fail"
    assert good.loc[5, "result"] == "pass" and bad.loc[5, "result"] == "fail"
    assert good.loc[6, "result"] == "pass" and bad.loc[6, "result"] == "fail"


def test_six_tests_without_data_are_not_applicable():
    tiny = _table([(1, 2, 0, 1, 1, 3), (2, 2, 1, 1, 1, 4)])
    assert set(an.six_tests(tiny, 0.01)["result"]) == {"n/a"}


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
        (0.1 / 4 * 0.1 / 3 * 0.1 / 2 * 0.1 / 1) ** 0.25)
    assert math.isnan(self_bleu(["only one"]))
    utt = pd.DataFrame({"conversation_id": ["c1"] * 5, "turn": range(5), "agent_id": ["q", "r", "s", "r", "s"],
                        "text": ["question?", "I agree with you fully", "yes yes yes", "I agree with you fully",
                                 "no idea at all really"]})
    table = an.self_bleu_table(utt).set_index("agent_id")["self_bleu"]
    assert table["r"] == pytest.approx(1.0) and table["s"] < 0.1 and "q" not in table
    df = pd.DataFrame({"agent1_id": ["q", "s"], "agent2_id": ["r", "t"]})
    kept, removed = an.filter_repetitive(df, table.reset_index(), 0.5)
    assert removed == 1 and kept["agent1_id"].tolist() == ["s"]
