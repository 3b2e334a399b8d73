"""The opinion-dynamics report (issue 20) on data whose answer is known: the findings' verdicts hold
at about the nominal rate on null data, hold on a true effect and say inconclusive on tiny inputs;
the classifier's degeneracy is judged on the ratings that feed each number (main runs and each
control apart, never pooled); the share of agents never measured is computed, printed beside every
number and noted on every figure panel; the uniform start is an input of the run, never a match."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from socsim import config
from socsim.io import vs_paper
from socsim.io.report import Report
from socsim.opinion_dynamics import analysis, figures, materials, setups
from socsim.opinion_dynamics.analysis import places, plots
from socsim.stats import degeneracy as dg
from support.analysis import asked_places, inputs
from support.project import ROOT
from support.studies.od_synthetic import NO_BASELINE, draw, findings, per_sim_rows

DATA = ROOT / "data" / "opinion_dynamics"
PAPER = vs_paper.read_paper(DATA / "paper.yaml")


def _load(name: str) -> Any:
    return yaml.safe_load((DATA / f"{name}.yaml").read_text())


# -- findings by the one verdict rule --------------------------------------------------------------


def _ps(rng: np.random.Generator, topics: int, biases: list[str], b_false: float, d_step: float) -> pd.DataFrame:
    """Per-simulation rows at paper shape: B = b_false (false framing) or 0 (true framing) + topic
    noise; D rises by d_step per bias level + noise."""
    d_of = {b: 1.0 + d_step * k for k, b in enumerate(biases)}
    return per_sim_rows(rng, topics, d_of, {"false": b_false, "true": 0.0})


def _findings(ps: pd.DataFrame, flags: dict | None = None) -> dict[str, Any]:
    return findings(ps, PAPER, flags)[("m", "complete", "uniform", "cumulative")]


def test_null_data_findings_hold_at_about_the_nominal_rate():
    """No effect at all: each finding holds in at most alpha / 2 of the runs (its claimed direction) and
    rejects either way in at most about alpha."""
    rng = np.random.default_rng(20)
    reps = 100  # the nulls of issue 34, with more replicates where they matter: test_od_verdicts
    holds = {"false_negative": 0, "true_higher": 0, "d_rises": 0}
    rejects = dict.fromkeys(holds, 0)
    for _ in range(reps):
        found = {
            **_findings(_ps(rng, 15, ["none"], 0.0, 0.0)),  # one bias cell: one test per B finding
            "d_rises": _findings(_ps(rng, 15, ["none", "strong"], 0.0, 0.0))["d_rises"],  # one pair of levels
        }
        for k in holds:
            v = found[k].verdict
            holds[k] += v.holds is True
            rejects[k] += v.holds is not None
    for k in holds:
        assert holds[k] / reps <= 0.05, (k, holds[k])
        assert rejects[k] / reps <= 0.10, (k, rejects[k])
    # one step, one test: it rejects either way at about alpha. The B findings are conservative: the paired
    # t's p is Bonferroni-adjusted over the fixed family of 6 (issue 34), and "B < 0 under false framing"
    # needs the paired t too (test_od_verdicts measures their rates)
    assert 0.01 <= rejects["d_rises"] / reps, rejects


def test_true_effects_hold():
    rng = np.random.default_rng(21)
    reps = 40
    got = {"false_negative": 0, "true_higher": 0, "d_rises": 0}
    for _ in range(reps):
        found = _findings(_ps(rng, 15, ["none", "weak", "strong"], -1.0, 0.5))
        for k in got:
            got[k] += found[k].verdict.holds is True
            assert found[k].unit == "topics" and found[k].n == 15
    assert all(v / reps >= 0.9 for v in got.values()), got
    # the reverse of the claim: "no", never "yes"
    found = _findings(_ps(rng, 15, ["none", "strong"], 1.0, -0.8))
    assert found["false_negative"].verdict.holds is False and found["d_rises"].verdict.holds is False


def test_tiny_inputs_are_inconclusive_with_their_n():
    rng = np.random.default_rng(22)
    found = _findings(_ps(rng, 2, ["none", "strong"], -1.5, 1.0))  # a large effect, but 2 topics
    for f in found.values():
        assert f.verdict.holds is None and f.verdict.label == "inconclusive (n = 2 topics, needs 3)", f.verdict
    one_level = _findings(_ps(rng, 15, ["strong"], -1.5, 0.0))["d_rises"]
    assert one_level.verdict.holds is None and "needs 2 bias levels, ran 1" in one_level.verdict.label
    # a degenerate classifier: its flag, never a verdict, even where the data would say yes
    flag = dg.Flag("opinion classifier on m's reports (main simulations)", "95% of 40 answers are -2")
    found = _findings(_ps(rng, 15, ["none", "strong"], -1.5, 1.0), {("m", "main"): [flag]})
    assert all(f.verdict.label == flag.message for f in found.values())


# -- a whole run, constructed: degeneracy per condition, never measured, like with like --------------


MainValues = list[int] | Callable[[dict[str, Any], int], int]


def _run(
    main_values: MainValues, roleplay_values: list[int], bare_values: list[int], fail: int = 0, **over: Any
) -> dict[str, Any]:
    """The default design's setups at N = 10, T = 6 (2 topics x 2 framings x bias none/strong, the two
    controls; `over`: further opinion_dynamics params) with ratings that answer the given values in order
    (the main runs': or a function of the setup and step); the first `fail` main ratings do not parse."""
    params = config.deep_merge(
        yaml.safe_load((ROOT / "params.yaml").read_text()),
        {"opinion_dynamics": {"n_agents": 10, "steps": 6, "agent_models": ["smollm2-135m"], **over}},
    )
    od = config.validate(params)["opinion_dynamics"]
    rows = setups.build(
        od, 7, materials.persona_rows(_load("personas")), materials.topic_rows(_load("topics")), _load("prompts")
    )
    values = {"control_roleplay": iter(roleplay_values), "control_bare": iter(bare_values)}
    if not callable(main_values):
        values["main"] = iter(main_values)
    ratings, failed = [], 0
    for s in rows:
        for t in range(1, s["steps"] + 1):
            main_fn = main_values if callable(main_values) and s["condition"] == "main" else None
            v = main_fn(s, t) if main_fn else next(values[s["condition"]])
            bad = s["condition"] == "main" and failed < fail
            failed += bad
            ratings.append(
                {
                    "sim_id": s["sim_id"],
                    "t": t,
                    "agent": s["reviewers"][t - 1],
                    "model": s["model"],
                    "topic": s["topic"],
                    "opinion": None if bad else v,
                    "raw_answer": "x" if bad else str(v),
                    "parse_ok": not bad,
                    "classifier_model": "judge-x",
                }
            )
    traj = pd.DataFrame(analysis.trajectories(rows, ratings))
    st = pd.DataFrame(rows)
    tables = {"setups": st, "trajectories": traj, "ratings": pd.DataFrame(ratings), "baseline": NO_BASELINE}
    rep = analysis.analyse(inputs("opinion_dynamics", tables))
    return {"setups": rows, "ratings": ratings, "traj": traj, "report": rep, "setups_df": st}


def _counts(setups_rows: list[dict], cond: str) -> int:
    return sum(s["steps"] for s in setups_rows if s["condition"] == cond)


CLASSIFIER = "degenerate input: opinion classifier"


def test_degeneracy_is_judged_on_the_ratings_that_feed_each_number():
    """The default run's case: the main ratings are 43 of 48 one value (89.6 %, under the 90 %
    threshold), the controls' push the pooled share over it. Of the classifier's flags on its
    ratings, only the control that is degenerate on its own ratings is flagged, on its own rows
    (the final values of the main cells are judged apart: test_final_values_are_judged_per_cell)."""
    main = [-2] * 43 + [1] * 4 + [-1]
    run = _run(main, [-2] * 37 + [1] * 3, [-2, -2, -2, 1])
    assert len(run["ratings"]) == 92 and _counts(run["setups"], "main") == 48
    pooled = dg.one_value([r["opinion"] for r in run["ratings"]], "pooled")
    assert pooled is not None  # the old rule (main and controls pooled) flagged everything
    rep = run["report"]
    rated = [f for f in rep.flags if f.flag.scope.startswith("opinion classifier")]
    assert [f.flag.scope for f in rated] == ["opinion classifier on smollm2-135m's reports (control_roleplay)"]
    where = rated[0].where
    assert any(w.startswith("controls") for w in where) and not any(w.startswith("table1") for w in where)
    t1, tc = rep.tables["table1"].df, rep.tables["controls"].df
    assert not t1["flags"].str.contains(CLASSIFIER).any()
    assert not any(f.message.startswith(CLASSIFIER) for f in rep.tables["table1"].flags)
    assert (tc[tc.condition == "control_roleplay"]["flags"].str.contains("92% of 40 answers are -2")).all()
    assert (tc[tc.condition == "control_bare"]["flags"] == "").all()
    ps = rep.tables["per_sim"].df
    assert (ps[ps.condition == "main"]["flags"] == "").all()
    vs = vs_paper.table(rep.vs_paper)
    assert not vs["flags"].str.contains(CLASSIFIER).any()
    # findings: no classifier-ratings flag; a verdict by the rule (here: too few topics) or a cell's final-value flag
    for f in rep.findings:
        assert f.verdict.label == "inconclusive (n = 2 topics, needs 3)" or f.verdict.label.startswith(
            "degenerate input: " + analysis.FINAL_SCOPE
        ), f.verdict
    # the reverse case: main ratings 47 of 48 one value, controls varied (pooled under 90 %): main is flagged
    run = _run([-2] * 47 + [1], [-2, -1, 0, 1, 2] * 8, [0, 1, 2, -1])
    assert dg.one_value([r["opinion"] for r in run["ratings"]], "pooled") is None
    rep = run["report"]
    rated = [f.flag.scope for f in rep.flags if f.flag.scope.startswith("opinion classifier")]
    assert rated == ["opinion classifier on smollm2-135m's reports (main simulations)"]
    assert rep.tables["table1"].df["flags"].str.contains("98% of 48 answers are -2").all()
    assert (rep.tables["controls"].df["flags"] == "").all()
    vs = vs_paper.table(rep.vs_paper)
    cells = vs[vs.quantity.str.startswith("Table 1")]
    assert len(cells) and cells["flags"].str.startswith("degenerate input").all()
    assert all(f.verdict.degenerate for f in rep.findings)


def test_never_measured_share_on_a_constructed_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Agents never measured = no classified report up to T (never reviewed, or every review failed
    to parse); counted here from the schedule, independently of the analysis."""
    run = _run([-2, 1, 0, 2, -1] * 10, [0, 1] * 20, [0, 1, 2, 2], fail=3)
    rep, rows, ratings = run["report"], run["setups"], run["ratings"]
    ok = {(r["sim_id"], r["agent"]) for r in ratings if r["parse_ok"]}
    expect = {
        s["sim_id"]: sum((s["sim_id"], a) not in ok for a in range(s["n_agents"]))
        for s in rows
        if s["condition"] == "main"
    }
    ps = rep.tables["per_sim"].df.set_index("sim_id")
    assert {k: int(ps.loc[k, "never_measured"]) for k in expect} == expect
    # a failed parse leaves its reviewer unmeasured where it was its only review
    first = rows[0]
    assert int(ps.loc[first["sim_id"], "never_measured"]) >= first["n_agents"] - len(set(first["reviewers"]))
    assert min(expect.values()) >= 4  # T = 6 reviews can measure at most 6 of 10 agents
    main = ps[ps.condition == "main"]
    t1 = rep.tables["table1"].df
    for r in t1.itertuples():
        cell = main[(main.framing == r.framing) & (main.bias == r.bias)]
        assert r.never_measured_share == pytest.approx(cell.never_measured.sum() / cell.n_agents.sum())
    assert rep.summary["never_measured_share"] == pytest.approx(sum(expect.values()) / (10 * len(expect)))
    assert "never measured" in analysis.show(t1, analysis.CELL).columns
    vs = vs_paper.table(rep.vs_paper)
    table_rows = vs[vs.quantity.str.startswith(("Table 1", "Table 2", "global warming"))]
    assert len(table_rows) and table_rows.note.str.contains(r"never measured: \d+ % of agents").all()
    # the figures: every panel of the main runs notes its share
    assert not rep.flags
    texts: dict[str, list[str]] = {}

    def keep(fig: Any, out: Path, name: str) -> list[Path]:
        texts[name] = [" ".join(t.get_text().split()) for ax in fig.axes for t in [*ax.texts, ax.xaxis.label]]
        return []

    monkeypatch.setattr(figures, "save", keep)
    draw(rep, tmp_path)  # the figures draw the written plot tables
    assert {n.split("_")[0] for n in texts} == {"trajectories", "final", "bias", "controls"}
    for name, got in texts.items():
        if name.startswith(("trajectories_", "final_distribution_", "final_by_topic_")):
            assert sum("never measured:" in t for t in got) == 4, name  # one per panel (2 framings x 2 biases)
        if name.startswith("bias_diversity_"):  # B and D panels
            assert sum("never measured:" in t and "n = 2 topics per cell" in t for t in got) == 2, got


def test_figures_note_a_degenerate_input_on_its_panels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    run = _run([-2] * 48, [0, 1] * 20, [0, 1, 2, 2])  # the main runs' classifier answers -2 only
    rep = run["report"]
    texts: dict[str, list[str]] = {}
    monkeypatch.setattr(
        figures,
        "save",
        lambda fig, out, name: texts.setdefault(
            name, [" ".join(t.get_text().split()) for ax in fig.axes for t in ax.texts]
        ),
    )
    draw(rep, tmp_path)
    for name, got in texts.items():
        if name.startswith("bias_diversity_"):  # its notes are below the axes (test_final_values_are_judged_per_cell)
            continue
        n = sum(
            "degenerate input: opinion classifier on smollm2-135m's reports (main simulations): 100%" in t for t in got
        )
        assert n == (0 if name.startswith("controls_") else 4), name


def test_uniform_start_is_an_input_and_design_differences_are_named():
    run = _run([-2, 1, 0, 2, -1] * 10, [0, 1] * 20, [0, 1, 2, 2])
    rep = run["report"]
    layout = "classifier prompt: ours the report last (layout shared_first), paper App. I's order (the report first)"
    assert rep.design == [
        "agent model: ours smollm2-135m, paper gpt-3.5-turbo-16k",
        "classifier: ours judge-x, paper Flan-T5-XXL",
        "steps T: ours 6, paper 100",
        layout,  # the default: the classifier asked with the report last
    ]
    made_of_ratings = [r for r in rep.vs_paper if r.design is not None and not r.is_input]
    assert made_of_ratings and all(layout in r.design for r in made_of_ratings)
    tables = {"setups": run["setups_df"], "trajectories": run["traj"], "ratings": pd.DataFrame(run["ratings"])}
    rep = analysis.analyse(
        inputs("opinion_dynamics", {**tables, "baseline": NO_BASELINE}, classifier={"layout": "paper"})  # App. I's
    )
    assert rep.design == [d for d in rep.design if d != layout] and len(rep.design) == 3
    assert not any(layout in (r.design or []) for r in rep.vs_paper)
    vs = vs_paper.table(rep.vs_paper)
    start = vs[vs.quantity.str.startswith("uniform start")].iloc[0]
    assert start.comparable == "no: ours is an input of the run"
    assert start.finding_holds == "" and abs(start.difference) < 0.01  # equal, and still no match
    t1 = vs[vs.quantity.str.startswith("Table 1")]
    assert (t1.comparable == "no: agent model, classifier, steps T, topics").all()
    v4 = vs[vs.quantity.str.startswith("global warming")]
    assert len(v4) and (v4.comparable == "no: agent model, classifier, steps T").all()  # one topic each, as v4
    # where the design matches the paper's, the row is comparable
    cells = pd.DataFrame(
        {"model": "gpt-3.5-turbo-16k", "steps": 100, "n_agents": 10, "world": "closed", "topology": "complete"}
        | {"topic": [f"t{i}" for i in range(15)], "category": "science"}
    )
    assert analysis.design(cells, {"gpt-3.5-turbo-16k": "Flan-T5-XXL"}, PAPER, "table1") == []
    assert analysis.design(cells.iloc[:5], {"gpt-3.5-turbo-16k": "Flan-T5-XXL"}, PAPER, "table2") == []


# -- the values that feed B and D at T; D of one value; the ANOVA's units; the claim's levels ----------


def _last_review_values(s: dict[str, Any], t: int) -> int:
    """False framing: -2 at each reviewer's last review, +1 at its earlier ones (the ratings are not
    one value, the final opinions are); true framing: the reviewer's index mod 5 - 2 at its last
    review (varied), -2 before."""
    r = s["reviewers"][t - 1]
    last = max(k + 1 for k, a in enumerate(s["reviewers"]) if a == r)
    if s["framing"] == "false":
        return -2 if t == last else 1
    return r % 5 - 2 if t == last else -2


def _expected_final(rows: list[dict[str, Any]], ratings: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per main simulation, computed from the ratings and the schedule alone: the last parsed rating
    of each agent that has one up to T."""
    last: dict[tuple[str, int], tuple[int, float]] = {}
    steps = {s["sim_id"]: s["steps"] for s in rows}
    for r in ratings:
        if r["parse_ok"] and r["t"] <= steps[r["sim_id"]]:
            k = (r["sim_id"], r["agent"])
            if k not in last or r["t"] > last[k][0]:
                last[k] = (r["t"], float(r["opinion"]))
    out: dict[str, list[float]] = {s["sim_id"]: [] for s in rows if s["condition"] == "main"}
    for (sim, _), (_, v) in sorted(last.items()):
        if sim in out:
            out[sim].append(v)
    return out


def test_final_values_are_judged_per_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """B and D at T are made of each measured agent's last classified report: the classifier's
    degeneracy is judged on those, per Table 1 / Table 2 cell and per simulation, and travels to the
    rows, tests, findings, vs_paper rows and figure panels of that cell only. Here the main ratings
    are under 90 % one value (no flag on the ratings) while every false-framing cell's final
    opinions are all -2."""
    run = _run(_last_review_values, [-2, -1, 0, 1, 2] * 8, [0, 1, 2, -1])
    rows, ratings, rep = run["setups"], run["ratings"], run["report"]
    main_ratings = [
        r["opinion"] for r in ratings if r["sim_id"] in {s["sim_id"] for s in rows if s["condition"] == "main"}
    ]
    assert dg.one_value(main_ratings, "x") is None  # the ratings themselves are not one value
    assert not any(f.flag.scope.startswith("opinion classifier") for f in rep.flags)
    final = _expected_final(rows, ratings)
    main = [s for s in rows if s["condition"] == "main"]

    def expect(sims: list[dict[str, Any]], label: str) -> str:
        f = dg.one_value([v for s in sims for v in final[s["sim_id"]]], f"{analysis.FINAL_SCOPE} ({label})")
        return "" if f is None else f.message

    def cell_label(model: str, framing: str, bias: str, category: str | None = None) -> str:
        pre = f"category {category}, " if category else ""
        return f"{pre}{model}, complete, uniform, cumulative, {framing} framing, {bias} bias"

    t1 = rep.tables["table1"].df
    assert len(t1) == 4
    flagged: dict[tuple[str, str], str] = {}
    for r in t1.itertuples():
        sims = [s for s in main if s["framing"] == r.framing and s["bias"] == r.bias]
        msg = expect(sims, cell_label(r.model, r.framing, r.bias))
        assert bool(msg) == (r.framing == "false")  # the construction: false cells all -2, true cells varied
        assert r.flags == msg, (r.flags, msg)
        flagged[(r.framing, r.bias)] = msg
        assert msg in [f.message for f in rep.tables["table1"].flags] or not msg
    n_fn = sum(len(final[s["sim_id"]]) for s in main if s["framing"] == "false" and s["bias"] == "none")
    assert flagged[("false", "none")].endswith(f"100% of {n_fn} answers are -2 (threshold 90%)")
    t2 = rep.tables["table2"].df
    for r in t2.itertuples():
        topics = {s["topic"] for s in main if s["category"] == r.category}
        sims = [s for s in main if s["framing"] == r.framing and s["bias"] == r.bias and s["topic"] in topics]
        assert r.flags == expect(sims, cell_label(r.model, r.framing, r.bias, r.category)), r
    ps = rep.tables["per_sim"].df.set_index("sim_id")
    for s in main:
        assert ps.loc[s["sim_id"], "final_flags"] == expect([s], f"simulation {s['sim_id']}")
    # the tests of a flagged cell print its flag; the true-framing cells' one-sample tests do not
    tst = rep.tables["tests"].df
    for r in tst[tst.test == "one-sample t: B vs 0"].itertuples():
        msg = flagged[(r.framing, r.bias)]
        assert r.result == (msg or "inconclusive (n = 2 topics, needs 3)")
    anova = tst[tst.test == "one-way ANOVA: D by bias"].iloc[0]
    assert anova.result == flagged[("false", "none")]
    # findings: the two that use a false-framing cell are degenerate with its flag
    found = {f.claim.split(" (")[0].split(": ")[-1]: f.verdict.label for f in rep.findings}
    assert all(v.startswith("degenerate input: " + analysis.FINAL_SCOPE) for v in found.values()), found
    # vs_paper: each Table 1 row carries its own cell's flag, nobody else's
    vs = vs_paper.table(rep.vs_paper)
    for (framing, bias), msg in flagged.items():
        sel = vs[
            vs.quantity.str.startswith(f"Table 1 (smollm2-135m, complete): cumulative, {framing} framing, {bias} bias")
        ]
        assert len(sel) == 2 and (sel["flags"] == msg).all(), sel["flags"].tolist()
    v4 = vs[vs.quantity.str.startswith("global warming")]
    for r in v4.itertuples():
        framing, bias = r.quantity.split("): ")[1].split(":")[0].split(", ")[1:3]
        s = next(x for x in main if x["topic"] == "global_warming" and x["framing"] == framing and x["bias"] == bias)
        assert r.flags == expect([s], f"simulation {s['sim_id']}")
    base = rep.tables["baseline"].df
    llm = base[base.run == "llm"]
    assert [flagged[(f, b)] for f, b in zip(llm.framing, llm.bias)] == llm["flags"].tolist()
    # the figures: the final-distribution panel of a flagged cell notes its flag, the others do not;
    # the bias-diversity panels note every flagged cell
    texts: dict[str, list[list[str]]] = {}

    def keep(fig: Any, out: Path, name: str) -> list[Path]:
        texts[name] = [[" ".join(t.get_text().split()) for t in [*ax.texts, ax.xaxis.label]] for ax in fig.axes]
        return []

    monkeypatch.setattr(figures, "save", keep)
    draw(rep, tmp_path)
    panels = texts["final_distribution_smollm2-135m_cumulative_complete"]
    titles = {(framing, bias): i for i, (bias, framing) in enumerate(product(["none", "strong"], ["false", "true"]))}
    for (framing, bias), msg in flagged.items():
        joined = " ".join(panels[titles[(framing, bias)]])
        if msg:
            assert " ".join(msg.split()) in joined, (framing, bias, joined)
        else:
            assert analysis.FINAL_SCOPE not in joined
    for panel in texts["bias_diversity_smollm2-135m"]:
        joined = " ".join(panel)
        assert all(" ".join(m.split()) in joined for m in flagged.values() if m)


def test_d_of_a_single_value_is_not_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """D (an SD) needs 2 values: one value gives n/a, never 0. A bare control has one classified
    report per simulation: its D is n/a in the controls table (with the values per simulation) and
    the bias-diversity figure draws no D line for it, noting why."""
    one = analysis.bias_diversity([1.0])
    assert one["B"] == 1.0 and one["D_pop"] is None and one["D_sample"] is None and one["n_values"] == 1
    two = analysis.bias_diversity([1.0, 3.0])
    assert two["D_pop"] == pytest.approx(1.0) and two["D_sample"] == pytest.approx(np.sqrt(2))
    run = _run([-2, 1, 0, 2, -1] * 10, [0, 1] * 20, [0, 1, 2, -1])
    rows, rep = run["setups"], run["report"]
    steps = {s["condition"]: s["steps"] for s in rows}  # classified reports per control simulation
    assert steps["control_bare"] == 1 and steps["control_roleplay"] >= 2
    tc = rep.tables["controls"].df
    shown = analysis.show(tc, ["model", "condition", "framing", "bias"], values=True)
    for r, sh in zip(tc.itertuples(), shown.itertuples()):
        assert r.values_per_sim == str(steps[r.condition])
        if r.condition == "control_bare":
            assert pd.isna(r.D) and sh.D == "n/a" and not pd.isna(r.B)
        else:
            assert not pd.isna(r.D) and sh.D != "n/a"
    assert "values per sim" in rep.tables["controls"].shown.columns
    axes_of: dict[str, Any] = {}

    def keep(fig: Any, out: Path, name: str) -> list[Path]:
        axes_of[name] = fig.axes
        return []

    monkeypatch.setattr(figures, "save", keep)
    draw(rep, tmp_path)
    b_ax, d_ax = axes_of["bias_diversity_smollm2-135m"][:2]
    labels = lambda ax: [ln.get_label() for ln in ax.lines]  # noqa: E731
    assert any(x.startswith("control bare") for x in labels(b_ax))  # B of one value is drawn
    assert not any(x.startswith("control bare") for x in labels(d_ax))  # D of one value is not
    assert any(x.startswith("control roleplay") for x in labels(d_ax))
    noted = lambda ax: " ".join(" ".join(t.get_text() for t in ax.texts).split())  # noqa: E731
    for framing in ("false", "true"):
        assert f"control bare ({framing}): D n/a, not drawn (n = 1 value(s) per simulation; D needs 2)" in noted(d_ax)
    assert "control bare" not in noted(b_ax)


def test_anova_units_are_topics_and_need_three():
    """The ANOVA of D by bias: one unit per topic and bias level (D averaged over framings), each
    level needs 3 topics as every other test; the F is that of those units."""
    from scipy import stats

    rng = np.random.default_rng(23)
    two = _ps(rng, 2, ["none", "weak", "strong"], 0.0, 1.0)  # 4 topic x framing units per level, 2 topics
    ((row, _),) = analysis.anova_rows(two, {}, 0.05)
    assert row["result"] == "inconclusive (n = 2 topics, needs 3)" and row["n"] == 2 and row["statistic"] is None
    five = _ps(rng, 5, ["none", "weak", "strong"], 0.0, 0.3)
    ((row, _),) = analysis.anova_rows(five, {}, 0.05)
    per_topic = five.groupby(["bias", "topic"]).D.mean()
    f, p = stats.f_oneway(*(per_topic[b].to_numpy() for b in ["none", "weak", "strong"]))
    assert row["n"] == 5 and row["statistic"] == pytest.approx(f) and row["p"] == pytest.approx(p)
    assert row["result"] == ("significant" if p < 0.05 else "not significant")
    # topic x framing units (the old rule) would give another F
    units = five.groupby(["bias", "topic", "framing"]).D.mean()
    f_units, _ = stats.f_oneway(*(units[b].to_numpy() for b in ["none", "weak", "strong"]))
    assert not np.isclose(f_units, f)


def test_d_rises_claim_names_the_levels_that_ran():
    rng = np.random.default_rng(24)
    two = _findings(_ps(rng, 4, ["none", "strong"], 0.0, 0.5))["d_rises"].claim
    assert "(none < strong; " in two and "weak" not in two
    three = _findings(_ps(rng, 4, ["none", "weak", "strong"], 0.0, 0.5))["d_rises"].claim
    assert three.count("none < weak < strong") == 1 and three.startswith("D rises with confirmation bias (")


def _spread(s: dict[str, Any], t: int, topics: list[str]) -> int:
    if s["condition"] != "main":
        return t % 5 - 2
    k = topics.index(s["topic"]) + 2 * (s["framing"] == "true") + (s["bias"] == "strong")
    return (s["reviewers"][t - 1] + k) % 5 - 2


def test_a_simulations_own_flag_sits_on_that_simulation_only():
    """One simulation whose measured agents all end at -2 ("100 % of 3 answers are -2"), the rest spread:
    the flag sits on that simulation's per_sim row, its v4 vs_paper rows and its trajectory panel, and no
    higher: the run's list of flags (summary.json's `degenerate`), the per_sim table's notes, its Table 1
    and Table 2 cells (which pool it with other topics), the tests and the findings do not carry it."""
    topics = materials.topic_rows(_load("topics"))
    science = [t["topic"] for t in topics if t["category"] == "science"]
    chosen = ["global_warming", *[t for t in science if t != "global_warming"][:2]]
    over = {"topics": chosen, "controls": {"reports": 2}, "n_agents": 5, "steps": 8, "agent_models": ["smollm2-135m"]}
    od = config.validate(
        config.deep_merge(yaml.safe_load((ROOT / "params.yaml").read_text()), {"opinion_dynamics": over})
    )
    rows = setups.build(od["opinion_dynamics"], 7, materials.persona_rows(_load("personas")), topics, _load("prompts"))
    one = next(s for s in rows if s["topic"] == "global_warming" and s["framing"] == "false" and s["bias"] == "none")
    ratings = [
        {
            "sim_id": s["sim_id"],
            "t": t,
            "agent": s["reviewers"][t - 1],
            "model": s["model"],
            "topic": s["topic"],
            # that simulation: -2 at every review; the others: each agent its own value (final values spread),
            # shifted by topic and condition; the controls: by step
            "opinion": -2 if s is one else _spread(s, t, chosen),
            "raw_answer": "x",
            "parse_ok": True,
            "classifier_model": "judge-x",
        }
        for s in rows
        for t in range(1, s["steps"] + 1)
    ]
    traj = pd.DataFrame(analysis.trajectories(rows, ratings))
    tables = {"setups": pd.DataFrame(rows), "trajectories": traj, "ratings": pd.DataFrame(ratings)}
    rep = analysis.analyse(inputs("opinion_dynamics", {**tables, "baseline": NO_BASELINE}))
    measured = len(set(one["reviewers"]))
    msg = f"100% of {measured} answers are -2 (threshold 90%)"
    ps = rep.tables["per_sim"].df.set_index("sim_id")
    assert ps.loc[one["sim_id"], "final_flags"].endswith(msg)  # on its row
    assert (ps.drop(index=one["sim_id"])["final_flags"] == "").all()  # and nobody else's
    # not on the run's list, nor below a table, nor on the cells that pool it, its tests or findings
    assert not rep.flags and not rep.tables["per_sim"].flags and not rep.tables["per_topic"].flags
    for name in ("table1", "table2", "tests", "baseline"):
        assert not rep.tables[name].flags and not rep.tables[name].df["flags"].str.contains(msg).any(), name
    assert rep.findings and not any(f.verdict.degenerate for f in rep.findings)
    # its v4 vs_paper rows carry it; the Table 1 and Table 2 rows and the finding rows do not
    vs = vs_paper.table(rep.vs_paper)
    mine = vs.quantity.str.startswith("global warming, arXiv v4") & vs.quantity.str.contains(
        ": cumulative, false, none"
    )
    assert mine.sum() == 2 and vs[mine]["flags"].str.endswith(msg).all()
    assert (vs[~mine]["flags"] == "").all()
    # its trajectory panel notes it, no other panel does
    noted = [p.name for p in rep.plots["trajectories"] if any(msg in x for x in p.note)]
    key = ["smollm2-135m", "global_warming", "cumulative", "uniform", "complete"]
    assert noted == [f"trajectories_{'_'.join(key)}|{' / '.join(key)}|false|none"]  # figure|title|framing|bias
    assert not any(msg in x for fig in ("final_distribution", "bias_diversity") for p in rep.plots[fig] for x in p.note)
    summary = {"degenerate": bool(rep.flags), "flags": [f.as_dict() for f in rep.flags]}
    assert summary == {"degenerate": False, "flags": []}  # summary.json (io.report.write)
    # it is a local flag of the report: where it sits, said in summary.json's local_flags
    assert [(f.flag.reason, f.where) for f in rep.local_flags] == [(msg, [f"per_sim ({one['sim_id']}: final_flags)"])]


# -- every flag on a panel's place lands on a panel -------------------------------------------------------


def unlanded(rep: Report, asked: set[str]) -> list[str]:
    """The places of panels (places.FIGURES) and of simulations' own rows (places.own_place, which their
    panels read) on which a flag sits but which no panel asks for: flags that do not reach a panel."""
    own = {places.own_place(s) for s in rep.tables["per_sim"].df.sim_id}
    return sorted(
        {
            w
            for f in (*rep.flags, *rep.local_flags)
            for w in f.where
            if (w.startswith(places.FIGURES) or w in own) and w not in asked
        }
    )


def _every_kind_of_flag() -> Report:
    """Both worlds: the open world's main ratings all -2 (its classifier flag), the closed world's final
    opinions -2 in every false-framing cell (its cells' and simulations' own flags), the role-play control
    all -2 (its flag)."""

    def main(s: dict[str, Any], t: int) -> int:
        return -2 if s["world"] == "open" else _last_review_values(s, t)

    return _run(main, [-2] * 80, [0, 1, 2, -1] * 2, world=["closed", "open"])["report"]


def test_every_flag_on_a_panels_place_lands_on_a_panel(monkeypatch: pytest.MonkeyPatch):
    """Writers and panels name a flag's panel through socsim.opinion_dynamics.analysis.places: every flag
    placed on a panel (the paper's world's main ratings, the other world's, a Table 1 cell's final values, a
    control's ratings, a simulation's own final values) reaches one; a panel asking for a mistyped place is
    found."""
    asked = asked_places(monkeypatch)
    reps = [_every_kind_of_flag(), _run([-2] * 48, [0, 1] * 20, [0, 1, 2, 2])["report"]]
    placed = {w for rep in reps for f in (*rep.flags, *rep.local_flags) for w in f.where}
    model = "smollm2-135m"
    kinds = {
        "main ratings": places.main_panels(model),
        "other world": places.main_panels(model, "open"),
        "cell": places.bias_diversity(model),
        "control": places.control_panels_of(model, "control_roleplay"),
    }
    assert {k for k, w in kinds.items() if w in placed} == set(kinds)  # the check has each kind to check
    assert any(w.startswith(places.FIGURES + "final_distribution_") for w in placed)
    assert any(w.endswith(": final_flags)") for w in placed)
    assert [unlanded(rep, asked) for rep in reps] == [[], []]
    # bias_diversity's panels ask for a mistyped place: the flags on theirs no longer land, and the check says so.
    typo = lambda m: f"{places.FIGURES}bias-diversity_{m}"  # noqa: E731
    monkeypatch.setattr(plots, "places", SimpleNamespace(**{**vars(places), "bias_diversity": typo}))
    asked.clear()
    assert unlanded(_every_kind_of_flag(), asked) == [places.bias_diversity(model)]
