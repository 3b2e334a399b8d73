"""Facilitation measures against independent computations: ROUGE-L and diversity by hand, Table 2's time as
the user-comment index, Fig. 6's troll groups, no ratings at all (socsim.facilitation.analysis.measures)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from socsim.facilitation import analysis
from socsim.stats.text import diversity, lcs_length, rouge_l_f1, tokens
from support.studies.facilitation import _known_discussions

# -- statistics against independent computations ---------------------------------------------------


def test_rouge_l_and_diversity_by_hand():
    assert tokens("Hello @bob, the CAT sat!") == ["hello", "the", "cat", "sat"]
    a, b, c = tokens("the cat sat on the mat"), tokens("@x the cat lay on a mat"), tokens("dogs bark")
    assert lcs_length(a, b) == 4  # the cat on mat
    f_ab = 2 * (4 / 6) * (4 / 6) / (4 / 6 + 4 / 6)
    assert rouge_l_f1(a, b) == pytest.approx(f_ab)
    assert rouge_l_f1(a, c) == 0.0
    texts = ["the cat sat on the mat", "@x the cat lay on a mat", "dogs bark"]
    assert diversity(texts) == pytest.approx(1 - (f_ab + 0 + 0) / 3)
    assert diversity(["same words", "SAME words"]) == pytest.approx(0.0)
    assert math.isnan(diversity(["alone"]))


def test_time_is_the_user_comment_index_and_recovers_known_slopes():
    comments, ann, setups = _known_discussions()
    rated = analysis.rated_comments(comments, ann, setups)  # default: user_index
    users = rated[~rated.is_facilitator]
    assert users["time"].min() == 2  # the seed opinion is user comment 1 and is not rated
    # The clock ignores facilitator and silent turns: user comments are 2, 3, ... without gaps.
    for _, g in users.groupby("discussion_id"):
        times = sorted(set(g["time"]))
        assert times == list(range(2, 2 + len(times)))
    res = analysis.toxicity_ols(rated)
    mg = 'C(strategy, Treatment("No Moderator"))[T.Moderation Game]'
    coef = res.table["coef"]
    assert coef["Intercept"] == pytest.approx(2.0, abs=1e-9)
    assert coef["time"] == pytest.approx(-0.01, abs=1e-9)
    assert coef[mg] == pytest.approx(-0.3, abs=1e-9)
    assert coef[f"{mg}:time"] == pytest.approx(-0.05, abs=1e-9)
    # The old clock (position, facilitator comments included) gives a different answer.
    old = analysis.toxicity_ols(analysis.rated_comments(comments, ann, setups, time="position"))
    assert abs(old.table["coef"][f"{mg}:time"] - (-0.05)) > 0.02
    with pytest.raises(ValueError, match="time"):
        analysis.rated_comments(comments, ann, setups, time="clock")


# -- Fig. 6: basic-prompt ablation against the matching main cell -----------------------------------


def test_troll_groups_compare_the_matching_cell_in_proportions():
    rows = []

    def add(cond, model, strategy, trolls, values):
        for i, v in enumerate(values):
            rows.append(
                {
                    "discussion_id": f"{cond}{model}{strategy}{trolls}",
                    "turn": i,
                    "condition": cond,
                    "model": model,
                    "strategy": strategy,
                    "instructions": "basic" if cond != "main" else "full",
                    "trolls": trolls,
                    "toxicity": v,
                }
            )

    add("basic_instructions", "q", "No Instructions", "with trolls", [1, 1, 2, 1.5])
    add("basic_instructions", "q", "No Instructions", "without trolls", [1, 1])
    add("main", "q", "No Instructions", "with trolls", [2, 2, 3, 1, 2.4])
    add("main", "q", "No Instructions", "without trolls", [1, 2, 1])
    add("main", "q", "Rules Only", "with trolls", [5, 5])  # another strategy: not comparable
    add("main", "other", "No Instructions", "with trolls", [5])  # another model: not comparable
    g = analysis.troll_groups(pd.DataFrame(rows))
    assert set(zip(g["prompt"], g["trolls"])) == {
        ("basic prompt", "with trolls"),
        ("basic prompt", "without trolls"),
        ("instruction prompt", "with trolls"),
        ("instruction prompt", "without trolls"),
    }
    assert (g.model == "q").all() and (g.strategy == "No Instructions").all()
    sums = g.groupby(["prompt", "trolls"])["proportion"].sum()
    assert np.allclose(sums, 1.0)
    main_trolls = g[(g.prompt == "instruction prompt") & (g.trolls == "with trolls")].set_index("toxicity_level")
    assert main_trolls["n"].iloc[0] == 5 and main_trolls.loc[2, "count"] == 3  # 2, 2, 2.4 -> 2 (halves up: 1.5 -> 2)
    basic_trolls = g[(g.prompt == "basic prompt") & (g.trolls == "with trolls")].set_index("toxicity_level")
    assert basic_trolls.loc[2, "proportion"] == pytest.approx(0.5)  # 2 and 1.5
    assert analysis.troll_groups(pd.DataFrame(rows)[lambda d: d.condition == "main"]).empty


def test_no_ratings_at_all_is_said_so():
    empty = pd.DataFrame({"annotator_id": pd.Series([], dtype=str), "parse_ok": pd.Series([], dtype=bool)})
    assert (
        analysis.agreement(empty.assign(toxicity=[], argument_quality=[], discussion_id=[], turn=[]))[
            "parse_failure_rate"
        ]
        is None
    )
    with pytest.raises(ValueError, match="no ratings at all"):
        analysis.check_ratings(empty)


def _lcs_table(a: list[str], b: list[str]) -> int:
    """The plain dynamic programme (the independent computation)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def test_lcs_equals_the_plain_dynamic_programme():
    """Against the plain dynamic programme on random word lists (shared ends included), and on near-copies
    (a plan's filler answers: 1,000-word comments that differ in one word)."""
    import random

    rng = random.Random(3)
    for _ in range(300):
        core = [rng.choice("abcd") for _ in range(rng.randint(0, 6))]
        a = core + [rng.choice("abcd") for _ in range(rng.randint(0, 8))] + core[::-1]
        b = core + [rng.choice("abcd") for _ in range(rng.randint(0, 8))] + core[::-1]
        assert lcs_length(a, b) == (_lcs_table(a, b) if a and b else 0), (a, b)
    long = [f"w{i % 50}" for i in range(1000)]
    other = long[:500] + ["x"] + long[501:]
    assert lcs_length(long, other) == 999 and lcs_length(long, long) == 1000
