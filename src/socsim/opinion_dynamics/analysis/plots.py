"""What each opinion-dynamics figure draws (socsim.io.report.Panel, written as `plot_<figure>`), with
every panel's note already worded: its inputs' flags (the classifier's, judged on the ratings of its
simulations' condition, and on the final values it shows) and, for the main runs, the share of agents
never measured (their final opinion is their initial one). socsim.opinion_dynamics.figures draws them.

A plot table holds every figure of its kind; a panel's name says where it sits
(socsim.opinion_dynamics.plot_layout), the panels of a figure written row by row. Figures:

- `trajectories`: per (model, topic, memory, start, topology), repetition 0, the paper's world:
  rows = bias, columns = framing; each panel a simulation's trajectories (agent, t, opinion, the
  agent's initial opinion), its flags (its own final values' included) and never-measured share.
- `controls`: per (model, topic): rows = control, columns = framing; the classified reports.
- `final_distribution`: per (model, memory, topology) of the uniform start, pooled over topics: each
  panel's final opinions (`measured` or not) and the flags of its Table 1 cell's final values.
- `final_by_topic`: per (model, topic, memory, start, topology, world), every world.
- `bias_diversity`: per model, a B and a D panel: table1's rows (`kind` llm), the baselines
  (`kind` deffuant / degroot) and the controls (`kind` control, with their colour index `k`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from socsim.io.report import Panel, Report
from socsim.opinion_dynamics.analysis.measures import MAIN, final_flags, never_measured_note
from socsim.opinion_dynamics.plot_layout import panel_name

BIASES = ["none", "weak", "strong"]


def _flags(cells: Iterable[Any]) -> list[str]:
    """The distinct flag messages of per_sim / table rows' `flags` cells ("; "-separated)."""
    out: list[str] = []
    for c in cells:
        if isinstance(c, str) and c:
            out += [m for m in c.split("; ") if m and m not in out]
    return out


def _never_measured(ps: pd.DataFrame) -> str:
    """The never-measured note of the main runs in `ps` (pooled: agents never measured / agents)."""
    if "never_measured" not in ps or ps.never_measured.isna().all():
        return ""
    return never_measured_note(float(ps.never_measured.sum() / ps.n_agents[ps.never_measured.notna()].sum()))


def _panel_notes(ps: pd.DataFrame, own: bool = False) -> list[str]:
    """The rating flags of the simulations in `ps` and their never-measured share; with `own`, also
    their own final-value flags (a panel of one simulation)."""
    mine = _flags(ps.get("final_flags", [])) if own else []
    return [*_flags(ps.get("flags", [])), *mine, _never_measured(ps)]


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
    """Every figure's panels: from the report's per_sim (every world), table1 and baseline, the setups
    and trajectories; all but `final_by_topic` on the paper's `world`."""
    all_ps = rep.tables["per_sim"].df
    setups_w = setups[setups.world == world] if len(setups) else setups
    ps = all_ps[all_ps.world == world] if len(all_ps) else all_ps
    final = final_opinions(traj, setups)
    d_label = "population SD" if ddof == 0 else "sample SD"
    return {
        "trajectories": trajectory_panels(setups_w, traj, ps),
        "controls": control_panels(setups_w, traj, ps),
        "final_distribution": final_distribution_panels(ps, final),
        "final_by_topic": final_by_topic_panels(all_ps, final),
        "bias_diversity": bias_diversity_panels(
            rep.tables["table1"].df, rep.tables["baseline"].df, ps[ps.condition != MAIN] if len(ps) else ps, d_label
        ),
    }


def trajectory_panels(setups: pd.DataFrame, traj: pd.DataFrame, ps: pd.DataFrame) -> list[Panel]:
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
            sim = by_sim.get(s["sim_id"], pd.DataFrame())
            note = _panel_notes(ps_of.loc[[s["sim_id"]]], own=True) if s["sim_id"] in ps_of.index else []
            if sim.empty:
                out.append(Panel(name, pd.DataFrame(), note, no_data="this cell did not run"))
                continue
            data = sim[["agent", "t", "opinion"]].assign(initial=[s["initial"][a] for a in sim.agent])
            out.append(Panel(name, data.reset_index(drop=True), note))
    return out


def control_panels(setups: pd.DataFrame, traj: pd.DataFrame, ps: pd.DataFrame) -> list[Panel]:
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
                note = _flags(ps_of.loc[[s["sim_id"]]]["flags"]) if s["sim_id"] in ps_of.index else []
                out.append(Panel(name, data.reset_index(drop=True), note))
    return out


def _final_panel(name: str, cell: pd.DataFrame, f: str, b: str, note: list[str]) -> Panel:
    if not len(cell):
        return Panel(name, pd.DataFrame(), no_data=f"{f} framing, {b} bias did not run")
    return Panel(name, cell[["sim_id", "agent", "opinion", "measured"]].reset_index(drop=True), note)


def final_distribution_panels(ps: pd.DataFrame, final: pd.DataFrame) -> list[Panel]:
    """Each panel (a Table 1 cell) notes the degeneracy of its measured agents' final opinions (the
    last classified value of each, `final_flags`), as Table 1's row does."""
    out = []
    main = ps[(ps.condition == MAIN) & (ps.init == "uniform")] if len(ps) else ps
    for key, g in main.groupby(["model", "memory", "topology"], sort=True):
        figure, title = "final_distribution_" + "_".join(key), " / ".join(key)
        for f, b in _grid(g):
            sims = g[(g.bias == b) & (g.framing == f)].sim_id
            cell = final[final.sim_id.isin(sims)].dropna(subset=["opinion"])
            cell_key = dict(zip(["model", "memory", "topology"], key)) | {"init": "uniform", "framing": f, "bias": b}
            own = [fl.message for fl in final_flags(cell[cell.measured].opinion.tolist(), cell_key)]
            notes = _panel_notes(g[g.sim_id.isin(sims)])
            out.append(_final_panel(panel_name(figure, title, f, b), cell, f, b, [*notes[:-1], *own, notes[-1]]))
    return out


def final_by_topic_panels(ps: pd.DataFrame, final: pd.DataFrame) -> list[Panel]:
    out = []
    main = ps[ps.condition == MAIN] if len(ps) else ps
    for key, g in main.groupby(["model", "topic", "memory", "init", "topology", "world"], sort=True):
        figure, title = "final_by_topic_" + "_".join(map(str, key)), " / ".join(map(str, key))
        for f, b in _grid(g):
            sims = g[(g.bias == b) & (g.framing == f)]
            cell = final[final.sim_id.isin(sims.sim_id)].dropna(subset=["opinion"])
            out.append(_final_panel(panel_name(figure, title, f, b), cell, f, b, _panel_notes(sims, own=True)))
    return out


def bias_diversity_panels(
    t1: pd.DataFrame, baseline: pd.DataFrame, controls: pd.DataFrame, d_label: str
) -> list[Panel]:
    """Per model, B and D by condition: table1's rows (mean +- SE over topics, `label` on the x axis),
    the baselines and the controls (a control whose value is n/a, D of a bare control, not drawn and
    noted with its n); the notes: table1's flags, the controls', the never-measured share, the
    number of topics per cell."""
    from socsim.io.report import n_range

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
            note = [
                *_flags(g.get("flags", [])),
                *(f"controls: {m}" for m in _flags(ctrl.get("flags", []))),
                *undrawn,
                nm,
                n_range([int(n) for n in g.n_topics], "topics per cell"),
            ]
            title = {"B": "bias B (mean final opinion)", "D": f"diversity D ({d_label})"}[col]
            data = pd.concat(rows, ignore_index=True)
            out.append(Panel(panel_name(f"bias_diversity_{model}", str(model), col, title), data, note))
    return out
