"""Figures of the opinion-dynamics study (PNG + PDF): Figs. 4-6's trajectories, final
distributions, and B and D by condition beside the numeric baselines.

They read the analysis tables' Parquet (socsim.io.report.read). Every panel carries a visible note
of its inputs' flags (the classifier's, judged on the ratings of its simulations' condition) and,
for the main runs, the share of agents never measured (their final opinion is their initial one);
a panel without data says so."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from socsim.io.figures import n_range, no_data, note, save  # sets the Agg backend
from socsim.opinion_dynamics.analysis import final_flags, never_measured_note

COLOURS = {2: "#0066FF", 1: "#66C2FF", 0: "#999999", -1: "#FF8080", -2: "#E60000"}  # by initial opinion
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
    their own final-value flags (`final_flags`: a panel of one simulation)."""
    mine = _flags(ps.get("final_flags", [])) if own else []
    return [*_flags(ps.get("flags", [])), *mine, _never_measured(ps)]


def _top_note(ax: Any, lines: list[str]) -> None:
    """A note above the opinion scale: the y axis grows to leave it room (no line hidden under it)."""
    lines = [x for x in lines if x]
    if lines:
        ax.set_ylim(-2.3, 2.6 + 0.9 * sum(1 + len(x) // 60 for x in lines))
        note(ax, lines)


def _trajectory(ax: Any, sim: pd.DataFrame, setup: dict[str, Any], title: str) -> None:
    """One step line per agent (its value changes only at its reviews), coloured by its initial
    opinion, offset by 0.03 x agent index."""
    if sim.empty:
        no_data(ax, "this cell did not run")
        ax.set_title(title, fontsize=8)
        return
    for agent, g in sim.groupby("agent", sort=True):
        g = g.sort_values("t")
        init = setup["initial"][agent]
        ax.step(
            g.t, g.opinion.astype(float) + 0.03 * agent, where="post", lw=1, color=COLOURS.get(init, "black"), alpha=0.9
        )
    ax.set_ylim(-2.3, 2.6)
    ax.set_yticks([-2, -1, 0, 1, 2])
    ax.set_title(title, fontsize=8)


def trajectory_figures(setups: pd.DataFrame, traj: pd.DataFrame, ps: pd.DataFrame, out: Path) -> list[str]:
    """Per (model, topic, memory, start, topology), repetition 0: rows = bias, columns = framing;
    each panel notes its simulation's flags and agents never measured (from `ps`, per_sim)."""
    names = []
    by_sim = {k: g for k, g in traj.groupby("sim_id", sort=False)}
    ps_of = ps.set_index("sim_id")
    main = setups[setups.condition == "main"]
    for key, g in main[main.rep == 0].groupby(["model", "topic", "memory", "init", "topology"], sort=True):
        biases = [b for b in BIASES if b in set(g.bias)]
        framings = sorted(set(g.framing))
        fig, axes = plt.subplots(
            len(biases),
            len(framings),
            figsize=(4 * len(framings), 2.4 * len(biases)),
            squeeze=False,
            sharex=True,
            sharey=True,
        )
        for i, b in enumerate(biases):
            for j, f in enumerate(framings):
                cell = g[(g.bias == b) & (g.framing == f)]
                s = cell.iloc[0].to_dict() if len(cell) else None
                _trajectory(
                    axes[i][j],
                    by_sim.get(s["sim_id"], pd.DataFrame()) if s else pd.DataFrame(),
                    s or {"initial": []},
                    f"{f} framing, {b} bias",
                )
                if s and s["sim_id"] in ps_of.index:
                    _top_note(axes[i][j], _panel_notes(ps_of.loc[[s["sim_id"]]], own=True))
        for ax in axes[-1]:
            ax.set_xlabel("time step t")
        fig.suptitle(f"Opinion trajectories: {' / '.join(map(str, key))} (colour = initial opinion)", fontsize=9)
        name = "trajectories_" + "_".join(map(str, key))
        save(fig, out, name)
        names.append(name)
    controls = setups[setups.condition != "main"]
    for key, g in controls[controls.rep == 0].groupby(["model", "topic"], sort=True):
        conds, framings = sorted(set(g.condition)), sorted(set(g.framing))
        fig, axes = plt.subplots(
            len(conds),
            len(framings),
            figsize=(4 * len(framings), 2.6 * len(conds)),
            squeeze=False,
            layout="constrained",
        )
        for i, c in enumerate(conds):
            for j, f in enumerate(framings):
                s = g[(g.condition == c) & (g.framing == f)].iloc[0].to_dict()
                sim = by_sim[s["sim_id"]]
                sim = sim[sim.source == "classified"]
                ax = axes[i][j]
                ax.set_title(f"{c.replace('_', ' ')}, {f} framing", fontsize=8)
                if sim.empty:
                    no_data(ax, "no classified report")
                    continue
                for agent, a in sim.groupby("agent"):
                    init = s["initial"][agent]
                    ax.plot(a.t, a.opinion + 0.03 * agent, "o", ms=3, color=COLOURS.get(init, "black"))
                ax.set_ylim(-2.3, 2.6)
                ax.set_yticks([-2, -1, 0, 1, 2])
                ax.set_xlim(0.5, float(sim.t.max()) + 0.5)
                ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
                if s["sim_id"] in ps_of.index:
                    _top_note(ax, _flags(ps_of.loc[[s["sim_id"]]]["flags"]))
        fig.suptitle(f"Controls (reports without interaction): {' / '.join(key)}", fontsize=9)
        name = "controls_" + "_".join(key)
        save(fig, out, name)
        names.append(name)
    return names


def final_distributions(ps: pd.DataFrame, traj: pd.DataFrame, setups: pd.DataFrame, out: Path) -> list[str]:
    """Histograms of the final opinions (pooled over topics), a dotted line at B, D in the title;
    the agents never measured (their final opinion is their initial one) stacked apart, in grey.
    Each panel (a Table 1 cell) notes the degeneracy of its measured agents' final opinions (the
    last classified value of each, analysis.final_flags), as Table 1's row does."""
    names = []
    final = _final_opinions(traj, setups)
    main = ps[(ps.condition == "main") & (ps.init == "uniform")]
    for key, g in main.groupby(["model", "memory", "topology"], sort=True):
        fig, axes, cells = _final_grid(g)
        for ax, f, b in cells:
            sims = g[(g.bias == b) & (g.framing == f)].sim_id
            cell = final[final.sim_id.isin(sims)].dropna(subset=["opinion"])
            if _final_histogram(ax, cell, f, b, "pooled, pop. SD"):
                cell_key = dict(zip(["model", "memory", "topology"], key)) | {
                    "init": "uniform",
                    "framing": f,
                    "bias": b,
                }
                own = [fl.message for fl in final_flags(cell[cell.measured].opinion.tolist(), cell_key)]
                notes = _panel_notes(g[g.sim_id.isin(sims)])
                note(ax, [*notes[:-1], *own, notes[-1]])
        axes[0][-1].legend(fontsize=6, loc="center right")
        fig.suptitle(f"Final opinions at t = T: {' / '.join(key)} (pooled over topics)", fontsize=9)
        name = "final_distribution_" + "_".join(key)
        save(fig, out, name)
        names.append(name)
    return names


def bias_diversity_figure(
    t1: pd.DataFrame, baseline: pd.DataFrame, controls: pd.DataFrame, out: Path, d_label: str
) -> list[str]:
    """B and D (mean +- SE over topics) by condition, with the numeric baselines and the controls;
    each panel notes the flags of its cells (table1's `flags`: the classifier's on the main ratings
    and on each cell's final values) and of the controls drawn, a control whose value is n/a (D of
    a bare control: one report per simulation) as not drawn, with its n, the never-measured share
    of its cells, and the number of topics per cell."""
    names = []
    for model, g in t1.groupby("model", sort=True):
        g = g.reset_index(drop=True)
        labels = [
            f"{r.memory[:3]} {r.framing[0].upper()} {r.bias}"
            + ("" if r.topology == "complete" else f" {r.topology}")
            + ("" if r.init == "uniform" else f" {r.init}")
            for r in g.itertuples()
        ]
        x = np.arange(len(g))
        # each panel at least as wide as its notes below (io.figures.note wraps them at 90 characters)
        fig, axes = plt.subplots(1, 2, figsize=(2 * max(6.0, 0.7 * len(g) + 3), 3.6), gridspec_kw={"wspace": 0.25})
        for ax, col in zip(axes, ("B", "D")):
            ax.errorbar(x, g[col], yerr=g[f"{col}_se"].astype(float).fillna(0), fmt="o", color="black", label="LLM")
            for kind, marker in (("deffuant", "s"), ("degroot", "^")):
                b = baseline[(baseline.run == kind) & (baseline.model == model)]
                m = g.merge(
                    b, on=["model", "topology", "init", "memory", "framing", "bias"], how="left", suffixes=("", "_b")
                )
                ax.plot(x, m[f"{col}_b"], marker, mfc="none", label=kind)
            undrawn = []
            for k, (cond, c) in enumerate(
                controls[controls.model == model].groupby(["condition", "framing"], sort=True)
            ):
                name = f"{cond[0].replace('_', ' ')} ({cond[1]})"
                v = pd.to_numeric(c[col], errors="coerce")
                if v.isna().any():  # D of a single value is n/a: no line at 0
                    nv = c["n_values"].dropna().astype(int).tolist() if "n_values" in c else []
                    undrawn.append(
                        f"{name}: {col} n/a, not drawn"
                        + (f" ({n_range(nv, 'value(s) per simulation')}; D needs 2)" if nv else "")
                    )
                    continue
                ax.axhline(v.mean(), ls="--", lw=0.8, color=f"C{k + 3}", label=name)
            ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
            ctrl = controls[controls.model == model]
            shares = g.never_measured_share.dropna() if "never_measured_share" in g else pd.Series(dtype=float)
            nm = ""
            if len(shares) and shares.max() > 0:
                lo, hi = round(100 * shares.min()), round(100 * shares.max())
                nm = f"never measured: {lo if lo == hi else f'{lo}-{hi}'} % of agents (final opinion = initial)"
            note(
                ax,
                [
                    *_flags(g.get("flags", [])),
                    *(f"controls: {m}" for m in _flags(ctrl.get("flags", []))),
                    *undrawn,
                    nm,
                    n_range([int(n) for n in g.n_topics], "topics per cell"),
                ],
                "below",
            )
            ax.set_title({"B": "bias B (mean final opinion)", "D": f"diversity D ({d_label})"}[col], fontsize=9)
            ax.axhline(0, color="grey", lw=0.5)
        legend: dict[str, Any] = {}  # both panels' entries: a control not drawn on D is still on B
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(lab, h)
        axes[1].legend(list(legend.values()), list(legend), fontsize=6, loc="best")
        fig.suptitle(f"B and D by condition ({model}); error bars: SE over topics", fontsize=9)
        name = f"bias_diversity_{model}"
        save(fig, out, name)
        names.append(name)
    return names


def topic_final_distributions(ps: pd.DataFrame, traj: pd.DataFrame, setups: pd.DataFrame, out: Path) -> list[str]:
    """Fig. 4's final distributions per topic: per (model, topic, memory, start, topology, world), rows =
    bias, columns = framing; each panel a histogram of the final opinions of that condition's
    simulations (pooled over repetitions), the agents never measured stacked apart in grey, B dotted,
    D (population SD) in the title, and the panel's flags and never-measured share."""
    names = []
    final = _final_opinions(traj, setups)
    main = ps[ps.condition == "main"]
    key_cols = ["model", "topic", "memory", "init", "topology", "world"]
    for key, g in main.groupby(key_cols, sort=True):
        fig, axes, cells = _final_grid(g)
        for ax, f, b in cells:
            sims = g[(g.bias == b) & (g.framing == f)]
            cell = final[final.sim_id.isin(sims.sim_id)].dropna(subset=["opinion"])
            if _final_histogram(ax, cell, f, b, "pop. SD"):
                note(ax, _panel_notes(sims, own=True))
        axes[0][-1].legend(fontsize=6, loc="center right")
        fig.suptitle(f"Final opinions at t = T per topic (Fig. 4): {' / '.join(map(str, key))}", fontsize=9)
        name = "final_by_topic_" + "_".join(map(str, key))
        save(fig, out, name)
        names.append(name)
    return names


def _final_opinions(traj: pd.DataFrame, setups: pd.DataFrame) -> pd.DataFrame:
    """Each agent's opinion at t = T, with `measured`: whether it had a classified report up to T."""
    steps = setups.set_index("sim_id").steps
    upto = traj[traj.t <= traj.sim_id.map(steps)]
    cls = upto[upto.source == "classified"]
    measured = set(zip(cls.sim_id, cls.agent))
    final = traj[traj.t == traj.sim_id.map(steps)]
    return final.assign(measured=[(s, a) in measured for s, a in zip(final.sim_id, final.agent)])


def _final_grid(g: pd.DataFrame) -> tuple[Any, Any, list[tuple[Any, str, str]]]:
    """A figure of bias rows x framing columns for the simulations `g`, and its (ax, framing, bias) cells."""
    biases = [b for b in BIASES if b in set(g.bias)]
    framings = sorted(set(g.framing))
    fig, axes = plt.subplots(
        len(biases), len(framings), figsize=(3.5 * len(framings), 2.6 * len(biases)), squeeze=False, sharex=True
    )
    return fig, axes, [(axes[i][j], f, b) for i, b in enumerate(biases) for j, f in enumerate(framings)]


def _final_histogram(ax: Any, cell: pd.DataFrame, framing: str, bias: str, d_label: str) -> bool:
    """One panel of final opinions: measured agents stacked over the never-measured ones (grey), B dotted,
    B and D in the title; False (and the panel marked) where the cell did not run."""
    vals = cell.opinion.to_numpy(dtype=float)
    if vals.size == 0:
        no_data(ax, f"{framing} framing, {bias} bias did not run")
        return False
    counts, _, _ = ax.hist(
        [cell[cell.measured].opinion.to_numpy(dtype=float), cell[~cell.measured].opinion.to_numpy(dtype=float)],
        bins=np.arange(-2.5, 3.0, 1.0),
        stacked=True,
        color=["#66C2FF", "#DDDDDD"],
        edgecolor="black",
        label=["measured", "never measured (initial)"],
    )
    ax.set_ylim(0, max(1.0, float(np.max(counts))) * 1.7)  # room for the note above the bars
    ax.axvline(vals.mean(), ls=":", color="black")
    ax.set_title(f"{framing}, {bias}: B = {vals.mean():.2f}, D = {vals.std():.2f} ({d_label})", fontsize=8)
    ax.set_xticks([-2, -1, 0, 1, 2])
    return True
