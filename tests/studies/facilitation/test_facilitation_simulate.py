"""Facilitation simulate: turn taking and the context window (silent turns recorded, never in context), the
comments cleaned, the silence rule, echoes of earlier comments (socsim.facilitation.simulate)."""

from __future__ import annotations

import random

import pandas as pd

from socsim.facilitation import analysis
from socsim.facilitation.simulate import clean_comment
from socsim.stats.text import rouge_l_f1, tokens
from support.project import ROOT
from support.studies.facilitation import ALICE, BOB, SETUP, Discussion


def test_silent_turns_are_recorded_but_never_in_context():
    t = Discussion(SETUP)
    t.record(ALICE, "seed opinion", 0, is_seed=True)
    t.record(BOB, "first reply", 5)
    t.record(None, "", 0)  # the facilitator stays silent
    assert [c["text"] for c in t.context()] == ["seed opinion", "first reply"]
    t.record(ALICE, "second", 4)
    t.record(None, "please be civil", 3)
    assert [c["text"] for c in t.context()] == ["second", "please be civil"]  # h = 2
    silent = t.rows[2]
    assert silent["is_silent"] and silent["position"] is None and silent["turn"] == 2
    assert [r["position"] for r in t.rows] == [0, 1, None, 2, 3]


def test_clean_comment():
    assert clean_comment('  @bob: "I disagree."  ', "bob") == "I disagree."
    assert clean_comment("bob:   ", "bob") == ""
    assert clean_comment("@alice I disagree", "bob") == "@alice I disagree"


# -- silence -------------------------------------------------------------------------------------------


def test_silence_rule_from_data():
    from socsim.facilitation.simulate import SilenceRule

    rule = SilenceRule.from_file(ROOT / "data" / "facilitation" / "silence.yaml")
    for text in [
        "",
        "   ",
        "...",
        "…",
        "-",
        "(silent)",
        "[no intervention]",
        "[No intervention needed.]",
        "(Silence)",
        "*stays silent*",
        "<pass>",
        "(no comment)",
        "silent",
        "Silence.",
        "No intervention.",
        "pass",
        "[ remains silent ]",
        "(none)",
    ]:
        assert rule(text), text
    for text in [
        "Please keep it civil.",
        "I pass on this one, the data is unclear",
        "Silence is golden, folks",
        "@bob (silent) readers matter too",
        "No.",
        "ok",
    ]:
        assert not rule(text), text
    assert SilenceRule()("...") and not SilenceRule()("(silent)")  # without patterns: empty/punctuation only


def test_silent_replies_are_recorded_as_silence_and_counted():
    from socsim.facilitation.simulate import SilenceRule, silence_metrics

    rule = SilenceRule.from_file(ROOT / "data" / "facilitation" / "silence.yaml")
    t = Discussion(SETUP)
    t.record(ALICE, "seed", 0, is_seed=True)
    t.record(BOB, "you are all wrong", 5)
    t.record(None, "(silent)", 3, silent=rule("(silent)"))
    t.record(ALICE, "...", 1, silent=rule("..."))
    t.record(None, "Please be civil.", 4, silent=rule("Please be civil."))
    assert [r["is_silent"] for r in t.rows] == [False, False, True, True, False]
    assert [c["text"] for c in t.context()] == ["you are all wrong", "Please be civil."]
    assert t.rows[2]["text"] == "(silent)" and t.rows[2]["position"] is None  # kept for audit
    m = silence_metrics(t.rows)
    assert m == {
        "comments": 3,
        "silent_turns": 2,
        "facilitator_turns": 2,
        "facilitator_silent": 1,
        "facilitator_echoes": 0,
        "facilitator_interventions": 1,
        "user_silent": 1,
        "silent_by_rule": 2,
    }
    interv = analysis.interventions(pd.DataFrame(t.rows))
    assert interv["interventions"].tolist() == [1] and interv["opportunities"].tolist() == [2]

    # A facilitator that repeats an earlier comment has not intervened (both counters agree).
    t.record(None, "You are ALL wrong!", 2, silent=rule("You are ALL wrong!"))
    t.record(None, "Bob, 'you are all wrong' helps nobody: say why you disagree.", 3, silent=rule("x"))
    m = silence_metrics(t.rows)
    assert (m["facilitator_turns"], m["facilitator_echoes"], m["facilitator_interventions"]) == (4, 1, 2)
    interv = analysis.interventions(pd.DataFrame(t.rows))
    assert interv[["opportunities", "echoes", "interventions"]].values.tolist() == [[4, 1, 2]]


def test_echoes_equal_every_pair_checked_in_full():
    """The echo check skips the LCS of pairs whose shared words cannot reach F1 0.9; on random
    discussions of a small vocabulary (near-copies, shuffles, swaps, silences) it labels every comment
    as the full pairwise ROUGE-L does."""
    from socsim.stats.text import ECHO_ROUGE, echoes

    rng = random.Random(7)
    seen = {True: 0, False: 0}
    words = "taxes fund schools roads we all should pay more less fair".split()
    for _ in range(200):
        texts: list[str] = []
        for _ in range(rng.randint(1, 12)):
            if texts and rng.random() < 0.5:
                w = rng.choice(texts).split() or ["taxes"]
                i = rng.randrange(len(w))
                w = rng.choice(
                    [w[:i] + w[i + 1 :], w[:i] + [rng.choice(words)] + w[i:], w[:i] + [rng.choice(words)] + w[i + 1 :]]
                )
                if rng.random() < 0.3:
                    rng.shuffle(w)
                texts.append(" ".join(w))
            else:
                texts.append(" ".join(rng.choices(words, k=rng.randint(1, 14))))
        silent = [rng.random() < 0.15 for _ in texts]
        toks = [[] if q else tokens(t) for t, q in zip(texts, silent)]
        full = [bool(a) and any(rouge_l_f1(a, b) >= ECHO_ROUGE for b in toks[:i] if b) for i, a in enumerate(toks)]
        assert echoes(texts, silent) == full, texts
        for e in full[1:]:
            seen[e] += 1
    assert seen[True] > 50 and seen[False] > 50  # both answers occur often


def test_an_echo_repeats_an_earlier_comment_nearly_word_for_word():
    from socsim.stats.text import echoes

    texts = ["Taxes fund schools.", "I disagree, taxes are theft", "taxes fund schools", "", "Taxes fund schools!!"]
    silent = [False, False, False, True, True]
    assert echoes(texts, silent) == [False, False, True, False, False]  # a silent turn echoes nothing
    # Nearly the same words (ROUGE-L F1 >= 0.9) is an echo; a quote with words of its own is not.
    long = "we should all keep this discussion civil and respectful please"
    assert echoes([long, long.replace("please", "folks")], [False, False]) == [False, True]  # 1 of 10 words: F1 0.9
    two = long.replace("please", "folks").replace("civil", "calm")
    assert echoes([long, two], [False, False]) == [False, False]  # 2 of 10 words changed: F1 0.8
    assert echoes([long, long + " now"], [False, False]) == [False, True]
    assert echoes(["you are all wrong", "Bob: 'you are all wrong' is not an argument, say why"], [False, False]) == [
        False,
        False,
    ]
