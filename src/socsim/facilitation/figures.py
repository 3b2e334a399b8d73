"""Figures of the facilitation study (paper 000, Figs. 3-6), seaborn, PNG + PDF, drawn from the
analysis's plot tables (socsim.io.figures.panels): each panel's rows, its note (worded by the
analysis: flags of its inputs and its n) and why it has no data. Nothing here decides what a panel says."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from socsim.io.figures import no_data, note, save  # noqa: E402
from socsim.io.report import Panel  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")

Panels = Mapping[str, Panel]
LEVEL_TITLES = {  # Fig. 3: one panel per test level, each naming its unit
    "rating": "rating rows (the paper's test, pseudo-replicated)",
    "comment": "comments (each comment's mean over its annotators)",
    "discussion": "discussions (each discussion's mean toxicity)",
}


def all_figures(plots: Mapping[str, Panels], out_dir: Path) -> list[Path]:
    """Figs. 3-6 from their plot tables' panels (figure name -> its panels)."""
    return [
        *fig3_pairwise(plots["fig3_pairwise_toxicity"], out_dir),
        *fig4_interventions(plots["fig4_interventions"], out_dir),
        *fig5_diversity(plots["fig5_diversity"], out_dir),
        *fig6_troll_toxicity(plots["fig6_nontroll_toxicity"], out_dir),
    ]


def fig3_pairwise(panels: Panels, out_dir: Path) -> list[Path]:
    """Difference of mean toxicity, row strategy minus column strategy, one panel per test level
    (rating rows as units, as the paper; comments; discussions), each cell labelled with its stars
    (Student t-tests, Holm-adjusted p within the panel, only where the level carries a verdict)."""
    names = sorted({s for p in panels.values() for s in p.data["row"]} if panels else set())
    n = max(len(names), 1)
    fig, axes = plt.subplots(1, len(panels), figsize=(len(panels) * (1.2 * n + 2.5), 1.0 * n + 2.8), squeeze=False)
    for k, (ax, (level, p)) in enumerate(zip(axes[0], panels.items())):
        diff = pd.DataFrame(np.nan, index=names, columns=names)
        annot = pd.DataFrame("", index=names, columns=names)
        for _, r in p.data.iterrows():
            diff.loc[r["row"], r["column"]] = r["diff"]
            annot.loc[r["row"], r["column"]] = r["label"]
        if p.no_data:
            no_data(ax, p.no_data)
        else:
            lim = float(np.nanmax(np.abs(diff.to_numpy()))) or 1.0
            sns.heatmap(
                diff,
                annot=annot,
                fmt="",
                cmap="coolwarm",
                center=0,
                vmin=-lim,
                vmax=lim,
                ax=ax,
                cbar_kws={"label": "toxicity difference (row - column)"},
            )
        ax.grid(False)
        ax.set_title(f"({'abc'[k]}) {LEVEL_TITLES[level]}", fontsize=9)
        note(ax, p.note)
    fig.suptitle(
        "Fig. 3: pairwise differences in toxicity between strategies\n"
        "stars: two-sample Student t-test, Holm-adjusted p within each panel "
        "(. <0.1, * <0.05, ** <0.01, *** <0.001)",
        fontsize=10,
    )
    return save(fig, out_dir, "fig3_pairwise_toxicity")


def fig4_interventions(panels: Panels, out_dir: Path) -> list[Path]:
    (p,) = panels.values()
    fig, ax = plt.subplots(figsize=(7, 4))
    if p.no_data:
        no_data(ax, p.no_data)
    else:
        sns.histplot(data=p.data, x="interventions", hue="strategy", multiple="dodge", discrete=True, shrink=0.8, ax=ax)
        note(ax, p.note)
    ax.set(title="Fig. 4: facilitator interventions per discussion", xlabel="interventions", ylabel="discussions")
    return save(fig, out_dir, "fig4_interventions")


def fig5_diversity(panels: Panels, out_dir: Path) -> list[Path]:
    """(a) diversity per model (main study); (b) turn taking and (c) prompt ablations against the
    main-study cell of the ablations' own model and strategy (the caption's baseline); groups on the
    x axis in the order of their `x`, and the caption says whether human discussions are drawn."""
    caption = panels["caption"].data.iloc[0]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6), sharey=True)
    np.random.seed(0)  # seaborn's strip jitter draws from numpy's global generator: same figure every run
    for ax, (title, p) in zip(axes, ((name, p) for name, p in panels.items() if name != "caption")):
        if p.no_data:
            no_data(ax, p.no_data)
        else:
            data = p.data
            order = data.drop_duplicates("group").sort_values("x")["group"].tolist()
            sns.boxplot(data=data, x="group", y="diversity", ax=ax, color="lightgray", showfliers=False, order=order)
            sns.stripplot(data=data, x="group", y="diversity", ax=ax, hue="group", legend=False, size=5, order=order)
            note(ax, p.note)
        ax.set(
            title=title if title == "(a) model" else f"{title}\nbaseline: {caption['baseline']}",
            xlabel="",
            ylabel="diversity (1 - mean ROUGE-L)",
        )
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle("Fig. 5: diversity of discussions")
    color = "black" if caption["human"] else "darkred"
    fig.supxlabel(caption["human_note"], x=0.01, ha="left", fontsize=8, color=color)  # under the panels' notes
    return save(fig, out_dir, "fig5_diversity")


def fig6_troll_toxicity(panels: Panels, out_dir: Path) -> list[Path]:
    """Proportion of non-troll comments at each toxicity level, within each group: the basic-prompt
    ablation and the main-study cell of the same model and strategy, with and without trolls;
    n per group in the legend."""
    (p,) = panels.values()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if p.no_data:
        no_data(ax, p.no_data)
        subtitle = "no data"
    else:
        data = p.data
        order = sorted(data["group"].unique())
        sns.barplot(
            data=data, x="toxicity_level", y="proportion", hue="group", hue_order=order, ax=ax, order=[1, 2, 3, 4, 5]
        )
        ax.legend(title="non-troll comments", fontsize=7, title_fontsize=8)
        subtitle = (
            f"{data['model'].iloc[0]}, {data['strategy'].iloc[0]}: basic-prompt ablation vs the main study's cell"
        )
        note(ax, p.note)
    ax.set(
        title=f"Fig. 6: toxicity of non-troll comments with and without trolls\n{subtitle}",
        xlabel="toxicity (mean over annotators, rounded)",
        ylabel="proportion within group",
    )
    return save(fig, out_dir, "fig6_nontroll_toxicity")
