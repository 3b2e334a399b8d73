"""Verdicts on the DEBATE claims of Sect. 6 (convergence and drift of the twins' model-written tweets,
Fig. 3's partner influence) and Sect. 5 (the private-profile ablation), issues 21 and 34: on synthetic
data with a true effect they hold, on the reverse they say no, on too few units they are inconclusive
and say why; the statistics (sign-flip test, partner coefficients, their bootstrap, topic-level
parts) against independent computations; Appendix H's vs_paper rows on the paper's own tables. The
null calibration of every verdict is in test_debate_nulls.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
import yaml
from scipy import stats as sps

from socsim.debate import analysis
from socsim.debate.analysis import claims, stats
from socsim.stats import signflip
from socsim.stats.verdict import MIN_UNITS
from support.project import ROOT
from support.studies.debate_synthetic import sect6

PAPER = yaml.safe_load((ROOT / "data/debate/paper.yaml").read_text())
REPLICATES = 40


def _claims(members: pd.DataFrame, topics: dict[str, str]) -> dict[str, analysis.Finding]:
    per_group, _ = stats.group_level(members)
    (conv, drift), _ = analysis.group_claims(per_group, topics, {})
    partner, _ = analysis.partner_claim(members, topics, {})
    return {"convergence": conv, "drift": drift, "partner": partner}


# --- true effect: holds; reverse: no; tiny: inconclusive with the reason ---------------------------


def test_sect6_claims_hold_on_a_true_effect():
    rng = np.random.default_rng(1)
    c = _claims(*sect6(rng, 42, converge=0.3, drift=0.8))
    c["partner"] = _claims(*sect6(rng, 84, human_partner=0.1, twin_partner=0.6))["partner"]
    for name in ("convergence", "drift", "partner"):
        assert c[name].verdict.holds is True, (name, c[name].verdict.label)
        assert c[name].unit == "topics" and c[name].n == 7
    assert "round 2 to 3" in c["convergence"].claim and "model-written" in c["drift"].claim
    assert "sign-flip" in c["convergence"].test and "bootstrap" in c["partner"].test
    assert "per group: t-test p" in c["drift"].verdict.reason  # the test over groups beside it


def test_sect6_claims_fail_or_say_why_on_the_reverse():
    rng = np.random.default_rng(2)
    c = _claims(*sect6(rng, 42, converge=1.8, drift=-0.8, human_partner=0.6))
    assert c["convergence"].verdict.holds is False and "opposite direction" in c["convergence"].verdict.reason
    assert c["drift"].verdict.holds is False
    assert c["partner"].verdict.holds is False  # the humans follow their partner, the twins do not


def test_sect6_claims_on_too_few_groups_or_topics_are_inconclusive():
    rng = np.random.default_rng(3)
    c = _claims(*sect6(rng, 2, converge=0.2, drift=1.0, twin_partner=0.5))
    for name in ("convergence", "drift"):
        assert c[name].verdict.holds is None
        assert "n = 2 groups, needs 3" in c[name].verdict.reason, c[name].verdict.label
    c = _claims(*sect6(rng, 6, converge=0.2, drift=1.0, twin_partner=0.6))
    assert c["partner"].verdict.holds is None
    assert f"n = 6 groups, needs {analysis.MIN_BOOT_GROUPS}" in c["partner"].verdict.reason
    # 40 groups of 4 topics: a clear drift, but the groups nest in 4 topics, too few for a sign-flip test
    c = _claims(*sect6(rng, 40, 4, drift=1.0, twin_partner=0.8))
    for name in ("drift", "partner"):
        assert c[name].verdict.holds is None and f"4 topics, needs {analysis.MIN_TOPICS}" in c[name].verdict.reason


# --- the statistics against independent computations -----------------------------------------------


def test_sign_flip_against_scipy_permutation_test():
    rng = np.random.default_rng(11)
    assert signflip.sign_flip([0.7]).p == 1.0  # one cluster: both signs as far from 0
    for n in (2, 3, 6, 7, 10):
        x = rng.normal(0.3, 1.0, n)
        got = signflip.sign_flip(x)
        ref = sps.permutation_test(
            (x,), np.mean, permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
        )
        assert got.exact and got.n == n and got.mean == pytest.approx(x.mean())
        assert got.p == pytest.approx(ref.pvalue), n
    # all of one sign: the smallest p, 2 / 2^n
    assert signflip.sign_flip(np.arange(1.0, 8.0)).p == pytest.approx(2 / 2**7)
    assert signflip.min_clusters(0.05) == 6 and signflip.sign_flip(np.arange(1.0, 6.0)).p > 0.05
    assert signflip.sign_flip(np.arange(1.0, 7.0)).p < 0.05
    # beyond EXACT_MAX clusters: Monte Carlo, close to the exact p
    x = rng.normal(0.2, 1.0, 18)
    mc = signflip.sign_flip(x)
    exact = signflip.sign_flip(x, exact_max=18)
    assert not mc.exact and exact.exact and mc.p == pytest.approx(exact.p, abs=0.01)
    assert signflip.sign_flip([]).p is None and signflip.sign_flip([np.nan, 1.0]).n == 1


def test_cluster_means_and_topic_effect_by_hand():
    values = pd.Series({"a": 1.0, "b": 3.0, "c": -2.0, "d": np.nan, "e": 0.5})
    topics = {"a": "T1", "b": "T1", "c": "T2", "d": "T2", "e": "T3"}
    means = signflip.cluster_means(values, topics)
    assert means.to_dict() == {"T1": 2.0, "T2": -2.0, "T3": 0.5}
    with pytest.raises(KeyError):
        signflip.cluster_means(values, {"a": "T1"})
    rng = np.random.default_rng(12)
    d = pd.Series(rng.normal(0.5, 1.0, 21), index=[f"G{g:03d}" for g in range(21)])
    topics = {s: f"T{g % 7}" for g, s in enumerate(d.index)}
    r = analysis.topic_effect(d, topics, +1, [], "groups", MIN_UNITS)
    by_topic = d.groupby([topics[s] for s in d.index]).mean()
    ref = sps.permutation_test(
        (by_topic.to_numpy(),), np.mean, permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
    )
    assert (
        r.n_topics == 7 and r.topic_mean == pytest.approx(by_topic.mean()) and r.p_topics == pytest.approx(ref.pvalue)
    )
    assert r.n_units == 21 and r.p_units == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue)
    assert r.verdict.holds is (r.p_topics < 0.05 and r.topic_mean > 0 or None)


def test_partner_difference_against_statsmodels_and_a_naive_bootstrap():
    rng = np.random.default_rng(13)
    m, topics = sect6(rng, 14, human_partner=0.2, twin_partner=0.5)
    m.loc[5, "s3"] = np.nan  # a member without a round-3 tweet is left out
    out = stats.partner_difference(m, "tweet", repeats=100, seed=9)
    coef = {}
    for source in ("llm", "human"):
        rows = stats.regression_rows(m, source, "tweet")
        coef[source] = smf.ols("end ~ own + partner", data=rows).fit().params["partner"]
    assert out["b_llm"] == pytest.approx(coef["llm"]) and out["b_human"] == pytest.approx(coef["human"])
    assert out["diff"] == pytest.approx(coef["llm"] - coef["human"]) and out["n_groups"] == 14
    assert out["n_llm"] == 14 * 4 - 1 and out["n_human"] == 14 * 4
    # the same resamples, computed naively: concatenate the drawn groups, fit with numpy's lstsq
    rows = {s: stats.regression_rows(m, s, "tweet") for s in ("llm", "human")}
    sessions = sorted(set(rows["llm"].session_id) & set(rows["human"].session_id))
    idx = np.random.default_rng(9).integers(0, len(sessions), size=(100, len(sessions)))
    diffs = []
    for row in idx:
        b = {}
        for s, df in rows.items():
            d = pd.concat([df[df.session_id == sessions[i]] for i in row])
            x = np.column_stack([np.ones(len(d)), d.own, d.partner])
            b[s] = np.linalg.lstsq(x, d.end.to_numpy(), rcond=None)[0][2]
        diffs.append(b["llm"] - b["human"])
    diffs = np.array(diffs)
    assert out["p"] == pytest.approx(min(1.0, 2 * min(np.mean(diffs <= 0), np.mean(diffs >= 0))))
    # per topic: the same regression on each topic's groups
    by_topic = stats.partner_difference_by_cluster(m, "opinion", topics)
    for topic in ("T0", "T3"):
        mine = {s for s, t in topics.items() if t == topic}
        b = {
            s: smf.ols("end ~ own + partner", data=r[r.session_id.isin(mine)]).fit().params["partner"]
            for s, r in ((s, stats.regression_rows(m, s, "opinion")) for s in ("llm", "human"))
        }
        assert by_topic[topic] == pytest.approx(b["llm"] - b["human"])
    assert list(by_topic.index) == sorted(set(topics.values()))


def test_partner_coefficient_is_undefined_on_a_singular_design():
    rng = np.random.default_rng(14)
    m, _ = sect6(rng, 12)
    m["o_init"] = 1.0  # every start the same: own and partner start are the intercept
    out = stats.partner_difference(m, "opinion", repeats=50)
    assert out["b_llm"] is None and out["p"] is None and "undefined" in out["note"]


def test_dissociation_by_hand():
    rng = np.random.default_rng(5)
    m, _ = sect6(rng, 7, drift=0.5)
    per_group, _ = stats.group_level(m)
    mean, p, n, _ = stats.dissociation(per_group)
    llm = m[m.source == "llm"].groupby("session_id")[["s1", "s3", "o_init", "o_final"]].mean()
    d = (llm.s3 - llm.s1) - (llm.o_final - llm.o_init)
    assert n == 7 and mean == pytest.approx(d.mean())
    t = d.mean() / (d.std(ddof=1) / np.sqrt(7))
    assert p == pytest.approx(2 * sps.t.sf(abs(t), 6))


def test_model_written_changes_by_hand():
    rng = np.random.default_rng(15)
    m, _ = sect6(rng, 9, drift=0.4)
    per_group, _ = stats.group_level(m)
    tests = stats.change_tests(per_group, stats.MODEL_WRITTEN_TESTS).set_index(["quantity", "test"])
    changes = stats.group_changes(per_group, stats.MODEL_WRITTEN_TESTS)
    g = {s: m[m.source == s].groupby("session_id") for s in ("llm", "human")}
    delta = {s: g[s].s3.mean() - g[s].s2.mean() for s in g}
    sd = {s: g[s].s3.std() - g[s].s2.std() for s in g}
    for q, ref in (("tweet mean, rounds 2-3", delta), ("tweet SD, rounds 2-3", sd)):
        for test, d in (
            ("llm change", ref["llm"]),
            ("human change", ref["human"]),
            ("llm change vs human change", ref["llm"] - ref["human"]),
        ):
            assert changes[(q, test)].to_numpy() == pytest.approx(d.to_numpy()), (q, test)
            assert tests.loc[(q, test), "p"] == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue), (q, test)


def test_correlation_difference_against_scipy_and_a_naive_bootstrap():
    rng = np.random.default_rng(6)
    m, _ = sect6(rng, 12, twin_partner=0.3)
    m.loc[3, "s3"] = np.nan  # a member without a round-3 tweet is left out
    out = stats.correlation_difference(m, "tweet", "partner minus own", repeats=200, seed=9)
    ind = stats.individual_level(m).set_index(["source", "outcome", "predictor"]).r
    assert out["r_llm"] == pytest.approx(ind[("llm", "tweet", "partner minus own")])
    assert out["r_human"] == pytest.approx(ind[("human", "tweet", "partner minus own")])
    # the same resamples, computed naively: concatenate the drawn groups, np.corrcoef
    pairs = {s: stats.fig3_pairs(m, s, "tweet", "partner minus own") for s in ("llm", "human")}
    sessions = sorted(set(pairs["llm"].session_id) & set(pairs["human"].session_id))
    idx = np.random.default_rng(9).integers(0, len(sessions), size=(200, len(sessions)))
    diffs = []
    for row in idx:
        r = {}
        for s, df in pairs.items():
            d = pd.concat([df[df.session_id == sessions[i]] for i in row])
            r[s] = np.corrcoef(d.x, d.y)[0, 1]
        diffs.append(r["llm"] - r["human"])
    diffs = np.array(diffs)
    assert out["p"] == pytest.approx(min(1.0, 2 * min(np.mean(diffs <= 0), np.mean(diffs >= 0))))


# --- the ablation claim (Sect. 5) -------------------------------------------------------------------


TOPICS10 = {f"S{s}": f"T{s}" for s in range(10)}  # 10 topics: a 4-part claim can say "no" (2 / 2^10 < .05 / 4)


def _ablation_sessions(rng: np.random.Generator, debates: int, worse: float = 0.0) -> pd.DataFrame:
    rows = []
    for s in range(debates):
        for mode in (1, 2, 3):
            base_sem, base_st = rng.normal(0.4, 0.05), rng.normal(1.2, 0.2)
            for abl in ("original", "no_private_profile"):
                hit = worse if abl == "no_private_profile" and mode > 1 else 0.0
                rows.append(
                    {
                        "model": "m",
                        "mode": mode,
                        "ablation": abl,
                        "topic_set": "depth",
                        "session_id": f"S{s}",
                        "s_sem": base_sem - 0.1 * hit + rng.normal(0, 0.02),
                        "d_stance": base_st + hit + rng.normal(0, 0.1),
                    }
                )
    return pd.DataFrame(rows)


RAN = {(m, a) for m in (1, 2, 3) for a in ("original", "no_private_profile")}


def test_ablation_claim_true_null_tiny_and_not_run():
    rng = np.random.default_rng(7)
    f = analysis.ablation_claim(_ablation_sessions(rng, 10, worse=0.5), "m", "depth", RAN, {}, TOPICS10)
    assert f.verdict.holds is True and f.unit == "topics" and f.n == 10
    null = [
        analysis.ablation_claim(_ablation_sessions(rng, 10), "m", "depth", RAN, {}, TOPICS10).verdict.holds is True
        for _ in range(REPLICATES)
    ]
    assert np.mean(null) <= 0.10
    tiny = analysis.ablation_claim(_ablation_sessions(rng, 2, worse=0.5), "m", "depth", RAN, {}, TOPICS10)
    assert tiny.verdict.holds is None and f"n = 2 debates, needs {MIN_UNITS}" in tiny.verdict.reason
    only_mode1 = {(1, "original"), (1, "no_private_profile"), (2, "original")}
    none = analysis.ablation_claim(_ablation_sessions(rng, 10, worse=0.5), "m", "depth", only_mode1, {}, TOPICS10)
    assert none.verdict.holds is None and none.verdict.reason.startswith("not run")
    # the part that fails is named
    better = analysis.ablation_claim(_ablation_sessions(rng, 10, worse=-0.5), "m", "depth", RAN, {}, TOPICS10)
    assert better.verdict.holds is False and better.verdict.reason.startswith("mode 2 s_sem")


# --- Appendix H rows on the paper's own tables -----------------------------------------------------


def _evidence(metrics: pd.DataFrame, run: analysis.RunDesign) -> analysis.Evidence:
    """Evidence with only utterance metrics (what Appendix H reads)."""
    empty = pd.DataFrame()
    return analysis.Evidence(run, {}, PAPER, {}, ["m"], analysis.InputFlags(), metrics, empty, empty, {})


def test_appendix_h_vs_paper_rows_reproduce_the_paper_on_its_own_tables():
    rows = []
    for table, ts in (("table3", "depth"), ("table9", "breadth")):
        for model, modes in PAPER[table].items():
            for mode, vals in modes.items():
                rows.append({"model": model, "mode": int(mode[-1]), "ablation": "original", "topic_set": ts, **vals})
    metrics = pd.DataFrame(rows)
    real = analysis.RunDesign("DEBATE (real)", "gpt-4o-mini", analysis.PAPER_ENCODER)
    got = {r.quantity: r for r in claims.appendix_h(_evidence(metrics, real)).rows}
    for metric in ("s_sem", "rouge_l", "d_stance"):
        chi2 = got[f"Appendix H {metric}: Friedman chi2"]
        assert chi2.ours == pytest.approx(chi2.paper, abs=0.005), metric
        for other, p in PAPER["appendix_h"][metric]["wilcoxon"].items():
            row = got[f"Appendix H {metric}: one-sided Wilcoxon p, gpt-4o-mini vs {other}"]
            assert row.paper == p and row.ours == pytest.approx(p, abs=0.0005), (metric, other)
        assert not chi2.design  # the paper's models, data, annotator and encoder
    # one model: no numbers, the reason in the note
    one = claims.appendix_h(_evidence(metrics[metrics.model == "gpt-4o-mini"], analysis.RunDesign()))
    row = next(r for r in one.rows if r.quantity == "Appendix H s_sem: Friedman chi2")
    assert row.ours is None and "the Friedman test needs at least 2" in row.note and row.paper == 17.87
