"""The opinion-dynamics report (paper 002, section 4): `analyse(inputs) -> Report`.

The base report holds the measured tables (per_sim, table1, table2, controls, tests, baseline,
per_topic), the summary, the run's design differences, the flags with the tables, rows and figure
panels they concern; the paper's claims (socsim.opinion_dynamics.analysis.claims) add their
findings, vs_paper rows, flags and tables (socsim.io.claims.assemble); then the figures' plot tables
(socsim.opinion_dynamics.analysis.plots) are built, each panel noting the report's flags placed on it.

Flags travel with their numbers. The classifier's degeneracy is judged per agent model on the
ratings that feed each number; B and D at T are made of each measured agent's last classified
report, so the same rule is judged on those final values per Table 1 cell, per Table 2 cell and
per simulation (`value_flags`), and each flag goes to its own cell's rows, tests, findings, vs_paper
rows and figure panels, and no higher: a simulation's own final-value flag sits on its per_sim row
(`final_flags`), its per_topic row, its v4 and Fig. 5 vs_paper rows and its trajectory and
final_by_topic panels (`SimFlags`, flags never parsed back from their messages), not on the run's
list of flags (summary.json's `degeneracy_flags`, `degenerate`) nor below the whole per_sim table.

Where both world settings ran, the paper's tables, tests, findings, controls and baselines are the
closed world's (the paper reports only it); per_sim and per_topic hold every world, and the
outside-information rate is per world. The classifier's prompt order (classifier.layout) is a
design difference of the run and of every vs_paper row made of the classifier's ratings unless it is
App. I's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from socsim.io import vs_paper
from socsim.io.claims import assemble
from socsim.io.report import AnalysisInputs, Report, Table
from socsim.opinion_dynamics import materials
from socsim.opinion_dynamics.analysis import places, plots
from socsim.opinion_dynamics.analysis.claims import CLAIMS, Evidence, Outside
from socsim.opinion_dynamics.analysis.measures import (
    CELL,
    FINAL_SCOPE,
    MAIN,
    PAIRED_FAMILY,
    TITLE,
    Flags,
    SimFlags,
    ValueFlags,
    aggregate,
    baseline_table,
    cell_label,
    classifier_flags,
    final_values,
    per_sim,
    per_topic,
    rating_shares,
    show,
    show_per_topic,
    sim_flags,
    value_flags,
    with_condition,
)
from socsim.opinion_dynamics.analysis.paper import classifier_of, design, paper_world
from socsim.opinion_dynamics.analysis.significance import TestRow, paper_tests
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd

BY2 = ["category", *CELL]
NM_NOTE = (
    "never measured: agents without a classified report up to T; their final opinion is their initial one "
    "(kept in B and D, as in the paper)"
)


def analyse(inputs: AnalysisInputs) -> Report:
    """The study's report from its inputs (setups, trajectories, ratings, baseline and, if read,
    outside_info) and its params (metrics.ddof, alpha, outside_info.sample, classifier.layout)."""
    od = inputs.params
    setups, traj, ratings = inputs["setups"], inputs["trajectories"], inputs["ratings"]
    pw = paper_world(setups.world) if len(setups) else "closed"
    here = setups.world == pw if len(setups) else pd.Series(dtype=bool)
    if len(setups) and not here.all():
        rep, paper_world_ev = world_report(one_world(inputs, here))
        sims = paper_world_ev.sims | _other_worlds(rep, inputs, here, pw)
    else:
        rep, paper_world_ev = world_report(inputs)
        sims = paper_world_ev.sims
    ps = rep.tables["per_sim"].df
    pt = per_topic(ps, sims)
    rep.tables["per_topic"] = Table(
        pt,
        "B and D per topic (mean over repetitions; Fig. 4 per topic)",
        [
            "D = the per_sim D (metrics.ddof); rep_sd_*: SD over repetitions where more than one ran",
            "flags: the classifier's on the model's ratings of the world, and on each simulation's final values",
        ],
        show_per_topic(pt),
        flags=rep.tables["per_sim"].flags,
    )
    layout = vs_paper.differences(
        {"classifier prompt": materials.LAYOUTS[od["classifier"]["layout"]]},
        {"classifier prompt": materials.LAYOUTS["paper"]},
    )
    rep.design += layout
    classifier_all = classifier_of(ratings)
    outside = (
        Outside(inputs["outside_info"], setups, ps, od["outside_info"]["sample"], classifier_all)
        if "outside_info" in inputs.tables
        else None
    )
    # The evidence the claims judge, complete: the paper's world's, with every world's simulations, rows, classifier
    # and outside-information labels (Fig. 5, the outside-information finding).
    ev = replace(paper_world_ev, sims=sims, layout=layout, ps_all=ps, classifier_all=classifier_all, outside=outside)
    rep = assemble(rep, CLAIMS, ev)
    for sid, own in ev.sims.own.items():  # a simulation's own flags: on its row and panels, not the run's
        for f in own:
            rep.flag(f, places.own_place(sid), local=True)
    rep.plots = plots.plots(setups, traj, rep, pw, int(od["metrics"]["ddof"]))  # after assemble: every flag placed
    rep.printed = [f.flag.message for f in rep.flags]
    rep.metrics = {
        "simulations": rep.summary["simulations"],
        "degeneracy_flags": len(rep.flags),
        "never_measured_share": rep.summary["never_measured_share"],
        "design_differences": rep.design,
    }
    return rep


def _other_worlds(rep: Report, inputs: AnalysisInputs, here: pd.Series, pw: str) -> SimFlags:
    """per_sim with the other worlds' simulations (each with its own world's flags; `here`: the setups of
    the paper's world `pw`), in the setups' order; the paper's tables note that they hold the paper's
    world only. Each other world's classifier flags are recorded with the places they concern (its per_sim
    and per_topic rows, its final_by_topic panels, its Fig. 5 vs_paper rows); returns its simulations' flags."""
    setups, traj, ratings = inputs["setups"], inputs["trajectories"], inputs["ratings"]
    ddof = int(inputs.params["metrics"]["ddof"])
    parts = [rep.tables["per_sim"].df]
    out = SimFlags()
    for world, sw in setups[~here].groupby("world", sort=True):
        ids = set(sw.sim_id)
        tw, rw = traj[traj.sim_id.isin(ids)], ratings[ratings.sim_id.isin(ids)]
        fl = classifier_flags(with_condition(rw, sw))
        finals = value_flags(sw, final_values(sw, tw), ["sim_id"])
        parts.append(per_sim(sw, tw, ddof, fl, finals))
        out = out | sim_flags(sw, fl, finals)
        for (m, c), flags in fl.items():
            main = [f"per_topic ({world} world)", places.main_panels(m, str(world))] if c == MAIN else []
            fig5 = [f"vs_paper (Fig. 5 rows of {m}, {world} world)"] if c == MAIN else []
            for f in flags:
                rep.flag(f, f"per_sim ({m}, {c}, {world} world)", *main, *fig5)
    order = {s: i for i, s in enumerate(setups.sim_id)}
    ps_all = pd.concat(parts, ignore_index=True)
    ps_all = ps_all.iloc[np.argsort([order[s] for s in ps_all.sim_id], kind="stable")].reset_index(drop=True)
    t = rep.tables["per_sim"]
    rep.tables["per_sim"] = Table(
        ps_all, t.title, [*t.notes, f"every world setting; the paper's tables use the {pw} world only"], flags=t.flags
    )
    for name in ("table1", "table2", "tests", "controls", "baseline"):
        rep.tables[name].notes = [*rep.tables[name].notes, f"{pw} world only (the paper's); other worlds: per_sim"]
    return out


@dataclass
class World:
    """One world setting measured: its setups and per_sim rows, the classifier's flags on its ratings
    (per model and condition) and on its final values (per Table 1 cell, Table 2 cell, simulation)."""

    setups: pd.DataFrame
    ps: pd.DataFrame
    flags: Flags
    finals: ValueFlags
    ddof: int

    @property
    def main(self) -> pd.DataFrame:
        return self.ps[self.ps.condition == MAIN]

    @property
    def ctrl(self) -> pd.DataFrame:
        return self.ps[self.ps.condition != MAIN]

    @property
    def main_keys(self) -> list[tuple[str, str]]:
        return [(m, MAIN) for m in sorted(set(self.main.model))]

    @property
    def ctrl_keys(self) -> list[tuple[str, str]]:
        return sorted({(str(m), str(c)) for m, c in zip(self.ctrl.model, self.ctrl.condition)})

    def table_flags(self, keys: Iterable[tuple[str, str]]) -> list[dg.Flag]:
        """The classifier's flags on the ratings of these (model, condition) pairs."""
        return dg.collect(*(self.flags.get(k, []) for k in keys))

    def row_flags(self, by: Sequence[str]) -> list[dg.Flag]:
        """The final-value flags of every group of `by` (a table's rows)."""
        return dg.collect(*(v for (b, _), v in self.finals.items() if b == tuple(by)))

    @property
    def d_note(self) -> str:
        d = "population" if self.ddof == 0 else "sample"
        return f"D = {d} SD (metrics.ddof = {self.ddof}); mean over topics ± SE"


def one_world(inputs: AnalysisInputs, here: pd.Series) -> AnalysisInputs:
    """The inputs of one world setting (`here`: its rows of the setups): its setups, and the trajectories,
    ratings and baseline of its simulations; the same params and paper's numbers."""
    setups = inputs["setups"]
    ids = set(setups[here].sim_id)
    runs = {name: inputs[name] for name in ("trajectories", "ratings", "baseline")}
    own = {name: t[t.sim_id.isin(ids)] for name, t in runs.items()}
    return replace(inputs, tables={"setups": setups[here].reset_index(drop=True), **own})


def world_report(inputs: AnalysisInputs) -> tuple[Report, Evidence]:
    """The base report of one world setting's inputs (setups, trajectories, ratings, baseline; params
    metrics.ddof and alpha; the paper's numbers): per_sim, table1, table2, controls, tests, baseline, the
    flags with where they apply, the summary and the run's design differences, and what its claims judge."""
    setups, traj, ratings = inputs["setups"], inputs["trajectories"], inputs["ratings"]
    ddof, alpha, paper = int(inputs.params["metrics"]["ddof"]), float(inputs.params["alpha"]), dict(inputs.paper)
    rated = with_condition(ratings, setups)
    flags = classifier_flags(rated)
    classifier = classifier_of(rated)
    finals = value_flags(setups, final_values(setups, traj), CELL, BY2, ["sim_id"])
    w = World(setups, per_sim(setups, traj, ddof, flags, finals), flags, finals, ddof)
    rep = Report(TITLE)
    _tables(rep, w)
    test_rows = paper_tests(w.ps, flags, alpha, finals)
    rep.tables["tests"] = _tests_table(test_rows, alpha)
    base = baseline_table(w.ps, inputs["baseline"], setups, ddof, flags, finals)
    rep.tables["baseline"] = Table(
        base,
        "B and D: LLM runs beside the numeric baselines (same N, T, schedule, start)",
        [w.d_note, "never_measured_share: the LLM runs' agents never measured; the baselines' agents never reviewed"],
        flags=dg.collect(w.table_flags(w.main_keys), w.row_flags(CELL)),
    )
    main = w.main
    rep.design = design(main[main.init == "uniform"] if len(main) else main, classifier, paper)
    _flag_places(rep, w, test_rows)
    nm_total = int(main.never_measured.sum()) if len(main) else 0
    agents = int(main.n_agents.sum()) if len(main) else 0
    ps = w.ps
    rep.summary = {
        "simulations": int(len(ps)),
        "main": int(len(main)),
        "controls": int(len(w.ctrl)),
        "d_definition": w.d_note,
        "parse_failed": int(ps.parse_failed.sum()) if len(ps) else 0,
        "agents_never_reviewed": int(ps.never_reviewed.sum()) if len(ps) else 0,
        "agents_never_measured": nm_total,
        "never_measured_share": nm_total / agents if agents else None,
        "classifier_ratings": rating_shares(rated),
    }
    tst = rep.tables["tests"].df
    ev = Evidence(ps, paper, alpha, flags, finals, setups, classifier, test_rows, tst)
    ev.sims = sim_flags(setups, flags, finals)
    return rep, ev


def _tables(rep: Report, w: World) -> None:
    """per_sim, table1, table2 and controls, each with the flags of its inputs."""
    fv_note = (
        f"flags: the classifier's on the model's main ratings, and on the values that feed the row's B and D at T "
        f"({FINAL_SCOPE}), judged per row"
    )
    # A simulation's own final-value flags sit on its row (`final_flags`), not below the table.
    rep.tables["per_sim"] = Table(
        w.ps,
        "Per simulation: B, D (population and sample SD), dynamics, agents never measured, flags",
        [NM_NOTE, f"final_flags: the classifier's on the simulation's own final values ({FINAL_SCOPE})"],
        flags=w.table_flags([*w.main_keys, *w.ctrl_keys]),
    )
    for name, by, title in (
        ("table1", CELL, "Table 1: B and D per condition (all topics)"),
        ("table2", BY2, "Table 2: B and D per topic category"),
    ):
        t = aggregate(w.main, by, w.flags, w.finals)
        flags = dg.collect(w.table_flags(w.main_keys), w.row_flags(by))
        rep.tables[name] = Table(t, title, [w.d_note, NM_NOTE, fv_note], show(t, by), flags=flags)
    by_c = ["model", "condition", "framing", "bias"]
    tc = aggregate(w.ctrl.drop(columns=["never_measured", "never_measured_share"]), by_c, w.flags)
    rep.tables["controls"] = Table(
        tc,
        "Controls: B and D over every classified report (no interaction)",
        [
            w.d_note,
            "D n/a where fewer than 2 values feed it (values per sim: the classified reports of each simulation; "
            "a bare control has one)",
            "each control's flags are judged on its own ratings (every one of them feeds its B and D)",
        ],
        show(tc, by_c, values=True),
        flags=w.table_flags(w.ctrl_keys),
    )


def _tests_table(test_rows: list[TestRow], alpha: float) -> Table:
    tst = pd.DataFrame([{**r, "flags": "; ".join(f.message for f in fl)} for r, fl in test_rows])
    return Table(
        tst,
        "The paper's tests (one-sample t of B, paired framing t, ANOVA of D by bias)",
        [
            f"alpha = {alpha}",
            f"each test needs {vd.MIN_UNITS} topics (units; the ANOVA: per bias level, a topic's D averaged over "
            "framings and repetitions); fewer: inconclusive",
            f"paired t: p_adj = min(1, {PAIRED_FAMILY} p), Bonferroni over a fixed family, the paper's "
            f"{PAIRED_FAMILY} paired tests of a model (3 bias levels x 2 memories), here per model, topology and "
            "start, whatever else the run has",
            "ANOVA: the paper's planned contrasts (-2, 1, 1) and (0, -1, 1), without a verdict of their own; "
            "the finding 'D rises' is judged by adjacent steps (findings)",
        ],
        flags=dg.collect(*(f for _, f in test_rows)),
    )


def _flag_places(rep: Report, w: World, test_rows: list[TestRow]) -> None:
    """The run's list of flags, each with the places it concerns: the classifier's on a model's main
    ratings (everything made of them), on a Table 1 or Table 2 cell's final values, on a control's
    ratings, and a test's own degenerate input. A simulation's own final-value flag is not one of
    them: it sits on its per_sim row, its v4 vs_paper rows and its trajectory panel only."""
    for m in sorted(set(w.main.model)):
        for f in w.flags.get((m, MAIN), []):
            rep.flag(
                f,
                f"per_sim ({m}, main)",
                "table1",
                "table2",
                "tests",
                "baseline (llm rows)",
                f"findings ({m})",
                f"vs_paper ({m}: Table 1, Table 2, v4 and finding rows)",
                places.main_panels(m),
            )
    for (by, key), fls in w.finals.items():
        k = dict(zip(by, key))
        for f in fls:
            if by == tuple(BY2):
                rep.flag(f, f"table2 ({cell_label(k)})", f"vs_paper (its Table 2 rows: {cell_label(k)})")
            elif by == tuple(CELL):
                rep.flag(f, *_cell_places(k))
    for m, c in w.ctrl_keys:
        for f in w.flags.get((m, c), []):
            rep.flag(
                f,
                f"per_sim ({m}, {c})",
                f"controls ({m}, {c})",
                places.control_panels_of(m, c),
            )
    for _, fl in test_rows:
        for f in fl:
            if not f.scope.startswith(("opinion classifier", FINAL_SCOPE)):
                rep.flag(f, "tests", "findings")


def _cell_places(k: dict[str, Any]) -> list[str]:
    """The places a Table 1 cell's final-value flag concerns (its tests and findings on the uniform start,
    its figure panels)."""
    m, top, mem = k["model"], k["topology"], k["memory"]
    start = (
        [
            f"tests ({m}, {top}, {mem}: the tests of this cell)",
            f"findings ({m}, {mem}, {top})",
            f"vs_paper (Table 1 rows and finding rows of {m}, {mem}, {top})",
        ]
        if k["init"] == "uniform"
        else []
    )
    return [f"table1 ({cell_label(k)})", f"baseline (llm row: {cell_label(k)})", *start, *places.cell_panels(k)]
