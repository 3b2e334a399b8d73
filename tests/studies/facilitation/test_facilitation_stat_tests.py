"""Facilitation's statistical tests against independent computations: Holm, Table 2's OLS with clustered
errors, the ANOVA and pairwise t-tests at both levels, the discussion-level test's size; and constant or
one-value ratings, a perfect fit, missing strategies and too few ratings reported as n/a with the reason
(socsim.facilitation.analysis.tests)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from socsim.facilitation import analysis
from socsim.stats.multitest import holm
from support.studies.facilitation import _known_discussions, _strict


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
