"""Figures of the facilitation study (paper 000, Figs. 3-6), seaborn, PNG + PDF."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from socsim.facilitation.analysis import LEVELS, MAIN, MIN_DISCUSSIONS, UNITS  # noqa: E402
from socsim.io.figures import n_range, no_data, note, save  # noqa: E402
from socsim.io.report import read  # noqa: E402
from socsim.stats.regression import stars  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")


STAR_P = "p_holm"  # the stars of Fig. 3 show Holm-adjusted p (within each level)
LEVEL_TITLES = {  # one panel per test level, each naming its unit
    "rating": "rating rows (the paper's test, pseudo-replicated)",
    "comment": "comments (each comment's mean over its annotators)",
    "discussion": "discussions (each discussion's mean toxicity)",
}


def flags_for(summary: dict[str, Any], *places: str) -> list[str]:
    """The messages of the run's flags that concern any of `places` (summary.json's `where`)."""
    return [f["message"] for f in summary.get("degeneracy_flags", []) if set(places) & set(f.get("where", []))]


def all_figures(analysis: Path, out_dir: Path) -> list[Path]:
    """Figs. 3-6 from the analysis's Parquet tables, each panel noting the flags of its inputs."""
    summary = json.loads((analysis / "summary.json").read_text())
    return [
        *fig3_pairwise(
            read(analysis, "pairwise_ttests"),
            out_dir,
            {lv: flags_for(summary, "fig3", f"fig3 ({lv})") for lv in LEVELS},
        ),
        *fig4_interventions(read(analysis, "interventions"), out_dir),
        *fig5_diversity(read(analysis, "diversity"), out_dir),
        *fig6_troll_toxicity(read(analysis, "nontroll_toxicity_groups"), out_dir, flags_for(summary, "fig6")),
    ]


def fig3_pairwise(pairwise: pd.DataFrame, out_dir: Path, flags: dict[str, list[str]] | None = None) -> list[Path]:
    """Difference of mean toxicity, row strategy minus column strategy, one panel per test level
    (rating rows as units, as the paper; comments; discussions). Stars: Student t-tests, Holm-adjusted
    p within the panel, only where the level carries a verdict (discussions); a degenerate input shows
    no stars, and each panel notes its flags and n."""
    pairwise = pairwise.assign(verdict=pairwise["verdict"].fillna(""))
    levels = [lv for lv in LEVEL_TITLES if lv in set(pairwise["level"])] or ["comment"]
    names = sorted(set(pairwise["strategy_a"]) | set(pairwise["strategy_b"]))
    n = max(len(names), 1)
    fig, axes = plt.subplots(1, len(levels), figsize=(len(levels) * (1.2 * n + 2.5), 1.0 * n + 2.8), squeeze=False)
    for k, (ax, level) in enumerate(zip(axes[0], levels)):
        pw = pairwise[pairwise["level"] == level]
        diff = pd.DataFrame(np.nan, index=names, columns=names)
        annot = pd.DataFrame("", index=names, columns=names)
        for _, r in pw.iterrows():
            for a, b, sign in ((r["strategy_a"], r["strategy_b"], 1), (r["strategy_b"], r["strategy_a"], -1)):
                diff.loc[a, b] = sign * r["diff"]
                mark = "" if r["verdict"] else stars(r[STAR_P])
                annot.loc[a, b] = f"{sign * r['diff']:.2f}{mark}"
        if not len(pw) or not diff.notna().any().any():
            no_data(ax, "no pair of strategies with ratings")
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
        units = UNITS[level]
        counts = {**dict(zip(pw["strategy_a"], pw["n_a"])), **dict(zip(pw["strategy_b"], pw["n_b"]))}
        verdicts = sorted({v for v in pw["verdict"] if v})
        lines = [n_range(list(counts.values()), f"{units} per strategy") if counts else ""]
        lines += [f"no stars: {v}" for v in verdicts[:2]] + (
            [f"(+{len(verdicts) - 2} more)"] if len(verdicts) > 2 else []
        )
        lines += [f for f in (flags or {}).get(level, []) if not any(f in v for v in verdicts)]
        note(ax, lines, where="below")
    fig.subplots_adjust(wspace=0.6)  # room for the strategy names between a panel and the last one's colour bar
    fig.suptitle(
        "Fig. 3: pairwise differences in toxicity between strategies\n"
        "stars: two-sample Student t-test, Holm-adjusted p within each panel "
        "(. <0.1, * <0.05, ** <0.01, *** <0.001)",
        fontsize=10,
        y=1.06,
    )
    return save(fig, out_dir, "fig3_pairwise_toxicity")


def fig4_interventions(interv: pd.DataFrame, out_dir: Path) -> list[Path]:
    data = interv[interv["condition"] == MAIN]
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(data):
        sns.histplot(data=data, x="interventions", hue="strategy", multiple="dodge", discrete=True, shrink=0.8, ax=ax)
        counts = data.groupby("strategy").size()
        note(
            ax,
            [
                n_range(counts.tolist(), "discussions per strategy") + "; "
                f"{int(data['echoes'].sum())} echoes of earlier comments not counted as interventions"
            ],
        )
    else:
        no_data(ax, "no facilitator turns in the main study")
    ax.set(title="Fig. 4: facilitator interventions per discussion", xlabel="interventions", ylabel="discussions")
    return save(fig, out_dir, "fig4_interventions")


def ablation_baseline(div: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The main-study discussions the ablations are compared with: same model and strategy as the
    ablation rows (not the alphabetically first model), and a label naming them."""
    synth = div[div["source"] == "synthetic"]
    main, abl = synth[synth["condition"] == MAIN], synth[synth["condition"] != MAIN]
    if not len(abl):
        return main.iloc[:0], "no ablation discussions"
    model, strategy = abl["model"].iloc[0], abl["strategy"].iloc[0]
    return main[(main["model"] == model) & (main["strategy"] == strategy)], f"main study ({model}, {strategy})"


def human_note(div: pd.DataFrame) -> str:
    if (div["source"] == "human").any():
        return "Human: the discussions of facilitation.analysis.human_reference"
    return (
        "No human reference: facilitation.analysis.human_reference is not set, so no human discussions "
        "are drawn for comparison."
    )


def fig5_diversity(div: pd.DataFrame, out_dir: Path) -> list[Path]:
    """(a) diversity per model (main study); (b) turn taking and (c) prompt ablations against the
    main-study cell of the ablations' own model and strategy (taken from the ablation rows)."""
    human = div[div["source"] == "human"].assign(group="Human")
    synth = div[div["source"] == "synthetic"]
    main = synth[synth["condition"] == MAIN]
    base, base_label = ablation_baseline(div)
    panels = {
        "(a) model": main.assign(group=main["model"]),
        "(b) turn taking": pd.concat(
            [
                base.assign(group=base["turn_taking"]),
                synth[synth["condition"].str.startswith("tt_")].pipe(lambda d: d.assign(group=d["turn_taking"])),
            ]
        ),
        "(c) prompts": pd.concat(
            [
                base.assign(group="full prompt"),
                synth[synth["condition"].isin(["no_sdb", "no_roles", "basic_instructions"])].pipe(
                    lambda d: d.assign(group=d["condition"])
                ),
            ]
        ),
    }
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6), sharey=True)
    np.random.seed(0)  # seaborn's strip jitter draws from numpy's global generator: same figure every run
    for ax, (title, data) in zip(axes, panels.items()):
        data = pd.concat([data, human], ignore_index=True).dropna(subset=["diversity"])
        if len(data):
            order = sorted(set(data["group"]) - {"Human"}) + (["Human"] if len(human) else [])
            sns.boxplot(data=data, x="group", y="diversity", ax=ax, color="lightgray", showfliers=False, order=order)
            sns.stripplot(data=data, x="group", y="diversity", ax=ax, hue="group", legend=False, size=5, order=order)
            counts = data.groupby("group").size()
            few = [f"{g}: n = {counts[g]}" for g in order if counts[g] < MIN_DISCUSSIONS]
            if few:
                note(ax, [f"fewer than {MIN_DISCUSSIONS} discussions: " + ", ".join(few)])
        else:
            no_data(ax, "no discussions in this panel")
        ax.set(
            title=title if title == "(a) model" else f"{title}\nbaseline: {base_label}",
            xlabel="",
            ylabel="diversity (1 - mean ROUGE-L)",
        )
        ax.tick_params(axis="x", rotation=30)
    hnote = human_note(div)
    fig.suptitle("Fig. 5: diversity of discussions", y=1.04)
    fig.text(0.01, 0.005, hnote, fontsize=8, va="bottom", color="black" if len(human) else "darkred")
    fig.subplots_adjust(bottom=0.3)
    return save(fig, out_dir, "fig5_diversity")


def fig6_troll_toxicity(groups: pd.DataFrame, out_dir: Path, flags: list[str] | None = None) -> list[Path]:
    """Proportion of non-troll comments at each toxicity level, within each group: the basic-prompt
    ablation and the main-study cell of the same model and strategy, with and without trolls;
    n per group in the legend."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if len(groups):
        model, strategy = groups["model"].iloc[0], groups["strategy"].iloc[0]
        data = groups[(groups["model"] == model) & (groups["strategy"] == strategy)]
        data = data.assign(group=data["prompt"] + ", " + data["trolls"] + " (n = " + data["n"].astype(str) + ")")
        order = sorted(data["group"].unique())
        sns.barplot(
            data=data, x="toxicity_level", y="proportion", hue="group", hue_order=order, ax=ax, order=[1, 2, 3, 4, 5]
        )
        ax.legend(title="non-troll comments", fontsize=7, title_fontsize=8)
        subtitle = f"{model}, {strategy}: basic-prompt ablation vs the main study's cell"
        cells = {(p, t) for p, t in zip(data["prompt"], data["trolls"])}
        missing = [
            f"{p}, {t}"
            for p in ("instruction prompt", "basic prompt")
            for t in ("with trolls", "without trolls")
            if (p, t) not in cells
        ]
        lines = ["n = non-troll comments per group (legend)"]
        lines += ["no data: " + "; ".join(missing)] if missing else []
        note(ax, [*lines, *(flags or [])], where="top")
    else:
        no_data(ax, "no basic-prompt ablation in the data: nothing comparable to plot")
        subtitle = "no data"
    ax.set(
        title=f"Fig. 6: toxicity of non-troll comments with and without trolls\n{subtitle}",
        xlabel="toxicity (mean over annotators, rounded)",
        ylabel="proportion within group",
    )
    return save(fig, out_dir, "fig6_nontroll_toxicity")
