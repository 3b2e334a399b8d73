"""Facilitation study: turn taking, silence, id joins, statistics against independent computations,
a real simulated discussion, and resume after SIGKILL."""

from __future__ import annotations

import math
import subprocess
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from conftest import ROOT, kill_after_cached_calls, read_metrics, run_socsim, socsim_cmd, write_params
from socsim.facilitation import analysis, annotate, schemas
from socsim.facilitation.simulate import Transcript, clean_comment
from socsim.facilitation.turns import TurnManager
from socsim.io.parquet import read_table
from socsim.stats.multitest import holm
from socsim.stats.text import diversity, lcs_length, rouge_l_f1, tokens

USERS = [f"u{i}" for i in range(7)]


# -- turn taking -------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.4, 0.1, 0.8])
def test_respond_reply_rate_matches_p_respond(p):
    n = 20_000
    tm = TurnManager(USERS, "respond", p_respond=p, seed=11)
    speakers = [tm.next() for _ in range(n)]
    assert all(a != b for a, b in zip(speakers, speakers[1:]))  # nobody replies to themselves
    # A turn goes to the user before the last speaker through the reply branch (p), or by chance
    # through the uniform branch ((1 - p) / (k - 1)).
    expected = p + (1 - p) / (len(USERS) - 1)
    hits = sum(speakers[t] == speakers[t - 2] for t in range(2, n))
    trials = n - 2
    ci = 4 * math.sqrt(expected * (1 - expected) / trials)  # ~4 sigma: the test fails only on a real bias
    assert abs(hits / trials - expected) < ci
    assert abs(tm.replies / trials - p) < 4 * math.sqrt(p * (1 - p) / trials)


def test_round_robin_is_exact_and_random_never_repeats():
    rr = TurnManager(USERS, "round_robin", seed=1)
    assert [rr.next() for _ in range(21)] == USERS * 3
    rnd = TurnManager(USERS, "random", seed=2)
    seq = [rnd.next() for _ in range(5000)]
    assert all(a != b for a, b in zip(seq, seq[1:]))
    counts = Counter(seq)
    assert set(counts) == set(USERS) and min(counts.values()) > 5000 / 7 * 0.8
    with pytest.raises(ValueError):
        TurnManager(USERS, "debate")


# -- silence, context, ids -----------------------------------------------------------------------

SETUP = {"discussion_id": "d1", "context_h": 2, "model": "m", "strategy": "No Instructions", "condition": "main",
         "facilitator_prompt": "moderate"}
ALICE = {"persona_id": "p1", "username": "alice", "role": "normal_user", "system_prompt": "a"}
BOB = {"persona_id": "p2", "username": "bob", "role": "troll", "system_prompt": "b"}


def test_silent_turns_are_recorded_but_never_in_context():
    t = Transcript(SETUP)
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


def _comments_with_repeats() -> list[dict]:
    t = Transcript(SETUP)
    t.record(ALICE, "seed", 0, is_seed=True)
    for _ in range(3):
        t.record(BOB, "same text", 1)
        t.record(None, "", 0)  # repeated empty facilitator texts: the original join multiplied these
        t.record(ALICE, "same text", 1)
    return t.rows


def test_annotation_targets_skip_silent_and_seed_with_silent_free_context():
    rows = _comments_with_repeats()
    todo = annotate.targets(rows, {"d1": 2})
    assert [c["turn"] for c, _ in todo] == [1, 3, 4, 6, 7, 9]
    for comment, context in todo:
        assert not comment["is_silent"] and not comment["is_seed"]
        assert len(context) <= 2 and all(not c["is_silent"] for c in context)
        assert all(c["turn"] < comment["turn"] for c in context)


def test_repeated_texts_do_not_multiply_annotation_rows():
    rows = _comments_with_repeats()
    comments = pd.DataFrame(rows)
    keys = [(c["discussion_id"], c["turn"]) for c, _ in annotate.targets(rows, {"d1": 2})]
    ann = pd.DataFrame([{"discussion_id": d, "turn": t, "annotator_id": a, "toxicity": 2, "argument_quality": 3,
                         "parse_ok": True, "raw_answer": "{}"} for d, t in keys for a in ("a1", "a2")])
    setups = pd.DataFrame([{"discussion_id": "d1", "instructions": "full", "with_roles": True}])
    rated = analysis.rated_comments(comments, ann, setups)
    assert len(rated) == len(ann) == 12  # one row per (comment, annotator), whatever the texts
    assert sorted(set(rated["turn"])) == [1, 3, 4, 6, 7, 9]


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


def test_holm_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> monotone .02 .03 .06 .06
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.9, 0.8]).tolist() == pytest.approx([1.0, 1.0])


def _synthetic_rated(seed=0, per_cell=40, turns=12):
    """Ratings with known effects: intercept 2, strategy shifts, time slopes, a discussion effect."""
    rng = np.random.default_rng(seed)
    effects = {"No Moderator": (0.0, 0.0), "Rules Only": (-0.5, -0.02), "Moderation Game": (-0.3, -0.05)}
    rows = []
    for strategy, (shift, slope) in effects.items():
        for d in range(per_cell):
            did = f"{strategy}-{d}"
            u = rng.normal(0, 0.3)  # shared by a discussion's ratings: the reason to cluster
            for t in range(turns):
                for a in range(3):
                    y = 2.0 + shift + (-0.01 + slope) * t + u + rng.normal(0, 0.5)
                    rows.append({"discussion_id": did, "strategy": strategy, "time": t, "toxicity": y,
                                 "condition": "main", "is_facilitator": False})
    return pd.DataFrame(rows)


def test_ols_matches_independent_fit_with_clustered_errors():
    data = _synthetic_rated()
    res = analysis.toxicity_ols(data)
    # Independent computation: design matrix by hand, numpy least squares, CR1 sandwich.
    levels = ["Moderation Game", "Rules Only"]
    cols = [np.ones(len(data))] + [(data["strategy"] == s).to_numpy(float) for s in levels]
    cols += [data["time"].to_numpy(float)] + [(data["strategy"] == s).to_numpy(float) * data["time"] for s in levels]
    X = np.column_stack(cols)
    y = data["toxicity"].to_numpy()
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    n, k = X.shape
    bread = np.linalg.inv(X.T @ X)
    se_plain = np.sqrt(np.diag(bread) * (resid @ resid) / (n - k))
    groups = pd.factorize(data["discussion_id"])[0]
    g = groups.max() + 1
    meat = sum(np.outer(X[groups == j].T @ resid[groups == j], X[groups == j].T @ resid[groups == j])
               for j in range(g))
    cov = bread @ meat @ bread * (g / (g - 1)) * ((n - 1) / (n - k))
    se_cluster = np.sqrt(np.diag(cov))
    order = ["Intercept", 'C(strategy, Treatment("No Moderator"))[T.Moderation Game]',
             'C(strategy, Treatment("No Moderator"))[T.Rules Only]', "time",
             'C(strategy, Treatment("No Moderator"))[T.Moderation Game]:time',
             'C(strategy, Treatment("No Moderator"))[T.Rules Only]:time']
    table = res.table.loc[order]
    assert table["coef"].to_numpy() == pytest.approx(beta, abs=1e-10)
    assert table["se"].to_numpy() == pytest.approx(se_plain, rel=1e-8)
    assert table["se_cluster"].to_numpy() == pytest.approx(se_cluster, rel=1e-8)
    # The known effects are recovered, and clustering widens the intercept's error.
    assert beta[0] == pytest.approx(2.0, abs=0.15) and beta[2] == pytest.approx(-0.5, abs=0.2)
    assert beta[4] == pytest.approx(-0.05, abs=0.02)
    assert table.loc["Intercept", "se_cluster"] > table.loc["Intercept", "se"]
    assert res.n_clusters == 120 and res.nobs == len(data)
    _, md, tex = analysis.ols_tables(res)
    assert "Moderation Game×time" in md and "Adj. R²" in md and r"\begin{tabular}" in tex


def test_anova_and_pairwise_match_scipy():
    data = _synthetic_rated(seed=3, per_cell=10, turns=4)
    means = data.groupby(["discussion_id", "strategy", "time", "condition", "is_facilitator"],
                         as_index=False)["toxicity"].mean()
    anova, pairwise = analysis.anova_and_pairwise(means)
    groups = [g["toxicity"].to_numpy() for _, g in means.groupby("strategy")]
    assert anova["F"] == pytest.approx(sps.f_oneway(*groups).statistic)
    assert len(pairwise) == 3
    row = pairwise[(pairwise.strategy_a == "Moderation Game") & (pairwise.strategy_b == "No Moderator")].iloc[0]
    a = means[means.strategy == "Moderation Game"]["toxicity"]
    b = means[means.strategy == "No Moderator"]["toxicity"]
    assert row["p"] == pytest.approx(sps.ttest_ind(a, b).pvalue)
    assert pairwise["p_holm"].tolist() == pytest.approx(holm(pairwise["p"]).tolist())


# -- real model: a discussion, and resume after SIGKILL ---------------------------------------------

TINY = {"facilitation": {"strategies": ["No Moderator", "No Instructions"], "users_per_discussion": 3,
                         "user_turns": 3, "comment_max_tokens": 16, "ablations": {"discussions": 0},
                         "annotation": {"annotators": 2, "max_tokens": 20}}}


def _chain_until_setups(tmp_path, params):
    paths = {}
    for stage, out in (("personas", "personas"), ("topics", "topics"), ("setups", "setups")):
        paths[out] = tmp_path / f"{out}.parquet"
        extra = []
        if stage == "setups":
            extra = ["--personas", str(paths["personas"]), "--topics", str(paths["topics"])]
        proc = run_socsim("facilitation", stage, "--params", str(params), f"--{out}", str(paths[out]),
                          "--metrics", str(tmp_path / f"{stage}.json"), *extra)
        assert proc.returncode == 0, proc.stderr
    return paths


@pytest.mark.slow
def test_simulate_annotate_on_the_real_model_is_deterministic(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    outs = []
    for sub in ("a", "b"):
        d = tmp_path / sub
        params = write_params(d / "params.yaml", **TINY)
        paths = _chain_until_setups(d, params)
        comments, annotations = d / "comments.parquet", d / "annotations.parquet"
        proc = run_socsim("facilitation", "simulate", "--params", str(params), "--setups", str(paths["setups"]),
                          "--comments", str(comments), "--metrics", str(d / "sim.json"))
        assert proc.returncode == 0, proc.stderr
        proc = run_socsim("facilitation", "annotate", "--params", str(params), "--setups", str(paths["setups"]),
                          "--comments", str(comments), "--annotations", str(annotations),
                          "--metrics", str(d / "ann.json"))
        assert proc.returncode == 0, proc.stderr
        outs.append((comments, annotations))
    (ca, aa), (cb, ab) = outs
    assert ca.read_bytes() == cb.read_bytes() and aa.read_bytes() == ab.read_bytes()  # independent caches
    comments = read_table(ca, schemas.COMMENTS).to_pandas()
    setups = read_table(tmp_path / "a" / "setups.parquet", schemas.SETUPS).to_pandas()
    assert len(setups) == 2
    for _, s in setups.iterrows():
        c = comments[comments.discussion_id == s.discussion_id]
        users = c[~c.is_facilitator]
        assert len(users) == 1 + 3 and users.iloc[0]["is_seed"] and users.iloc[0]["text"] == s.topic
        assert set(users.speaker_name) <= {p["username"] for p in s.participants}
        fac = c[c.is_facilitator]
        assert len(fac) == (0 if s.strategy == "No Moderator" else 3)
        assert (c.turn.to_numpy() == np.arange(len(c))).all()
    ann = read_table(aa, schemas.ANNOTATIONS).to_pandas()
    rated = comments[~comments.is_silent & ~comments.is_seed]
    assert len(ann) == 2 * len(rated)
    assert not ann.duplicated(["discussion_id", "turn", "annotator_id"]).any()
    ok = ann[ann.parse_ok]
    assert ok.toxicity.between(1, 5).all() and ok.argument_quality.between(1, 5).all()
    m = read_metrics(tmp_path / "a" / "sim.json")
    assert m["calls"] == 3 + 3 + 3 and m["comments"] + m["silent_turns"] == len(comments)


@pytest.mark.slow
def test_discussion_killed_mid_run_resumes_from_cache(tmp_path):
    params = write_params(tmp_path / "params.yaml", **{**TINY, "facilitation": {**TINY["facilitation"],
                                                                                 "user_turns": 6}})
    paths = _chain_until_setups(tmp_path, params)
    comments, metrics = tmp_path / "comments.parquet", tmp_path / "sim.json"
    cmd = socsim_cmd("facilitation", "simulate", "--params", str(params), "--setups", str(paths["setups"]),
                     "--comments", str(comments), "--metrics", str(metrics))
    done = kill_after_cached_calls(cmd, tmp_path / "cache" / "llm.sqlite", 4)
    total = 6 + 6 + 6  # two discussions: 6 user turns each, 6 facilitator turns in one
    assert 4 <= done < total and not comments.exists()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    m = read_metrics(metrics)
    assert m["cache_hits"] == done and m["calls"] == total - done
    assert len(read_table(comments, schemas.COMMENTS)) == 2 + total
