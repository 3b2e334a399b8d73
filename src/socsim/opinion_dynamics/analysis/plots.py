"""What each opinion-dynamics figure draws (socsim.io.report.Panel, written as `plot_<figure>`), with
every panel's note already worded: its inputs' flags (the classifier's, judged on the ratings of its
simulations' condition, and on the final values it shows) and, for the main runs, the share of agents
never measured (their final opinion is their initial one). socsim.opinion_dynamics.figures draws them.

Built after the claims are assembled: a panel's flags are the report's flags placed on it
(`Report.flags_on`, on the places of socsim.opinion_dynamics.analysis.places, which the report's flags
use); a panel of one simulation (trajectories) or of a topic's repetitions (final_by_topic) also shows
those simulations' own final-value flags, local flags of the report on their per_sim rows
(`places.own_place`): they sit on their rows and panels, not on the run's list of flags.

A plot table holds every figure of its kind; a panel's name says where it sits
(socsim.opinion_dynamics.plot_layout), the panels of a figure written row by row. Figures:

- `trajectories`: per (model, topic, memory, start, topology), repetition 0, the paper's world:
  rows = bias, columns = framing; each panel a simulation's trajectories (agent, t, opinion, the
  agent's initial opinion), its flags (its own final values' included) and never-measured share.
- `controls`: per (model, topic): rows = control, columns = framing; the classified reports.
- `final_distribution`: per (model, memory, topology) of the uniform start, pooled over topics: each
  panel's final opinions (`measured` or not) with their B and D_pop, and the flags of its Table 1 cell's
  final values.
- `final_by_topic`: per (model, topic, memory, start, topology, world), every world, drawn as
  `final_distribution`.
- `bias_diversity`: per model, a B and a D panel: table1's rows (`kind` llm), the baselines
  (`kind` deffuant / degroot) and the controls (`kind` control, with their colour index `k`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from socsim.io.report import Panel, Report, n_range
from socsim.opinion_dynamics.analysis import places
from socsim.opinion_dynamics.analysis.measures import MAIN, never_measured_note
from socsim.opinion_dynamics.plot_layout import panel_name

BIASES = ["none", "weak", "strong"]


def _never_measured(ps: pd.DataFrame) -> str:
    """The never-measured note of the main runs in `ps` (pooled: agents never measured / agents)."""
    if "never_measured" not in ps or ps.never_measured.isna().all():
        return ""
    return never_measured_note(float(ps.never_measured.sum() / ps.n_agents[ps.never_measured.notna()].sum()))


def final_opinions(traj: pd.DataFrame, setups: pd.DataFrame) -> pd.DataFrame:
    """Each agent's opinion at t = T, with `measured`: whether it had a classified report up to T."""
    steps = setups.set_index("sim_id").steps
    upto = traj[traj.t <= traj.sim_id.map(steps)]
    cls = upto[upto.source == "classified"]
    measured = set(zip(cls.sim_id, cls.agent))
    final = traj[traj.t == traj.sim_id.map(steps)]
    return final.assign(measured=[(s, a) in measured for s, a in zip(final.sim_id, final.agent)])


def _grid(g: pd.DataFrame) -> list[tuple[str, str]]:
    """The (framing, bias) panels of bias rows x framing columns for the simulations `g`, row by row."""
    biases = [b for b in BIASES if b in set(g.bias)]
    framings = sorted(set(g.framing))
    return [(f, b) for b in biases for f in framings]


def plots(setups: pd.DataFrame, traj: pd.DataFrame, rep: Report, world: str, ddof: int) -> dict[str, list[Panel]]:
    """Every figure's panels: from the report's per_sim (every world), table1 and baseline and its
    flags (built after the claims are assembled, the simulations' own final-value flags among its local
    flags), the setups and the trajectories; all but `final_by_topic` on the paper's `world`."""
    all_ps = rep.tables["per_sim"].df
    setups_w = setups[setups.world == world] if len(setups) else setups
    ps = all_ps[all_ps.world == world] if len(all_ps) else all_ps
    final = final_opinions(traj, setups)
    d_label = "population SD" if ddof == 0 else "sample SD"
    return {
        "trajectories": trajectory_panels(setups_w, traj, ps, rep),
        "controls": control_panels(setups_w, traj, ps, rep),
        "final_distribution": final_distribution_panels(ps, final, rep),
        "final_by_topic": final_by_topic_panels(all_ps, final, rep, world),
        "bias_diversity": bias_diversity_panels(
            rep.tables["table1"].df,
            rep.tables["baseline"].df,
            ps[ps.condition != MAIN] if len(ps) else ps,
            d_label,
            rep,
        ),
    }


def trajectory_panels(setups: pd.DataFrame, traj: pd.DataFrame, ps: pd.DataFrame, rep: Report) -> list[Panel]:
    """Per (model, topic, memory, start, topology), repetition 0: each panel one simulation, noting its
    model's main ratings' flag, its own final values' flag and its agents never measured."""
    out = []
    by_sim = {k: g for k, g in traj.groupby("sim_id", sort=False)}
    ps_of = ps.set_index("sim_id") if len(ps) else ps
    main = setups[setups.condition == MAIN] if len(setups) else setups
    for key, g in main[main.rep == 0].groupby(["model", "topic", "memory", "init", "topology"], sort=True):
        figure, title = "trajectories_" + "_".join(map(str, key)), " / ".join(map(str, key))
        for f, b in _grid(g):
            name = panel_name(figure, title, f, b)
            cell = g[(g.bias == b) & (g.framing == f)]
            if not len(cell):
                out.append(Panel(name, pd.DataFrame(), no_data="this cell did not run"))
                continue
            s = cell.iloc[0].to_dict()
            sid = s["sim_id"]
            note = []
            if sid in ps_of.index:
                own = rep.flags_on(places.own_place(sid))
                note = [*rep.flags_on(places.main_panels(s["model"])), *own, _never_measured(ps_of.loc[[sid]])]
            sim = by_sim.get(sid, pd.DataFrame())
            if sim.empty:
                out.append(Panel(name, pd.DataFrame(), note, no_data="this cell did not run"))
                continue
            data = sim[["agent", "t", "opinion"]].assign(initial=[s["initial"][a] for a in sim.agent])
            out.append(Panel(name, data.reset_index(drop=True), note))
    return out


def control_panels(setups: pd.DataFrame, traj: pd.DataFrame, ps: pd.DataFrame, rep: Report) -> list[Panel]:
    """Per (model, topic), repetition 0: rows = control, columns = framing; each panel notes its
    control's ratings' flag."""
    out = []
    by_sim = {k: g for k, g in traj.groupby("sim_id", sort=False)}
    ps_of = ps.set_index("sim_id") if len(ps) else ps
    controls = setups[setups.condition != MAIN] if len(setups) else setups
    for key, g in controls[controls.rep == 0].groupby(["model", "topic"], sort=True):
        figure, title = "controls_" + "_".join(key), " / ".join(key)
        conds, framings = sorted(set(g.condition)), sorted(set(g.framing))
        for c in conds:
            for f in framings:
                s = g[(g.condition == c) & (g.framing == f)].iloc[0].to_dict()
                sim = by_sim[s["sim_id"]]
                sim = sim[sim.source == "classified"]
                name = panel_name(figure, title, f, c)
                if sim.empty:
                    out.append(Panel(name, pd.DataFrame(), no_data="no classified report"))
                    continue
                data = sim[["agent", "t", "opinion"]].assign(initial=[s["initial"][a] for a in sim.agent])
                note = rep.flags_on(places.control_panels_of(key[0], c)) if s["sim_id"] in ps_of.index else []
                out.append(Panel(name, data.reset_index(drop=True), note))
    return out


def _final_panel(name: str, cell: pd.DataFrame, f: str, b: str, note: list[str]) -> Panel:
    """A panel of final opinions: every agent's (`measured` or not), each row with the panel's B (their mean)
    and D_pop (their population SD), which the figure draws as a dotted line and writes in the title."""
    if not len(cell):
        return Panel(name, pd.DataFrame(), no_data=f"{f} framing, {b} bias did not run")
    values = cell.opinion.to_numpy(dtype=float)
    data = cell[["sim_id", "agent", "opinion", "measured"]].reset_index(drop=True)
    return Panel(name, data.assign(B=values.mean(), D_pop=values.std()), note)


def final_distribution_panels(ps: pd.DataFrame, final: pd.DataFrame, rep: Report) -> list[Panel]:
    """Each panel (a Table 1 cell of the uniform start) notes its model's main ratings' flag, the
    degeneracy of its measured agents' final opinions (the cell's final-value flag, as Table 1's row)
    and its agents never measured."""
    out = []
    main = ps[(ps.condition == MAIN) & (ps.init == "uniform")] if len(ps) else ps
    for key, g in main.groupby(["model", "memory", "topology"], sort=True):
        figure, title = "final_distribution_" + "_".join(key), " / ".join(key)
        for f, b in _grid(g):
            sims = g[(g.bias == b) & (g.framing == f)]
            cell = final[final.sim_id.isin(sims.sim_id)].dropna(subset=["opinion"])
            k = dict(zip(["model", "memory", "topology"], key)) | {"init": "uniform", "framing": f, "bias": b}
            note = [
                *rep.flags_on(places.main_panels(key[0])),
                *rep.flags_on(places.final_distribution_panel(k)),
                _never_measured(sims),
            ]
            out.append(_final_panel(panel_name(figure, title, f, b), cell, f, b, note))
    return out


def final_by_topic_panels(ps: pd.DataFrame, final: pd.DataFrame, rep: Report, world: str) -> list[Panel]:
    """Per (model, topic, memory, start, topology, world): each panel a condition's repetitions pooled,
    noting its world's main ratings' flag (`world`: the paper's), its simulations' own final-value
    flags and its agents never measured."""
    out = []
    main = ps[ps.condition == MAIN] if len(ps) else ps
    for key, g in main.groupby(["model", "topic", "memory", "init", "topology", "world"], sort=True):
        figure, title = "final_by_topic_" + "_".join(map(str, key)), " / ".join(map(str, key))
        rated = rep.flags_on(places.main_panels(key[0], None if key[-1] == world else key[-1]))
        for f, b in _grid(g):
            sims = g[(g.bias == b) & (g.framing == f)]
            cell = final[final.sim_id.isin(sims.sim_id)].dropna(subset=["opinion"])
            own = rep.flags_on(*(places.own_place(sid) for sid in sims.sim_id))
            note = [*rated, *own, _never_measured(sims)]
            out.append(_final_panel(panel_name(figure, title, f, b), cell, f, b, note))
    return out


def bias_diversity_panels(
    t1: pd.DataFrame, baseline: pd.DataFrame, controls: pd.DataFrame, d_label: str, rep: Report
) -> list[Panel]:
    """Per model, B and D by condition: table1's rows (mean +- SE over topics, `label` on the x axis),
    the baselines and the controls (a control whose value is n/a, D of a bare control, not drawn and
    noted with its n); the notes: table1's flags, the controls', the never-measured share, the
    number of topics per cell."""
    out = []
    for model, g in t1.groupby("model", sort=True):
        g = g.reset_index(drop=True)
        labels = [
            f"{r.memory[:3]} {r.framing[0].upper()} {r.bias}"
            + ("" if r.topology == "complete" else f" {r.topology}")
            + ("" if r.init == "uniform" else f" {r.init}")
            for r in g.itertuples()
        ]
        ctrl = controls[controls.model == model] if len(controls) else controls
        shares = g.never_measured_share.dropna() if "never_measured_share" in g else pd.Series(dtype=float)
        nm = ""
        if len(shares) and shares.max() > 0:
            lo, hi = round(100 * shares.min()), round(100 * shares.max())
            nm = f"never measured: {lo if lo == hi else f'{lo}-{hi}'} % of agents (final opinion = initial)"
        for col in ("B", "D"):
            rows = [
                pd.DataFrame(
                    {
                        "kind": "llm",
                        "label": labels,
                        "x": np.arange(len(g)),
                        "value": g[col],
                        "se": g[f"{col}_se"].astype(float).fillna(0),
                    }
                )
            ]
            for kind in ("deffuant", "degroot"):
                b = baseline[(baseline.run == kind) & (baseline.model == model)]
                m = g.merge(
                    b, on=["model", "topology", "init", "memory", "framing", "bias"], how="left", suffixes=("", "_b")
                )
                rows.append(pd.DataFrame({"kind": kind, "x": np.arange(len(g)), "value": m[f"{col}_b"]}))
            undrawn = []
            for k, (cond, c) in enumerate(ctrl.groupby(["condition", "framing"], sort=True) if len(ctrl) else []):
                name = f"{cond[0].replace('_', ' ')} ({cond[1]})"
                v = pd.to_numeric(c[col], errors="coerce")
                if v.isna().any():  # D of a single value is n/a: no line at 0
                    nv = c["n_values"].dropna().astype(int).tolist() if "n_values" in c else []
                    undrawn.append(
                        f"{name}: {col} n/a, not drawn"
                        + (f" ({n_range(nv, 'value(s) per simulation')}; D needs 2)" if nv else "")
                    )
                    continue
                rows.append(pd.DataFrame({"kind": ["control"], "label": [name], "value": [v.mean()], "k": [k]}))
            conds = sorted(set(ctrl.condition)) if len(ctrl) else []
            note = [
                *rep.flags_on(places.main_panels(str(model)), places.bias_diversity(str(model))),
                *(f"controls: {m}" for m in rep.flags_on(*(places.control_panels_of(str(model), c) for c in conds))),
                *undrawn,
                nm,
                n_range([int(n) for n in g.n_topics], "topics per cell"),
            ]
            title = {"B": "bias B (mean final opinion)", "D": f"diversity D ({d_label})"}[col]
            data = pd.concat(rows, ignore_index=True)
            out.append(Panel(panel_name(f"bias_diversity_{model}", str(model), col, title), data, note))
    return out
