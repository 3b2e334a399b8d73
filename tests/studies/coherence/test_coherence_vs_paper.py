"""Coherence vs the paper: a model compared with its own Table 4 row, a verdict of agreement only like for
like, the Test 6 rule named, each row's own flags (socsim.coherence.analysis.vs_paper)."""

from __future__ import annotations

import pandas as pd
import pytest

from socsim.coherence import analysis as an
from support.studies.coherence import PAPER, analysis_inputs, run_stages, synthetic_run


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
    assert "the paper's p (conversations as unit, two-sided, no verdict): " in t1["note"]
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
