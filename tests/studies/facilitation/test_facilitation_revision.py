"""Paper 000's revised study: `socsim facilitation import_revision`, `analyse_revision` and
`figures_revision` on a synthetic fixture in the six-model release's format (tests/data/syndisco_revision:
no real rows, a known generator), against an independent computation the authors' way
(support/studies/revision_reference.py: hashlib, pandas and statsmodels on the JSON and CSV, no socsim).

Snakemake on the fixture, and the printed table on a real clone at 4ecc4bfc (SOCSIM_SYNDISCO_REVISED=<path>):
tests/real/studies/facilitation/test_facilitation_revision_end_to_end.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from socsim.facilitation import release, schemas
from socsim.facilitation.revision import data as revision
from socsim.facilitation.revision import report
from socsim.io.parquet import read_provenance, read_table
from socsim.stats import regression
from support.metrics import read_metrics
from support.project import git_commit_all, run_socsim
from support.studies import revision_reference as reference
from support.studies.facilitation_revision import FIXTURE, PARAMS, data_paths, import_cmd

TRUTH = json.loads((FIXTURE / "truth.json").read_text())


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """The fixture imported, analysed and drawn by the CLI, as Snakemake would run the three stages."""
    tmp = tmp_path_factory.mktemp("revision")
    proc = import_cmd(tmp, FIXTURE)
    assert proc.returncode == 0, proc.stderr
    out = tmp / "analysis"
    metrics = ["--metrics", str(tmp / "analyse.json")]
    a = run_socsim(
        "facilitation", "analyse_revision", *PARAMS, *data_paths(tmp), "--revision-analysis", str(out), *metrics
    )
    assert a.returncode == 0, a.stderr
    fig = [
        "--revision-analysis",
        str(out),
        "--revision-figures",
        str(tmp / "figures"),
        "--metrics",
        str(tmp / "fig.json"),
    ]
    f = run_socsim("facilitation", "figures_revision", *PARAMS, *fig)
    assert f.returncode == 0, f.stderr
    return tmp, proc.stderr + a.stdout


def table(tmp: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(tmp / "analysis" / f"{name}.parquet")


def test_the_import_maps_every_discussion_and_counts_every_score_it_cannot_join(analysed):
    tmp, printed = analysed
    m = read_metrics(tmp / "import.json")
    assert m["discussions"] == {
        "main": 64,
        "basic_instructions": 2,
        "no_sdb": 2,
        "no_seeds": 2,
        "no_trolls": 2,
        "tt_random": 2,
        "tt_round_robin": 2,
    }
    assert set(m["discussions_per_model_strategy_main"].values()) == {8}
    vmd, abl = m["scores"]["vmd.csv"], m["scores"]["ablation.csv"]
    # one released row with an error, one repeated header line, one orphan score per file: counted, said
    assert (vmd["rows_with_error"], vmd["repeated_header_lines"], vmd["scored_ids_without_message"]) == (1, 1, 1)
    assert vmd["messages_without_score"] == vmd["generated_messages_without_score"] == 1
    assert (abl["repeated_header_lines"], abl["scored_ids_without_message"], abl["messages_without_score"]) == (1, 1, 0)
    assert vmd["released_rows"] == TRUTH["released_rows"]["main"] + 2  # + the header line and the orphan
    assert "1 messages without a score, 1 scored ids without a message" in printed
    setups = read_table(tmp / "setups.parquet", schemas.SETUPS).to_pandas()
    comments = read_table(tmp / "comments" / "all.parquet", schemas.COMMENTS).to_pandas()
    assert set(setups["model"]) == {"llama-3.1-70b", "qwen2.5-7b"} and (setups["seed"] == revision.UNSEEDED).all()
    no_seeds = setups.loc[setups["condition"] == "no_seeds", "discussion_id"]
    assert not comments.loc[comments["discussion_id"].isin(no_seeds), "is_seed"].any()
    assert comments.groupby("discussion_id")["is_seed"].sum().max() == 2
    silent = comments["text"] == '""'
    assert (comments["is_silent"] == silent).all() and comments.loc[silent, "position"].isna().all()
    roles = {p["role"] for ps in setups["participants"] for p in ps}
    assert roles == {"troll", "normal_user"}
    prov = read_provenance(tmp / "scores.parquet")["data_source"]
    assert prov["source"] == "syndisco_revision" and prov["licence"] == "CC-BY-SA 4.0"
    assert prov["expected"] == "4ecc4bfc" and prov["verified"] is False  # the fixture is no git clone


def test_message_ids_and_orders_are_the_authors(analysed):
    """Every comment's id and order equal SynDisco's post-processing (the reference's), main study."""
    tmp, _ = analysed
    scores = read_table(tmp / "scores.parquet", schemas.SCORES).to_pandas()
    ref = reference.messages(FIXTURE / "data").rename(columns={"conv_id": "discussion_id"})
    joined = ref.merge(scores, on=["discussion_id", "turn"], suffixes=("_ref", ""), validate="one_to_one")
    assert len(joined) == len(ref) == TRUTH["released_rows"]["main"]
    assert (joined["message_id_ref"] == joined["message_id"]).all()
    assert (joined["message_order_ref"] == joined["message_order"]).all()
    assert (joined["message_order"] < joined["turn"] + 1).any()  # equal consecutive texts share an order
    assert scores.loc[scores["message_id"] == TRUTH["error_row_main"], "score_rows"].tolist() == [0]


def test_the_authors_table_equals_their_computation(analysed):
    """The authors' MixedLM on the authors' rows, as socsim refits it, equals the reference's fit of the
    JSON and CSV the authors' way, term by term; so do the observations, groups and participation."""
    tmp, _ = analysed
    ours = table(tmp, "authors_table").set_index("term")
    ref = reference.toxicity_table(FIXTURE / "data")
    labels = {
        "Intercept": "Constant",
        "message_order_c": "Discussion Turn",
    }
    for term, coef in ref["params"].items():
        name = labels.get(term) or term.split("[T.")[1].split("]")[0] + (" × Turn" if term.endswith("_c") else "")
        assert ours.loc[name, "coef"] == pytest.approx(coef, abs=1e-8), name
        assert ours.loc[name, "se"] == pytest.approx(ref["se"][term], abs=1e-8), name
    summary = json.loads((tmp / "analysis" / "summary.json").read_text())["authors_table"]
    assert (summary["observations"], summary["groups"]) == (ref["nobs"], ref["groups"])
    # the authors' join repeats comments that share a text: more rows than comments with a score
    assert ref["nobs"] > json.loads((tmp / "analysis" / "summary.json").read_text())["user_comments_main"]
    part = table(tmp, "participation").set_index("model")["participation"]
    ref_part = reference.participation(FIXTURE / "data")
    assert part["llama-3.1-70b"] == pytest.approx(ref_part["llama70b"]) == 1.0
    assert part["qwen2.5-7b"] == pytest.approx(ref_part["qwen7b"]) and part["Overall"] == pytest.approx(
        ref_part["Overall"]
    )
    assert part["qwen2.5-7b"] < 0.95  # the null twin's users stay silent
    # the printed table is the real release's: the fixture differs from it, and the report says so
    assert not table(tmp, "authors_table")["equal_to_print"].any()


def test_equal_to_print_means_every_printed_digit_and_star(analysed):
    """authors_table's `equal_to_print` against a table printed from the fixture's own fit at three
    decimals: equal; one coefficient, standard error or star off by the last printed digit: not equal."""
    tmp, _ = analysed
    at = table(tmp, "authors_table")
    printed = {
        r.term: {"coef": round(r.coef, 3), "se": round(r.se, 3), "stars": regression.stars(r.p, marginal=False)}
        for r in at.itertuples(index=False)
    }
    fit = regression.MixedResult(
        at.set_index("term")[["coef", "se", "p"]].rename_axis("term"), 1, 1, 0.0, 0.0, True, "f"
    )
    fit.table.index = [_statsmodels_name(t) for t in fit.table.index]
    assert report.authors_table(fit, {"toxicity_regression": {"terms": printed}})["equal_to_print"].all()
    for field, change in (("coef", 0.001), ("se", 0.001), ("stars", "*")):
        off = {k: dict(v) for k, v in printed.items()}
        off["Constant"][field] = off["Constant"][field] + change
        eq = report.authors_table(fit, {"toxicity_regression": {"terms": off}}).set_index("term")["equal_to_print"]
        assert not eq["Constant"] and eq.drop("Constant").all(), field


def _statsmodels_name(label: str) -> str:
    """A printed label back as statsmodels names the term (report.term_label's inverse)."""
    strategy = "C(strategy, Treatment(reference='No Facilitator'))"
    if label == "Constant":
        return "Intercept"
    if label == "Discussion Turn":
        return "message_order_c"
    name = label.removesuffix(" × Turn")
    return f"{strategy}[T.{name}]" + (":message_order_c" if name != label else "")


def test_the_authors_rows_and_clock_make_effects_the_null_twin_does_not_have(analysed):
    """On the null twin (no strategy effect, no interaction planted), the authors' rows (silent users' '""'
    repeated k x k times, more where facilitators are silent) and clock (the message order, counting
    facilitator turns) give significant strategy and x turn terms; one row per comment with the user turn
    gives none: the bias socsim's claims avoid. On the model with effects both fits find them."""
    tmp, _ = analysed
    fits = table(tmp, "mixedlm_by_model")
    fits = fits[fits["term"] != "Constant"]
    twin = fits[fits["scope"] == "qwen2.5-7b"]
    authors = twin[twin["rows"].str.startswith("the authors'") & (twin["term"] != "Discussion Turn")]
    own = twin[twin["rows"].str.startswith("one row") & (twin["term"] != "Discussion Turn")]
    assert len(authors) == len(own) == 6
    assert (authors["p"] < 0.05).sum() >= 4 and (authors["coef"] < 0).all()
    assert not (own["p"] < 0.05).any()
    planted = fits[(fits["scope"] == "llama-3.1-70b") & (fits["term"] != "Discussion Turn")]
    assert (planted["p"] < 0.05).all() and (planted["coef"] < 0).all()


def test_the_other_claims_are_their_tests_recomputed(analysed):
    """The one-sample t of the No Facilitator slopes, the sign test of the intervention rates and the troll
    OLS, recomputed for one model from the per-discussion tables with numpy and scipy, equal the grid's."""
    tmp, _ = analysed
    units = table(tmp, "discussions")
    units = units[units["model"] == "llama-3.1-70b"]
    grid = _verdicts(tmp).set_index(["claim", "scope"])
    # slopes: each discussion's least-squares slope per user turn, then a one-sample t
    slopes = units.loc[units["strategy"] == "No Facilitator", "slope"]
    cell = grid.loc[("toxicity_rises_with_turn", "llama-3.1-70b")]
    assert cell["p"] == pytest.approx(sps.ttest_1samp(slopes, 0.0).pvalue, rel=1e-9)
    # interventions: rates above and below 0.9, a binomial test
    rates = table(tmp, "interventions").query("model == 'llama-3.1-70b'")["rate"].to_numpy()
    k, n = int((rates > 0.9).sum()), int((rates != 0.9).sum())
    cell = grid.loc[("cannot_keep_silent", "llama-3.1-70b")]
    assert cell["p"] == pytest.approx(sps.binomtest(k, n).pvalue, rel=1e-12)
    assert cell["estimate"] == pytest.approx(float(np.median(rates)) - 0.9)
    # trolls: least squares of non-troll toxicity on active trolls and strategy dummies
    x = pd.get_dummies(units["strategy"], drop_first=True, dtype=float)
    x.insert(0, "trolls", units["active_trolls"].astype(float))
    x.insert(0, "const", 1.0)
    y = units["nontroll_toxicity"].to_numpy()
    beta, *_ = np.linalg.lstsq(x.to_numpy(), y, rcond=None)
    resid = y - x.to_numpy() @ beta
    dof = len(y) - x.shape[1]
    se = np.sqrt(resid @ resid / dof * np.linalg.inv(x.T.to_numpy() @ x.to_numpy())[1, 1])
    cell = grid.loc[("trolls_raise_toxicity", "llama-3.1-70b")]
    assert cell["estimate"] == pytest.approx(beta[1], rel=1e-9)
    assert cell["p"] == pytest.approx(2 * sps.t.sf(abs(beta[1] / se), dof), rel=1e-6)


def _verdicts(tmp: Path) -> pd.DataFrame:
    grid = table(tmp, "claims_by_model")
    return grid[grid["part"] != "all parts"]


def test_every_planted_effect_holds_and_no_null_one_does(analysed):
    """The generator's truth (truth.json `planted`): on the model with effects every claim holds part by
    part; on its null twin no null claim holds; the twin's silent facilitators make "cannot keep silent" no."""
    tmp, _ = analysed
    grid = _verdicts(tmp)
    names = {"llama70b": "llama-3.1-70b", "qwen7b": "qwen2.5-7b"}
    assert set(grid["claim"]) == {*TRUTH["planted"], "humans_toxicity"}
    people = grid[grid["claim"] == "humans_toxicity"]  # every model's discussions planted less toxic than people
    assert len(people) and TRUTH["humans_toxicity"]["planted"] == "lower"
    assert people["holds"].eq(True).all() and (people["estimate"] < 0).all(), people[["scope", "part", "verdict"]]
    for claim, by_model in TRUTH["planted"].items():
        for model, kind in by_model.items():
            cells = grid[(grid["claim"] == claim) & (grid["scope"] == names[model])]
            assert len(cells), (claim, model)
            holds = cells["holds"].tolist()
            if kind == "planted":
                assert all(h is True for h in holds), (claim, model, cells["verdict"].tolist())
            elif kind == "null":
                assert not any(h is True for h in holds), (claim, model, cells["verdict"].tolist())
            else:
                assert all(h is False for h in holds), (claim, model, cells["verdict"].tolist())
    assert (grid["n"].dropna() >= 8).all() and set(grid["scope"]) == {"all models", *names.values()}
    matrix = table(tmp, "verdict_matrix")
    assert list(matrix.columns) == ["row", "all models", "llama-3.1-70b", "qwen2.5-7b"]


def test_a_claim_is_the_welch_test_over_the_discussions_means(analysed):
    """strategies_lower_toxicity for one model, recomputed from the JSON and CSV (non-silent generated user
    comments, one row each, their released score; a discussion's mean; Welch t), equals the grid's cell."""
    tmp, _ = analysed
    msgs = reference.messages(FIXTURE / "data")
    tox = pd.read_csv(FIXTURE / "data" / "eval_output" / "vmd.csv")
    tox = tox[tox["error"].isna()].drop_duplicates("message_id")
    users = msgs[(msgs["model"] == "llama70b") & ~msgs["is_moderator"] & (msgs["message"] != '""')]
    users = users.merge(tox.assign(toxicity=pd.to_numeric(tox["toxicity"])), on="message_id")
    means = users.groupby(["conv_id", "strategy"])["toxicity"].mean().reset_index()
    a = means.loc[means["strategy"] == "Constructive Communications", "toxicity"]
    b = means.loc[means["strategy"] == "No Facilitator", "toxicity"]
    ref = sps.ttest_ind(a, b, equal_var=False)
    grid = _verdicts(tmp)
    cell = grid[
        (grid["claim"] == "strategies_lower_toxicity")
        & (grid["part"] == "Constructive Communications")
        & (grid["scope"] == "llama-3.1-70b")
    ].iloc[0]
    assert cell["p"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert cell["estimate"] == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    lo, hi = ref.confidence_interval(0.95)
    assert (cell["ci_low"], cell["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)


def test_the_report_stands_beside_the_paper_and_draws_three_figures(analysed):
    tmp, _ = analysed
    vs = table(tmp, "vs_paper")
    assert vs["comparable"].str.startswith("yes: the paper's own data").all()
    assert "discussions per model x strategy" in " ".join(vs["comparable"])  # the fixture's 8, the paper's 30
    assert vs["quantity"].str.startswith("Toxicity table: ").sum() == 8 + 3  # terms; variance, observations, groups
    claims = vs[vs["finding"] != ""]
    # the six claims' parts, then socsim's own against the humans (No Facilitator and the three strategies)
    assert len(claims) == 3 + 1 + 3 + 1 + 2 + 1 + 4 and claims["quantity"].str.contains("all models").all()
    printed = vs[vs["quantity"].str.startswith("JS to the humans")]
    assert len(printed) == 4 and printed["ours"].isna().all() and printed["note"].str.startswith("as printed").all()
    assert printed["paper"].tolist() == [0.385, 0.266, 0.353, 0.19]
    assert (vs["quantity"].str.startswith("Participation: ")).sum() == 3
    rates = table(tmp, "intervention_rates")
    assert len(rates) == 2 * 3 and set(rates.columns) >= {"mean_rate", "median_rate", "pooled_rate", "echoes"}
    for name in schemas.REVISION_FIGURES:
        plot = pd.read_parquet(tmp / "analysis" / f"plot_{name}.parquet")
        assert plot["has_data"].all(), name
        assert (tmp / "figures" / f"{name}.png").stat().st_size > 10_000
    turns = pd.read_parquet(tmp / "analysis" / "plot_toxicity_over_turns.parquet")
    assert set(turns["panel"]) == {"by strategy", "by model"} and turns["user_turn"].max() == 15
    assert turns["note"].str.contains("n = 16 discussions per strategy").any()
    prov = json.loads((tmp / "analysis" / "provenance.json").read_text())
    assert prov["data_source"]["source"] == "syndisco_revision"


def fixture_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "clone"
    shutil.copytree(FIXTURE / "data", dest / "data")
    return dest


def _first_main(rel: Path) -> Path:
    return sorted((rel / "data/discussions_output/main/llama70b_vanilla.txt").glob("*.json"))[0]


@pytest.mark.parametrize(
    "damage,said",
    [
        (lambda rel: shutil.rmtree(rel / "data" / "eval_output"), "not the revised SynDisco release"),
        (lambda rel: (rel / "data/eval_output/vmd.csv").unlink(), "vmd.csv: missing"),
        (lambda rel: _first_main(rel).write_text("{not json"), "not readable JSON"),
        (
            lambda rel: (rel / "data/discussions_output/main/vanilla").mkdir(),
            "vanilla: not a folder of the revised release",
        ),
        (
            lambda rel: _first_main(rel).write_text(
                json.dumps({**json.loads(_first_main(rel).read_text()), "moderator": None})
            ),
            "moderator is None in a Minimal Instructions folder",
        ),
    ],
    ids=["wrong-folder", "no-vmd", "malformed-json", "paper-era-folder", "unmappable-field"],
)
def test_bad_input_stops_the_import_naming_it_and_writes_nothing(tmp_path, damage, said):
    rel = fixture_copy(tmp_path)
    damage(rel)
    out = tmp_path / "out"
    proc = import_cmd(out, rel)
    assert proc.returncode != 0 and said in proc.stderr, proc.stderr[-2000:]
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]  # no Parquet, no metrics


def test_the_paper_era_commit_is_refused_naming_the_revision(tmp_path):
    proc = import_cmd(tmp_path / "out", FIXTURE, "--set", "facilitation.data.revision=fde36171")
    assert proc.returncode != 0 and "the revised study is at 4ecc4bfc" in proc.stderr
    assert "params.syndisco-revised.yaml" in proc.stderr and not (tmp_path / "out").exists()


def test_a_clone_at_another_commit_is_refused(tmp_path):
    rel = fixture_copy(tmp_path)
    head = git_commit_all(rel, "release")
    proc = import_cmd(tmp_path / "out", rel)
    assert proc.returncode != 0 and f"at commit {head[:12]}, not facilitation.data.revision 4ecc4bfc" in proc.stderr
    assert not (tmp_path / "out" / "setups.parquet").exists()
    ok = release.revision(rel, head[:8], folder=revision.data_folder)
    assert ok["verified"] is True and ok["commit"] == head
