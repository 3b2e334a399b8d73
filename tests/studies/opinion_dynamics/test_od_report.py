"""The opinion-dynamics report (issue 20) on data whose answer is known: the findings' verdicts hold
at about the nominal rate on null data, hold on a true effect and say inconclusive on tiny inputs;
the classifier's degeneracy is judged on the ratings that feed each number (main runs and each
control apart, never pooled); the share of agents never measured is computed, printed beside every
number and noted on every figure panel; the uniform start is an input of the run, never a match."""

from __future__ import annotations

from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import ROOT
from socsim import config
from socsim.io import report, vs_paper
from socsim.opinion_dynamics import analysis, figures, materials, setups
from socsim.stats import degeneracy as dg

DATA = ROOT / "data" / "opinion_dynamics"
PAPER = vs_paper.read_paper(DATA / "paper.yaml")


def _load(name: str) -> Any:
    return yaml.safe_load((DATA / f"{name}.yaml").read_text())


# -- findings by the one verdict rule --------------------------------------------------------------


def _ps(rng: np.random.Generator, topics: int, biases: list[str], b_false: float, d_step: float) -> pd.DataFrame:
    """Per-simulation rows at paper shape: B = b_false (false framing) or 0 (true framing) + topic
    noise; D rises by d_step per bias level + noise."""
    rows = []
    for f, (k, b), i in product(["false", "true"], enumerate(biases), range(topics)):
        d = 1.0 + d_step * k + rng.normal(0, 0.3)
        rows.append(
            {
                "sim_id": f"{f}.{b}.{i}",
                "model": "m",
                "topology": "complete",
                "init": "uniform",
                "memory": "cumulative",
                "framing": f,
                "bias": b,
                "topic": f"t{i}",
                "category": "science",
                "condition": "main",
                "rep": 0,
                "n_agents": 10,
                "B": (b_false if f == "false" else 0.0) + rng.normal(0, 0.5),
                "D": d,
                "D_pop": d,
            }
        )
    return pd.DataFrame(rows)


def _findings(ps: pd.DataFrame, flags: dict | None = None) -> dict[str, Any]:
    flags = flags or {}
    found = analysis.findings(ps, analysis.paper_tests(ps, flags, 0.05), flags, PAPER, 0.05)
    return found[("m", "complete", "uniform", "cumulative")]


def test_null_data_findings_hold_at_about_the_nominal_rate():
    """No effect at all: each finding (one test each here) holds in about alpha / 2 of the runs (its
    claimed direction) and rejects either way in about alpha."""
    rng = np.random.default_rng(20)
    reps = 150
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
        assert 0.01 <= rejects[k] / reps <= 0.10, (k, rejects[k])


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


def _run(main_values: list[int], roleplay_values: list[int], bare_values: list[int], fail: int = 0) -> dict[str, Any]:
    """The default design's setups (2 topics x 2 framings x bias none/strong, N = 10, T = 6, the two
    controls) with ratings that answer the given values in order; the first `fail` main ratings do
    not parse."""
    od = config.validate(yaml.safe_load((ROOT / "params.yaml").read_text()))["opinion_dynamics"]
    rows = setups.build(
        od, 7, materials.persona_rows(_load("personas")), materials.topic_rows(_load("topics")), _load("prompts")
    )
    values = {"main": iter(main_values), "control_roleplay": iter(roleplay_values), "control_bare": iter(bare_values)}
    ratings, failed = [], 0
    for s in rows:
        for t in range(1, s["steps"] + 1):
            v = next(values[s["condition"]])
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
    base = pd.DataFrame(columns=["sim_id", "baseline", "agent", "t", "opinion"])
    st = pd.DataFrame(rows)
    rep = analysis.analyse(st, traj, pd.DataFrame(ratings), base, PAPER, 0, 0.05)
    return {"setups": rows, "ratings": ratings, "traj": traj, "report": rep, "setups_df": st}


def _counts(setups_rows: list[dict], cond: str) -> int:
    return sum(s["steps"] for s in setups_rows if s["condition"] == cond)


def test_degeneracy_is_judged_on_the_ratings_that_feed_each_number():
    """The default run's case: the main ratings are 43 of 48 one value (89.6 %, under the 90 %
    threshold), the controls' push the pooled share over it. Only the control that is degenerate on
    its own ratings is flagged, on its own rows."""
    main = [-2] * 43 + [1] * 4 + [-1]
    run = _run(main, [-2] * 37 + [1] * 3, [-2, -2, -2, 1])
    assert len(run["ratings"]) == 92 and _counts(run["setups"], "main") == 48
    pooled = dg.one_value([r["opinion"] for r in run["ratings"]], "pooled")
    assert pooled is not None  # the old rule (main and controls pooled) flagged everything
    rep = run["report"]
    assert [f.flag.scope for f in rep.flags] == ["opinion classifier on smollm2-135m's reports (control_roleplay)"]
    where = rep.flags[0].where
    assert any(w.startswith("controls") for w in where) and not any(w.startswith("table1") for w in where)
    t1, tc = rep.tables["table1"].df, rep.tables["controls"].df
    assert (t1["flags"] == "").all() and not rep.tables["table1"].flags
    assert (tc[tc.condition == "control_roleplay"]["flags"].str.contains("92% of 40 answers are -2")).all()
    assert (tc[tc.condition == "control_bare"]["flags"] == "").all()
    ps = rep.tables["per_sim"].df
    assert (ps[ps.condition == "main"]["flags"] == "").all()
    vs = vs_paper.table(rep.vs_paper)
    assert (vs["flags"] == "").all()
    # findings get a verdict by the rule (here: too few topics), not a degenerate-input message
    assert all(f.verdict.label == "inconclusive (n = 2 topics, needs 3)" for f in rep.findings)
    # the reverse case: main ratings 47 of 48 one value, controls varied (pooled under 90 %): main is flagged
    run = _run([-2] * 47 + [1], [-2, -1, 0, 1, 2] * 8, [0, 1, 2, -1])
    assert dg.one_value([r["opinion"] for r in run["ratings"]], "pooled") is None
    rep = run["report"]
    assert [f.flag.scope for f in rep.flags] == ["opinion classifier on smollm2-135m's reports (main simulations)"]
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
    d = tmp_path / "analysis"
    report.write(rep, d)
    ps_read = report.read(d, "per_sim")  # figures read the Parquet
    figures.trajectory_figures(run["setups_df"], run["traj"], ps_read, tmp_path)
    figures.final_distributions(ps_read, run["traj"], run["setups_df"], tmp_path)
    figures.bias_diversity_figure(
        report.read(d, "table1"), report.read(d, "baseline"), ps_read[ps_read.condition != "main"], tmp_path, "pop"
    )
    assert {n.split("_")[0] for n in texts} == {"trajectories", "final", "bias", "controls"}
    for name, got in texts.items():
        if name.startswith(("trajectories_", "final_distribution_")):
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
    d = tmp_path / "analysis"
    report.write(rep, d)
    ps = report.read(d, "per_sim")
    figures.trajectory_figures(run["setups_df"], run["traj"], ps, tmp_path)
    figures.final_distributions(ps, run["traj"], run["setups_df"], tmp_path)
    for name, got in texts.items():
        n = sum(
            "degenerate input: opinion classifier on smollm2-135m's reports (main simulations): 100%" in t for t in got
        )
        assert n == (0 if name.startswith("controls_") else 4), name


def test_uniform_start_is_an_input_and_design_differences_are_named():
    run = _run([-2, 1, 0, 2, -1] * 10, [0, 1] * 20, [0, 1, 2, 2])
    rep = run["report"]
    assert rep.design == [
        "agent model: ours smollm2-135m, paper gpt-3.5-turbo-16k",
        "classifier: ours judge-x, paper Flan-T5-XXL",
        "steps T: ours 6, paper 100",
    ]
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
