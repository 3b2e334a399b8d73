"""Figures of the facilitation study (paper 000, Figs. 3-6), seaborn, PNG + PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from socsim.facilitation.analysis import MAIN  # noqa: E402
from socsim.io.figures import save  # noqa: E402
from socsim.stats.regression import stars  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")


def fig3_pairwise(pairwise: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Difference of mean comment toxicity, row strategy minus column strategy, with t-test stars."""
    names = sorted(set(pairwise["strategy_a"]) | set(pairwise["strategy_b"]))
    diff = pd.DataFrame(np.nan, index=names, columns=names)
    annot = pd.DataFrame("", index=names, columns=names)
    for _, r in pairwise.iterrows():
        for a, b, sign in ((r["strategy_a"], r["strategy_b"], 1), (r["strategy_b"], r["strategy_a"], -1)):
            diff.loc[a, b] = sign * r["diff"]
            annot.loc[a, b] = f"{sign * r['diff']:.2f}{stars(r['p'])}"
    fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2, 1.0 * len(names) + 1.5))
    lim = float(np.nanmax(np.abs(diff.to_numpy()))) if diff.notna().any().any() else 1.0
    sns.heatmap(diff, annot=annot, fmt="", cmap="coolwarm", center=0, vmin=-lim or -1, vmax=lim or 1, ax=ax,
                cbar_kws={"label": "toxicity difference (row - column)"})
    ax.grid(False)
    ax.set_title("Fig. 3: pairwise differences in comment toxicity\n(. p<0.1, * p<0.05, ** p<0.01, *** p<0.001)")
    return save(fig, out_dir, "fig3_pairwise_toxicity")


def fig4_interventions(interv: pd.DataFrame, out_dir: Path) -> list[Path]:
    data = interv[interv["condition"] == MAIN]
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(data):
        sns.histplot(data=data, x="interventions", hue="strategy", multiple="dodge", discrete=True, shrink=0.8, ax=ax)
    ax.set(title="Fig. 4: facilitator interventions per discussion", xlabel="interventions", ylabel="discussions")
    return save(fig, out_dir, "fig4_interventions")


def fig5_diversity(div: pd.DataFrame, ablation_strategy: str, out_dir: Path) -> list[Path]:
    human = div[div["source"] == "human"].assign(group="Human")
    synth = div[div["source"] == "synthetic"]
    main = synth[synth["condition"] == MAIN]
    first_model = main["model"].iloc[0] if len(main) else None
    base = main[(main["strategy"] == ablation_strategy) & (main["model"] == first_model)]
    panels = {
        "(a) model": main.assign(group=main["model"]),
        "(b) turn taking": pd.concat([base.assign(group=base["turn_taking"]),
                                      synth[synth["condition"].str.startswith("tt_")].pipe(
                                          lambda d: d.assign(group=d["turn_taking"]))]),
        "(c) prompts": pd.concat([base.assign(group="full prompt"),
                                  synth[synth["condition"].isin(["no_sdb", "no_roles", "basic_instructions"])]
                                  .pipe(lambda d: d.assign(group=d["condition"]))]),
    }
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), sharey=True)
    for ax, (title, data) in zip(axes, panels.items()):
        data = pd.concat([data, human], ignore_index=True)
        if len(data):
            sns.boxplot(data=data, x="group", y="diversity", ax=ax, color="lightgray", showfliers=False)
            sns.stripplot(data=data, x="group", y="diversity", ax=ax, hue="group", legend=False, size=5)
        ax.set(title=title, xlabel="", ylabel="diversity (1 - mean ROUGE-L)")
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle("Fig. 5: diversity of discussions")
    return save(fig, out_dir, "fig5_diversity")


def fig6_troll_toxicity(tt: pd.DataFrame, out_dir: Path) -> list[Path]:
    data = tt.assign(toxicity_level=tt["toxicity"].round().astype("Int64"))
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(data):
        data = data.assign(prompt=data["instructions"].map({"full": "instruction prompt", "basic": "basic prompt"}))
        sns.countplot(data=data.assign(discussion=data["trolls"] + ", " + data["prompt"]), x="toxicity_level",
                      hue="discussion", ax=ax, order=[1, 2, 3, 4, 5])
    ax.set(title="Fig. 6: toxicity of non-troll comments with and without trolls", xlabel="toxicity (rounded mean)",
           ylabel="comments")
    return save(fig, out_dir, "fig6_nontroll_toxicity")
