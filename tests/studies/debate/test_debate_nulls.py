"""Null calibration of the DEBATE verdicts (issue 34, items 7 and 9): under each null the study's own
analysis functions say "yes" at about the nominal rate of a claim's test (one direction of a two-sided
test at .05: 2.5 %; an equivalence test at EQUIVALENCE_ALPHA), allowing for replicate noise (the 99.9 %
binomial quantile), and under a true effect of each kind the claim still passes. Each null keeps the
nuisance structure a real run has (debate_synthetic):

- the model writes more moderately than the humans (0.6 x the stance, + 0.3), no dynamics at all: the
  paper's twin changes start from the humans' round-1 tweet and initial opinion, so they "converge"
  and "drift"; the claims on model-written points (round 2 -> 3) and Fig. 3's partner coefficient do not;
- twins that answer about 0.5 whatever they read: the paper's r of the change score with "partner
  minus own" shows partner influence; the partner coefficient does not;
- topic-specific effects with none overall (debates and groups nest in 7 Depth topics): a test over
  debates or groups passes; the sign-flip test over topics does not;
- a true change of d_z 0.4 (the paper's smallest significant Fig. 2 change): the old power gate at d_z
  0.5 says "no change"; the equivalence test does not.

Small designs run in the fast lane (each test a few seconds); the paper-shaped ones (31 groups over 7
topics, 300 replicates) in the slow lane (tests/long/studies/debate/test_debate_paper_shaped_nulls.py); the
helpers both use are in support/studies/debate.py."""

from __future__ import annotations

import numpy as np
import pandas as pd

from socsim.debate import analysis
from socsim.debate.analysis import stats
from support.studies.debate import (
    SHIFT_DZ_04,
    SHIFT_DZ_04_TOPICS,
    TOPIC_HALF_SD,
    _group_claims,
    _moderation_null,
    _no_change,
    _one_sample_yes,
    _partner_parts,
    limit,
)
from support.studies.debate_inputs import analysis_inputs
from support.studies.debate_synthetic import by_session, sect6


def test_moderate_model_texts_without_dynamics_pass_no_sect6_claim():
    reps = 80
    got = _moderation_null(reps, 14, seed=101)
    for claim in ("convergence", "drift", "partner"):
        assert got[claim] <= limit(reps), (claim, got)
    # the null bites: the paper's comparison from the humans' start "converges" and "drifts"
    assert got["paper convergence"] >= 0.5 * reps and got["paper drift"] >= 0.5 * reps, got


def test_model_written_convergence_and_drift_pass_a_true_effect_even_when_moderated():
    rng = np.random.default_rng(102)
    reps, groups = 15, 21
    drift = [_group_claims(*sect6(rng, groups, drift=0.6, moderate=True))[1] for _ in range(reps)]
    conv = [_group_claims(*sect6(rng, groups, converge=0.3))[0] for _ in range(reps)]
    assert sum(drift) >= 0.8 * reps and sum(conv) >= 0.8 * reps, (sum(drift), sum(conv))


def test_twins_that_ignore_their_partner_show_no_partner_influence():
    rng = np.random.default_rng(103)
    reps = 60
    runs = [_partner_parts(*sect6(rng, 28, twin_constant=0.5, human_partner=0.1)) for _ in range(reps)]
    assert sum(r[0] for r in runs) <= limit(reps)
    assert sum(r[1] for r in runs) >= 0.5 * reps  # the change score's "partner minus own" shares -own start
    # a true partner influence stronger in the twins passes (with the model's moderation on top)
    true = [_partner_parts(*sect6(rng, 84, human_partner=0.1, twin_partner=0.6, moderate=True))[0] for _ in range(8)]
    assert sum(true) >= 6


def test_topic_specific_effects_pass_no_claim_over_debates_or_groups():
    rng = np.random.default_rng(104)
    reps = 120
    counts = dict.fromkeys(("mode", "longer", "ablation"), 0)
    over_debates = dict.fromkeys(counts, 0)
    ran = {(m, a) for m in (1, 2) for a in ("original", "no_private_profile")}
    for _ in range(reps):
        s, topics = by_session(rng, 28, topic_sd=2.0, modes=(1, 2))
        orig = s[s.ablation == "original"]
        f = {
            "mode": analysis.mode_order(orig, topics, []),
            "longer": analysis.llm_longer(orig, topics, []),
            "ablation": analysis.ablation_claim(s, "m", "depth", ran, {}, topics),
        }
        for k, v in f.items():
            assert v is not None
            counts[k] += v.verdict.holds is True
        # the same per-debate values judged over debates (before issue 34)
        wide = orig.pivot_table(index="session_id", columns="mode", values="s_sem")
        over_debates["mode"] += _one_sample_yes(wide[1] - wide[2], +1)
        over_debates["longer"] += _one_sample_yes(orig.groupby("session_id").d_signed_len.mean(), -1)
        ab = s[s["mode"] == 2].pivot_table(index="session_id", columns="ablation", values="d_stance")
        over_debates["ablation"] += _one_sample_yes(ab.no_private_profile - ab.original, +1)
    for k in counts:
        assert counts[k] <= limit(reps), (k, counts)
        assert over_debates[k] >= 0.1 * reps, (k, over_debates)  # the null bites a test over debates (4x nominal)


def test_topic_specific_drift_passes_no_drift_claim():
    rng = np.random.default_rng(105)
    reps = 80
    drift, over_groups = 0, 0
    for _ in range(reps):
        m, topics = sect6(rng, 21, topic_sd=0.5)
        _, d, _ = _group_claims(m, topics)
        drift += d
        per_group, _ = stats.group_level(m)
        changes = stats.group_changes(per_group, stats.MODEL_WRITTEN_TESTS)
        over_groups += _one_sample_yes(changes[("tweet mean, rounds 2-3", "llm change")], +1)
    assert drift <= limit(reps)
    assert over_groups >= 0.1 * reps, over_groups


def test_true_effects_over_topics_still_pass():
    rng = np.random.default_rng(106)
    reps = 20
    ran = {(m, a) for m in (1, 2, 3) for a in ("original", "no_private_profile")}
    held = dict.fromkeys(("mode", "longer", "ablation"), 0)
    for _ in range(reps):
        s, topics = by_session(rng, 28, gap=0.03, longer=10.0, worse=0.3, topic_sd=0.5)
        orig = s[s.ablation == "original"]
        order = analysis.mode_order(orig, topics, [])
        assert order is not None
        held["mode"] += order.verdict.holds is True
        held["longer"] += analysis.llm_longer(orig, topics, []).verdict.holds is True
        held["ablation"] += analysis.ablation_claim(s, "m", "depth", ran, {}, topics).verdict.holds is True
    assert all(v >= 0.8 * reps for v in held.values()), held


def test_a_true_change_of_d_z_04_is_not_called_no_change():
    """A change of d_z 0.4, uniform or varying by topic (half its variance between topics), is called "does not
    change" at most at EQUIVALENCE_ALPHA; with no change at all, but a topic-varying one that averages zero, "no"
    comes out at most at ALPHA; with no change at 120 groups, "does not change" holds. (At 31 and 120 groups, 300
    replicates each: tests/long/studies/debate/test_debate_paper_shaped_nulls.py.)"""
    rng = np.random.default_rng(107)
    reps = 80
    runs = [_no_change(*sect6(rng, 40, human_shift=SHIFT_DZ_04)) for _ in range(reps)]
    assert sum(r[0] for r in runs) <= limit(reps, analysis.EQUIVALENCE_ALPHA)
    varying = [
        _no_change(*sect6(rng, 40, human_shift=SHIFT_DZ_04_TOPICS, human_topic_sd=TOPIC_HALF_SD)) for _ in range(reps)
    ]
    assert sum(r[0] for r in varying) <= limit(reps, analysis.EQUIVALENCE_ALPHA)
    zero = [_no_change(*sect6(rng, 40, human_topic_sd=TOPIC_HALF_SD)) for _ in range(reps)]
    assert sum(r[1] for r in zero) <= limit(reps, 0.05)
    assert sum(_no_change(*sect6(rng, 120))[0] for _ in range(12)) >= 8  # power about 0.85 over 7 topics


def test_the_whole_analysis_on_the_moderation_null_says_no_sect6_yes():
    """Through `analyse` (tables in, report out): moderate twin texts and no dynamics at 42 groups. The
    paper's comparisons are in the report, without a verdict; no Sect. 6 finding about the twins says yes."""
    from support.studies.debate_inputs import random_inputs as _inputs

    rng = np.random.default_rng(108)
    metrics, tables, dp, paper, run, by_sess = _inputs(rng, groups=42)
    m, _ = sect6(rng, 42, moderate=True)
    rename = {f"G{g:03d}": f"S{g:02d}" for g in range(42)}
    m = m.assign(session_id=m.session_id.map(rename))
    m = m.assign(worker_id=[f"{s}w{w[-1]}" for s, w in zip(m.session_id, m.worker_id)])
    m = m.assign(partner1=[f"{s}w{p[-1]}" for s, p in zip(m.session_id, m.partner1)])
    tables = _with_members(tables, m)
    rep = analysis.analyse(analysis_inputs(metrics, tables, dp, paper, run, by_sess))
    twins = [f for f in rep.findings if f.claim.startswith("Sect. 6")]
    assert len(twins) == 3 and not any(f.verdict.holds is True for f in twins), [f.verdict.label for f in twins]
    row = next(r for r in rep.vs_paper if r.quantity.startswith("Sect. 6 (the paper's comparison): the twins' groups"))
    assert row.verdict is None and row.note.startswith(analysis.PAPERS_COMPARISON)
    es = rep.tables["fig2_effect_sizes"].df.set_index(["quantity", "test"])
    assert es.loc[("tweet SD", "llm change"), "d_z"] < -0.5  # the paper's comparison: a strong "convergence"
    mw = rep.tables["sect6_model_written"].df
    assert set(mw.quantity) == set(stats.MODEL_WRITTEN_TESTS) and (mw.n_topics == 7).all()
    assert "fig3_partner_coefficients" in rep.tables and rep.summary["topics_sect6"] == 7


def _with_members(tables: dict[str, pd.DataFrame], m: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """`tables` (test_debate_report._inputs) with its Sect. 6 inputs replaced by the members `m`: the
    humans' tweets and opinions, the twins' round-2/3 tweets and final opinions, the round-1 partners."""
    human, llm = m[m.source == "human"], m[m.source == "llm"]
    out = dict(tables)
    out["sessions"] = tables["sessions"].assign(reverse=False)
    out["participants"] = human[["session_id", "worker_id", "o_init", "o_final"]].reset_index(drop=True)
    out["tweets"] = human.assign(round=1).rename(columns={"partner1": "partner_id"})[
        ["session_id", "round", "worker_id", "partner_id"]
    ]
    hann = tables["human_annotations"]
    tweets = [
        human.assign(round=r, kind="tweet", speaker=human.worker_id, stance=human[f"s{r}"], on_topic=None)
        for r in (1, 2, 3)
    ]
    cols = ["session_id", "round", "kind", "speaker", "stance", "on_topic"]
    out["human_annotations"] = pd.concat([hann[hann.kind != "tweet"], *(t[cols] for t in tweets)], ignore_index=True)
    ann = tables["annotations"]
    base = {"model": "m", "mode": 3, "ablation": "original", "topic_set": "depth"}
    twin = [
        llm.assign(round=r, kind="tweet", speaker=llm.worker_id, stance=llm[f"s{r}"], on_topic=None, **base)
        for r in (2, 3)
    ]
    out["annotations"] = pd.concat([ann[ann.kind != "tweet"], *(t[[*base, *cols]] for t in twin)], ignore_index=True)
    sim = tables["simulated"]
    op = llm.assign(round=4, kind="opinion", speaker=llm.worker_id, opinion=llm.o_final, **base)
    out["simulated"] = pd.concat(
        [sim[sim.kind != "opinion"], op[[*base, "session_id", "round", "kind", "speaker", "opinion"]]],
        ignore_index=True,
    )
    return out
