"""Verdicts on the DEBATE claims of Sect. 6 (convergence, drift, public vs private, stronger LLM
correlations) and Sect. 5 (the private-profile ablation), issue 21 item 5: on scripted data with a true
effect they hold, on null data rarely (<= 10 % of replicates), on too few units they are inconclusive
and say why; the statistics against independent computations; Appendix H's vs_paper rows on the
paper's own tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as sps

from conftest import ROOT
from socsim.debate import analysis, stats
from socsim.io.report import Report

PAPER = yaml.safe_load((ROOT / "data/debate/paper.yaml").read_text())
REPLICATES = 40


def _members(
    rng: np.random.Generator,
    groups: int,
    converge: float = 1.0,
    drift: float = 0.0,
    llm_pull: float = 0.0,
) -> pd.DataFrame:
    """Humans and twins of `groups` groups of 4. Humans: s3 = s1 + noise, o_final = o_init + noise. Twins:
    the same, except that their round-3 tweet and final opinion shrink towards the group mean by
    `converge` (1 = not at all), move up by `drift` (tweets only), and follow the own start (regression
    to the mean) and the round-1 partner more by `llm_pull`."""
    rows = []
    for g in range(groups):
        s1, o0 = rng.normal(0, 1, 4), rng.normal(0, 1, 4)
        partner = [1, 0, 3, 2]
        for source in ("human", "llm"):
            pull = llm_pull if source == "llm" else 0.0
            k = converge if source == "llm" else 1.0
            s_change = -pull * s1 + pull * (s1[partner] - s1)
            o_change = -pull * o0 + pull * (o0[partner] - o0)
            s3 = s1.mean() + k * (s1 - s1.mean()) + s_change + rng.normal(0, 0.5, 4) + (drift if source == "llm" else 0)
            of = o0.mean() + k * (o0 - o0.mean()) + o_change + rng.normal(0, 0.5, 4)
            for i in range(4):
                rows.append(
                    {
                        "session_id": f"G{g:03d}",
                        "worker_id": f"G{g}w{i}",
                        "source": source,
                        "partner1": f"G{g}w{partner[i]}",
                        "s1": s1[i],
                        "s2": rng.normal(),
                        "s3": s3[i],
                        "o_init": o0[i],
                        "o_final": of[i],
                    }
                )
    return pd.DataFrame(rows)


def _claims(members: pd.DataFrame) -> dict[str, analysis.Finding]:
    per_group, tests = stats.group_level(members)
    conv, drift = analysis.group_claims(tests, {})
    pp = analysis.public_private_claim(per_group, tests, [], {})
    corr, _ = analysis.correlation_claim(members, {})
    return {"convergence": conv, "drift": drift, "public_private": pp, "correlations": corr}


# --- true effect: holds; tiny: inconclusive with the reason ----------------------------------------


def test_sect6_claims_hold_on_a_true_effect():
    rng = np.random.default_rng(1)
    c = _claims(_members(rng, 40, converge=0.3, drift=0.8))
    c["correlations"] = _claims(_members(rng, 40, llm_pull=0.4))["correlations"]
    for name in ("convergence", "drift", "correlations"):
        assert c[name].verdict.holds is True, (name, c[name].verdict.label)
        assert c[name].unit == "groups" and c[name].n == 40
    # public vs private needs the opinion mean to stay (power to find d_z 0.5 at 40 groups: 0.87)
    assert c["public_private"].verdict.holds is True, c["public_private"].verdict.label
    assert "convergence" in c["convergence"].claim or "converge" in c["convergence"].claim
    assert "paired t over groups" in c["convergence"].test and "bootstrap" in c["correlations"].test


def test_sect6_claims_fail_or_say_why_on_the_reverse():
    rng = np.random.default_rng(2)
    c = _claims(_members(rng, 40, converge=1.8, drift=-0.8))
    assert c["convergence"].verdict.holds is False and "opposite direction" in c["convergence"].verdict.reason
    assert c["drift"].verdict.holds is False
    assert c["public_private"].verdict.holds is False


def test_sect6_claims_on_too_few_groups_are_inconclusive():
    rng = np.random.default_rng(3)
    c = _claims(_members(rng, 2, converge=0.2, drift=1.0, llm_pull=0.5))
    for name in ("convergence", "drift", "public_private"):
        assert c[name].verdict.holds is None
        assert "n = 2 groups, needs 3" in c[name].verdict.reason, c[name].verdict.label
    c = _claims(_members(rng, 6, converge=0.2, drift=1.0, llm_pull=0.6))
    assert c["correlations"].verdict.holds is None
    assert f"n = 6 groups, needs {analysis.MIN_BOOT_GROUPS}" in c["correlations"].verdict.reason


# --- null data: holds rarely ------------------------------------------------------------------------


def test_sect6_claims_hold_rarely_on_null_data():
    rng = np.random.default_rng(10)
    runs = [_claims(_members(rng, 20)) for _ in range(REPLICATES)]
    for claim in ("convergence", "drift", "public_private", "correlations"):
        assert np.mean([c[claim].verdict.holds is True for c in runs]) <= 0.10, claim


def test_public_private_needs_the_opinion_to_stay():
    """Tweets drift, and the opinions drift as much: no dissociation, and "opinion unchanged" fails."""
    rng = np.random.default_rng(4)
    m = _members(rng, 40, drift=0.8)
    m.loc[m.source == "llm", "o_final"] += 0.8
    assert _claims(m)["public_private"].verdict.holds is not True


# --- the statistics against independent computations -----------------------------------------------


def test_dissociation_by_hand():
    rng = np.random.default_rng(5)
    m = _members(rng, 7, drift=0.5)
    per_group, _ = stats.group_level(m)
    mean, p, n, _ = stats.dissociation(per_group)
    llm = m[m.source == "llm"].groupby("session_id")[["s1", "s3", "o_init", "o_final"]].mean()
    d = (llm.s3 - llm.s1) - (llm.o_final - llm.o_init)
    assert n == 7 and mean == pytest.approx(d.mean())
    t = d.mean() / (d.std(ddof=1) / np.sqrt(7))
    assert p == pytest.approx(2 * sps.t.sf(abs(t), 6))


def test_correlation_difference_against_scipy_and_a_naive_bootstrap():
    rng = np.random.default_rng(6)
    m = _members(rng, 12, llm_pull=0.3)
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
    f = analysis.ablation_claim(_ablation_sessions(rng, 10, worse=0.5), "m", "depth", RAN, {})
    assert f.verdict.holds is True and f.unit == "debates" and f.n == 10
    null = [
        analysis.ablation_claim(_ablation_sessions(rng, 10), "m", "depth", RAN, {}).verdict.holds is True
        for _ in range(REPLICATES)
    ]
    assert np.mean(null) <= 0.10
    tiny = analysis.ablation_claim(_ablation_sessions(rng, 2, worse=0.5), "m", "depth", RAN, {})
    assert tiny.verdict.holds is None and f"n = 2 debates, needs {analysis.MIN_SESSIONS}" in tiny.verdict.reason
    only_mode1 = {(1, "original"), (1, "no_private_profile"), (2, "original")}
    none = analysis.ablation_claim(_ablation_sessions(rng, 10, worse=0.5), "m", "depth", only_mode1, {})
    assert none.verdict.holds is None and none.verdict.reason.startswith("not run")
    # the part that fails is named
    better = analysis.ablation_claim(_ablation_sessions(rng, 10, worse=-0.5), "m", "depth", RAN, {})
    assert better.verdict.holds is False and better.verdict.reason.startswith("mode 2 s_sem")


# --- Appendix H rows on the paper's own tables -----------------------------------------------------


def test_appendix_h_vs_paper_rows_reproduce_the_paper_on_its_own_tables():
    rows = []
    for table, ts in (("table3", "depth"), ("table9", "breadth")):
        for model, modes in PAPER[table].items():
            for mode, vals in modes.items():
                rows.append({"model": model, "mode": int(mode[-1]), "ablation": "original", "topic_set": ts, **vals})
    metrics = pd.DataFrame(rows)
    b = analysis._Builder(Report("t"), analysis.RunDesign("DEBATE (real)", "gpt-4o-mini", analysis.PAPER_ENCODER))
    analysis._appendix_h(b, metrics, analysis.InputFlags(), PAPER)
    got = {r.quantity: r for r in b.rep.vs_paper}
    for metric in ("s_sem", "rouge_l", "d_stance"):
        chi2 = got[f"Appendix H {metric}: Friedman chi2"]
        assert chi2.ours == pytest.approx(chi2.paper, abs=0.005), metric
        for other, p in PAPER["appendix_h"][metric]["wilcoxon"].items():
            row = got[f"Appendix H {metric}: one-sided Wilcoxon p, gpt-4o-mini vs {other}"]
            assert row.paper == p and row.ours == pytest.approx(p, abs=0.0005), (metric, other)
        assert not chi2.design  # the paper's models, data, annotator and encoder
    # one model: no numbers, the reason in the note
    b = analysis._Builder(Report("t"), analysis.RunDesign())
    analysis._appendix_h(b, metrics[metrics.model == "gpt-4o-mini"], analysis.InputFlags(), PAPER)
    row = next(r for r in b.rep.vs_paper if r.quantity == "Appendix H s_sem: Friedman chi2")
    assert row.ours is None and "the Friedman test needs at least 2" in row.note and row.paper == 17.87
