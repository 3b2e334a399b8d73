"""The facilitation analysis on data whose answer is known: seed ratings excluded by rule, each test
level naming its unit, Finding 2's headline as a claim of no difference, Finding 3's threshold, the
paper's own data as comparable, and the turn-taking rate beside a uniform pick. Statistics are
checked against independent scipy / statsmodels computations."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower

from socsim.facilitation import analysis as an
from socsim.facilitation import figures
from socsim.facilitation.analysis import claims
from socsim.io import report as rp
from socsim.io import vs_paper
from socsim.io.figures import panels
from socsim.io.vs_paper import read_paper
from socsim.sim.policies import Drawn
from socsim.stats import verdict as vd
from support.analysis import inputs
from support.project import ROOT
from support.studies.facilitation import PAPER_STRATEGIES as STRATEGIES

PAPER_FILE = ROOT / "data" / "facilitation" / "paper.yaml"
ELABORATE = ["Regulation Room", "Constructive Communications", "Moderation Game"]
WORDS = "the a policy tax school vote people city rule idea law market health green town road".split()
SEED_TOXICITY = 5.0


def study(per_strategy=4, users=7, user_turns=8, annotators=3, seed=0, rate_seed=False, shift=None):
    """Setups, comments and annotations of a main study: each discussion opens with a seed opinion
    (turn 0, a user's), then users picked uniformly among all but the last speaker, each followed by
    the facilitator (not under No Moderator). A discussion's user comments are rated around its own
    level (2.5 + the strategy's `shift` + noise); the seed, when rated, SEED_TOXICITY."""
    rng = np.random.default_rng(seed)
    setups, comments, ann = [], [], []
    for strategy in STRATEGIES:
        for d in range(per_strategy):
            did = f"main.m.{strategy}.{d}"
            setups.append(
                {
                    "discussion_id": did,
                    "condition": "main",
                    "model": "m",
                    "strategy": strategy,
                    "turn_taking": "respond",
                    "instructions": "full",
                    "with_sdb": True,
                    "with_roles": True,
                    "participants": [{"persona_id": f"u{k}"} for k in range(users)],
                }
            )
            level = 2.5 + (shift or {}).get(strategy, 0.0) + rng.normal(0, 0.3)
            policy = Drawn("random", [f"u{k}" for k in range(users)], random.Random(int(rng.integers(1 << 30))))
            turns = [(policy.next(), True)]
            for _ in range(user_turns):
                turns.append((policy.next(), False))
                if strategy != "No Moderator":
                    turns.append(("facilitator", False))
            for t, (speaker, is_seed) in enumerate(turns):
                fac = speaker == "facilitator"
                comments.append(
                    {
                        "discussion_id": did,
                        "turn": t,
                        "position": t,
                        "speaker_id": speaker,
                        "role": "facilitator" if fac else "normal_user",
                        "is_facilitator": fac,
                        "is_silent": False,
                        "is_seed": is_seed,
                        "text": " ".join(rng.choice(WORDS, 6)),
                        "model": "m",
                        "strategy": strategy,
                        "condition": "main",
                    }
                )
                if is_seed and not rate_seed:
                    continue
                for a in range(annotators):
                    y = SEED_TOXICITY if is_seed else 1.5 if fac else level + rng.normal(0, 0.5)
                    ann.append(
                        {
                            "discussion_id": did,
                            "turn": t,
                            "annotator_id": f"a{a}",
                            "toxicity": float(y),
                            "argument_quality": 3.0,
                            "parse_ok": True,
                            "raw_answer": "{}",
                        }
                    )
    return pd.DataFrame(setups), pd.DataFrame(comments), pd.DataFrame(ann)


def report(setups, comments, ann, source=None):
    """The report on these tables as the analyse stage's inputs (the setups' provenance naming `source`)."""
    # Krippendorff's alpha over continuous ratings is slow and not under test here: left out.
    agreement = {**an.parse_failures(ann), "krippendorff_alpha_toxicity": None}
    provenance = {"setups": {"data_source": {"source": source}}} if source else {}
    tables = {"setups": setups, "comments": comments, "annotations": ann}
    return an.report(inputs("facilitation", tables, paper=read_paper(PAPER_FILE), provenance=provenance), agreement)


def user_rating_rows(comments, ann):
    """The rating rows of generated user comments, with time = the user-comment index (seed = 1),
    computed here without the package."""
    users = comments[~comments.is_facilitator].sort_values(["discussion_id", "turn"]).copy()
    users["time"] = users.groupby("discussion_id").cumcount() + 1
    rows = ann.merge(users[["discussion_id", "turn", "strategy", "is_seed", "time"]], on=["discussion_id", "turn"])
    return rows


# -- 1. seed ratings are excluded by rule, counted and said -----------------------------------------


def test_seed_ratings_are_excluded_counted_and_said_without_a_degenerate_verdict(tmp_path):
    setups, comments, ann = study(rate_seed=True)
    seeds = len(setups) * 3
    rated, n = an.rated_and_seeds(comments, ann, setups)
    assert n == seeds and not rated["turn"].eq(0).any()
    rep = report(setups, comments, ann)
    rp.write(rep, tmp_path)
    # Table 2 equals an independent OLS over the generated user comments' ratings only...
    rows = user_rating_rows(comments, ann)
    formula = 'toxicity ~ C(strategy, Treatment("No Moderator")) * time'
    fit = smf.ols(formula, rows[~rows.is_seed]).fit()
    table = rep.tables["table2_ols"].df.set_index("term")
    assert table["coef"].to_numpy() == pytest.approx(fit.params[table.index].to_numpy(), abs=1e-9)
    # ...and would not with the seed's ratings in it (the test can fail).
    with_seed = smf.ols(formula, rows).fit()
    assert abs(with_seed.params["Intercept"] - fit.params["Intercept"]) > 0.1
    # Said: summary, anova.json, Table 2, the pairwise table, the vs_paper rows of the ratings.
    summary = json.loads((tmp_path / "summary.json").read_text())
    msg = an.seed_note(seeds)
    assert summary["seed_ratings_excluded"] == seeds and summary["notes"] == [msg]
    assert all(a["seed_ratings_excluded"] == seeds for a in json.loads((tmp_path / "anova.json").read_text()).values())
    assert msg in (tmp_path / "table2_ols.md").read_text() and msg in (tmp_path / "pairwise_ttests.md").read_text()
    vs = pd.read_csv(tmp_path / "vs_paper.csv", keep_default_na=False)
    anova_rows = vs[vs.quantity.str.startswith("Finding 1: ANOVA")]
    assert len(anova_rows) == 3 and anova_rows["note"].str.contains(msg, regex=False).all()
    # A rule, not a degenerate input: no flag, no verdict replaced.
    assert not rep.flags and not summary["degenerate"]
    assert not vs["finding_holds"].str.startswith("degenerate").any()
    # Without seed ratings: the same numbers, and nothing to say.
    clean = report(setups, comments, ann[ann.turn != 0])
    assert clean.summary["seed_ratings_excluded"] == 0 and clean.summary["notes"] == []
    assert clean.tables["table2_ols"].df["coef"].tolist() == pytest.approx(table["coef"].tolist())
    assert clean.documents["anova.json"]["rating"]["p"] == pytest.approx(rep.documents["anova.json"]["rating"]["p"])


# -- 2. each test names its unit; the rating level is the paper's test -----------------------------


def test_three_levels_match_scipy_and_name_their_units(tmp_path, monkeypatch):
    setups, comments, ann = study(per_strategy=5, shift={"No Moderator": 0.4}, seed=3)
    rep = report(setups, comments, ann)
    anova = rep.documents["anova.json"]
    assert list(anova) == ["rating", "comment", "discussion"]
    rows = user_rating_rows(comments, ann)
    rows = rows[~rows.is_seed]
    comment = rows.groupby(["discussion_id", "turn", "strategy"], as_index=False)["toxicity"].mean()
    discussion = comment.groupby(["discussion_id", "strategy"], as_index=False)["toxicity"].mean()
    units = {"rating": rows, "comment": comment, "discussion": discussion}
    pairwise = rep.tables["pairwise_ttests"].df
    for level, data in units.items():
        groups = {s: g["toxicity"].to_numpy() for s, g in data.groupby("strategy")}
        f = sps.f_oneway(*groups.values())
        assert anova[level]["F"] == pytest.approx(f.statistic) and anova[level]["p"] == pytest.approx(f.pvalue)
        assert anova[level]["unit"] == an.UNITS[level]
        assert anova[level]["n"] == {s: len(v) for s, v in groups.items()}
        pw = pairwise[pairwise.level == level]
        expect = [sps.ttest_ind(groups[a], groups[b]).pvalue for a, b in zip(pw.strategy_a, pw.strategy_b)]
        assert pw["p"].to_numpy() == pytest.approx(expect)
        assert pw["p_holm"].to_numpy() == pytest.approx(multipletests(expect, method="holm")[1])
    assert anova["rating"]["n"]["Rules Only"] == 5 * 8 * 3  # rating rows: 11 per comment in the paper
    # Only the discussion level carries a verdict.
    assert anova["rating"]["verdict"] == an.PSEUDO and anova["comment"]["verdict"] == an.NESTED
    assert anova["discussion"]["verdict"] == ""
    assert (pairwise.loc[pairwise.level == "rating", "verdict"] == an.PSEUDO).all()
    # vs_paper: the paper's ANOVA p stands beside the rating-level p; each row names its unit.
    vs = vs_paper.table(rep.vs_paper).set_index("quantity")
    rating = vs.loc["Finding 1: ANOVA p across strategies (" + an.UNIT_WORDS["rating"] + ")"]
    assert rating["ours"] == pytest.approx(anova["rating"]["p"]) and rating["paper"] == 0.001
    assert rating["note"].startswith("no verdict: ") and rating["finding_holds"] == ""
    disc = vs.loc["Finding 1: ANOVA p across strategies (" + an.UNIT_WORDS["discussion"] + ")"]
    assert np.isnan(disc["paper"]) and disc["finding"].startswith("toxicity differs across strategies")
    expect = vd.effect(anova["discussion"]["p"], anova["discussion"]["F"], 5, 3, "discussions per strategy")
    assert disc["finding_holds"] == expect.label
    # Fig. 3: one panel per level, each titled with its unit.
    titles: list[str] = []

    def grab(fig, out_dir, name):
        titles.extend(t for t in (ax.get_title() for ax in fig.axes) if t)
        return []

    monkeypatch.setattr(figures, "save", grab)
    figures.fig3_pairwise(panels(rp.plot_table(rep.plots["fig3_pairwise_toxicity"])), tmp_path)
    assert titles == [
        "(a) rating rows (the paper's test, pseudo-replicated)",
        "(b) comments (each comment's mean over its annotators)",
        "(c) discussions (each discussion's mean toxicity)",
    ]


# -- 3. Finding 2's headline: no difference from No Instructions, with power -------------------------


def rated_from_means(means: dict[str, np.ndarray]) -> pd.DataFrame:
    """Rating rows whose discussions' mean toxicity is exactly the given value (two comments a
    discussion, at mean +- 0.1)."""
    rows = []
    for strategy, values in means.items():
        for d, m in enumerate(values):
            for t, y in ((2, m - 0.1), (3, m + 0.1)):
                rows.append(
                    {
                        "discussion_id": f"{strategy}.{d}",
                        "strategy": strategy,
                        "condition": "main",
                        "is_facilitator": False,
                        "time": float(t),
                        "toxicity": float(y),
                    }
                )
    return pd.DataFrame(rows)


EFFECT = 0.213


def test_finding2_no_difference_matches_welch_and_power_and_holds_on_a_null_design():
    paper = read_paper(PAPER_FILE)
    assert paper["finding2_no_gain"]["effect"] == pytest.approx(0.426 / 2)
    assert paper["finding2_no_gain"]["reference"] == "No Instructions"
    rng = np.random.default_rng(4)
    base = rng.normal(2.0, 0.2, 30)
    # Null: every elaborate strategy's discussions have the same means as No Instructions' (shuffled).
    means = {"No Instructions": base, **{s: rng.permutation(base) for s in ELABORATE}}
    v, n, note = an.no_gain_over(rated_from_means(means), ELABORATE, "No Instructions", EFFECT, [])
    sd = np.sqrt((np.var(base, ddof=1) * 29 * 2) / 58)
    power = TTestIndPower().power(effect_size=EFFECT / sd, nobs1=30, ratio=1.0, alpha=0.05)
    assert power > 0.8 and v.label == "yes" and n == 30
    assert f"power {power:.2f}" in v.reason and "p = 1" in v.reason
    assert "Regulation Room +0.000 (p = 1, power" in note
    # A real difference: one elaborate strategy 0.3 points less toxic -> "no", p from Welch's t.
    lower = {**means, "Rules Only": base, "Moderation Game": base - 0.3}
    v, _, note = an.no_gain_over(rated_from_means(lower), ELABORATE, "No Instructions", EFFECT, [])
    p = sps.ttest_ind(base - 0.3, base, equal_var=False).pvalue
    assert v.holds is False and v.label.startswith("no (a difference was found") and f"p = {p:.3g}" in v.reason
    assert "Moderation Game -0.300" in note
    # Too few discussions: the test does not reject, but it could not have found the effect.
    b4 = base[:4]
    few = {"No Instructions": b4, **{s: b4[::-1] for s in ELABORATE}}
    v, n, _ = an.no_gain_over(rated_from_means(few), ELABORATE, "No Instructions", EFFECT, [])
    sd4 = np.std(b4, ddof=1)
    power4 = TTestIndPower().power(effect_size=EFFECT / sd4, nobs1=4, ratio=1.0, alpha=0.05)
    assert power4 < 0.8 and v.holds is None and n == 4
    assert v.label == f"inconclusive (p = 1 but power {power4:.2f} < 0.8 at n = 4 discussions)"
    # Below the minimum n, and with no No Instructions discussions at all: inconclusive with the n.
    v, _, _ = an.no_gain_over(
        rated_from_means({k: x[:2] for k, x in means.items()}), ELABORATE, "No Instructions", EFFECT, []
    )
    assert v.label == "inconclusive (n = 2 discussions, needs 3)"
    del means["No Instructions"]
    assert an.no_gain_over(rated_from_means(means), ELABORATE, "No Instructions", EFFECT, [])[0].holds is None


def test_finding2_rows_name_the_headline_its_effect_and_the_table2_part():
    setups, comments, ann = study(per_strategy=3)
    vs = vs_paper.table(report(setups, comments, ann).vs_paper)
    f2 = vs[vs.quantity.str.startswith("Finding 2")]
    assert f2["quantity"].tolist()[0].startswith("Finding 2: elaborate strategies' mean toxicity no different")
    assert f2["quantity"].tolist()[1].startswith("Finding 2 (Table 2 part): Regulation Room×time")
    head = f2.iloc[0]
    assert "effect looked for: 0.213 toxicity points" in head["note"] and "socsim's choice" in head["note"]
    assert head["finding"] == "more elaborate facilitation strategies fail to decrease toxicity beyond No Instructions"
    # 3 discussions a side with a discussion SD of 0.3: no power to find 0.213 points.
    assert head["finding_holds"].startswith("inconclusive (p = ") and " but power 0." in head["finding_holds"]


# -- 4. Finding 3's threshold is socsim's reading --------------------------------------------------


def test_finding3_names_its_threshold_and_the_rate_of_each_strategy():
    interv = pd.DataFrame(
        {
            "discussion_id": ["a1", "a2", "b1", "b2", "c1"],
            "condition": "main",
            "model": "m",
            "strategy": ["A", "A", "B", "B", "C"],
            "opportunities": [10, 10, 14, 14, 10],
            "echoes": [0, 0, 1, 0, 0],
            "interventions": [10, 10, 9, 9, 10],
        }
    ).assign(rate=lambda d: d.interventions / d.opportunities)
    j = claims.finding3(SimpleNamespace(paper=read_paper(PAPER_FILE), interv=interv))
    (finding,), (row,) = j.findings, j.rows
    assert "threshold 0.9" in row.quantity
    assert "threshold 0.9: socsim's reading of 'almost any opportunity'; the paper gives no number" in row.note
    assert "by strategy: A 1.00, C 1.00, B 0.64" in row.note and "1 echoes" in row.note
    assert row.ours == pytest.approx(48 / 58)
    t = sps.ttest_1samp(interv["rate"], 0.9)
    assert finding.value == pytest.approx(interv["rate"].mean() - 0.9) and f"p = {t.pvalue:.3g}" in row.verdict.reason


# -- 5. the paper's own data are comparable; how they differ from its text is said -----------------


def test_on_the_papers_own_data_rows_are_comparable_and_the_notes_say_the_data_differ(tmp_path):
    design = ["discussions per model x strategy: ours 6-10, paper 8", "annotators: ours 11, paper 10"]
    rows = [vs_paper.Row("x", 1.0, 2.0), vs_paper.Row("u", 0.5, None, is_input=True)]
    assert vs_paper.table(rows, design)["comparable"].tolist() == [
        "no: discussions per model x strategy, annotators",
        "no: ours is an input of the run",
    ]
    df = vs_paper.write(tmp_path, rows, "t", design, own_data=True)
    assert df["comparable"][0] == (
        "yes: the paper's own data (they differ from its text: discussions per model x strategy, annotators)"
    )
    md = (tmp_path / "vs_paper.md").read_text()
    assert "The paper's data differ from its text: annotators: ours 11, paper 10" in md
    assert "Design differs from the paper" not in md
    assert vs_paper.table(rows, [], own_data=True)["comparable"][0] == "yes: the paper's own data"
    # Through the facilitation report: cells of 6 to 10 discussions, 11 annotators.
    setups, comments, ann = study(per_strategy=3, annotators=2)
    paper = read_paper(PAPER_FILE)
    cells = pd.concat([setups.assign(strategy="S1").iloc[:6], setups.assign(strategy="S2").iloc[:10]])
    cells = cells.assign(discussion_id=[f"d{i}" for i in range(16)])
    assert "discussions per model x strategy: ours 6-10, paper 8" in an.design(cells, ann, paper)
    rep = report(setups, comments, ann, source="syndisco_release")
    assert rep.own_data and rep.summary["source"] == "syndisco_release"
    rp.write(rep, tmp_path / "own")
    vs = pd.read_csv(tmp_path / "own" / "vs_paper.csv")
    assert vs["comparable"].str.startswith("yes: the paper's own data (they differ from its text: ").all()
    assert "The paper's data differ from its text: annotators: ours 2, paper 10" in (
        (tmp_path / "own" / "vs_paper.md").read_text()
    )
    assert not report(setups, comments, ann).own_data
    with pytest.raises(ValueError, match="source"):
        report(setups, comments, ann, source="release")


# -- 6. turn taking: ours beside the paper's and beside a uniform pick -------------------------------


def test_reply_rate_is_shown_beside_a_uniform_pick_among_the_other_users():
    setups, comments, _ = study(per_strategy=10, user_turns=14)
    reply = an.observed_reply_rate(comments, setups)
    assert reply["users"] == [7] and reply["uniform_rate"] == pytest.approx(1 / 6)
    # A uniform pick repeats the speaker two turns back at 1/6: within 3.5 binomial SE.
    se = np.sqrt((1 / 6) * (5 / 6) / reply["turns"])
    assert abs(reply["rate"] - 1 / 6) < 3.5 * se
    (row,) = claims.turn_taking(SimpleNamespace(paper=read_paper(PAPER_FILE), reply=reply)).rows
    assert row.paper == 0.4 and row.ours == reply["rate"]
    assert "a uniform pick among the other users gives 0.167 (1 / (users - 1), 7 users per discussion)" in row.note
    # Without the setups' participants the users are the distinct speakers (fewer where one never spoke).
    spoke = comments[~comments.is_facilitator].groupby("discussion_id")["speaker_id"].nunique()
    bare = an.observed_reply_rate(comments, setups.drop(columns="participants"))
    assert bare["users"] == sorted(set(spoke)) and bare["rate"] == reply["rate"]
    # The paper's rule (respond, p = 0.4) gives 0.4, still beside the same uniform 1/6.
    rng = random.Random(2)
    rows = []
    for d in range(60):
        policy = Drawn("respond", [f"u{k}" for k in range(7)], rng, 0.4)
        rows += [
            {"discussion_id": f"d{d}", "turn": t, "speaker_id": policy.next(), "is_facilitator": False}
            for t in range(15)
        ]
    r = an.observed_reply_rate(
        pd.DataFrame(rows),
        pd.DataFrame(
            {
                "discussion_id": [f"d{d}" for d in range(60)],
                "turn_taking": "respond",
                "participants": [list(range(7))] * 60,
            }
        ),
    )
    assert abs(r["rate"] - 0.4) < 3.5 * np.sqrt(0.24 / r["turns"]) and r["uniform_rate"] == pytest.approx(1 / 6)


# -- 7. figures only draw: each reads its plot table, whose notes the analysis worded -----------------


def test_each_figure_has_a_declared_plot_table_whose_notes_carry_the_flags_and_figures_import_no_analysis():
    import ast
    from pathlib import Path

    from socsim.facilitation.schemas import FIGURES
    from socsim.facilitation.stages import ARTIFACTS

    setups, comments, ann = study(per_strategy=3)
    rep = report(setups, comments, ann.assign(toxicity=1.0))
    assert [f"plot_{f}" for f in rep.plots] == list(ARTIFACTS["analysis"].tables) == [f"plot_{f}" for f in FIGURES]
    flag = "degenerate input: facilitation toxicity ratings"
    fig3 = panels(rp.plot_table(rep.plots["fig3_pairwise_toxicity"]))
    assert list(fig3) == ["rating", "comment", "discussion"]
    assert all(any(flag in line for line in p.note) for p in fig3.values())
    assert fig3["discussion"].note[0] == "n = 3 discussions per strategy"
    assert fig3["discussion"].data["label"].str.fullmatch(r"-?\d+\.\d\d").all()  # no stars on a flagged input
    # The claims are judged in the report's order, and their flags sit where they apply.
    assert [c.name for c in an.CLAIMS][:3] == ["table2", "finding1", "finding1_anova"]
    where = {f.flag.message: f.where for f in rep.flags}
    assert {"table2_ols", "fig3", "fig6", "fig3 (discussion)"} <= set(where[next(m for m in where if flag in m)])
    source = Path(figures.__file__).read_text()
    imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert not any(m and m.startswith("socsim.facilitation") for m in imported)


def test_a_panel_shows_the_flags_recorded_on_it_through_report_flags_on():
    from socsim.facilitation.analysis.plots import plots
    from socsim.stats import degeneracy as dg

    setups, comments, ann = study(per_strategy=3)
    rep = report(setups, comments, ann)
    flag = dg.Flag("a claim's input", "one value")
    rep.flag(flag, "fig3 (discussion)")  # a claim's flag, placed on one panel
    fig3 = {p.name: p.note for p in plots(rep)["fig3_pairwise_toxicity"]}
    assert rep.flags_on("fig3 (discussion)")[-1] == flag.message
    assert flag.message in fig3["discussion"] and not any(
        flag.message in n for k, n in fig3.items() if k != "discussion"
    )
