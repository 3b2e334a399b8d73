"""The DEBATE report (issues 20, 34): verdicts with known answers (null data at about the nominal rate,
a true effect, too little data), d_z against an independent computation, flags that travel with
their own numbers only, the data source among the design differences, figures from Parquet. The null
calibration of every verdict is in test_debate_nulls.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from socsim.debate import analysis, figures
from socsim.debate.analysis import stats
from socsim.debate.schemas import FIGURES
from socsim.io import report
from socsim.stats import ttest
from socsim.stats.verdict import MIN_UNITS
from support.analysis import plots
from support.studies.debate_inputs import PAPER, analysis_inputs, by_session_rows, random_inputs, two_models
from support.studies.debate_synthetic import sect6

TWEET_MEAN_LLM = PAPER["group_level"]["tweet_mean"]["llm_change"]  # t = 2.23, p = .03: "rises"
TWEET_MEAN_HUMAN = PAPER["group_level"]["tweet_mean"]["human_change"]  # p = .59: "does not change"


def _members(
    rng: np.random.Generator, groups: int, shift: float = 0.0, size: int = 4, human_shift: float = 0.0
) -> pd.DataFrame:
    """Members of `groups` groups; the twins' tweet stance moves by `shift` from round 1 to 3, the humans'
    by `human_shift`."""
    rows = []
    for g in range(groups):
        s1 = rng.normal(size=size)
        o_init = rng.normal(size=size)
        for source in ("human", "llm"):
            move = shift if source == "llm" else human_shift
            for i in range(size):
                rows.append(
                    {
                        "session_id": f"S{g:03d}",
                        "worker_id": f"w{g}_{i}",
                        "source": source,
                        "partner1": f"w{g}_{(i + 1) % size}",
                        "s1": s1[i],
                        "s2": rng.normal(),
                        "s3": s1[i] + move + rng.normal(),
                        "o_init": o_init[i],
                        "o_final": o_init[i] + rng.normal(),
                    }
                )
    return pd.DataFrame(rows)


def _tweet_mean(tests: pd.DataFrame, test: str) -> object:
    return next(r for r in tests.itertuples(index=False) if r.quantity == "tweet mean" and r.test == test)


# --- d_z -------------------------------------------------------------------------------------------


def test_d_z_is_the_mean_change_over_its_sd_by_hand():
    rng = np.random.default_rng(1)
    members = _members(rng, 7, shift=0.3)
    per_group, tests = stats.group_level(members)
    wide = per_group.pivot_table(index="session_id", columns=["source", "quantity"], values="mean")
    for source in ("llm", "human"):
        d = list(wide[(source, "s3")] - wide[(source, "s1")])
        m = sum(d) / len(d)
        sd = math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1))
        row = _tweet_mean(tests, f"{source} change")
        assert row.d_z == pytest.approx(m / sd) and row.d_z == pytest.approx(row.t / math.sqrt(7))
    # d_z does not grow with the number of groups, t does: same effect, 4x the groups
    few = [
        _tweet_mean(stats.group_level(_members(np.random.default_rng(s), 10, 1.0))[1], "llm change") for s in range(20)
    ]
    many = [
        _tweet_mean(stats.group_level(_members(np.random.default_rng(s), 40, 1.0))[1], "llm change") for s in range(20)
    ]
    assert np.mean([r.t for r in many]) > 1.6 * np.mean([r.t for r in few])
    assert np.mean([r.d_z for r in many]) == pytest.approx(np.mean([r.d_z for r in few]), rel=0.25)


def test_paper_d_z_is_t_over_sqrt_31_in_vs_paper_and_fig2_table(tmp_path: Path):
    rep = analysis.analyse(analysis_inputs(*random_inputs(np.random.default_rng(3), groups=6)))
    es = rep.tables["fig2_effect_sizes"].df.set_index(["quantity", "test"])
    assert es.loc[("tweet mean", "llm change"), "paper_d_z"] == pytest.approx(2.23 / math.sqrt(31))
    assert es.loc[("opinion SD", "llm change"), "paper_d_z"] == pytest.approx(-4.65 / math.sqrt(31))
    row = next(r for r in rep.vs_paper if r.quantity.startswith("Fig. 2 tweet mean: llm change"))
    assert row.paper == pytest.approx(2.23 / math.sqrt(31))
    ours = rep.tables["group_tests"].df.set_index(["quantity", "test"]).loc[("tweet mean", "llm change")]
    assert row.ours == pytest.approx(ours["t"] / math.sqrt(ours["n_groups"]))


# --- verdicts with known answers -------------------------------------------------------------------

PAPER_UP = {"t": 2.5, "p": 0.02}  # a directional result of the paper's kind, for a test of the humans' own change


def _topics(groups: int, topics: int = 7, prefix: str = "S", width: int = 3) -> dict[str, str]:
    return {f"{prefix}{g:0{width}d}": f"T{g % topics}" for g in range(groups)}


def _human_changes(members: pd.DataFrame) -> pd.Series:
    return stats.group_changes(stats.group_level(members)[0], stats.GROUP_TESTS)[("tweet mean", "human change")]


def test_fig2_twin_tests_are_the_papers_comparison_without_a_verdict():
    """The twins' round-1 tweet and initial opinion are the humans': their Fig. 2 tests compare a
    model-written end with a human-written start. No finding rests on them; the report shows them."""
    tests = stats.group_level(_members(np.random.default_rng(20), 12, shift=1.0))[1]
    for r in tests.itertuples(index=False):
        ref = analysis.paper_test(PAPER, r.quantity, r.test) or TWEET_MEAN_LLM
        f = analysis.group_finding(r, ref, [])
        assert (f is None) == (r.test != "human change"), (r.quantity, r.test)
    rep = analysis.analyse(analysis_inputs(*random_inputs(np.random.default_rng(23), groups=7)))
    row = _row(rep, "Fig. 2 tweet mean: llm change")
    assert row.verdict is None and row.finding == "" and row.note.startswith(analysis.PAPERS_COMPARISON)
    assert row.paper == pytest.approx(2.23 / math.sqrt(31))  # the paper's number stays beside ours
    es = rep.tables["fig2_effect_sizes"].df.set_index(["quantity", "test"])
    assert es.loc[("tweet mean", "llm change vs human change"), "verdict"] == analysis.PAPERS_COMPARISON
    assert es.loc[("tweet mean", "human change"), "verdict"].startswith(("yes", "no", "inconclusive"))
    claims = [f.claim for f in rep.findings]
    assert not any("twins' group" in c and "round 3 vs round 1" in c for c in claims)
    assert sum(c.startswith("Fig. 2: the humans'") for c in claims) == 4  # the paper's four human changes


def test_fig2_effect_finding_holds_over_topics_on_a_true_effect_and_says_no_on_the_reverse():
    rng = np.random.default_rng(21)
    topics = _topics(15)
    up = []
    for _ in range(10):
        m = _members(rng, 15, human_shift=1.0)
        row = _tweet_mean(stats.group_level(m)[1], "human change")
        up.append(analysis.group_finding(row, PAPER_UP, [], _human_changes(m), topics))
    assert all(f.verdict.holds is True and f.unit == "topics" and f.n == 7 for f in up), [f.verdict.label for f in up]
    assert "sign-flip over topics" in up[0].verdict.reason and "per group: t-test p" in up[0].verdict.reason
    m = _members(rng, 15, human_shift=-1.5)
    down = analysis.group_finding(
        _tweet_mean(stats.group_level(m)[1], "human change"), PAPER_UP, [], _human_changes(m), topics
    )
    assert down.verdict.holds is False and down.verdict.label.startswith("no (")
    # without the groups' topics no verdict over groups stands in for the topic level
    m = _members(rng, 15, human_shift=1.0)
    bare = analysis.group_finding(_tweet_mean(stats.group_level(m)[1], "human change"), PAPER_UP, [])
    assert bare.verdict.holds is None and "topics are not given" in bare.verdict.reason
    # 5 topics: a sign-flip test cannot reach p < .05 (2 / 2^5 = .0625), so the verdict says why
    m = _members(rng, 15, human_shift=1.0)
    few = analysis.group_finding(
        _tweet_mean(stats.group_level(m)[1], "human change"), PAPER_UP, [], _human_changes(m), _topics(15, 5)
    )
    assert few.verdict.holds is None and few.verdict.reason.startswith(f"n = 5 topics, needs {analysis.MIN_TOPICS}")


def test_fig2_tiny_inputs_are_inconclusive_with_n_and_need():
    m = _members(np.random.default_rng(2), 2, human_shift=3.0)
    row = _tweet_mean(stats.group_level(m)[1], "human change")
    f = analysis.group_finding(row, PAPER_UP, [], _human_changes(m), _topics(2))
    assert f.verdict.holds is None and f.verdict.label == f"inconclusive (n = 2 groups, needs {MIN_UNITS})"
    g = analysis.group_finding(row, TWEET_MEAN_HUMAN, [], _human_changes(m), _topics(2))
    assert g.verdict.label == f"inconclusive (n = 2 groups, needs {MIN_UNITS})"


def test_fig2_no_change_claim_is_an_equivalence_test_over_topics():
    """'The humans do not change' holds only when two one-sided t tests over the topic means of the groups' changes
    put them within 0.4 SD of the group changes (the paper's smallest significant change, d_z 0.4); a sign-flip test
    over the topics that finds a change says no; without the groups' topics it is inconclusive (the unit is the
    topic). Its false "yes" rate at d_z = 0.4 is in test_debate_nulls.py."""
    assert analysis.NO_CHANGE_DZ <= min(
        abs(PAPER["group_level"][q][k]["t"]) / math.sqrt(31)
        for q in ("tweet_mean", "tweet_sd", "opinion_mean", "opinion_sd")
        for k in ("llm_change", "human_change")
        if PAPER["group_level"][q][k]["p"] < 0.05
    )
    rng = np.random.default_rng(22)

    def finding(groups: int, topics: int = 7, shift: float = 0.0):
        members, of = sect6(rng, groups, topics, human_shift=shift)
        per_group, tested = stats.group_level(members)
        changes = stats.group_changes(per_group, stats.GROUP_TESTS)[("tweet mean", "human change")]
        return analysis.group_finding(_tweet_mean(tested, "human change"), TWEET_MEAN_HUMAN, [], changes, of)

    few = finding(20, topics=5)
    assert few.verdict.holds is None and "n = 5 topics, needs 6" in few.verdict.reason  # too few topics
    big = [finding(120) for _ in range(10)]
    assert sum(f.verdict.holds is True for f in big) >= 8  # no change at 120 groups over 7 topics
    held = next(f for f in big if f.verdict.holds)
    assert "does not change" in held.claim and held.unit == "topics" and held.n == 7
    assert "TOST p = " in held.verdict.reason and "sign-flip p = " in held.verdict.reason
    changed = finding(60, shift=1.0)
    assert changed.verdict.holds is False and changed.verdict.reason.startswith("a change was found over topics")
    members, _ = sect6(rng, 40)
    per_group, tested = stats.group_level(members)
    alone = analysis.group_finding(_tweet_mean(tested, "human change"), TWEET_MEAN_HUMAN, [])
    assert alone.verdict.holds is None and "the claim's unit is the topic" in alone.verdict.reason


def test_equivalence_p_against_a_monte_carlo_of_its_definition():
    """At |d_z| = margin exactly, "equivalent" (p < alpha) happens at rate alpha: simulated t statistics."""
    rng = np.random.default_rng(24)
    for n, margin, alpha in ((31, 0.4, 0.025), (12, 0.8, 0.05)):
        x = rng.normal(margin, 1.0, size=(40000, n))
        t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))
        p = np.array([ttest.equivalence_p(v, n, margin) for v in t[:4000]])
        assert np.mean(p < alpha) == pytest.approx(alpha, abs=0.012)
        # p is P(|T| <= |t|) under d_z = margin: the empirical share of simulated |T| below |t|
        for v in (0.2, 1.0, -1.7):
            assert ttest.equivalence_p(v, n, margin) == pytest.approx(np.mean(np.abs(t) <= abs(v)), abs=0.006)
    assert ttest.equivalence_p(None, 10, 0.4) is None and ttest.equivalence_p(1.0, 1, 0.4) is None


def test_mode_order_and_length_findings_null_true_tiny():
    rng = np.random.default_rng(30)
    topics = _topics(14, prefix="S", width=0)
    null_order = [analysis.mode_order(by_session_rows(rng, 14), topics, []) for _ in range(100)]
    null_len = [analysis.llm_longer(by_session_rows(rng, 14), topics, []) for _ in range(100)]
    assert sum(f.verdict.holds is True for f in null_order) <= 3  # two pairs must both reject: < 2.5 %
    assert sum(f.verdict.holds is True for f in null_len) <= 7  # one direction: nominal 2.5 %
    order = analysis.mode_order(by_session_rows(rng, 14, gap=0.04), topics, [])
    longer = analysis.llm_longer(by_session_rows(rng, 14, longer=20.0), topics, [])
    assert order.verdict.holds is True and order.unit == "topics" and order.n == 7
    assert longer.verdict.holds is True and longer.value < 0
    assert analysis.mode_order(by_session_rows(rng, 14, gap=-0.04), topics, []).verdict.holds is False
    tiny = analysis.mode_order(by_session_rows(rng, 2, gap=0.04), topics, [])
    assert tiny.verdict.label == f"inconclusive (n = 2 debates, needs {MIN_UNITS})"
    assert analysis.llm_longer(by_session_rows(rng, 1, longer=20.0), topics, []).verdict.label.startswith(
        "inconclusive (n = 1"
    )
    # 8 debates of 2 topics: the debates nest in topics, too few for the claim's unit
    two = analysis.mode_order(by_session_rows(rng, 8, gap=0.04), _topics(8, 2, "S", 0), [])
    assert two.verdict.holds is None and two.verdict.reason.startswith(f"n = 2 topics, needs {analysis.MIN_TOPICS}")


# --- a whole report on synthetic inputs ------------------------------------------------------------


def _row(rep: report.Report, start: str):
    return next(r for r in rep.vs_paper if r.quantity.startswith(start))


def test_a_stance_flag_lands_only_on_stance_derived_numbers():
    rep = analysis.analyse(analysis_inputs(*random_inputs(np.random.default_rng(4), groups=7, stance=0.5)))
    stance = [f.flag for f in rep.flags if f.flag.scope == "stance annotator (utterances)"]
    assert len(stance) == 1 and "100%" in stance[0].reason
    assert all(f.flag.scope == "stance annotator (utterances)" for f in rep.flags)  # nothing else is degenerate
    for metric in analysis.METRICS:
        row = _row(rep, f"Table3 depth, m, mode 1, original: {metric}")
        assert (stance[0] in row.flags) == (metric == "d_stance"), metric
    assert not _row(rep, "Fig. 2 tweet mean: llm change").flags  # tweets: a different input
    assert not _row(rep, "depth, m: S_sem of the first mode").flags
    t3 = rep.tables["table3"].df
    assert t3["flags"].str.startswith("d_stance: degenerate input: stance annotator (utterances)").all()
    where = next(f.where for f in rep.flags)
    assert any(w.startswith("table3.d_stance[") for w in where) and not any(".s_sem" in w for w in where)
    assert any(f.verdict.holds is True for f in rep.findings if "semantic similarity" in f.claim)


def test_on_topic_and_tweet_flags_concern_their_own_rows():
    rep = analysis.analyse(analysis_inputs(*random_inputs(np.random.default_rng(5), groups=5, on_topic_all=True)))
    (on_topic,) = [f.flag for f in rep.flags]
    assert on_topic.scope == "on-topic annotator"
    assert on_topic in _row(rep, "Table3 depth, m, mode 2, original: s_sem").flags
    assert on_topic in _row(rep, "Table3 depth, m, mode 2, original: r_on_topic").flags
    assert not _row(rep, "Fig. 2 opinion SD: llm change").flags and not _row(rep, "Fig. 3 tweet change").flags
    length = next(f for f in rep.findings if "longer" in f.claim)
    assert length.verdict.degenerate  # the on-topic filter decides which utterances it compares


def test_data_source_and_models_are_design_differences(tmp_path: Path):
    metrics, tables, dp, paper, run, by_session = random_inputs(np.random.default_rng(6), groups=4)
    rep = analysis.analyse(analysis_inputs(metrics, tables, dp, paper, run, by_session))
    assert "data source: ours fixture (synthetic), paper DEBATE (real)" in rep.design
    assert "agent model: ours m, paper gpt-4o-mini" in rep.design
    assert "encoder: ours sentence-transformers/all-MiniLM-L6-v2, paper jinaai/jina-embeddings-v3" in rep.design
    report.write(rep, tmp_path)
    vs = report.read(tmp_path, "vs_paper")
    assert vs.comparable.str.startswith("no: data source").all()  # fixture data: nothing is comparable
    s_sem = vs[vs.quantity.str.endswith(": s_sem")].comparable
    assert s_sem.str.contains("encoder").all()
    assert not vs[vs.quantity.str.endswith(": rouge_l")].comparable.str.contains("encoder").any()
    # the real data: the humans' opinions use neither a model nor an annotator, so they compare
    real = analysis.RunDesign("DEBATE (real)", "gpt-4o-mini", analysis.PAPER_ENCODER)
    rep = analysis.analyse(analysis_inputs(metrics, tables, dp, paper, real, by_session))
    assert not _row(rep, "Fig. 2 opinion SD: human change").design
    assert _row(rep, "Fig. 2 opinion SD: llm change").design == ["agent model: ours m, paper gpt-4o-mini"]
    unknown = analysis.RunDesign.from_provenance({}, {}, {})
    assert unknown.data_source == "unknown" and "data source: ours unknown, paper DEBATE (real)" in unknown.differences(
        ()
    )


def test_report_writes_parquet_and_figures_read_it_without_csv(tmp_path: Path):
    rep = analysis.analyse(analysis_inputs(*random_inputs(np.random.default_rng(7), groups=4, stance=0.5)))
    report.write(rep, tmp_path / "analysis")
    for name in ("table3", "group_tests", "fig2_effect_sizes", "members", "group_level", "flags", "findings"):
        assert (tmp_path / "analysis" / f"{name}.parquet").is_file(), name
    for csv in (tmp_path / "analysis").glob("*.csv"):
        csv.unlink()  # figures read Parquet only
    drawn = plots(tmp_path / "analysis", FIGURES)
    names = figures.all_figures(drawn, tmp_path / "figures")
    assert set(names) == {"fig2_group_level", "fig2_effect_sizes", "fig3_individual", "table3_metrics"}
    assert all((tmp_path / "figures" / f"{n}.png").stat().st_size > 0 for n in names)
    assert not drawn["table9_metrics"]  # no Breadth: no panels, no figure
    metric = drawn["table3_metrics"]  # a panel notes the flags of its own inputs only
    assert any("stance annotator" in x for x in metric["d_stance"].note)
    assert not any("stance annotator" in x for x in metric["s_sem"].note)


SECT6_CLAIMS = ("deb.twins_converge", "deb.twins_drift_up", "deb.twins_follow_partner")  # their finding ids


def _sect6_by_model(rep: report.Report, models: list[str]) -> dict[tuple[str, str], object]:
    """(finding id, model) -> the one Sect. 6 finding of that id judged on that model (its typed scope)."""
    out = {}
    for f in rep.findings:
        if f.id in SECT6_CLAIMS:
            assert f.scope.kind == "model" and f.scope.name in models, f
            assert (f.id, f.scope.name) not in out, f.claim
            out[(f.id, f.scope.name)] = f
    return out


def test_two_agent_models_get_sect6_findings_tables_and_figures_each(tmp_path: Path):
    models = ["m", "b"]
    rep = analysis.analyse(analysis_inputs(*two_models(np.random.default_rng(11), groups=7)))
    got = _sect6_by_model(rep, models)
    assert set(got) == {(c, m) for c in SECT6_CLAIMS for m in models}  # each claim once per model, naming it
    assert all(f.claim.endswith(f" ({m})") for (_, m), f in got.items())
    # each model judged on its own twins: "b"'s round-3 tweets are at one level, so its groups converge
    mw, mw_b = rep.tables["sect6_model_written"].df, rep.tables["sect6_model_written_b"].df
    assert not np.allclose(mw.d_z.astype(float), mw_b.d_z.astype(float), equal_nan=True)
    conv = SECT6_CLAIMS[0]
    assert got[(conv, "m")].verdict.label != got[(conv, "b")].verdict.label
    assert rep.tables["members_b"].df.s3[lambda d: d.index % 2 == 1].nunique() <= 2  # +-1 reverse-coded
    # the humans' own findings once, without a model; their vs_paper rows once, the twins' per model
    humans = [f for f in rep.findings if f.claim.startswith("Fig. 2: the humans'")]
    assert humans and len({f.claim for f in humans}) == len(humans)
    assert {(f.id, f.scope.kind) for f in humans} == {("deb.humans_no_change", "humans")}  # the humans' scope
    assert len({f.part for f in humans}) == len(humans)
    quantities = [r.quantity for r in rep.vs_paper]
    assert quantities.count("Fig. 2 tweet mean: human change (d_z = t / sqrt(G))") == 1
    for m in models:
        assert f"Fig. 2 tweet mean: llm change (d_z = t / sqrt(G)) ({m})" in quantities
    # the Sect. 5 ablation stays on the first model (the only one the simulation runs ablations on)
    assert [f.claim for f in rep.findings if "private profile" in f.claim] == [
        "Sect. 5: in Modes 2 and 3 removing the private profile lowers S_sem and raises Delta_stance (depth, m)"
    ]
    # per-model tables and figures: the first model's under the old names
    for name in ("members", "group_level", "group_tests", "fig2_effect_sizes", "individual_level"):
        assert name in rep.tables and f"{name}_b" in rep.tables, name
    report.write(rep, tmp_path / "analysis")
    names = figures.all_figures(plots(tmp_path / "analysis", FIGURES), tmp_path / "figures")
    for fig in ("fig2_group_level", "fig2_effect_sizes", "fig3_individual"):
        assert fig in names and f"{fig}_b" in names, names
    # the same data under two names: the same findings but for the name
    same = analysis.analyse(analysis_inputs(*two_models(np.random.default_rng(11), groups=7, same=True)))
    twin = _sect6_by_model(same, models)
    for c in SECT6_CLAIMS:
        a, b = twin[(c, "m")], twin[(c, "b")]
        assert (a.verdict.label, a.n, a.value) == (b.verdict.label, b.n, b.value), c


def test_without_per_debate_metrics_the_findings_are_inconclusive():
    metrics, tables, dp, paper, run, _ = random_inputs(np.random.default_rng(8), groups=4)
    rep = analysis.analyse(analysis_inputs(metrics, tables, dp, paper, run, None))
    utterance = [f for f in rep.findings if "semantic similarity" in f.claim or "longer" in f.claim]
    assert len(utterance) == 2
    (ablation,) = [f for f in rep.findings if "private profile" in f.claim]  # only `original` ran
    assert ablation.verdict.label.startswith("inconclusive (not run: needs ablations original and no_private_profile")
    assert all(f.verdict.label == f"inconclusive (n = 0 debates, needs {MIN_UNITS})" for f in utterance)
    assert _row(rep, "depth, m: S_sem of the first mode").ours is not None  # the setting-level number stays


# --- like with like: Fig. 2 over the members with every value -------------------------------------


def _by_hand(members: pd.DataFrame, source: str, steps: list[str]) -> dict[str, dict[str, tuple[float, float, int]]]:
    """Per group: {quantity: (mean, SD, n)} over the members of `source` with every value of `steps`."""
    out = {}
    for sid, g in members[members.source == source].groupby("session_id"):
        rows = [r for r in g.to_dict("records") if all(not math.isnan(r[q]) for q in steps)]
        stat = {}
        for q in steps:
            x = [r[q] for r in rows]
            m = sum(x) / len(x)
            sd = math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1)) if len(x) > 1 else math.nan
            stat[q] = (m, sd, len(x))
        out[sid] = stat
    return out


def test_group_level_is_paired_over_the_members_with_both_values():
    members = _members(np.random.default_rng(40), 5, shift=0.5)
    llm = members.source == "llm"
    drop = {"S000": ["w0_1"], "S002": ["w2_0", "w2_3"]}  # the twins' final opinion was not parsed
    for sid, workers in drop.items():
        members.loc[llm & (members.session_id == sid) & members.worker_id.isin(workers), "o_final"] = np.nan
    members.loc[(members.source == "human") & (members.worker_id == "w3_2"), "s2"] = np.nan
    per_group, tests = stats.group_level(members)
    pg = per_group.set_index(["session_id", "source", "quantity"])
    tests = tests.set_index(["quantity", "test"])

    hand = _by_hand(members, "llm", ["o_init", "o_final"])
    for sid, stat in hand.items():
        for q in ("o_init", "o_final"):
            row = pg.loc[(sid, "llm", q)]
            assert row["mean"] == pytest.approx(stat[q][0]) and row["sd"] == pytest.approx(stat[q][1])
            assert row["n"] == stat[q][2] == 4 - len(drop.get(sid, [])) and row["n_members"] == 4
    # the group that lost a twin: its initial mean is over the 3 measured, not the 4
    everyone = members[llm & (members.session_id == "S000")].o_init.mean()
    assert pg.loc[("S000", "llm", "o_init"), "mean"] != pytest.approx(everyone)
    for stat_name, k in (("opinion mean", 0), ("opinion SD", 1)):
        change = [hand[s]["o_final"][k] - hand[s]["o_init"][k] for s in sorted(hand)]
        m = sum(change) / len(change)
        sd = math.sqrt(sum((v - m) ** 2 for v in change) / (len(change) - 1))
        row = tests.loc[(stat_name, "llm change")]
        assert row["mean_change"] == pytest.approx(m) and row["d_z"] == pytest.approx(m / sd)
        assert row["n_groups"] == 5
    # a human without a round-2 tweet is left out of every tweet step of that group
    tweets = _by_hand(members, "human", ["s1", "s2", "s3"])["S003"]
    assert pg.loc[("S003", "human", "s1"), "mean"] == pytest.approx(tweets["s1"][0])
    assert pg.loc[("S003", "human", "s3"), "n"] == 3

    # the notes: on the group's rows, and summed over groups on the tests
    s000 = pg.loc[("S000", "llm", "o_init"), "note"]
    assert s000.startswith("o_final missing for 1 of 4 twins; statistics over the 3")
    assert pg.loc[("S002", "llm", "o_final"), "note"].startswith("o_final missing for 2 of 4 twins")
    assert pg.loc[("S002", "llm", "o_final"), "n_missing"] == 2 and pg.loc[("S002", "llm", "o_init"), "n_missing"] == 0
    assert pg.loc[("S001", "llm", "o_final"), "note"] == "" and pg.loc[("S003", "human", "o_init"), "note"] == ""
    llm_missing = tests.loc[("opinion mean", "llm change"), "missing"]
    assert llm_missing.startswith("o_final missing for 3 of 20 twins in 2 of 5")
    assert tests.loc[("opinion SD", "human change"), "missing"] == ""
    assert "o_final missing for 3 of 20 twins" in tests.loc[("opinion SD", "llm change vs human change"), "missing"]
    assert tests.loc[("tweet mean", "human change"), "missing"].startswith("s2 missing for 1 of 20 humans in 1 of 5")
    assert tests.loc[("tweet mean", "llm change"), "missing"] == ""


def test_a_missing_final_opinion_is_noted_on_the_row_the_table_and_the_panel(tmp_path: Path, monkeypatch):
    metrics, tables, dp, paper, run, by_session = random_inputs(np.random.default_rng(41), groups=4)
    sim = tables["simulated"]
    lost = sim[sim.kind == "opinion"].index[[1, 6]]  # one twin in each of S00 and S01
    tables["simulated"] = sim.drop(lost)
    rep = analysis.analyse(analysis_inputs(metrics, tables, dp, paper, run, by_session))
    text = "o_final missing for 2 of 16 twins in 2 of 4 groups"
    for test in ("llm change", "llm change vs human change"):
        assert text in _row(rep, f"Fig. 2 opinion mean: {test}").note
    assert text not in _row(rep, "Fig. 2 opinion mean: human change").note
    assert "missing" not in _row(rep, "Fig. 2 tweet mean: llm change").note
    gt = rep.tables["group_tests"].df.set_index(["quantity", "test"])
    assert gt.loc[("opinion SD", "llm change"), "missing"].startswith(text)
    es = rep.tables["fig2_effect_sizes"].df.set_index(["quantity", "test"])
    assert es.loc[("opinion mean", "llm change"), "missing"].startswith(text)

    report.write(rep, tmp_path)
    shown: dict[str, list[str]] = {}

    def capture(fig, out, name):
        shown[name] = [t.get_text() for ax in fig.axes for t in ax.texts if "missing" in t.get_text()]
        panels = {ax.get_title(): "\n".join(t.get_text() for t in ax.texts) for ax in fig.axes}
        shown[name + ".panels"] = [title for title, body in panels.items() if text in body.replace("\n", " ")]

    monkeypatch.setattr(figures, "save", capture)
    drawn = plots(tmp_path, FIGURES)
    figures.fig2(drawn["fig2_group_level"], tmp_path)
    figures.fig2_effect_sizes(drawn["fig2_effect_sizes"], tmp_path)
    assert sorted(shown["fig2_group_level.panels"]) == [
        "opinion: group mean (mean over groups ± SE)",
        "opinion: group sd (mean over groups ± SE)",
    ]
    assert sorted(shown["fig2_effect_sizes.panels"]) == ["opinion SD: change", "opinion mean: change"]


def test_no_variance_in_the_changes_is_inconclusive_and_says_so():
    mean, p, n, why = ttest.one_sample_t(np.full(5, 0.3))
    assert mean == pytest.approx(0.3) and p is None and n == 5 and why.startswith("no variance in the changes")
    assert ttest.one_sample_t(np.array([0.1, 0.4, 0.2]))[3] is None
    # per-debate length differences all the same: no t-test, and the verdict says why
    by_session = by_session_rows(np.random.default_rng(42), 6).assign(d_signed_len=-7.0)
    f = analysis.llm_longer(by_session, _topics(6, width=0), [])
    assert f.verdict.holds is None and f.n == 6
    assert f.verdict.label.startswith("inconclusive (no variance in the changes") and "n = 6 debates" in f.verdict.label
    # every group's humans move their tweets by exactly 1: a constant change over groups
    members = _members(np.random.default_rng(43), 6)
    human = members.source == "human"
    members.loc[human, "s3"] = members.loc[human, "s1"] + 1.0
    row = _tweet_mean(stats.group_level(members)[1], "human change")
    assert pd.isna(row.p) and pd.isna(row.t) and row.mean_change == pytest.approx(1.0)
    assert row.note.startswith("no variance in the changes")
    g = analysis.group_finding(row, TWEET_MEAN_HUMAN, [], _human_changes(members), _topics(6))
    assert g.verdict.holds is None and g.verdict.reason.startswith("no variance in the changes")
    assert g.verdict.reason.endswith("n = 6 groups")


def test_every_finding_row_and_flag_comes_from_one_claim_in_the_claims_order():
    """The report is the base report plus each claim's judgement, in CLAIMS' order (socsim.io.claims)."""
    from socsim.debate.analysis import claims, measures

    inputs = analysis_inputs(*random_inputs(np.random.default_rng(7), groups=4, stance=0.5))
    rep = analysis.analyse(inputs)
    ev = measures.evidence(inputs)
    judged = [c.judge(ev) for c in claims.CLAIMS]
    assert [f.claim for j in judged for f in j.findings] == [f.claim for f in rep.findings]
    assert [r.quantity for j in judged for r in j.rows] == [r.quantity for r in rep.vs_paper]
    where = [w for j in judged for f in j.flags for w in f.where]
    assert sorted(where) == sorted(w for f in rep.flags for w in f.where)
    assert len({c.name for c in claims.CLAIMS}) == len(claims.CLAIMS)


def test_figures_import_only_the_schemas_and_draw_declared_plot_tables(tmp_path: Path):
    import ast

    from socsim.debate import figures as module
    from socsim.debate.stages import ARTIFACTS

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith("socsim.debate") and m != "socsim.debate.schemas"]
    rep = analysis.analyse(analysis_inputs(*random_inputs(np.random.default_rng(7), groups=4, stance=0.5)))
    assert {f"plot_{f}" for f in rep.plots} == set(ARTIFACTS["analysis"].tables)
