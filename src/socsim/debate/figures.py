"""Figures of the DEBATE study (PNG + PDF): Fig. 2 (group-level tweet stance and opinion, mean and
SD per group, humans vs twins), Fig. 2's effect sizes (d_z, ours beside the paper's), Fig. 3
(individual change against the initial stance and the partner difference, with a fitted line), and
the utterance metrics by mode.

Every figure reads the analysis report's Parquet tables (socsim.io.report.read). Each panel carries a
visible note with the flags of its own inputs (the report's `flags` table, by where they apply) and
its n; a cell without data is marked, never drawn through."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from socsim.debate.stats import missing_summary
from socsim.io import report
from socsim.io.figures import no_data, note, save  # sets the Agg backend

STEPS = {"tweet": ["s1", "s2", "s3"], "opinion": ["o_init", "o_final"]}
COLOURS = {"human": "#444444", "llm": "#E07020", "paper": "#3070B0"}
SOURCES = ("human", "llm")
TESTS = ("llm change", "human change", "llm change vs human change")


def _note(ax: Axes, lines: list[str], data: bool = True) -> None:
    """The panel's note (io.figures.note), with the y range raised so the note sits above the data."""
    lines = [x for x in lines if x]
    if data and lines:
        rows = sum(math.ceil(len(x) / 60) for x in lines)
        frac = min(0.06 * rows + 0.04, 0.75)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi + (hi - lo) * frac / (1 - frac))
    note(ax, lines)


def panel_flags(flags: pd.DataFrame, prefixes: Iterable[str]) -> list[str]:
    """The messages of the flags that apply where any of `prefixes` begins (each once)."""
    prefixes = tuple(prefixes)
    hit = flags[flags["where"].map(lambda w: str(w).startswith(prefixes))] if len(flags) else flags
    return list(dict.fromkeys(hit["message"])) if len(hit) else []


def _missing(group: pd.DataFrame, quantities: Iterable[str]) -> list[str]:
    """The panel's note on values left out of its paired statistics ("o_final missing for 2 of 4
    twins"), one line each, from group_level's n_missing / n_members."""
    if not len(group) or not {"n_missing", "n_members"} <= set(group.columns):
        return []
    return _split([missing_summary(group, SOURCES, quantities)])


def _split(notes: Iterable[object]) -> list[str]:
    """The distinct parts of "; "-joined notes, in order."""
    parts = (x.strip() for n in notes if isinstance(n, str) for x in n.split(";"))
    return list(dict.fromkeys(x for x in parts if x))


def fig2(group: pd.DataFrame, flags: pd.DataFrame, out: Path) -> str:
    """Mean over groups (± SE) of each group's mean and SD per step; a source without data at a step
    has no point there and no line through it. Each group's statistics at every step of a panel are
    over the same members (those with every step: paired); the panel says which values were missing
    ("o_final missing for 2 of 4 twins")."""
    fig, axes = plt.subplots(2, 2, figsize=(8, 6.5))
    for j, (what, qs) in enumerate(STEPS.items()):
        for i, stat in enumerate(("mean", "sd")):
            ax = axes[i][j]
            g = group[group.quantity.isin(qs)]
            ns = []
            for source in SOURCES:
                s = g[g.source == source]
                agg = s.groupby("quantity")[stat].agg(["mean", "std", "count"]).reindex(qs)
                ns.append(f"{source}: {int(agg['count'].fillna(0).max())} groups")
                if agg["count"].fillna(0).sum() == 0:
                    continue
                se = agg["std"] / np.sqrt(agg["count"])  # NaN with one group: no error bar
                ax.errorbar(
                    range(len(qs)),
                    agg["mean"],  # NaN at a step without data: the line breaks there
                    yerr=se.to_numpy(),
                    marker="o",
                    capsize=3,
                    color=COLOURS[source],
                    label=source,
                )
            data = bool(g[stat].notna().sum())
            if not data:
                no_data(ax, f"no group has a {what} {stat}")
            else:
                ax.set_xticks(range(len(qs)), qs)
                ax.legend(fontsize=7, loc="lower right")
            ax.set_title(f"{what}: group {stat} (mean over groups ± SE)", fontsize=8)
            prefixes = [f"group_level.{src}.{q}" for src in SOURCES for q in qs]
            _note(ax, ["n = " + ", ".join(ns), *_missing(group, qs), *panel_flags(flags, prefixes)], data)
    fig.suptitle("Fig. 2: group-level tweet stance and opinion, humans vs twins (Depth, Mode 3)", fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig2_group_level")
    return "fig2_group_level"


def fig2_effect_sizes(es: pd.DataFrame, flags: pd.DataFrame, out: Path) -> str:
    """Fig. 2's tests as effect sizes d_z = t / sqrt(G), ours beside the paper's: t grows with the
    number of groups, d_z does not. A missing value has no bar and says n/a. Each panel says that the
    twins' bars start from the humans' round-1 tweet / initial opinion (the paper's comparison, which
    carries no verdict; the claims are judged in analysis/sect6_model_written)."""
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5))
    quantities = list(dict.fromkeys(es.quantity)) or ["tweet mean", "tweet SD", "opinion mean", "opinion SD"]
    x = np.arange(len(TESTS))
    for ax, q in zip(axes.flat, quantities):
        e = es[es.quantity == q].set_index("test").reindex(list(TESTS))
        for k, (col, who) in enumerate((("d_z", "ours"), ("paper_d_z", "paper"))):
            pos = x + (k - 0.5) * 0.38
            vals = e[col].astype(float).to_numpy()
            ok = np.isfinite(vals)
            if ok.any():
                ax.bar(pos[ok], vals[ok], width=0.36, color=COLOURS["llm" if who == "ours" else "paper"], label=who)
            for p in pos[~ok]:  # no bar: says n/a at the foot of the panel
                ax.text(
                    p,
                    0.02,
                    f"{who}: n/a",
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    color="gray",
                    transform=ax.get_xaxis_transform(),
                )
        ax.axhline(0, color="black", lw=0.5)
        ax.set_xticks(x, ["twins", "humans", "twins - humans"], fontsize=7)
        ax.set_ylabel("d_z (change / SD of changes)", fontsize=7)
        ax.set_title(f"{q}: change", fontsize=8)
        n = pd.to_numeric(e["n_groups"], errors="coerce").max()
        g_paper = pd.to_numeric(e["paper_groups"], errors="coerce").max()
        lines = [
            f"n = {0 if pd.isna(n) else int(n)} groups (paper: {'n/a' if pd.isna(g_paper) else int(g_paper)})",
            "twins: from the humans' start, the paper's comparison (no verdict)",
        ]
        if not np.isfinite(e["d_z"].astype(float)).any():
            lines.append("no effect size of ours: fewer than 2 groups or no variance in the changes")
        if "missing" in e.columns:
            lines.extend(_split(e["missing"]))
        ax.set_xlim(-0.6, len(TESTS) - 0.4)
        _note(ax, [*lines, *panel_flags(flags, [f"group_tests.{q}."])])
    fig.legend(
        handles=[Patch(color=COLOURS["llm"], label="ours"), Patch(color=COLOURS["paper"], label="paper")],
        loc="upper right",
        fontsize=7,
    )
    fig.suptitle("Fig. 2 as effect sizes: d_z = t / sqrt(groups), ours vs the paper's (Depth, Mode 3)", fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig2_effect_sizes")
    return "fig2_effect_sizes"


def _fit(ax: Axes, xs: np.ndarray, ys: np.ndarray, colour: str) -> None:
    """Least-squares line with its 95 % band (with at least two distinct x)."""
    if np.unique(xs).size < 2:
        return
    b, a = np.polyfit(xs, ys, 1)
    grid = np.linspace(xs.min(), xs.max(), 30)
    fit = a + b * grid
    resid = ys - (a + b * xs)
    s2 = resid.var(ddof=2) if xs.size > 2 else 0.0
    se = np.sqrt(s2 * (1 / xs.size + (grid - xs.mean()) ** 2 / ((xs - xs.mean()) ** 2).sum()))
    ax.plot(grid, fit, color=colour, lw=1)
    ax.fill_between(grid, fit - 1.96 * se, fit + 1.96 * se, color=colour, alpha=0.15)


def fig3(members: pd.DataFrame, flags: pd.DataFrame, out: Path) -> str:
    """Change against the own initial value and against the round-1 partner's minus one's own,
    humans and twins in one panel each, with least-squares lines and their 95 % bands."""
    fig, axes = plt.subplots(2, 3, figsize=(11, 7))
    for i, (what, (start, end)) in enumerate({"tweet": ("s1", "s3"), "opinion": ("o_init", "o_final")}.items()):
        for j, predictor in enumerate(("own initial", "partner minus own", "abs partner minus own")):
            ax = axes[i][j]
            shown, ns = 0, []
            for source in SOURCES:
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
                ns.append(f"{source}: {int(ok.sum())} members")
                if ok.sum() < 3:
                    continue
                shown += 1
                xs, ys = x[ok].to_numpy(), y[ok].to_numpy()
                ax.scatter(xs, ys, s=12, color=COLOURS[source], label=source, alpha=0.7)
                _fit(ax, xs, ys, COLOURS[source])
            if not shown:
                no_data(ax, "fewer than 3 members with both values")
            else:
                ax.legend(fontsize=7, loc="lower right")
            ax.set_xlabel(predictor, fontsize=8)
            ax.set_ylabel(f"{what} change ({end} - {start})", fontsize=8)
            prefixes = [f"individual_level.{src}.{what}.{predictor}" for src in SOURCES]
            _note(ax, ["n = " + ", ".join(ns) + " (a line needs 3)", *panel_flags(flags, prefixes)], bool(shown))
    fig.suptitle("Fig. 3: individual change (Depth, Mode 3); Pearson r in analysis/individual_level", fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig3_individual")
    return "fig3_individual"


def metrics_figure(table: pd.DataFrame, flags: pd.DataFrame, name: str, out: Path) -> str:
    """One panel per metric: a bar per model and mode; a cell without a value says n/a."""
    cols = ["s_sem", "d_stance", "d_signed_len", "d_abs_len", "rouge_l", "r_on_topic"]
    fig, axes = plt.subplots(2, 3, figsize=(13, 8))
    models = list(dict.fromkeys(table.model)) if len(table) else []
    width = 0.8 / max(len(models), 1)
    for ax, c in zip(axes.flat, cols):
        data = bool(len(table)) and bool(table[c].notna().any())
        if not data:
            no_data(ax, f"no {c} in any setting")
        for k, model in enumerate(models if data else []):
            g = table[table.model == model]
            pos = g["mode"].to_numpy(dtype=float) + width * k
            vals = g[c].astype(float).to_numpy()
            ok = np.isfinite(vals)
            if ok.any():
                ax.bar(pos[ok], vals[ok], width=width, label=model)
            for p in pos[~ok]:  # no bar: says n/a at the foot of the panel
                ax.text(
                    p,
                    0.02,
                    "n/a",
                    ha="center",
                    va="bottom",
                    fontsize=6,
                    color="gray",
                    transform=ax.get_xaxis_transform(),
                )
        if data:
            ax.set_xticks(sorted(set(table["mode"])))
            ax.set_xlabel("mode", fontsize=8)
            ax.legend(fontsize=6, loc="lower right")
        ax.set_title(c, fontsize=8)
        used = "; ".join(
            f"{model}: " + "/".join(str(int(v)) for v in table[table.model == model].n_used) for model in models
        )
        lines = [f"utterances compared by mode: {used}" if used else "", *panel_flags(flags, [f"{name}.{c}["])]
        _note(ax, lines, data)
    fig.suptitle(f"{name}: utterance metrics by mode (original memory)", fontsize=9)
    fig.tight_layout()
    save(fig, out, f"{name}_metrics")
    return f"{name}_metrics"


def all_figures(analysis: Path, out: Path) -> list[str]:
    flags = report.read(analysis, "flags")
    names = [
        fig2(report.read(analysis, "group_level"), flags, out),
        fig2_effect_sizes(report.read(analysis, "fig2_effect_sizes"), flags, out),
        fig3(report.read(analysis, "members"), flags, out),
    ]
    for name in ("table3", "table9"):
        if (analysis / f"{name}.parquet").is_file():
            names.append(metrics_figure(report.read(analysis, name), flags, name, out))
    return names
