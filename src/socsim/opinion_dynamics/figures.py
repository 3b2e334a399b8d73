"""Figures of the opinion-dynamics study (PNG + PDF): Figs. 4-6's trajectories, final
distributions, and B and D by condition beside the numeric baselines.

They draw the analysis's plot tables (`plot_<figure>`, read with socsim.io.figures.panels; how a
panel's name says where it sits: socsim.opinion_dynamics.plot_layout) and import nothing from the
analysis: every panel's note (its inputs' flags and, for the main runs, the share of agents never
measured) is worded there, and every number a panel shows beside its data (a final distribution's B and
D) is computed there; a panel without data says why."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from socsim.io.figures import legend, no_data, note, save  # sets the Agg backend
from socsim.io.report import Panel
from socsim.opinion_dynamics.plot_layout import Where, by_figure

COLOURS = {2: "#0066FF", 1: "#66C2FF", 0: "#999999", -1: "#FF8080", -2: "#E60000"}  # by initial opinion
Panels = Mapping[str, Panel]


def draw(plots: Mapping[str, Panels], out: Path) -> list[str]:
    """Every figure, from the panels of each plot table (plot_layout.FIGURES)."""
    names = topic_final_distributions(plots["final_by_topic"], out)
    names += trajectory_figures(plots["trajectories"], out)
    names += control_figures(plots["controls"], out)
    names += final_distributions(plots["final_distribution"], out)
    return names + bias_diversity_figure(plots["bias_diversity"], out)


def _layout(cells: list[tuple[Where, Panel]]) -> tuple[list[str], list[str]]:
    """The rows and columns of a figure's panels, in the order written."""
    rows = list(dict.fromkeys(w.row for w, _ in cells))
    cols = list(dict.fromkeys(w.column for w, _ in cells))
    return rows, cols


def _trajectory(ax: Any, p: Panel, title: str) -> None:
    """One step line per agent (its value changes only at its reviews), coloured by its initial
    opinion, offset by 0.03 x agent index."""
    if p.no_data:
        no_data(ax, p.no_data)
        ax.set_title(title, fontsize=8)
        return
    for agent, g in p.data.groupby("agent", sort=True):
        g = g.sort_values("t")
        init = g.initial.iloc[0]
        ax.step(
            g.t, g.opinion.astype(float) + 0.03 * agent, where="post", lw=1, color=COLOURS.get(init, "black"), alpha=0.9
        )
    ax.set_ylim(-2.3, 2.6)
    ax.set_yticks([-2, -1, 0, 1, 2])
    ax.set_title(title, fontsize=8)


def trajectory_figures(panels: Panels, out: Path) -> list[str]:
    """Per (model, topic, memory, start, topology), repetition 0: rows = bias, columns = framing;
    each panel notes its simulation's flags and agents never measured."""
    names = []
    for name, cells in by_figure(panels).items():
        biases, framings = _layout(cells)
        fig, axes = plt.subplots(
            len(biases),
            len(framings),
            figsize=(4 * len(framings), 2.4 * len(biases)),
            squeeze=False,
            sharex=True,
            sharey=True,
        )
        for w, p in cells:
            ax = axes[biases.index(w.row)][framings.index(w.column)]
            _trajectory(ax, p, f"{w.column} framing, {w.row} bias")
            note(ax, list(p.note))
        for ax in axes[-1]:
            ax.set_xlabel("time step t")
        fig.suptitle(f"Opinion trajectories: {cells[0][0].title} (colour = initial opinion)", fontsize=9)
        save(fig, out, name)
        names.append(name)
    return names


def control_figures(panels: Panels, out: Path) -> list[str]:
    """Per (model, topic): rows = control, columns = framing; each classified report a point."""
    names = []
    for name, cells in by_figure(panels).items():
        conds, framings = _layout(cells)
        fig, axes = plt.subplots(
            len(conds),
            len(framings),
            figsize=(4 * len(framings), 2.6 * len(conds)),
            squeeze=False,
            layout="constrained",
        )
        for w, p in cells:
            ax = axes[conds.index(w.row)][framings.index(w.column)]
            ax.set_title(f"{w.row.replace('_', ' ')}, {w.column} framing", fontsize=8)
            if p.no_data:
                no_data(ax, p.no_data)
                continue
            sim = p.data
            for agent, a in sim.groupby("agent"):
                init = a.initial.iloc[0]
                ax.plot(a.t, a.opinion + 0.03 * agent, "o", ms=3, color=COLOURS.get(init, "black"))
            ax.set_ylim(-2.3, 2.6)
            ax.set_yticks([-2, -1, 0, 1, 2])
            ax.set_xlim(0.5, float(sim.t.max()) + 0.5)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            note(ax, list(p.note))
        fig.suptitle(f"Controls (reports without interaction): {cells[0][0].title}", fontsize=9)
        save(fig, out, name)
        names.append(name)
    return names


def final_distributions(panels: Panels, out: Path) -> list[str]:
    """Histograms of the final opinions (pooled over topics), a dotted line at B, D in the title;
    the agents never measured (their final opinion is their initial one) stacked apart, in grey.
    Each panel (a Table 1 cell) notes the degeneracy of its measured agents' final opinions."""
    return _final_figures(panels, out, "Final opinions at t = T: {} (pooled over topics)", "pooled, pop. SD")


def topic_final_distributions(panels: Panels, out: Path) -> list[str]:
    """Fig. 4's final distributions per topic: per (model, topic, memory, start, topology, world), rows =
    bias, columns = framing; each panel a histogram of the final opinions of that condition's
    simulations (pooled over repetitions), the agents never measured stacked apart in grey, B dotted,
    D (population SD) in the title, and the panel's flags and never-measured share."""
    return _final_figures(panels, out, "Final opinions at t = T per topic (Fig. 4): {}", "pop. SD")


def _final_figures(panels: Panels, out: Path, title: str, d_label: str) -> list[str]:
    names = []
    for name, cells in by_figure(panels).items():
        biases, framings = _layout(cells)
        fig, axes = plt.subplots(
            len(biases), len(framings), figsize=(3.5 * len(framings), 2.6 * len(biases)), squeeze=False, sharex=True
        )
        for w, p in cells:
            ax = axes[biases.index(w.row)][framings.index(w.column)]
            if _final_histogram(ax, p, w.column, w.row, d_label):
                note(ax, list(p.note))
        axes[0][-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the panels: no bar under it
        fig.suptitle(title.format(cells[0][0].title), fontsize=9)
        save(fig, out, name)
        names.append(name)
    return names


def _final_histogram(ax: Any, p: Panel, framing: str, bias: str, d_label: str) -> bool:
    """One panel of final opinions: measured agents stacked over the never-measured ones (grey), B dotted,
    B and D (the panel's, from its plot table) in the title; False (and the panel marked) where the cell did
    not run."""
    if p.no_data:
        no_data(ax, p.no_data)
        return False
    cell = p.data
    measured = cell.measured.astype(bool)
    b, d = float(cell.B.iloc[0]), float(cell.D_pop.iloc[0])
    counts, _, _ = ax.hist(
        [cell[measured].opinion.to_numpy(dtype=float), cell[~measured].opinion.to_numpy(dtype=float)],
        bins=np.arange(-2.5, 3.0, 1.0),
        stacked=True,
        color=["#66C2FF", "#DDDDDD"],
        edgecolor="black",
        label=["measured", "never measured (initial)"],
    )
    ax.set_ylim(0, max(1.0, float(np.max(counts))) * 1.1)
    ax.axvline(b, ls=":", color="black")
    ax.set_title(f"{framing}, {bias}: B = {b:.2f}, D = {d:.2f} ({d_label})", fontsize=8)
    ax.set_xticks([-2, -1, 0, 1, 2])
    return True


def bias_diversity_figure(panels: Panels, out: Path) -> list[str]:
    """B and D (mean +- SE over topics) by condition, with the numeric baselines and the controls;
    each panel's legend lists the lines it draws (io.figures.legend), its note below it (flags, controls
    not drawn, never-measured share, topics per cell)."""
    names = []
    for name, cells in by_figure(panels).items():
        n = int((cells[0][1].data.kind == "llm").sum())
        fig, axes = plt.subplots(1, 2, figsize=(2 * max(6.0, 0.7 * n + 3), 3.6))
        for ax, (w, p) in zip(axes, cells):
            _bias_diversity_panel(ax, p.data)
            note(ax, list(p.note))
            ax.set_title(w.row, fontsize=9)
            ax.axhline(0, color="grey", lw=0.5)
            legend(ax, fontsize=6, loc="best")  # its own lines: a control not drawn on D is on B's legend only
        fig.suptitle(f"B and D by condition ({cells[0][0].title}); error bars: SE over topics", fontsize=9)
        save(fig, out, name)
        names.append(name)
    return names


def _bias_diversity_panel(ax: Any, d: pd.DataFrame) -> None:
    llm = d[d.kind == "llm"]
    x = np.arange(len(llm))
    ax.errorbar(x, llm.value.to_numpy(), yerr=llm.se.astype(float), fmt="o", color="black", label="LLM")
    for kind, marker in (("deffuant", "s"), ("degroot", "^")):
        ax.plot(x, d[d.kind == kind].value.to_numpy(), marker, mfc="none", label=kind)
    for c in d[d.kind == "control"].itertuples():
        ax.axhline(c.value, ls="--", lw=0.8, color=f"C{int(c.k) + 3}", label=c.label)
    ax.set_xticks(x, list(llm.label), rotation=60, ha="right", fontsize=7)
