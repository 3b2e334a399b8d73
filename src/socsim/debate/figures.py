"""Figures of the DEBATE study (PNG + PDF): Fig. 2 (group-level tweet stance and opinion, mean and
SD per group, humans vs twins), Fig. 3 (individual change against the initial stance and the
partner difference, Pearson r with a fitted line), and the utterance metrics by mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from socsim.io.figures import save  # sets the Agg backend

STEPS = {"tweet": ["s1", "s2", "s3"], "opinion": ["o_init", "o_final"]}
COLOURS = {"human": "#444444", "llm": "#E07020"}


def _no_data(ax: Any, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9)


def fig2(group: pd.DataFrame, out: Path) -> str:
    fig, axes = plt.subplots(2, 2, figsize=(8, 6))
    for j, (what, qs) in enumerate(STEPS.items()):
        for i, stat in enumerate(("mean", "sd")):
            ax = axes[i][j]
            g = group[group.quantity.isin(qs)]
            if g[stat].notna().sum() == 0:
                _no_data(ax)
            for source, s in g.groupby("source"):
                agg = s.groupby("quantity")[stat].agg(["mean", "std", "count"]).reindex(qs)
                se = agg["std"] / np.sqrt(agg["count"].clip(lower=1))
                ax.errorbar(
                    range(len(qs)),
                    agg["mean"],
                    yerr=se.fillna(0),
                    marker="o",
                    capsize=3,
                    color=COLOURS.get(source),
                    label=source,
                )
            ax.set_xticks(range(len(qs)), qs)
            ax.set_title(f"{what}: group {stat} (mean over groups ± SE)", fontsize=8)
    axes[0][1].legend(fontsize=7)
    fig.suptitle("Fig. 2: group-level tweet stance and opinion, humans vs twins (Depth, Mode 3)", fontsize=9)
    save(fig, out, "fig2_group_level")
    return "fig2_group_level"


def fig3(members: pd.DataFrame, out: Path) -> str:
    """Change against the own initial value and against the round-1 partner's minus one's own,
    humans and twins in one panel each, with least-squares lines and their 95 % bands."""
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.5))
    for i, (what, (start, end)) in enumerate({"tweet": ("s1", "s3"), "opinion": ("o_init", "o_final")}.items()):
        for j, predictor in enumerate(("own initial", "partner minus own", "abs partner minus own")):
            ax = axes[i][j]
            shown = 0
            for source in ("human", "llm"):
                m = members[members.source == source].reset_index(drop=True)
                own = m[start].astype(float)
                lookup = {(s, w): v for s, w, v in zip(m.session_id, m.worker_id, own)}
                other = pd.Series([lookup.get((s, p), np.nan) for s, p in zip(m.session_id, m.partner1)], dtype=float)
                x = {
                    "own initial": own,
                    "partner minus own": other - own,
                    "abs partner minus own": (other - own).abs(),
                }[predictor]
                y = m[end].astype(float) - own
                ok = x.notna() & y.notna()
                if ok.sum() < 3:
                    continue
                shown += 1
                xs, ys = x[ok].to_numpy(), y[ok].to_numpy()
                ax.scatter(xs, ys, s=12, color=COLOURS[source], label=source, alpha=0.7)
                if np.unique(xs).size > 1:
                    b, a = np.polyfit(xs, ys, 1)
                    grid = np.linspace(xs.min(), xs.max(), 30)
                    fit = a + b * grid
                    resid = ys - (a + b * xs)
                    s2 = resid.var(ddof=2) if xs.size > 2 else 0.0
                    se = np.sqrt(s2 * (1 / xs.size + (grid - xs.mean()) ** 2 / ((xs - xs.mean()) ** 2).sum()))
                    ax.plot(grid, fit, color=COLOURS[source], lw=1)
                    ax.fill_between(grid, fit - 1.96 * se, fit + 1.96 * se, color=COLOURS[source], alpha=0.15)
            if not shown:
                _no_data(ax, "fewer than 3 members with both values")
            ax.set_xlabel(predictor, fontsize=8)
            ax.set_ylabel(f"{what} change ({end} - {start})", fontsize=8)
        axes[i][0].legend(fontsize=7)
    fig.suptitle("Fig. 3: individual change (Depth, Mode 3); Pearson r in analysis/individual_level", fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig3_individual")
    return "fig3_individual"


def metrics_figure(table: pd.DataFrame, name: str, out: Path) -> str:
    cols = ["s_sem", "d_stance", "d_signed_len", "rouge_l", "r_on_topic"]
    fig, axes = plt.subplots(1, len(cols), figsize=(3 * len(cols), 3))
    for ax, c in zip(axes, cols):
        if table.empty or table[c].notna().sum() == 0:
            _no_data(ax)
        for k, (model, g) in enumerate(table.groupby("model")):
            ax.bar(
                g["mode"] + 0.8 * k / max(table.model.nunique(), 1),
                g[c],
                width=0.8 / max(table.model.nunique(), 1),
                label=model,
            )
        ax.set_title(c, fontsize=8)
        ax.set_xlabel("mode", fontsize=8)
    axes[-1].legend(fontsize=6)
    fig.suptitle(f"{name}: utterance metrics by mode (original memory)", fontsize=9)
    save(fig, out, f"{name}_metrics")
    return f"{name}_metrics"


def all_figures(analysis: Path, out: Path) -> list[str]:
    names = [fig2(pd.read_csv(analysis / "group_level.csv"), out), fig3(pd.read_csv(analysis / "members.csv"), out)]
    for name in ("table3", "table9"):
        if (analysis / f"{name}.csv").is_file():
            names.append(metrics_figure(pd.read_csv(analysis / f"{name}.csv"), name, out))
    return names
