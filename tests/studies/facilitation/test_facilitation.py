"""Facilitation study: turn taking, silence, id joins, statistics against independent computations,
a real simulated discussion, and resume after SIGKILL."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from socsim.config import read_yaml
from socsim.facilitation import analysis, annotate, schemas
from socsim.facilitation.simulate import FACILITATOR, clean_comment, comment_rows, episode
from socsim.sim import views
from socsim.sim.episode import Transcript
from socsim.stats.multitest import holm
from socsim.stats.text import diversity, lcs_length, rouge_l_f1, tokens
from support.project import ROOT, run_socsim, write_params

# -- silence, context, ids -----------------------------------------------------------------------

ALICE = {"persona_id": "p1", "username": "alice", "role": "normal_user", "system_prompt": "a"}
BOB = {"persona_id": "p2", "username": "bob", "role": "troll", "system_prompt": "b"}
SETUP = {
    "discussion_id": "d1",
    "context_h": 2,
    "model": "m",
    "strategy": "No Instructions",
    "condition": "main",
    "facilitator_prompt": "moderate",
    "participants": [ALICE, BOB],
    "topic": "seed opinion",
    "seed": 1,
}


class Discussion:
    """Comments recorded as run_discussion records them: engine turns mapped by comment_rows."""

    def __init__(self, setup: dict):
        self.setup, self.t = setup, Transcript(episode(setup))

    def record(self, speaker: dict | None, text: str, tokens: int, is_seed: bool = False, silent: bool | None = None):
        self.t.add(
            speaker["persona_id"] if speaker else FACILITATOR,
            text,
            tokens,
            (not text) if silent is None else silent,
            is_seed,
        )

    @property
    def rows(self) -> list[dict]:
        return comment_rows(self.setup, self.t.turns)

    def context(self) -> list[dict]:
        return views.window(self.t.turns, self.setup["context_h"])


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


def _comments_with_repeats() -> list[dict]:
    t = Discussion(SETUP)
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
    ann = pd.DataFrame(
        [
            {
                "discussion_id": d,
                "turn": t,
                "annotator_id": a,
                "toxicity": 2,
                "argument_quality": 3,
                "parse_ok": True,
                "raw_answer": "{}",
            }
            for d, t in keys
            for a in ("a1", "a2")
        ]
    )
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
                for _ in range(3):
                    y = 2.0 + shift + (-0.01 + slope) * t + u + rng.normal(0, 0.5)
                    rows.append(
                        {
                            "discussion_id": did,
                            "strategy": strategy,
                            "time": t,
                            "toxicity": y,
                            "condition": "main",
                            "is_facilitator": False,
                        }
                    )
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
    meat = sum(np.outer(X[groups == j].T @ resid[groups == j], X[groups == j].T @ resid[groups == j]) for j in range(g))
    cov = bread @ meat @ bread * (g / (g - 1)) * ((n - 1) / (n - k))
    se_cluster = np.sqrt(np.diag(cov))
    order = [
        "Intercept",
        'C(strategy, Treatment("No Moderator"))[T.Moderation Game]',
        'C(strategy, Treatment("No Moderator"))[T.Rules Only]',
        "time",
        'C(strategy, Treatment("No Moderator"))[T.Moderation Game]:time',
        'C(strategy, Treatment("No Moderator"))[T.Rules Only]:time',
    ]
    table = res.table.loc[order]
    assert table["coef"].to_numpy() == pytest.approx(beta, abs=1e-10)
    assert table["se"].to_numpy() == pytest.approx(se_plain, rel=1e-8)
    assert table["se_cluster"].to_numpy() == pytest.approx(se_cluster, rel=1e-8)
    # clustered p from t with G - 1 degrees of freedom (the normal rejects too often with few clusters)
    p_cluster = 2 * sps.t.sf(np.abs(beta / se_cluster), g - 1)
    assert table["p_cluster"].to_numpy() == pytest.approx(p_cluster, rel=1e-6)
    # The known effects are recovered, and clustering widens the intercept's error.
    assert beta[0] == pytest.approx(2.0, abs=0.15) and beta[2] == pytest.approx(-0.5, abs=0.2)
    assert beta[4] == pytest.approx(-0.05, abs=0.02)
    assert table.loc["Intercept", "se_cluster"] > table.loc["Intercept", "se"]
    assert res.n_clusters == 120 and res.nobs == len(data)
    _, md, tex = analysis.ols_tables(res)
    assert "Moderation Game×time" in md and "Adj. R²" in md and r"\begin{tabular}" in tex


def test_anova_and_pairwise_match_scipy_at_both_levels():
    data = _synthetic_rated(seed=3, per_cell=10, turns=4)
    means = data.groupby(["discussion_id", "strategy", "time", "condition", "is_facilitator"], as_index=False)[
        "toxicity"
    ].mean()
    anova, pairwise = analysis.anova_and_pairwise(means)
    # Comment level (the paper's): every comment mean is a unit.
    groups = [g["toxicity"].to_numpy() for _, g in means.groupby("strategy")]
    assert anova["comment"]["F"] == pytest.approx(sps.f_oneway(*groups).statistic)
    # Discussion level: one mean per discussion, computed independently here.
    per_d = {s: [g["toxicity"].mean() for _, g in gs.groupby("discussion_id")] for s, gs in means.groupby("strategy")}
    assert anova["discussion"]["F"] == pytest.approx(sps.f_oneway(*per_d.values()).statistic)
    assert anova["discussion"]["n"] == {s: 10 for s in per_d} and anova["comment"]["n"]["Rules Only"] == 40
    assert set(pairwise["level"]) == {"comment", "discussion"} and len(pairwise) == 6
    for level in ("comment", "discussion"):
        pw = pairwise[pairwise.level == level]
        row = pw[(pw.strategy_a == "Moderation Game") & (pw.strategy_b == "No Moderator")].iloc[0]
        if level == "comment":
            a = means[means.strategy == "Moderation Game"]["toxicity"]
            b = means[means.strategy == "No Moderator"]["toxicity"]
        else:
            a, b = per_d["Moderation Game"], per_d["No Moderator"]
        assert row["p"] == pytest.approx(sps.ttest_ind(a, b).pvalue)
        assert pw["p_holm"].tolist() == pytest.approx(holm(pw["p"]).tolist())  # Holm within a level
        assert (pw["verdict"] == ("" if level == "discussion" else analysis.NESTED)).all()


def test_discussion_level_test_keeps_its_size_under_clustering():
    """No strategy effect, a strong discussion effect: treating comments as independent rejects far
    more often than 5 %; one mean per discussion keeps the nominal rate."""
    rng = np.random.default_rng(7)
    rejections = Counter()
    sims = 300
    for _ in range(sims):
        rows = []
        for strategy in ("No Moderator", "Rules Only"):
            for d in range(6):
                u = rng.normal(0, 0.5)
                rows += [
                    {
                        "discussion_id": f"{strategy}{d}",
                        "strategy": strategy,
                        "condition": "main",
                        "is_facilitator": False,
                        "toxicity": 2 + u + e,
                    }
                    for e in rng.normal(0, 0.3, 10)
                ]
        anova, _ = analysis.anova_and_pairwise(pd.DataFrame(rows))
        rejections.update(level for level in ("comment", "discussion") if anova[level]["p"] < 0.05)
    assert rejections["comment"] / sims > 0.3
    assert 0.01 <= rejections["discussion"] / sims <= 0.09


# -- Table 2's time: the user-comment index ------------------------------------------------------

STRATS = {"No Moderator": (0.0, 0.0), "Moderation Game": (-0.3, -0.05)}


def _known_discussions(per_cell=6, turns=10, seed=0):
    """Comments, annotations and setups whose user-comment toxicity is exactly
    2 + shift + (-0.01 + slope) * user_index; facilitator turns (spoken or silent) and silent user
    turns in between, so the position clock differs from the user-comment clock."""
    rng = np.random.default_rng(seed)
    rows, ann, setups = [], [], []
    for strategy, (shift, slope) in STRATS.items():
        for d in range(per_cell):
            did = f"main.m.{strategy}.{d}"
            setup = {**SETUP, "discussion_id": did, "strategy": strategy}
            t = Discussion(setup)
            t.record(ALICE, "seed opinion", 0, is_seed=True)
            for k in range(turns):
                user = (ALICE, BOB)[k % 2]
                silent = rng.random() < 0.15
                t.record(user, "" if silent else f"comment {k}", 1)
                if strategy != "No Moderator":
                    t.record(None, "please be civil" if rng.random() < 0.7 else "", 1)
            user_idx = 0
            for r in t.rows:
                if not r["is_facilitator"] and not r["is_silent"]:
                    user_idx += 1
                if r["is_silent"] or r["is_seed"]:
                    continue
                y = 4.0 if r["is_facilitator"] else 2 + shift + (-0.01 + slope) * user_idx
                ann += [
                    {
                        "discussion_id": did,
                        "turn": r["turn"],
                        "annotator_id": a,
                        "toxicity": y,
                        "argument_quality": 3,
                        "parse_ok": True,
                        "raw_answer": "{}",
                    }
                    for a in ("a1", "a2")
                ]
            rows += t.rows
            setups.append(
                {
                    "discussion_id": did,
                    "instructions": "full",
                    "with_roles": True,
                    "condition": "main",
                    "turn_taking": "respond",
                }
            )
    return pd.DataFrame(rows), pd.DataFrame(ann), pd.DataFrame(setups)


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


# -- constant and one-value ratings, missing strategies, no usable rating --------------------------


def _strict(text: str):
    import json

    def bad(x):
        raise ValueError(f"not strict JSON: {x}")

    return json.loads(text, parse_constant=bad)


def test_constant_ratings_report_na_with_the_reason(tmp_path):
    from socsim.io.parquet import write_json

    comments, ann, setups = _known_discussions(per_cell=3, turns=6)
    ann["toxicity"] = 1.0
    rated = analysis.rated_comments(comments, ann, setups)
    flags = analysis.toxicity_flags(rated)
    assert flags and flags[0].message.startswith("degenerate input: facilitation toxicity ratings: 100%")
    res = analysis.toxicity_ols(rated)
    assert res.unavailable and "constant" in res.unavailable and res.table["coef"].isna().all()
    assert len(res.table) == 4  # every term named, none estimated
    table, md, tex = analysis.ols_tables(res)
    assert "*" not in md and "inf" not in md.lower() and "n/a" in md and "degenerate input" in md
    assert "Adj. R² = n/a" in md and (table["verdict"].str.startswith("n/a: degenerate input")).all()
    anova, pairwise = analysis.anova_and_pairwise(analysis.comment_means(rated), flags)
    for level in ("comment", "discussion"):
        assert anova[level]["F"] is None and anova[level]["verdict"].startswith("degenerate input")
    assert pairwise["p"].isna().all() and pairwise["verdict"].str.startswith("degenerate input").all()
    write_json(tmp_path / "anova.json", {"anova": anova, "adj_r2": res.adj_r2})
    assert _strict((tmp_path / "anova.json").read_text())["adj_r2"] is None


def test_one_value_ratings_keep_coefficients_but_withhold_stars():
    comments, ann, setups = _known_discussions(per_cell=4, turns=10)
    ann["toxicity"] = 1.0
    ann.loc[ann.index[::20], "toxicity"] = 3.0  # 5 % informative: 95 % of the answers are 1
    rated = analysis.rated_comments(comments, ann, setups)
    res = analysis.toxicity_ols(rated)
    assert res.unavailable is None and res.table["coef"].notna().all() and res.flags
    table, md, _ = analysis.ols_tables(res)
    assert "*" not in md.split("\n\n")[0] and "Stars withheld: degenerate input" in md
    assert (table["stars"] == "").all()


def test_perfect_fit_withholds_stars():
    # The known-slope data is an exact linear function: zero residuals, meaningless standard errors.
    comments, ann, setups = _known_discussions()
    res = analysis.toxicity_ols(analysis.rated_comments(comments, ann, setups))
    assert res.resid_ss < 1e-12 and any("perfect fit" in f.reason for f in res.flags)
    table, md, _ = analysis.ols_tables(res)
    assert (table["stars"] == "").all() and "*" not in md.split("\n\n")[0] and "perfect fit" in md


def test_no_variance_within_strategies_is_na_not_infinite():
    # Constant inside each strategy, different between them: F and t would be infinite, p = 0.
    units = pd.DataFrame(
        {
            "discussion_id": [f"d{i}" for i in range(6)],
            "strategy": ["A", "A", "A", "B", "B", "B"],
            "toxicity": [1.0, 1, 1, 2, 2, 2],
        }
    )
    anova, pairwise = analysis.group_tests(units, "discussion")
    assert anova["F"] is None and anova["p"] is None and "no variance within any strategy" in anova["verdict"]
    assert pairwise["p"].isna().all() and pairwise["verdict"].str.contains("t is infinite").all()
    # a strategy with one unit is named as excluded, not dropped silently
    units = pd.concat(
        [units, pd.DataFrame({"discussion_id": ["d9"], "strategy": ["C"], "toxicity": [3.0]})], ignore_index=True
    )
    units.loc[units.index[:2], "toxicity"] = [1.5, 0.5]
    anova, _ = analysis.group_tests(units, "discussion")
    assert anova["excluded"] == {"strategies": ["C"], "reason": "fewer than 2 discussions"}
    assert np.isfinite(anova["F"])


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


def test_strategy_without_ratings_is_named_and_missing_reference_is_na():
    comments, ann, setups = _known_discussions(per_cell=3, turns=6)
    rated = analysis.rated_comments(comments, ann, setups)
    res = analysis.toxicity_ols(rated, expected_strategies=["Moderation Game", "No Moderator", "Rules Only"])
    assert "Rules Only" in res.note
    assert "Rules Only" in analysis.ols_tables(res)[1]
    anova, _ = analysis.anova_and_pairwise(analysis.comment_means(rated), [], ["No Moderator", "Rules Only"])
    assert anova["comment"]["no_ratings"] == ["Rules Only"]
    no_ref = analysis.toxicity_ols(rated[rated.strategy != "No Moderator"], ["Moderation Game", "No Moderator"])
    assert no_ref.unavailable and "No Moderator" in no_ref.unavailable


def test_no_more_ratings_than_terms_is_na_with_the_rules_words_not_a_degeneracy_flag():
    # 3 strategies: 6 terms, so 7 ratings at least; 6 is too little data (the verdict rule's words)
    data = _synthetic_rated(per_cell=1, turns=1).groupby("strategy").head(2)
    res = analysis.toxicity_ols(data)
    assert res.unavailable == "n = 6 ratings, needs 7" and res.flags == []
    table, md, _ = analysis.ols_tables(res)
    assert (table["verdict"] == "n/a: n = 6 ratings, needs 7").all() and "degenerate" not in md


# -- the analyse and figures stages on Parquet files of the documented schemas ----------------------


def _write_study(d, comments, ann, setups_small):
    from socsim.io.parquet import write_table

    d.mkdir(parents=True, exist_ok=True)
    setups = []
    for _, s in setups_small.iterrows():
        setups.append(
            {
                "discussion_id": s.discussion_id,
                "condition": "main",
                "model": "m",
                "strategy": comments.loc[comments.discussion_id == s.discussion_id, "strategy"].iloc[0],
                "turn_taking": "respond",
                "p_respond": 0.4,
                "context_h": 2,
                "user_turns": 6,
                "instructions": "full",
                "with_sdb": True,
                "with_roles": True,
                "topic_id": "t1",
                "topic": "seed opinion",
                "participants": [],
                "facilitator_prompt": None,
                "seed": 1,
            }
        )
    write_table(d / "setups.parquet", setups, schemas.SETUPS, ["discussion_id"], {})

    def records(df, int_cols):
        out = df.to_dict("records")
        for r in out:
            for k in int_cols:
                r[k] = None if pd.isna(r[k]) else int(round(r[k]))
        return out

    c = comments.assign(model="m", condition="main", prompt_hash=None, completion_tokens=1)
    write_table(
        d / "comments.parquet", records(c, ["position", "turn"]), schemas.COMMENTS, ["discussion_id", "turn"], {}
    )
    write_table(
        d / "annotations.parquet",
        records(ann, ["toxicity", "argument_quality", "turn"]),
        schemas.ANNOTATIONS,
        ["discussion_id", "turn", "annotator_id"],
        {},
    )


def _analyse(d, params):
    return run_socsim(
        "facilitation",
        "analyse",
        "--params",
        str(params),
        "--setups",
        str(d / "setups.parquet"),
        "--comments",
        str(d / "comments.parquet"),
        "--annotations",
        str(d / "annotations.parquet"),
        "--analysis",
        str(d / "analysis"),
        "--metrics",
        str(d / "analyse.json"),
    )


def test_analyse_and_figures_stages_say_degenerate_input_plainly(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    comments, ann, setups = _known_discussions(per_cell=3, turns=6)
    ann["toxicity"] = 1.0  # the embedded model's typical answer
    _write_study(tmp_path, comments, ann, setups)
    proc = _analyse(tmp_path, params)
    assert proc.returncode == 0, proc.stderr
    assert "degenerate input: facilitation toxicity ratings" in proc.stdout
    out = tmp_path / "analysis"
    summary = _strict((out / "summary.json").read_text())
    assert summary["degenerate"] and summary["degeneracy_flags"][0]["message"].startswith("degenerate input")
    assert {"scope", "reason", "message"} <= set(summary["degeneracy_flags"][0])
    for name in ("anova.json", "agreement.json", "provenance.json", "summary.json"):
        _strict((out / name).read_text())
    _strict((tmp_path / "analyse.json").read_text())
    vs = pd.read_csv(out / "vs_paper.csv")
    row = vs[vs.quantity == "Table 2: Moderation Game×time"].iloc[0]
    assert row["paper"] == pytest.approx(-0.011) and np.isnan(row["ours"])
    assert vs.loc[vs.quantity.str.startswith("Finding 2"), "finding_holds"].iloc[0].startswith("degenerate input")
    assert "degenerate input" in (out / "vs_paper.md").read_text()
    assert "***" not in (out / "table2_ols.md").read_text()
    proc = run_socsim(
        "facilitation",
        "figures",
        "--params",
        str(params),
        "--analysis",
        str(out),
        "--figures",
        str(tmp_path / "figures"),
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "figures").glob("fig*.png"))) == 4


def test_analyse_on_informative_ratings_compares_with_the_paper(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    comments, ann, setups = _known_discussions(per_cell=4, turns=10)
    rng = np.random.default_rng(1)
    ann["toxicity"] = (ann["toxicity"] + rng.normal(0, 0.8, len(ann))).clip(1, 5)
    _write_study(tmp_path, comments, ann, setups)
    proc = _analyse(tmp_path, params)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "analysis"
    summary = _strict((out / "summary.json").read_text())
    assert summary["ols"]["available"] and summary["time"] == "user_index"
    vs = pd.read_csv(out / "vs_paper.csv")
    ours = vs.set_index("quantity")
    table = pd.read_csv(out / "table2_ols.csv").set_index("variable")
    assert ours.loc["Table 2: Moderation Game×time", "ours"] == pytest.approx(
        table.loc["Moderation Game×time", "coef"], rel=1e-4
    )
    assert ours.loc["Table 2: Moderation Game×time", "difference"] == pytest.approx(
        table.loc["Moderation Game×time", "coef"] + 0.011, rel=1e-3
    )
    assert set(pd.read_csv(out / "pairwise_ttests.csv")["level"]) == {"rating", "comment", "discussion"}
    # Finding 2 holds only for significant negative x time terms (the sign alone is no finding).
    elaborate = ["Regulation Room×time", "Constructive Communications×time", "Moderation Game×time"]
    # This data has one elaborate strategy of three: Finding 2 cannot be judged (the rule is tested
    # on its own in tests/unit/stats/test_verdict.py and on null data below).
    assert [t for t in elaborate if t in table.index] == ["Moderation Game×time"]
    vs_text = pd.read_csv(out / "vs_paper.csv", keep_default_na=False)
    row = vs_text[vs_text.quantity.str.startswith("Finding 2")].iloc[0]
    assert row["finding_holds"] == "inconclusive (n = 0 discussions, needs 3)"  # no Regulation Room here
    # the Parquet form is the canonical table, equal to the CSV's values
    canon = pd.read_parquet(out / "table2_ols.parquet").set_index("variable")
    assert canon["coef"].to_numpy() == pytest.approx(table["coef"].to_numpy(), rel=1e-5)


def test_all_ratings_unparsed_fails_naming_it_after_writing_agreement(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    comments, ann, setups = _known_discussions(per_cell=2, turns=4)
    ann["parse_ok"] = False
    ann["toxicity"] = np.nan
    _write_study(tmp_path, comments, ann, setups)
    proc = _analyse(tmp_path, params)
    assert proc.returncode != 0
    assert "every rating failed to parse" in proc.stderr
    agreement = _strict((tmp_path / "analysis" / "agreement.json").read_text())
    assert agreement["parse_failure_rate"] == 1.0 and set(agreement["parse_failure_rate_by_annotator"].values()) == {
        1.0
    }


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


# -- ablations' model, Fig. 5 baseline and human-reference note -------------------------------------


def _fp(**over):
    from socsim import config

    base = {
        "models": ["llama", "qwen"],
        "strategies": ["No Moderator", "No Instructions"],
        "users_per_discussion": 3,
        **over,
    }
    return config.validate({"facilitation": base})["facilitation"]


def test_ablations_run_on_their_model_and_fig5_takes_the_baseline_from_them():
    from socsim.facilitation import setups

    conds = setups.conditions(_fp(ablations={"model": "qwen"}))
    assert all(models == ["qwen"] for c, models, _, _ in conds if c.name != "main")
    assert setups.ablation_model(_fp()) == "llama"  # null: the first model
    with pytest.raises(ValueError, match="ablations.model"):
        setups.ablation_model(_fp(ablations={"model": "gpt"}))
    div = pd.DataFrame(
        [
            {
                "discussion_id": "a",
                "condition": "main",
                "model": "llama",
                "strategy": "No Instructions",
                "turn_taking": "respond",
                "diversity": 0.5,
                "source": "synthetic",
            },
            {
                "discussion_id": "b",
                "condition": "main",
                "model": "qwen",
                "strategy": "No Instructions",
                "turn_taking": "respond",
                "diversity": 0.6,
                "source": "synthetic",
            },
            {
                "discussion_id": "c",
                "condition": "main",
                "model": "qwen",
                "strategy": "No Moderator",
                "turn_taking": "respond",
                "diversity": 0.7,
                "source": "synthetic",
            },
            {
                "discussion_id": "d",
                "condition": "tt_random",
                "model": "qwen",
                "strategy": "No Instructions",
                "turn_taking": "random",
                "diversity": 0.9,
                "source": "synthetic",
            },
        ]
    )
    base, label = analysis.ablation_baseline(div)
    assert base["discussion_id"].tolist() == ["b"] and "qwen" in label
    assert "not set" in analysis.human_note(div)
    human = pd.concat([div, pd.DataFrame([{"discussion_id": "human.1", "diversity": 0.8, "source": "human"}])])
    assert "not set" not in analysis.human_note(human)


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


def test_only_the_facilitator_is_told_it_may_stay_silent():
    from socsim.facilitation import setups

    instructions = read_yaml(ROOT / "data" / "facilitation" / "instructions.yaml")
    strategies = read_yaml(ROOT / "data" / "facilitation" / "strategies.yaml")
    for variant in ("full", "basic"):
        assert "silent" not in setups.user_instructions(instructions, variant, False).lower()
        assert "silent" in setups.user_instructions(instructions, variant, True).lower()
    assert "silent" in setups.facilitator_prompt(strategies, "Rules Only").lower()


# -- personas: annotators' fields, role traits ---------------------------------------------------------


def test_annotators_carry_the_participants_fields():
    from socsim.facilitation import materials

    guide = {"instructions": "Rate toxicity."}
    annotators = materials.read_annotators(ROOT / "data" / "facilitation" / "annotators.jsonl", 10)
    for a in annotators:
        prompt = annotate.annotator_prompt(a, guide)
        for key in ("age", "sex", "sexual_orientation", "demographic_group", "education_level", "current_employment"):
            assert str(a[key]) in prompt, key
        assert all(t in prompt for t in a["personality_characteristics"]) and prompt.endswith("Rate toxicity.")
    bad = ROOT / "data" / "facilitation" / "personas.jsonl"  # no annotator_id: rejected
    with pytest.raises(ValueError, match="lacks"):
        materials.read_annotators(bad, 1)


def test_no_roles_drops_the_role_traits_too():
    from socsim.facilitation import materials, setups

    roles = materials.read_roles(ROOT / "data" / "facilitation" / "roles.yaml")
    personas = materials.personas_from_file(ROOT / "data" / "facilitation" / "personas.jsonl", roles, 30)
    trolls = [p for p in personas if p["role"] == "troll"]
    assert trolls and all(p["role_traits"] for p in trolls)
    for p in trolls:
        with_roles = setups.participant_prompt(p, "Be brief.", True, True)
        without = setups.participant_prompt(p, "Be brief.", True, False)
        assert all(t in with_roles for t in p["role_traits"]) and p["special_instructions"] in with_roles
        assert not any(t in without for t in p["role_traits"]) and p["special_instructions"] not in without
        assert all(t in without for t in p["personality_characteristics"])


# -- Findings 1 and 2 by the verdict rule: null data, a true effect, too few discussions ---------

PAPER_STRATEGIES = [
    "No Moderator",
    "No Instructions",
    "Moderation Game",
    "Rules Only",
    "Regulation Room",
    "Constructive Communications",
]
ELABORATE = ["Regulation Room", "Constructive Communications", "Moderation Game"]


def _paper_shape_ratings(rng, per_strategy=24, comments=15, annotators=10, shift=0.0, slope=0.0):
    """Rated user comments at the paper's shape (6 strategies x 24 discussions, 15 user comments,
    10 annotators): a discussion's own level and time slope, comment and annotator noise; every
    facilitated strategy shifted by `shift` and the elaborate ones' slope by `slope`."""
    rows = []
    for strategy in PAPER_STRATEGIES:
        s = 0.0 if strategy == "No Moderator" else shift
        b = slope if strategy in ELABORATE else 0.0
        for d in range(per_strategy):
            u, g = rng.normal(0, 0.5), rng.normal(0, 0.03)
            t = np.arange(1, comments + 1)
            y = 3.0 + s + u + (b + g) * t + rng.normal(0, 0.5, comments)
            for a in range(annotators):
                tox = np.clip(np.round(y + rng.normal(0, 0.5, comments)), 1, 5)
                rows += [
                    {
                        "discussion_id": f"{strategy}.{d}",
                        "strategy": strategy,
                        "condition": "main",
                        "is_facilitator": False,
                        "time": float(ti),
                        "toxicity": float(x),
                        "annotator_id": a,
                    }
                    for ti, x in zip(t, tox)
                ]
    return pd.DataFrame(rows)


def _findings_1_2(rated):
    from socsim.facilitation.analysis import strategy_contrasts

    ols = analysis.toxicity_ols(rated, PAPER_STRATEGIES)
    f1, _ = strategy_contrasts(rated, PAPER_STRATEGIES[1:], ols.flags)
    f2, _ = strategy_contrasts(rated, [f"{s}×time" for s in ELABORATE], ols.flags)
    return ols, f1, f2


def test_each_strategy_contrast_holds_at_about_the_nominal_rate_on_null_data():
    """Each term alone, at the minimum n (3 discussions a side) and at the paper's 24: a claim in one
    direction at two-sided 0.05 holds in about 2.5 % of null runs; at most 8 % over 200 replicates."""
    from socsim.facilitation.analysis import strategy_contrasts

    rng = np.random.default_rng(21)
    for per_strategy, reps in ((3, 200), (24, 40)):
        holds = Counter()
        for _ in range(reps):
            rated = _paper_shape_ratings(rng, per_strategy=per_strategy, annotators=2)
            for term in ("Rules Only", "Rules Only×time"):
                holds[term] += bool(strategy_contrasts(rated, [term], [])[0].holds)
        assert max(holds.values()) / reps <= 0.08, (per_strategy, holds)


def test_findings_1_and_2_hold_at_about_the_nominal_rate_on_null_data_at_paper_shape():
    """No strategy effect: each finding holds in at most 10 % of 20 replicates, although the plain
    (unclustered) p of some coefficient rejects in far more of them."""
    rng = np.random.default_rng(11)
    holds = Counter()
    reps = 20
    for _ in range(reps):
        ols, f1, f2 = _findings_1_2(_paper_shape_ratings(rng))
        holds.update(name for name, v in (("f1", f1), ("f2", f2)) if v.holds)
        holds["plain"] += bool((ols.table["p"].drop("Intercept").drop("time") < 0.05).any())
    assert holds["f1"] / reps <= 0.10 and holds["f2"] / reps <= 0.10
    assert holds["plain"] / reps >= 0.3  # the plain p would have called a finding


def test_findings_1_and_2_hold_under_a_true_effect():
    rng = np.random.default_rng(5)
    _, f1, f2 = _findings_1_2(_paper_shape_ratings(rng, shift=-0.5, slope=-0.05))
    assert f1.label == "yes" and f2.label == "yes"


def test_findings_on_too_few_discussions_are_inconclusive_with_the_n():
    rng = np.random.default_rng(5)
    _, f1, f2 = _findings_1_2(_paper_shape_ratings(rng, per_strategy=2, shift=-0.5, slope=-0.05))
    assert f1.label == "inconclusive (n = 2 discussions, needs 3)"
    assert f2.label == "inconclusive (n = 2 discussions, needs 3)"
