"""Figures of the coherence study (paper 001, Figs. 4-8), seaborn, PNG + PDF, drawn from the
analysis's plot tables (`plot_<figure>`, read as panels by socsim.io.figures.panels): what each panel
draws, its note and why it has no data are decided there (socsim.coherence.analysis.plots); this
module imports nothing from the analysis.

Several agent models: Fig. 4 and 8a colour by model; Figs. 5, 6 and 7 draw one row of panels per
model. Categorical axes are sorted ("1-1", "1-2", ...; gaps 0-4), mean agreement axes span the
score scale 1-5, and a panel without data says "no data" (with the reason when the analysis gives
one) instead of failing. Every panel carries its note (socsim.io.figures.note): the degeneracy flags
of its inputs and its n; no line is drawn through a category without data (the line breaks there
and the category is marked "no data").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from socsim.coherence.schemas import FIGURES  # noqa: E402
from socsim.io.figures import note, save, wrapped  # noqa: E402
from socsim.io.report import Panel  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")

SCORE_RANGE = (0.8, 5.2)  # the 1-5 score scale with a margin for the markers
Panels = Mapping[str, Panel]


def _sort_key(label: object) -> tuple[float | str, ...]:
    """Numeric order for labels such as 3, "1-5" or "0-9" (so "10" follows "9")."""
    parts = str(label).split("-")
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        return (float("inf"), str(label))


def categories(values: Iterable[object]) -> list[str]:
    return [str(v) for v in sorted(set(values), key=_sort_key)]


NO_DATA_FONTSIZE = 9


def no_data(ax: Axes, reason: str = "") -> None:
    """A panel without data says so (its ticks kept: panels may share an axis), its reason wrapped
    to the panel's width. Not socsim.io.figures.no_data, which removes the ticks, does not wrap and
    always writes "no data: <why>" in a smaller gray font: these panels share their y axis and their
    reasons are long, and the default run's figures keep their look."""
    ax.text(
        0.5,
        0.5,
        wrapped(ax, "no data" + (f": {reason}" if reason else ""), NO_DATA_FONTSIZE),
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=NO_DATA_FONTSIZE,
        color="dimgray",
    )


def _errorbars(ax: Axes, data: pd.DataFrame, x: str, hue: str | None = None, order: list[str] | None = None) -> bool:
    """Bootstrap means with intervals at sorted category positions, dodged per hue level.
    Returns False (and draws nothing) without data."""
    data = data.dropna(subset=["boot_mean"]) if len(data) else data
    if not len(data):
        return False
    order = order or categories(data[x])
    groups = sorted(data.groupby(hue), key=lambda kv: _sort_key(kv[0])) if hue else [(None, data)]
    width = 0.3 if len(groups) > 1 else 0.0
    for j, (label, g) in enumerate(groups):
        # every category of the axis, NaN where this group has no data: the line breaks there
        g = g.assign(_x=g[x].astype(str)).drop_duplicates("_x").set_index("_x").reindex(order)
        shift = (j - (len(groups) - 1) / 2) * width / max(len(groups) - 1, 1)
        xs = np.arange(len(order)) + shift
        mean, lo, hi = (g[c].to_numpy(dtype=float) for c in ("boot_mean", "lo", "hi"))
        ax.errorbar(xs, mean, yerr=[mean - lo, hi - mean], fmt="o-", capsize=3, label=label)
    mark_missing(ax, [c for c in order if c not in set(data[x].astype(str))], order)
    ax.set_xticks(range(len(order)), order)
    if hue:
        ax.legend(title=hue, fontsize=7)
    return True


def mark_missing(ax: Axes, missing: Iterable[str], order: list[str]) -> None:
    """Mark categories of the axis without data (nothing is drawn there)."""
    for c in missing:
        ax.text(
            order.index(c), 0.03, "no data", transform=ax.get_xaxis_transform(), ha="center", fontsize=6, color="gray"
        )


def _whole(data: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """A panel's rows with its whole-number columns as integers again (a plot table's rows of panels
    without data hold none, which makes them floats in the table)."""
    return data.astype({c: "int64" for c in columns if c in data.columns and len(data)})


def _grid(panels: Panels, columns: int) -> list[list[Panel]]:
    """The panels in rows of `columns` (one row per model)."""
    ps = list(panels.values())
    return [ps[i : i + columns] for i in range(0, len(ps), columns)]


def fig4_gap(panels: Panels, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 4))
    (p,) = panels.values()
    if not _errorbars(ax, _whole(p.data, "gap"), "gap", "model", order=[str(g) for g in range(5)]):
        no_data(ax, p.no_data)
    note(ax, p.note)
    ax.set(
        title="Fig. 4: agreement by preference gap (bootstrap 95% interval)",
        xlabel="preference gap",
        ylabel="final agreement (1-5)",
        ylim=SCORE_RANGE,
    )
    return save(fig, out, "fig4_agreement_by_gap")


def _suppression(ax: Axes, g: pd.DataFrame) -> None:
    """Observed and expected mean agreement per gap, broken at gaps without data."""
    full = g.set_index("gap").reindex(range(5))  # NaN at gaps without data: the lines break
    for col in ("observed", "expected"):
        y, lo, hi = (full[c].to_numpy(dtype=float) for c in (col, f"{col}_lo", f"{col}_hi"))
        ax.errorbar(range(5), y, yerr=[y - lo, hi - y], fmt="o-", capsize=3, label=col)
    mark_missing(ax, [str(k) for k in range(5) if pd.isna(full.loc[k, "observed"])], [str(k) for k in range(5)])
    ax.legend(fontsize=7, loc="center right")


def fig5_suppression(panels: Panels, out: Path) -> list[Path]:
    grid = _grid(panels, 3)
    fig, axes = plt.subplots(len(grid), 3, figsize=(5 * 3, 3.6 * len(grid)), sharey=True, squeeze=False)
    for row, ax_row in zip(grid, axes):
        for ax, p in zip(ax_row, row):
            if p.no_data or not len(p.data):
                no_data(ax, p.no_data)
            else:
                _suppression(ax, _whole(p.data, "gap"))
            note(ax, p.note)
            ax.set(title=p.name, xlabel="preference gap", ylabel="mean agreement", ylim=SCORE_RANGE, xticks=range(5))
    fig.suptitle("Fig. 5: observed vs expected agreement (disagreement suppression)")
    return save(fig, out, "fig5_suppression")


def fig6_anchors(panels: Panels, out: Path) -> list[Path]:
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), sharey=True, squeeze=False)
    for ax, (model, p) in zip(axes[0], panels.items()):
        d = _whole(p.data, "gap")
        if len(d) and _errorbars(ax, d, "gap", "anchor", order=[str(g) for g in range(5)]):
            pos = {str(g): g for g in range(5)}
            for _, r in d.iterrows():
                ax.annotate(
                    r["pref_pair"],
                    (pos[str(r["gap"])], r["boot_mean"]),
                    fontsize=6,
                    xytext=(3, 3),
                    textcoords="offset points",
                )
        else:
            no_data(ax, p.no_data)
        note(ax, p.note)
        ax.set(
            title=f"Fig. 6 ({model}): pairs anchored at 1 vs at 5",
            xlabel="preference gap",
            ylabel="mean agreement",
            ylim=SCORE_RANGE,
        )
    return save(fig, out, "fig6_anchors")


NEUTRAL_BAND = "1 (neutral): interval"  # the band's entry in a panel's legend (titled "contentiousness")


def _contentiousness(ax: Axes, data: pd.DataFrame) -> bool:
    """Each preference pair's means at C = 2 and 3 against the neutral (C = 1) interval, a gray band
    (named in the legend). Returns whether a band was drawn: a run without a neutral topic has none."""
    order = categories(data["pref_pair"])
    pos = {c: k for k, c in enumerate(order)}
    neutral = data[data["contentiousness"] == 1].dropna(subset=["lo", "hi"])
    for j, (_, r) in enumerate(neutral.iterrows()):
        k = pos[str(r["pref_pair"])]
        label = NEUTRAL_BAND if j == 0 else None
        ax.fill_between([k - 0.3, k + 0.3], [r["lo"]] * 2, [r["hi"]] * 2, color="gray", alpha=0.3, label=label)
    if not _errorbars(ax, data[data["contentiousness"] > 1], "pref_pair", "contentiousness", order=order):
        ax.set_xticks(range(len(order)), order)
        ax.text(
            0.5,
            0.5,
            "no data at C = 2 or 3 (one contentiousness level)",
            ha="center",
            transform=ax.transAxes,
            fontsize=8,
            color="dimgray",
        )
    return bool(len(neutral))


def fig7_contentiousness(panels: Panels, out: Path) -> list[Path]:
    grid = _grid(panels, 2)
    fig, axes = plt.subplots(len(grid), 2, figsize=(12, 4 * len(grid)), sharey=True, squeeze=False)
    band = False
    for row, ax_row in zip(grid, axes):
        for ax, p in zip(ax_row, row):
            if p.no_data or not len(p.data):
                no_data(ax, p.no_data)
            else:
                band |= _contentiousness(ax, _whole(p.data, "contentiousness"))
            note(ax, p.note)
            ax.set(title=p.name, xlabel="preference pair", ylabel="mean agreement", ylim=SCORE_RANGE)
            ax.tick_params(axis="x", rotation=45)
    # the title says what is drawn: the band where a panel has a neutral interval, else that none has one
    said = "gray band: the neutral (C = 1) topics' interval" if band else "no neutral (C = 1) interval to draw"
    fig.suptitle(f"Fig. 7: contentiousness per preference pair ({said})")
    return save(fig, out, "fig7_contentiousness")


def open_sums(by_open: pd.DataFrame) -> list[str]:
    """Every openness sum from the smallest to the largest observed: a sum without data breaks the
    line and is marked "no data" (no line joins non-adjacent sums)."""
    sums = pd.to_numeric(by_open["open_sum"], errors="coerce").dropna() if len(by_open) else pd.Series([])
    return [str(k) for k in range(int(sums.min()), int(sums.max()) + 1)] if len(sums) else []


def fig8_openness(panels: Panels, out: Path) -> list[Path]:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    a, b = panels.values()
    by_open = _whole(a.data, "open_sum")
    if not len(by_open) or not _errorbars(axes[0], by_open, "open_sum", "model", order=open_sums(by_open)):
        no_data(axes[0], a.no_data)
    note(axes[0], a.note)
    axes[0].set(title=a.name, xlabel="combined openness", ylabel="mean agreement", ylim=SCORE_RANGE)
    if len(b.data):
        sns.barplot(
            data=b.data,
            y="open_pair",
            x="diff_from_0_0",
            hue="model",
            ax=axes[1],
            orient="h",
            order=categories(b.data["open_pair"]),
        )
    else:
        no_data(axes[1], b.no_data)
    note(axes[1], b.note)
    axes[1].set(title=b.name, xlabel="mean difference", ylabel="openness pairing")
    fig.suptitle("Fig. 8: openness and agreement")
    return save(fig, out, "fig8_openness")


DRAW = {
    "fig4_agreement_by_gap": fig4_gap,
    "fig5_suppression": fig5_suppression,
    "fig6_anchors": fig6_anchors,
    "fig7_contentiousness": fig7_contentiousness,
    "fig8_openness": fig8_openness,
}


def all_figures(plots: Mapping[str, Panels], out: Path) -> list[Path]:
    """Figs. 4-8 from their panels (figure name as in FIGURES -> its panels, from its plot table)."""
    return [path for name in FIGURES for path in DRAW[name](plots[name], out)]
