"""Figures of the revised study (PNG + PDF), drawn from the analysis's plot tables only: toxicity over the
turns by strategy and by model, intervention rates by model and strategy, and each claim's per-model
effect with its interval coloured by its verdict. Nothing here decides what a panel says."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from socsim.io.figures import no_data, note, save  # noqa: E402
from socsim.io.report import Panel  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")
Panels = Mapping[str, Panel]
VERDICT_COLOURS = {"yes": "#1b7837", "no": "#b2182b", "inconclusive": "#878787"}
TITLES = {
    "strategies_lower_toxicity": "strategy minus No Facilitator: mean toxicity (claimed < 0)",
    "toxicity_rises_with_turn": "No Facilitator: toxicity slope per user turn (claimed > 0)",
    "strategy_turn_interactions": "strategy minus No Facilitator: slope per user turn (claimed < 0)",
    "cannot_keep_silent": "median intervention rate minus the threshold (claimed > 0)",
    "instructions_raise_interventions": "strategy minus Minimal Instructions: intervention rate (claimed > 0)",
    "trolls_raise_toxicity": "non-troll toxicity per active troll (claimed > 0)",
}


def all_figures(plots: Mapping[str, Panels], out_dir: Path) -> list[Path]:
    return [
        *toxicity_over_turns(plots["toxicity_over_turns"], out_dir),
        *interventions(plots["interventions"], out_dir),
        *model_effects(plots["model_effects"], out_dir),
    ]


def toxicity_over_turns(panels: Panels, out_dir: Path) -> list[Path]:
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), squeeze=False)
    for ax, (name, p) in zip(axes[0], panels.items()):
        if p.no_data:
            no_data(ax, p.no_data)
        else:
            for group, g in p.data.groupby("group", sort=True):
                ax.plot(g["user_turn"], g["mean"], marker="o", ms=3, label=str(group))
                ax.fill_between(g["user_turn"], g["ci_low"], g["ci_high"], alpha=0.15)
            ax.set_xlabel("user comment (turn)")
            ax.set_ylabel("mean toxicity (Perspective API), 95% CI over discussions")
            ax.legend(fontsize=7)
        ax.set_title(f"Toxicity over the discussion, {name}")
        note(ax, p.note)
    return save(fig, out_dir, "toxicity_over_turns")


def interventions(panels: Panels, out_dir: Path) -> list[Path]:
    (p,) = panels.values()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    if p.no_data:
        no_data(ax, p.no_data)
    else:
        labels = list(dict.fromkeys(p.data["label"]))
        strategies = sorted(p.data["strategy"].unique())
        width = 0.8 / max(len(strategies), 1)
        for k, s in enumerate(strategies):
            g = p.data[p.data["strategy"] == s].set_index("label").reindex(labels)
            x = np.arange(len(labels)) + (k - (len(strategies) - 1) / 2) * width
            err = np.vstack([g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]])
            ax.bar(x, g["mean"], width, yerr=np.nan_to_num(err), capsize=2, label=s)
        ax.set_xticks(np.arange(len(labels)), labels)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("interventions / facilitator turns (per discussion)")
        ax.legend(fontsize=7, loc="lower left")
    ax.set_title("Facilitator intervention rate by model and strategy")
    note(ax, p.note)
    return save(fig, out_dir, "interventions")


def model_effects(panels: Panels, out_dir: Path) -> list[Path]:
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7.0 * cols, 5.0 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (name, p) in zip(axes.flat, panels.items()):
        if p.no_data:
            no_data(ax, p.no_data)
        else:
            d = p.data.reset_index(drop=True)
            y = np.arange(len(d))[::-1]
            for yi, r in zip(y, d.itertuples(index=False)):
                colour = VERDICT_COLOURS.get(str(r.word), "#878787")
                if np.isfinite(r.ci_low) and np.isfinite(r.ci_high):
                    ax.plot([r.ci_low, r.ci_high], [yi, yi], color=colour, lw=1.5)
                if np.isfinite(r.estimate):
                    ax.plot(r.estimate, yi, "o", color=colour, ms=4)
            ax.axvline(0, color="black", lw=0.8)
            ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.set_yticks(y, [f"{r.part} | {r.scope}" for r in d.itertuples(index=False)], fontsize=6)
            ax.set_xlabel("effect, 95% CI (green: holds, red: reversed, grey: inconclusive)")
        ax.set_title(TITLES.get(name, name), fontsize=8)
        note(ax, p.note)
    return save(fig, out_dir, "model_effects")
