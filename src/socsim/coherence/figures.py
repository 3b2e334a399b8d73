"""Figures of the coherence study (paper 001, Figs. 4-8), seaborn, PNG + PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from socsim.io.figures import save  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")


def _errorbars(ax, data: pd.DataFrame, x: str, hue: str | None = None) -> None:
    groups = data.groupby(hue) if hue else [(None, data)]
    for label, g in groups:
        g = g.sort_values(x)
        ax.errorbar(g[x].astype(str), g["boot_mean"], yerr=[g["boot_mean"] - g["lo"], g["hi"] - g["boot_mean"]],
                    fmt="o-", capsize=3, label=label)
    if hue:
        ax.legend(title=hue, fontsize=7)


def fig4_gap(by_gap: pd.DataFrame, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 4))
    _errorbars(ax, by_gap, "gap", "model")
    ax.set(title="Fig. 4: agreement by preference gap (bootstrap 95% interval)", xlabel="preference gap",
           ylabel="final agreement (1-5)", ylim=(1, 5))
    return save(fig, out, "fig4_agreement_by_gap")


def fig5_suppression(supp: pd.DataFrame, out: Path) -> list[Path]:
    panels = [(s, g) for s, g in supp.groupby("panel", sort=False)]
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(5 * max(len(panels), 1), 4), sharey=True, squeeze=False)
    for ax, (panel, g) in zip(axes[0], panels):
        for col, label in (("observed", "observed"), ("expected", "expected")):
            ax.errorbar(g["gap"], g[col], yerr=[g[col] - g[f"{col}_lo"], g[f"{col}_hi"] - g[col]], fmt="o-",
                        capsize=3, label=label)
        ax.set(title=panel, xlabel="preference gap", ylabel="mean agreement", ylim=(1, 5))
        ax.legend(fontsize=7)
    fig.suptitle("Fig. 5: observed vs expected agreement (disagreement suppression)")
    return save(fig, out, "fig5_suppression")


def fig6_anchors(by_pair: pd.DataFrame, out: Path) -> list[Path]:
    rows = []
    for _, r in by_pair.iterrows():
        lo, hi = map(int, r["pref_pair"].split("-"))
        for anchor in (1, 5):
            if anchor in (lo, hi):
                rows.append({**r.to_dict(), "anchor": f"anchored at {anchor}"})
    data = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    if len(data):
        _errorbars(ax, data, "gap", "anchor")
        for _, r in data.iterrows():
            ax.annotate(r["pref_pair"], (str(r["gap"]), r["boot_mean"]), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
    ax.set(title="Fig. 6: pairs anchored at 1 vs anchored at 5", xlabel="preference gap", ylabel="mean agreement")
    return save(fig, out, "fig6_anchors")


def fig7_contentiousness(by_pc: pd.DataFrame, by_pc_b2: pd.DataFrame, out: Path) -> list[Path]:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    for ax, data, title in ((axes[0], by_pc, "(a) all agents"), (axes[1], by_pc_b2, "(b) B = 2")):
        neutral = data[data["contentiousness"] == 1]
        for _, r in neutral.iterrows():
            ax.fill_between([str(r["pref_pair"])] * 2, [r["lo"]] * 2, [r["hi"]] * 2, color="gray", alpha=0.3, lw=8)
        if len(data):
            _errorbars(ax, data[data["contentiousness"] > 1], "pref_pair", "contentiousness")
        ax.set(title=title, xlabel="preference pair", ylabel="mean agreement")
        ax.tick_params(axis="x", rotation=45)
    fig.suptitle("Fig. 7: contentiousness per preference pair (gray: the neutral topics' interval)")
    return save(fig, out, "fig7_contentiousness")


def fig8_openness(by_open: pd.DataFrame, vs_base: pd.DataFrame, out: Path) -> list[Path]:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    _errorbars(axes[0], by_open, "open_sum", "model")
    axes[0].set(title="(a) agreement by O1 + O2", xlabel="combined openness", ylabel="mean agreement")
    if len(vs_base) and vs_base["diff_from_0_0"].notna().any():
        sns.barplot(data=vs_base, y="open_pair", x="diff_from_0_0", hue="model", ax=axes[1], orient="h")
    axes[1].set(title="(b) (1, 5) pairs: difference from the (0, 0) openness pairing", xlabel="mean difference",
                ylabel="openness pairing")
    fig.suptitle("Fig. 8: openness and agreement")
    return save(fig, out, "fig8_openness")
