"""Figures of the DEBATE study (PNG + PDF): Fig. 2 (group-level tweet stance and opinion, mean and
SD per group, humans vs twins), Fig. 2's effect sizes (d_z, ours beside the paper's), Fig. 3
(individual change against the initial stance and the partner difference, with the fitted line and its
band that the analysis computed), and the utterance metrics by mode.

Every figure draws its plot table (the analysis' plot_<figure>, socsim.debate.analysis.plots), read
as panels (socsim.io.figures.panels): each panel's rows, its note (n, missing values and the flags of
its own inputs, worded by the analysis) and why it has no data; a cell without data is marked, never
drawn through. Figures import nothing from the analysis.

Sect. 6's plot tables hold every agent model's panels: the first model's under their own names, another's
as "<model>: <panel>" (the analysis' plots.panel_name); each model gets its figures, the first model's
under the names above, another's with "_<model>" added (by_model)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from socsim.debate.schemas import CHANGE_TESTS, METRICS, OUTCOMES, PREDICTORS, SOURCES, STEPS
from socsim.io.figures import no_data, note, save  # sets the Agg backend
from socsim.io.report import Panel

COLOURS = {"human": "#444444", "llm": "#E07020", "paper": "#3070B0"}

Plot = Mapping[str, Panel]  # a figure's panels by name (socsim.io.figures.panels)


def _na(ax: Axes, x: float, text: str) -> None:
    """No bar: says n/a at the foot of the panel."""
    ax.text(x, 0.02, text, ha="center", va="bottom", fontsize=6, color="gray", transform=ax.get_xaxis_transform())


def by_model(plot: Plot) -> dict[str, dict[str, Panel]]:
    """A Sect. 6 figure's panels per agent model ("" for the first model's, whose panels have no prefix),
    each under its own panel name."""
    out: dict[str, dict[str, Panel]] = {}
    for name, p in plot.items():
        model, _, rest = name.rpartition(": ")
        out.setdefault(model, {})[rest] = p
    return out


def _suffixed(name: str, model: str) -> str:
    """A figure's file name for `model` ("" for the first model's: `name`)."""
    return f"{name}_{re.sub(r'[^A-Za-z0-9._-]+', '_', model)}" if model else name


def _of(model: str) -> str:
    return f", twins: {model}" if model else ""


def fig2(plot: Plot, out: Path, model: str = "") -> str:
    """Mean over groups (± SE) of each group's mean and SD per step; a source without data at a step
    has no point there and no line through it. Each group's statistics at every step of a panel are
    over the same members (those with every step: paired); the panel says which values were missing
    ("o_final missing for 2 of 4 twins")."""
    fig, axes = plt.subplots(2, 2, figsize=(8, 6.5))
    for j, (what, qs) in enumerate(STEPS.items()):
        for i, stat in enumerate(("mean", "sd")):
            ax, p = axes[i][j], plot[f"{what} {stat}"]
            for source in SOURCES:
                s = p.data[p.data.source == source] if len(p.data) else p.data
                if not len(s):
                    continue
                ax.errorbar(
                    range(len(qs)),
                    s["mean"].to_numpy(),  # NaN at a step without data: the line breaks there
                    yerr=s["se"].to_numpy(),  # NaN with one group: no error bar
                    marker="o",
                    capsize=3,
                    color=COLOURS[source],
                    label=source,
                )
            if p.no_data:
                no_data(ax, p.no_data)
            else:
                ax.set_xticks(range(len(qs)), qs)
                ax.legend(fontsize=7, loc="lower right")
            ax.set_title(f"{what}: group {stat} (mean over groups ± SE)", fontsize=8)
            note(ax, list(p.note))
    fig.suptitle(
        f"Fig. 2: group-level tweet stance and opinion, humans vs twins (Depth, Mode 3{_of(model)})", fontsize=9
    )
    name = _suffixed("fig2_group_level", model)
    save(fig, out, name)
    return name


def fig2_effect_sizes(plot: Plot, out: Path, model: str = "") -> str:
    """Fig. 2's tests as effect sizes d_z = t / sqrt(G), ours beside the paper's: t grows with the
    number of groups, d_z does not. A missing value has no bar and says n/a. Each panel says that the
    twins' bars start from the humans' round-1 tweet / initial opinion (the paper's comparison, which
    carries no verdict; the claims are judged in analysis/sect6_model_written)."""
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5))
    x = np.arange(len(CHANGE_TESTS))
    drawn: set[str] = set()  # the legend lists what some panel draws
    for ax, (q, p) in zip(axes.flat, plot.items()):
        for k, (col, who) in enumerate((("d_z", "ours"), ("paper_d_z", "paper"))):
            pos = x + (k - 0.5) * 0.38
            vals = p.data[col].astype(float).to_numpy()
            ok = np.isfinite(vals)
            if ok.any():
                drawn.add(who)
                ax.bar(pos[ok], vals[ok], width=0.36, color=COLOURS["llm" if who == "ours" else "paper"], label=who)
            for at in pos[~ok]:
                _na(ax, at, f"{who}: n/a")
        ax.axhline(0, color="black", lw=0.5)
        ax.set_xticks(x, ["twins", "humans", "twins - humans"], fontsize=7)
        ax.set_ylabel("d_z (change / SD of changes)", fontsize=7)
        ax.set_title(f"{q}: change", fontsize=8)
        ax.set_xlim(-0.6, len(CHANGE_TESTS) - 0.4)
        note(ax, list(p.note))
    handles = [Patch(color=COLOURS[c], label=who) for c, who in (("llm", "ours"), ("paper", "paper")) if who in drawn]
    if handles:
        fig.legend(handles=handles, loc="upper right", fontsize=7)
    fig.suptitle(
        f"Fig. 2 as effect sizes: d_z = t / sqrt(groups), ours vs the paper's (Depth, Mode 3{_of(model)})", fontsize=9
    )
    name = _suffixed("fig2_effect_sizes", model)
    save(fig, out, name)
    return name


def fig3(plot: Plot, out: Path, model: str = "") -> str:
    """Change against the own initial value and against the round-1 partner's minus one's own,
    humans and twins in one panel each: each source's members (rows of kind "member") and its
    least-squares line with its 95 % band (kind "fit"), as the analysis computed them."""
    fig, axes = plt.subplots(2, 3, figsize=(11, 7))
    for i, (what, (start, end)) in enumerate(OUTCOMES.items()):
        for j, predictor in enumerate(PREDICTORS):
            ax, p = axes[i][j], plot[f"{what} {predictor}"]
            for source in SOURCES:
                s = p.data[p.data.source == source] if len(p.data) else p.data
                if not len(s):
                    continue
                pts, line = s[s.kind == "member"], s[s.kind == "fit"]
                xs, ys = pts["x"].to_numpy(dtype=float), pts["y"].to_numpy(dtype=float)
                ax.scatter(xs, ys, s=12, color=COLOURS[source], label=source, alpha=0.7)
                if len(line):  # the least-squares line and its 95 % band
                    grid, fit, lo, hi = (line[c].to_numpy(dtype=float) for c in ("x", "y", "lo", "hi"))
                    ax.plot(grid, fit, color=COLOURS[source], lw=1)
                    ax.fill_between(grid, lo, hi, color=COLOURS[source], alpha=0.15)
            if p.no_data:
                no_data(ax, p.no_data)
            else:
                ax.legend(fontsize=7, loc="lower right")
            ax.set_xlabel(predictor, fontsize=8)
            ax.set_ylabel(f"{what} change ({end} - {start})", fontsize=8)
            note(ax, list(p.note))
    table = _suffixed("individual_level", model)
    fig.suptitle(f"Fig. 3: individual change (Depth, Mode 3{_of(model)}); Pearson r in analysis/{table}", fontsize=9)
    name = _suffixed("fig3_individual", model)
    save(fig, out, name)
    return name


def metrics_figure(plot: Plot, name: str, out: Path) -> str:
    """One panel per metric: a bar per model and mode; a cell without a value says n/a."""
    fig, axes = plt.subplots(2, 3, figsize=(13, 8))
    rows = next((p.data for p in plot.values() if not p.no_data), None)
    models = list(dict.fromkeys(rows.model)) if rows is not None else []
    width = 0.8 / max(len(models), 1)
    for ax, c in zip(axes.flat, METRICS):
        p = plot[c]
        if p.no_data:
            no_data(ax, p.no_data)
        for k, model in enumerate([] if p.no_data else models):
            g = p.data[p.data.model == model]
            pos = g["mode"].to_numpy(dtype=float) + width * k
            vals = g["value"].astype(float).to_numpy()
            ok = np.isfinite(vals)
            if ok.any():
                ax.bar(pos[ok], vals[ok], width=width, label=model)
            for at in pos[~ok]:
                _na(ax, at, "n/a")
        if not p.no_data:
            ax.set_xticks(sorted({int(m) for m in p.data["mode"]}))
            ax.set_xlabel("mode", fontsize=8)
            ax.legend(fontsize=6, loc="lower right")
        ax.set_title(c, fontsize=8)
        note(ax, list(p.note))
    fig.suptitle(f"{name}: utterance metrics by mode (original memory)", fontsize=9)
    save(fig, out, f"{name}_metrics")
    return f"{name}_metrics"


def all_figures(plots: Mapping[str, Plot], out: Path) -> list[str]:
    """Every figure whose plot table has panels (`plots`: figure -> its panels; the metrics figures of a
    topic set that did not run have none); Sect. 6's figures once per agent model (by_model)."""
    names = []
    for draw, figure in (
        (fig2, "fig2_group_level"),
        (fig2_effect_sizes, "fig2_effect_sizes"),
        (fig3, "fig3_individual"),
    ):
        names += [draw(panels, out, model) for model, panels in by_model(plots[figure]).items()]
    for table in ("table3", "table9"):
        if plots[f"{table}_metrics"]:
            names.append(metrics_figure(plots[f"{table}_metrics"], table, out))
    return names
