"""Coherence measures against independent computations: the bootstrap interval, BLEU, Self-BLEU and the
repetitive agents' filter (socsim.stats.bootstrap, socsim.stats.text, socsim.coherence.analysis.measures)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from socsim.coherence import analysis as an
from socsim.stats.bootstrap import bootstrap_means, grouped, interval
from socsim.stats.text import bleu, self_bleu, tokens

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
