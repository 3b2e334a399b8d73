"""Figures of the opinion-dynamics study (PNG + PDF): Figs. 4-6's trajectories, final
distributions, and B and D by condition beside the numeric baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from socsim.io.figures import save  # sets the Agg backend

COLOURS = {2: "#0066FF", 1: "#66C2FF", 0: "#999999", -1: "#FF8080", -2: "#E60000"}  # by initial opinion
BIASES = ["none", "weak", "strong"]


def _no_data(ax: Any, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9)


def _trajectory(ax: Any, sim: pd.DataFrame, setup: dict[str, Any], title: str) -> None:
    """One step line per agent (its value changes only at its reviews), coloured by its initial
    opinion, offset by 0.03 x agent index."""
    if sim.empty:
        _no_data(ax)
    for agent, g in sim.groupby("agent", sort=True):
        g = g.sort_values("t")
        init = setup["initial"][agent]
        ax.step(
            g.t, g.opinion.astype(float) + 0.03 * agent, where="post", lw=1, color=COLOURS.get(init, "black"), alpha=0.9
        )
    ax.set_ylim(-2.3, 2.6)
    ax.set_yticks([-2, -1, 0, 1, 2])
    ax.set_title(title, fontsize=8)


def trajectory_figures(setups: pd.DataFrame, traj: pd.DataFrame, out: Path) -> list[str]:
    names = []
    by_sim = {k: g for k, g in traj.groupby("sim_id", sort=False)}
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
            len(conds), len(framings), figsize=(4 * len(framings), 2.4 * len(conds)), squeeze=False, sharey=True
        )
        for i, c in enumerate(conds):
            for j, f in enumerate(framings):
                s = g[(g.condition == c) & (g.framing == f)].iloc[0].to_dict()
                sim = by_sim[s["sim_id"]]
                sim = sim[sim.source == "classified"]
                ax = axes[i][j]
                if sim.empty:
                    _no_data(ax)
                for agent, a in sim.groupby("agent"):
                    init = s["initial"][agent]
                    ax.plot(a.t, a.opinion + 0.03 * agent, "o", ms=3, color=COLOURS.get(init, "black"))
                ax.set_ylim(-2.3, 2.6)
                ax.set_yticks([-2, -1, 0, 1, 2])
                ax.set_title(f"{c.replace('_', ' ')}, {f} framing", fontsize=8)
        fig.suptitle(f"Controls (reports without interaction): {' / '.join(key)}", fontsize=9)
        name = "controls_" + "_".join(key)
        save(fig, out, name)
        names.append(name)
    return names


def final_distributions(ps: pd.DataFrame, traj: pd.DataFrame, setups: pd.DataFrame, out: Path) -> list[str]:
    """Histograms of the final opinions (pooled over topics), a dotted line at B, D in the title."""
    names = []
    steps = setups.set_index("sim_id").steps
    final = traj[traj.t == traj.sim_id.map(steps)]
    main = ps[(ps.condition == "main") & (ps.init == "uniform")]
    for key, g in main.groupby(["model", "memory", "topology"], sort=True):
        biases = [b for b in BIASES if b in set(g.bias)]
        framings = sorted(set(g.framing))
        fig, axes = plt.subplots(
            len(biases), len(framings), figsize=(3.5 * len(framings), 2.3 * len(biases)), squeeze=False, sharex=True
        )
        for i, b in enumerate(biases):
            for j, f in enumerate(framings):
                ax = axes[i][j]
                sims = g[(g.bias == b) & (g.framing == f)].sim_id
                vals = final[final.sim_id.isin(sims)].opinion.dropna().to_numpy(dtype=float)
                if vals.size == 0:
                    _no_data(ax)
                    continue
                ax.hist(vals, bins=np.arange(-2.5, 3.0, 1.0), color="#66C2FF", edgecolor="black")
                ax.axvline(vals.mean(), ls=":", color="black")
                ax.set_title(f"{f}, {b}: B = {vals.mean():.2f}, D = {vals.std():.2f} (pooled, pop. SD)", fontsize=8)
                ax.set_xticks([-2, -1, 0, 1, 2])
        fig.suptitle(f"Final opinions at t = T: {' / '.join(key)} (pooled over topics)", fontsize=9)
        name = "final_distribution_" + "_".join(key)
        save(fig, out, name)
        names.append(name)
    return names


def bias_diversity_figure(
    t1: pd.DataFrame, baseline: pd.DataFrame, controls: pd.DataFrame, out: Path, d_label: str
) -> list[str]:
    """B and D (mean +- SE over topics) by condition, with the numeric baselines and the controls."""
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
        fig, axes = plt.subplots(1, 2, figsize=(max(6, 0.7 * len(g) + 3) * 1.6, 3.6))
        for ax, col in zip(axes, ("B", "D")):
            ax.errorbar(x, g[col], yerr=g[f"{col}_se"].astype(float).fillna(0), fmt="o", color="black", label="LLM")
            for kind, marker in (("deffuant", "s"), ("degroot", "^")):
                b = baseline[(baseline.run == kind) & (baseline.model == model)]
                m = g.merge(
                    b, on=["model", "topology", "init", "memory", "framing", "bias"], how="left", suffixes=("", "_b")
                )
                ax.plot(x, m[f"{col}_b"], marker, mfc="none", label=kind)
            for k, (cond, c) in enumerate(
                controls[controls.model == model].groupby(["condition", "framing"], sort=True)
            ):
                ax.axhline(
                    c[col].mean(), ls="--", lw=0.8, color=f"C{k + 3}", label=f"{cond[0].replace('_', ' ')} ({cond[1]})"
                )
            ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
            ax.set_title({"B": "bias B (mean final opinion)", "D": f"diversity D ({d_label})"}[col], fontsize=9)
            ax.axhline(0, color="grey", lw=0.5)
        axes[1].legend(fontsize=6, loc="best")
        fig.suptitle(f"B and D by condition ({model}); error bars: SE over topics", fontsize=9)
        name = f"bias_diversity_{model}"
        save(fig, out, name)
        names.append(name)
    return names
