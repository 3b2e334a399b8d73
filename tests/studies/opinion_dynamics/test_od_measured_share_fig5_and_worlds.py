"""The opinion-dynamics study on data whose answer is known: the share of agents the default run
measures (formula and simulated schedule), "D rises with confirmation bias" by adjacent steps over
topics, Fig. 5's reported B and the per-topic table and figure, and the outside-information judge (a
scripted judge that answers by a marker in the text) in both world settings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from socsim import config, seeds
from socsim.io import vs_paper
from socsim.io.claims import assemble
from socsim.io.report import Report
from socsim.llm import LLMClient
from socsim.opinion_dynamics import analysis, figures, materials, network, outside_info, setups
from socsim.opinion_dynamics.analysis import claims, places, plots
from socsim.opinion_dynamics.analysis import outside_info as outside_info_analysis
from socsim.opinion_dynamics.stages import STUDY
from socsim.stats import degeneracy as dg
from support.analysis import inputs
from support.llm import Scripted
from support.project import ROOT
from support.studies.od_synthetic import NO_BASELINE, findings, per_sim_rows, sim_row

DATA = ROOT / "data" / "opinion_dynamics"
PAPER = vs_paper.read_paper(DATA / "paper.yaml")
PROMPTS = yaml.safe_load((DATA / "prompts.yaml").read_text())


def _od(**over: Any) -> dict[str, Any]:
    over = {"agent_models": ["smollm2-135m"], **over}  # one model (the default's controls left out)
    p = config.deep_merge(yaml.safe_load((ROOT / "params.yaml").read_text()), {"opinion_dynamics": over})
    return config.validate(p)["opinion_dynamics"]


# -- the default run measures most agents ------------------------------------------------


def _simulated_share(n: int, steps: int, reps: int, edges: list[tuple[int, int]] | None = None) -> float:
    shares = []
    for k in range(reps):
        pairs = network.schedule(n, steps, seeds.rng(11, "coverage", k), edges)
        shares.append(len({r for _, r in pairs}) / n)
    return float(np.mean(shares))


def test_default_run_reviews_at_least_80_percent_of_agents_in_expectation():
    od = _od()
    n, steps = od["n_agents"], od["steps"]
    closed_form = 1 - (1 - 1 / n) ** steps  # each step's reviewer is agent i with probability 1/n
    assert network.expected_reviewed_share(n, steps) == pytest.approx(closed_form)
    assert closed_form >= 0.8, (n, steps, closed_form)
    # the schedule the setups build, simulated: the same expectation (SE of the mean ~0.002 here)
    assert _simulated_share(n, steps, 4000) == pytest.approx(closed_form, abs=0.01)
    rows = setups.build(
        od,
        5,
        materials.persona_rows(yaml.safe_load((DATA / "personas.yaml").read_text())),
        materials.topic_rows(yaml.safe_load((DATA / "topics.yaml").read_text())),
        PROMPTS,
    )
    main = [r for r in rows if r["condition"] == "main"]
    assert all(r["n_agents"] == n and len(r["reviewers"]) == steps for r in main)
    # the old defaults (N = 10, T = 6) fail the criterion: the check can fail
    old = network.expected_reviewed_share(10, 6)
    assert old == pytest.approx(1 - 0.9**6) and old < 0.8


def test_expected_reviewed_share_on_a_graph_matches_the_simulated_schedule():
    path = [(0, 1), (1, 2), (2, 3)]  # the ends are reviewed only by their one neighbour
    p = network.review_probabilities(4, path)
    assert p == pytest.approx([1 / 8, 3 / 8, 3 / 8, 1 / 8]) and sum(p) == pytest.approx(1)
    expect = 1 - ((7 / 8) ** 5 * 2 + (5 / 8) ** 5 * 2) / 4
    assert network.expected_reviewed_share(4, 5, path) == pytest.approx(expect)
    assert _simulated_share(4, 5, 4000, path) == pytest.approx(expect, abs=0.01)


# -- D rises with confirmation bias, adjacent steps over topics ------------------------


def _ps(rng: np.random.Generator, topics: int, d_of: dict[str, float], sd: float = 0.3) -> pd.DataFrame:
    return per_sim_rows(rng, topics, d_of, d_sd=sd)


def _d_rises(ps: pd.DataFrame) -> Any:
    return findings(ps, PAPER)[("m", "complete", "uniform", "cumulative")]["d_rises"]


def test_d_rises_by_adjacent_steps_against_paired_t():
    """Issue 34: "none < weak < strong" is judged by its adjacent steps, each a paired t over topics."""
    rng = np.random.default_rng(1)
    ps = _ps(rng, 15, {"none": 0.6, "weak": 0.9, "strong": 1.2})
    f = _d_rises(ps)
    assert f.verdict.holds is True and f.unit == "topics" and f.n == 15
    assert "weak - none; strong - weak" in f.test and "(-2, 1, 1)" in f.test  # the paper's, named as not this
    # independently: a topic's D per level (mean over framings); each step as a paired t test
    per = ps.groupby(["topic", "bias"]).D.mean().unstack()
    p1 = stats.ttest_rel(per.weak, per.none).pvalue
    p2 = stats.ttest_rel(per.strong, per.weak).pvalue
    assert f"weak - none: p = {p1:.3g} < 0.05, n = 15 topics" in f.verdict.reason
    assert f"strong - weak: p = {p2:.3g} < 0.05, n = 15 topics" in f.verdict.reason
    assert f.verdict.p == pytest.approx(max(p1, p2))  # the intersection-union p
    assert f.value == pytest.approx((per.strong - per.none).mean())
    # weak above strong: the second step says the reverse, at alpha / 2 steps, so the claim is "no"
    rev = _d_rises(_ps(rng, 15, {"none": 0.3, "weak": 1.6, "strong": 1.0}))
    assert rev.verdict.holds is False and rev.verdict.reason.startswith("strong - weak: significant in the opposite")


def test_d_rises_on_too_few_topics_is_inconclusive_and_two_levels_give_one_step():
    """(Null data and the nominal rate: test_od_verdicts.)"""
    rng = np.random.default_rng(2)
    two = _d_rises(_ps(rng, 2, {"none": 0.2, "weak": 1.0, "strong": 1.8}))
    assert two.verdict.holds is None and two.verdict.label == "inconclusive (n = 2 topics, needs 3)"
    # two levels (the default run): one step, their difference
    pair = _d_rises(_ps(rng, 15, {"none": 0.5, "strong": 1.3}))
    assert pair.verdict.holds is True and "strong - none" in pair.test and "strong - none: p = " in pair.verdict.reason


# -- Fig. 5's B, per-topic table and figure -------------------------------------------------


def test_fig5_rows_put_the_papers_b_beside_ours():
    assert PAPER["fig5"]["runs"]["positive"]["false"]["B"] == -1.7  # the seed's text, section 4
    assert PAPER["fig5"]["runs"]["negative"]["true"]["B"] == -1.3
    ps = pd.DataFrame(
        [
            sim_row(sim_id="a", B=-1.4),
            sim_row(sim_id="b", init="negative", framing="true", B=-0.6),
            sim_row(sim_id="c", init="negative", framing="false", B=-2.0),  # no paper number
            sim_row(sim_id="d", bias="strong", B=0.0),  # not Fig. 5's condition
        ]
    )
    # a simulation's flags reach its rows as flags (a reason with ": " in it stays whole)
    rated = dg.Flag("opinion classifier on m's reports (main simulations)", "92% of 12 answers are -2")
    own = dg.Flag("last classified opinion of each measured agent (simulation a)", "100% of 2 answers: -2")
    sims = analysis.SimFlags({"a": [rated], "b": [rated]}, {"a": [own]})
    rows = claims.judge_fig5(claims.Evidence(ps, PAPER, 0.05, classifier={"m": "judge"}, sims=sims)).rows
    assert [list(r.flags) for r in rows] == [[rated]] * 2 + [[rated, own]] * 2  # b (negative start) sorts first
    got = {(r.quantity.split("start")[0][-9:].strip(), r.quantity.rsplit("(", 1)[1]): (r.ours, r.paper) for r in rows}
    assert got == {
        ("positive", "seed text)"): (-1.4, -1.7),
        ("positive", "arXiv v4)"): (-1.4, -1.3),
        ("negative", "seed text)"): (-0.6, -1.3),
        ("negative", "arXiv v4)"): (-0.6, -1.2),
    }
    vs = vs_paper.table(rows)
    assert sorted(vs.difference) == pytest.approx(sorted([-1.4 + 1.7, -1.4 + 1.3, -0.6 + 1.3, -0.6 + 1.2]))
    assert vs.comparable.str.startswith("no: agent model, classifier, steps T").all()  # one topic, as the paper
    assert vs.note.str.contains("never measured: 20 %").all()


def test_per_topic_table_and_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    ps = pd.DataFrame(
        [
            sim_row(sim_id="a", init="uniform", rep=0, B=-1.0, D=0.4, D_pop=0.4, D_sample=0.42),
            sim_row(sim_id="b", init="uniform", rep=1, B=-0.5, D=0.8, D_pop=0.8, D_sample=0.84),
            sim_row(sim_id="c", init="uniform", topic="fire", category="common_sense", B=1.0, D=None),
        ]
    )
    # b's own final values are one value; a reason with ": " in it stays one flag
    own = dg.Flag("last classified opinion of each measured agent (simulation b)", "100% of 3 answers: -2")
    sims = analysis.SimFlags(own={"b": [own]})
    pt = analysis.per_topic(ps, sims)
    gw = pt[pt.topic == "global_warming"].iloc[0]
    assert gw.B == pytest.approx(-0.75) and gw.D == pytest.approx(0.6) and gw.reps == 2
    assert gw.rep_sd_B == pytest.approx(np.std([-1.0, -0.5], ddof=1)) and gw["flags"] == own.message
    fire = pt[pt.topic == "fire"].iloc[0]
    assert pd.isna(fire.D) and analysis.show_per_topic(pt).D.tolist()[pt.index[pt.topic == "fire"][0]] == "n/a"
    # the figure: one per (model, topic, memory, start, topology, world), one panel per bias x framing
    setups_df = pd.DataFrame({"sim_id": ["a", "b", "c"], "steps": [2, 2, 2]})
    traj = pd.DataFrame(
        [
            {
                "sim_id": s,
                "agent": a,
                "t": t,
                "opinion": -2 if a else 1,
                "source": "classified" if t and a else "initial",
            }
            for s in "abc"
            for a in range(3)
            for t in range(3)
        ]
    )
    saved: dict[str, list[str]] = {}
    monkeypatch.setattr(
        figures,
        "save",
        lambda fig, out, name: saved.setdefault(name, [t.get_text() for ax in fig.axes for t in [ax.title]]),
    )
    rep = Report("t")
    rep.flag(own, places.own_place("b"), local=True)  # b's own flag: on its row and panels, not the run's
    drawn = plots.final_by_topic_panels(ps, plots.final_opinions(traj, setups_df), rep, "closed")
    assert not rep.flags
    assert [p.note for p in drawn if "global_warming" in p.name] == [
        [own.message, "never measured: 20 % of agents (final opinion = initial)"]
    ]
    names = figures.topic_final_distributions({p.name: p for p in drawn}, tmp_path)
    assert names == [
        "final_by_topic_m_fire_cumulative_uniform_complete_closed",
        "final_by_topic_m_global_warming_cumulative_uniform_complete_closed",
    ]
    # global warming: 2 simulations pooled, 3 agents each: values 1, -2, -2 twice -> B = -1, D = sqrt(2)
    assert saved[names[1]] == [f"false, none: B = -1.00, D = {np.sqrt(2):.2f} (pop. SD)"]


# -- outside information ---------------------------------------------------------------------

MARK = "my cousin told me"


def _world_setups(worlds: list[str] | str) -> list[dict[str, Any]]:
    od = _od(world=worlds, topics=["global_warming", "fire", "sky_color"])
    return setups.build(
        od,
        5,
        materials.persona_rows(yaml.safe_load((DATA / "personas.yaml").read_text())),
        materials.topic_rows(yaml.safe_load((DATA / "topics.yaml").read_text())),
        PROMPTS,
    )


def _events(rows: list[dict[str, Any]], open_share: float) -> list[dict[str, Any]]:
    """Every step's tweet and report; in the open world each output carries the marker of outside
    information with probability `open_share` (seeded), in the closed world none."""
    out, rng = [], np.random.default_rng(3)
    for s in rows:
        if s["condition"] != "main":
            continue
        for t in range(1, s["steps"] + 1):
            texts = []
            for _ in range(2):
                outside = s["world"] == "open" and rng.random() < open_share
                texts.append(f"step {t}. {MARK} it is so." if outside else f"step {t}. I think so.")
            out.append(
                {
                    "sim_id": s["sim_id"],
                    "t": t,
                    "model": s["model"],
                    "topic": s["topic"],
                    "writer": s["writers"][t - 1],
                    "reviewer": s["reviewers"][t - 1],
                    "tweet": texts[0],
                    "report": texts[1],
                }
            )
    return out


def _judge(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Scripted]:
    backend = Scripted(lambda q: "yes" if MARK in q.message_dicts()[0]["content"] else "no")
    cfg = _od()["outside_info"]
    rows = asyncio.run(outside_info.judge(items, PROMPTS, cfg, LLMClient(backend, None), "judge", 5))
    return rows, backend


def test_setups_run_both_worlds_with_the_closed_world_text_only_in_closed():
    rows = _world_setups(["closed", "open"])
    main = [r for r in rows if r["condition"] == "main"]
    assert {r["world"] for r in main} == {"closed", "open"} and len(main) == 2 * sum(
        r["condition"] == "main" for r in _world_setups("closed")
    )
    closed_text = PROMPTS["closed_world"].strip()
    for r in main:
        assert (closed_text in r["system_prompts"][0]) == (r["world"] == "closed")
    # the two worlds of a condition share its schedule (common random numbers)
    by = {(r["topic"], r["framing"], r["bias"], r["world"]): r["reviewers"] for r in main}
    assert all(by[(t, f, b, "open")] == v for (t, f, b, w), v in by.items() if w == "closed")


def test_scripted_judge_gives_the_known_rate_per_world_and_the_finding():
    rows = _world_setups(["closed", "open"])
    events = _events(rows, 0.25)
    items = outside_info.outputs(events, rows)
    assert len(items) == 2 * len(events)
    chosen = outside_info.sample(items, None, 5)
    labels, backend = _judge(chosen)
    assert len(backend.requests) == len(chosen) and backend.requests[0].constraint is outside_info.ANSWER
    assert backend.requests[0].sampling.temperature == 0.0
    df = pd.DataFrame(labels)
    st = pd.DataFrame(rows)
    tab = outside_info_analysis.table(df, st, None).set_index("world")
    n_open = sum(MARK in x["text"] for x in items if x["world"] == "open")
    total_open = sum(x["world"] == "open" for x in items)
    assert tab.loc["open", "all_rate"] == pytest.approx(n_open / total_open) and 0.15 < n_open / total_open < 0.35
    assert tab.loc["closed", "all_rate"] == 0 and tab.loc["closed", "all_judged"] == total_open
    # the finding: Welch t over simulations, recomputed here
    diff, n, verdict = outside_info_analysis.finding(df, "smollm2-135m", [], 0.05)
    rate = df.assign(o=df.outside.astype(float)).groupby(["world", "sim_id"]).o.mean()
    t = stats.ttest_ind(rate["open"], rate["closed"], equal_var=False)
    assert diff == pytest.approx(rate["open"].mean()) and n == rate["closed"].size
    assert t.pvalue < 0.05 and verdict.holds is True and f"p = {t.pvalue:.3g}" in verdict.reason
    # the report: table, finding and vs_paper rows beside the paper's 15 % and 0 %
    rep = _outside(df, st, None)
    vs = vs_paper.table(rep.vs_paper).set_index("quantity")
    assert vs.loc["outside information rate, open world (smollm2-135m; tweets and reports)", "paper"] == 0.15
    assert vs.loc["outside information rate, closed world (smollm2-135m; tweets and reports)", "ours"] == 0
    # the judge is always a design difference (the paper's: human annotators); the classifier is not one
    row = next(r for r in rep.vs_paper if r.quantity.startswith("outside information rate, open"))
    assert any(d.startswith("outside-info judge: ours judge, paper 3 human") for d in row.design), row.design
    assert not any(d.startswith("classifier") for d in row.design)
    assert [f.verdict.holds for f in rep.findings] == [True]


def _outside(labels: pd.DataFrame, st: pd.DataFrame, sample: int | None) -> Report:
    """The outside-information claim's judgement (its table, findings, vs_paper rows and flags) as a report."""
    ps = st.assign(n_agents=st.n_agents, never_measured=0, never_measured_share=0.0)
    ev = claims.Evidence(ps, PAPER, 0.05, test_rows=[], outside=claims.Outside(labels, st, ps, sample, {}))
    return assemble(Report("t"), [claims.CLAIMS[-1]], ev)


def test_sample_is_seeded_per_world_and_kind_and_one_world_gives_no_finding():
    rows = _world_setups("closed")
    items = outside_info.outputs(_events(rows, 0.25), rows)
    a, b = outside_info.sample(items, 4, 5), outside_info.sample(items, 4, 5)
    assert a == b and len(a) == 8 and sorted(x["kind"] for x in a) == ["report"] * 4 + ["tweet"] * 4
    assert outside_info.sample(items, 4, 6) != a
    labels, _ = _judge(a)
    df, st = pd.DataFrame(labels), pd.DataFrame(rows)
    rep = _outside(df, st, 4)
    tab = rep.tables["outside_info"].df.set_index("world")
    assert tab.loc["open", "status"] == "did not run (opinion_dynamics.world)"
    assert tab.loc["closed", "status"] == "judged 8 outputs of " + str(df.sim_id.nunique()) + " simulation(s)"
    assert not rep.findings  # the verdict needs both worlds
    # a judge that answered "no" to every output carries no information: flagged on its rows
    vs = vs_paper.table(rep.vs_paper)
    assert len(vs) == 1 and vs["flags"].iloc[0].startswith("degenerate input: outside-information judge")
    # sample 0: nothing judged, and the table says so
    empty = pd.DataFrame(columns=df.columns)
    rep = _outside(empty, st, 0)
    assert rep.tables["outside_info"].df.set_index("world").loc["closed", "status"].startswith("ran, not judged")


def test_outside_info_is_its_own_stage_and_the_judge_defaults_to_the_classifier():
    st = STUDY.stage("outside_info")
    assert st.uses_llm and st.inputs == ("events", "setups", "prompts_file") and st.outputs == ("outside_info",)
    p = config.validate(yaml.safe_load((ROOT / "params.yaml").read_text()))
    p = config.deep_merge(p, {"opinion_dynamics": {"agent_models": ["smollm2-135m"]}})  # (a control reads its own)
    assert st.model_names(p) == {p["opinion_dynamics"]["classifier"]["model"]: "opinion_dynamics.classifier.model"}
    other = config.deep_merge(p, {"opinion_dynamics": {"outside_info": {"model": "other"}}})
    assert st.model_names(other) == {"other": "opinion_dynamics.outside_info.model"}
    none = config.deep_merge(p, {"opinion_dynamics": {"outside_info": {"sample": 0}}})
    assert st.model_names(none) == {}
    assert "outside_info" in STUDY.stage("analyse").inputs


def test_analyse_with_both_worlds_keeps_the_papers_tables_closed():
    rows = _world_setups(["closed", "open"])
    rng = np.random.default_rng(9)
    ratings = [
        {
            "sim_id": s["sim_id"],
            "t": t,
            "agent": s["reviewers"][t - 1],
            "model": s["model"],
            "topic": s["topic"],
            "opinion": int(rng.integers(-2, 3)),
            "raw_answer": "0",
            "parse_ok": True,
            "classifier_model": "judge",
        }
        for s in rows
        for t in range(1, s["steps"] + 1)
    ]
    traj = pd.DataFrame(analysis.trajectories(rows, ratings))
    st = pd.DataFrame(rows)
    items = outside_info.outputs(_events(rows, 0.25), rows)
    labels, _ = _judge(outside_info.sample(items, None, 5))
    tables = {"setups": st, "trajectories": traj, "ratings": pd.DataFrame(ratings), "baseline": NO_BASELINE}
    rep = analysis.analyse(
        inputs("opinion_dynamics", {**tables, "outside_info": pd.DataFrame(labels)}, outside_info={"sample": None})
    )
    ps = rep.tables["per_sim"].df
    assert set(ps.world) == {"closed", "open"} and list(ps.sim_id) == list(st.sim_id)
    closed_main = st[(st.world == "closed") & (st.condition == "main")]
    t1 = rep.tables["table1"].df
    # one simulation per topic and cell: the open world's are not pooled into the paper's tables
    assert t1.reps.max() == 1 and t1.n_topics.max() == closed_main.topic.nunique()
    assert "closed world only" in " ".join(rep.tables["table1"].notes)
    assert set(rep.tables["per_topic"].df.world) == {"closed", "open"}
    claims = [f.claim for f in rep.findings]
    assert any(c.startswith("outside information is more common in the open world") for c in claims)


def test_the_other_worlds_classifier_flag_sits_on_that_world_and_its_panels():
    """The open world's main ratings all -2, the closed world's spread: the open world's classifier flag is
    on the run's list with its own places (its per_sim and per_topic rows, its final-by-topic panels, its
    Fig. 5 rows) and reaches those panels through them; the paper's (closed) tables and panels do not carry it."""
    rows = _world_setups(["closed", "open"])
    rng = np.random.default_rng(10)
    ratings = [
        {
            "sim_id": s["sim_id"],
            "t": t,
            "agent": s["reviewers"][t - 1],
            "model": s["model"],
            "topic": s["topic"],
            "opinion": -2 if s["world"] == "open" and s["condition"] == "main" else int(rng.integers(-2, 3)),
            "raw_answer": "0",
            "parse_ok": True,
            "classifier_model": "judge",
        }
        for s in rows
        for t in range(1, s["steps"] + 1)
    ]
    traj = pd.DataFrame(analysis.trajectories(rows, ratings))
    tables = {"setups": pd.DataFrame(rows), "trajectories": traj, "ratings": pd.DataFrame(ratings)}
    rep = analysis.analyse(inputs("opinion_dynamics", {**tables, "baseline": NO_BASELINE}))
    model = rows[0]["model"]
    (f,) = [f for f in rep.flags if f.flag.scope.startswith("opinion classifier")]
    assert f.flag.scope == f"opinion classifier on {model}'s reports (main simulations)"
    assert f.where == [
        f"per_sim ({model}, main, open world)",
        "per_topic (open world)",
        places.main_panels(model, "open"),
        f"vs_paper (Fig. 5 rows of {model}, open world)",
    ]
    noted = {
        w: [f.flag.message in p.note for p in rep.plots["final_by_topic"] if f"_{w}|" in p.name]
        for w in ("open", "closed")
    }
    assert noted["open"] and all(noted["open"]) and noted["closed"] and not any(noted["closed"])
    assert not any(f.flag.message in x for p in rep.plots["final_distribution"] for x in p.note)
    assert not rep.tables["table1"].flags and (rep.tables["table1"].df["flags"] == "").all()
