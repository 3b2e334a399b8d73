"""Figures of the coherence study (paper 001, Figs. 4-8), seaborn, PNG + PDF.

Several agent models: Fig. 4 and 8a colour by model; Figs. 5, 6 and 7 draw one row of panels per
model. Categorical axes are sorted ("1-1", "1-2", ...; gaps 0-4), mean agreement axes span the
score scale 1-5, and a panel without data says "no data" (with the reason when the analysis gives
one) instead of failing. The figures read the analysis tables' Parquet (socsim.io.report.read).

Flags travel with the numbers: every panel carries a visible note (socsim.io.figures.note) with the
degeneracy flags of its inputs (the tables' `flags` column) and its n ("n = 4 conversations: 2 at
gap 0, 2 at gap 4"); no line is drawn through a category without data (the line breaks there and
the category is marked "no data").
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from socsim.io.figures import note, save  # noqa: E402

sns.set_theme(style="whitegrid", context="paper")

SCORE_RANGE = (0.8, 5.2)  # the 1-5 score scale with a margin for the markers
TABLES = (
    "bootstrap_by_gap",
    "suppression",
    "bootstrap_by_pref_pair",
    "bootstrap_by_pref_pair_contentiousness",
    "bootstrap_by_pref_pair_contentiousness_b2",
    "bootstrap_by_open_sum",
    "openness_vs_baseline",
    "six_tests",
)


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
CHAR_WIDTH = 0.6  # a character's width in ems (DejaVu Sans averages about 0.55)


def wrapped(ax: Axes, text: str, fontsize: float, share: float = 0.9) -> str:
    """`text` broken into lines that fit `share` of the panel's width (matplotlib's own wrap breaks at
    the figure's edge, so a long note in one panel ran into the next)."""
    width_pt = ax.bbox.width / ax.figure.dpi * 72 * share
    return textwrap.fill(text, width=max(10, int(width_pt / (fontsize * CHAR_WIDTH))))


def no_data(ax: Axes, reason: str = "") -> None:
    """A panel without data says so (its ticks kept: panels may share an axis), its reason wrapped
    to the panel's width."""
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


def _n_text(n: int, what: str = "conversations") -> str:
    return f"n = {n} {what}" if n != 1 else f"n = 1 {what.removesuffix('s')}"


def flags_of(table: pd.DataFrame, model: str, fallback: dict[str, str] | None = None) -> list[str]:
    """The flags of one model's rows (the table's `flags` column), else the fallback's."""
    if len(table) and "flags" in table.columns and "model" in table.columns:
        found = [f for f in dict.fromkeys(table.loc[table["model"] == model, "flags"].dropna()) if f]
        if found or (table["model"] == model).any():
            return found
    f = (fallback or {}).get(model, "")
    return [f] if f else []


def panel_note(ax: Axes, flags: Iterable[str], n_lines: Iterable[str]) -> None:
    """A panel's visible note: its inputs' flags, then its n."""
    note(ax, [*flags, *n_lines])


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


def _models(*tables: pd.DataFrame, models: list[str] | None = None) -> list[str]:
    if models:
        return list(models)
    found = sorted({m for t in tables if "model" in t.columns for m in t["model"].dropna()})
    return found or ["(no model)"]


def _reasons(six_tests: pd.DataFrame | None) -> dict[str, str]:
    """Why a model has no data, from the six tests table (every test n/a with one reason)."""
    if six_tests is None or not len(six_tests):
        return {}
    out = {}
    for model, g in six_tests.groupby("model"):
        if "raw_result" in g and (g["raw_result"] == "n/a").all() and g["detail"].nunique() == 1:
            out[model] = str(g["detail"].iloc[0])
    return out


def _n_lines(table: pd.DataFrame, models: Iterable[str], label: bool = True) -> list[str]:
    """ "n = 4 conversations" per model (one line each, with the model's name when `label`)."""
    out = []
    for m in models:
        rows = table[table["model"] == m] if len(table) and "model" in table.columns else table.iloc[:0]
        n = int(rows["n"].sum()) if len(rows) else 0
        out.append((f"{m}: " if label else "") + _n_text(n))
    return out


def _all_flags(tables: Iterable[pd.DataFrame], models: Iterable[str], fallback: dict[str, str]) -> list[str]:
    return list(dict.fromkeys(f for m in models for t in tables for f in flags_of(t, m, fallback)))


def fig4_gap(
    by_gap: pd.DataFrame, out: Path, models: list[str] | None = None, fallback: dict[str, str] | None = None
) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 4))
    models = _models(by_gap, models=models)
    if not _errorbars(ax, by_gap, "gap", "model", order=[str(g) for g in range(5)]):
        no_data(ax)
    panel_note(ax, _all_flags([by_gap], models, fallback or {}), _n_lines(by_gap, models, len(models) > 1))
    ax.set(
        title="Fig. 4: agreement by preference gap (bootstrap 95% interval)",
        xlabel="preference gap",
        ylabel="final agreement (1-5)",
        ylim=SCORE_RANGE,
    )
    return save(fig, out, "fig4_agreement_by_gap")


def _gap_n(g: pd.DataFrame) -> list[str]:
    """ "n = 4 conversations: 2 at gap 0, 2 at gap 4; no data at gaps 1, 2, 3"."""
    n = {int(r["gap"]): int(r["n"]) for _, r in g.iterrows() if pd.notna(r["n"])}
    have = [f"{k} at gap {gap}" for gap, k in sorted(n.items()) if k]
    empty = [str(gap) for gap in range(5) if not n.get(gap)]
    text = _n_text(sum(n.values())) + (": " + ", ".join(have) if have else "")
    if empty:
        text += f"; no data at gap{'s' if len(empty) > 1 else ''} " + ", ".join(empty)
    return [text]


def fig5_suppression(
    supp: pd.DataFrame, out: Path, models: list[str] | None = None, reasons: dict[str, str] | None = None
) -> list[Path]:
    models = _models(supp, models=models)
    panels = list(dict.fromkeys(supp["panel"])) if len(supp) and "panel" in supp else []
    panels = panels or ["linear shift", "sigmoid shift", "B = 2, linear shift"]
    fig, axes = plt.subplots(
        len(models), len(panels), figsize=(5 * len(panels), 3.6 * len(models)), sharey=True, squeeze=False
    )
    for i, model in enumerate(models):
        for ax, panel in zip(axes[i], panels):
            g = supp[(supp["model"] == model) & (supp["panel"] == panel)].sort_values("gap") if len(supp) else supp
            if len(g) and g[["observed", "expected"]].notna().any().any():
                full = g.set_index("gap").reindex(range(5))  # NaN at gaps without data: the lines break
                for col in ("observed", "expected"):
                    y, lo, hi = (full[c].to_numpy(dtype=float) for c in (col, f"{col}_lo", f"{col}_hi"))
                    ax.errorbar(range(5), y, yerr=[y - lo, hi - y], fmt="o-", capsize=3, label=col)
                mark_missing(
                    ax, [str(k) for k in range(5) if pd.isna(full.loc[k, "observed"])], [str(k) for k in range(5)]
                )
                ax.legend(fontsize=7, loc="center right")
            else:
                no_data(ax, (reasons or {}).get(model, ""))
            panel_note(ax, flags_of(g, model), _gap_n(g) if len(g) else [_n_text(0)])
            ax.set(
                title=f"{model}: {panel}",
                xlabel="preference gap",
                ylabel="mean agreement",
                ylim=SCORE_RANGE,
                xticks=range(5),
            )
    fig.suptitle("Fig. 5: observed vs expected agreement (disagreement suppression)")
    return save(fig, out, "fig5_suppression")


def _pair_ends(label: object) -> tuple[int, int] | None:
    try:
        lo, hi = (int(float(v)) for v in str(label).split("-"))
        return lo, hi
    except ValueError:
        return None


def fig6_anchors(
    by_pair: pd.DataFrame,
    out: Path,
    models: list[str] | None = None,
    reasons: dict[str, str] | None = None,
    fallback: dict[str, str] | None = None,
) -> list[Path]:
    rows = []
    for _, r in by_pair.iterrows():
        ends = _pair_ends(r["pref_pair"])
        for anchor in (1, 5):
            if ends and anchor in ends:
                rows.append({**r.to_dict(), "anchor": f"anchored at {anchor}"})
    data = pd.DataFrame(rows, columns=list(by_pair.columns) + ["anchor"])
    models = _models(by_pair, models=models)
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4), sharey=True, squeeze=False)
    for ax, model in zip(axes[0], models):
        d = data[data["model"] == model]
        if _errorbars(ax, d, "gap", "anchor", order=[str(g) for g in range(5)]):
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
            no_data(ax, (reasons or {}).get(model, ""))
        drawn = d.drop_duplicates("pref_pair")  # (1, 5) is anchored at both ends: counted once
        panel_note(ax, flags_of(by_pair, model, fallback), _n_lines(drawn, [model], label=False))
        ax.set(
            title=f"Fig. 6 ({model}): pairs anchored at 1 vs at 5",
            xlabel="preference gap",
            ylabel="mean agreement",
            ylim=SCORE_RANGE,
        )
    return save(fig, out, "fig6_anchors")


def fig7_contentiousness(
    by_pc: pd.DataFrame,
    by_pc_b2: pd.DataFrame,
    out: Path,
    models: list[str] | None = None,
    reasons: dict[str, str] | None = None,
    fallback: dict[str, str] | None = None,
) -> list[Path]:
    models = _models(by_pc, by_pc_b2, models=models)
    fig, axes = plt.subplots(len(models), 2, figsize=(12, 4 * len(models)), sharey=True, squeeze=False)
    for i, model in enumerate(models):
        for ax, table, title in ((axes[i][0], by_pc, "(a) all agents"), (axes[i][1], by_pc_b2, "(b) B = 2")):
            data = table[table["model"] == model]
            order = categories(data["pref_pair"]) if len(data) else []
            pos = {c: k for k, c in enumerate(order)}
            neutral = data[data["contentiousness"] == 1].dropna(subset=["lo", "hi"])
            for _, r in neutral.iterrows():
                k = pos[str(r["pref_pair"])]
                ax.fill_between([k - 0.3, k + 0.3], [r["lo"]] * 2, [r["hi"]] * 2, color="gray", alpha=0.3)
            drawn = _errorbars(ax, data[data["contentiousness"] > 1], "pref_pair", "contentiousness", order=order)
            if not drawn and not len(neutral):
                no_data(ax, (reasons or {}).get(model, ""))
            elif not drawn:
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
            panel_note(ax, flags_of(table, model, fallback), _n_lines(table, [model], label=False))
            ax.set(title=f"{model}: {title}", xlabel="preference pair", ylabel="mean agreement", ylim=SCORE_RANGE)
            ax.tick_params(axis="x", rotation=45)
    fig.suptitle("Fig. 7: contentiousness per preference pair (gray: the neutral topics' interval)")
    return save(fig, out, "fig7_contentiousness")


def open_sums(by_open: pd.DataFrame) -> list[str]:
    """Every openness sum from the smallest to the largest observed: a sum without data breaks the
    line and is marked "no data" (no line joins non-adjacent sums)."""
    sums = pd.to_numeric(by_open["open_sum"], errors="coerce").dropna() if len(by_open) else pd.Series([])
    return [str(k) for k in range(int(sums.min()), int(sums.max()) + 1)] if len(sums) else []


def fig8_openness(
    by_open: pd.DataFrame,
    vs_base: pd.DataFrame,
    out: Path,
    models: list[str] | None = None,
    fallback: dict[str, str] | None = None,
) -> list[Path]:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    models = _models(by_open, vs_base, models=models)
    many = len(models) > 1
    if not _errorbars(axes[0], by_open, "open_sum", "model", order=open_sums(by_open)):
        no_data(axes[0])
    panel_note(axes[0], _all_flags([by_open], models, fallback or {}), _n_lines(by_open, models, many))
    axes[0].set(title="(a) agreement by O1 + O2", xlabel="combined openness", ylabel="mean agreement", ylim=SCORE_RANGE)
    if len(vs_base) and vs_base["diff_from_0_0"].notna().any():
        v = vs_base.dropna(subset=["diff_from_0_0"])
        sns.barplot(
            data=v,
            y="open_pair",
            x="diff_from_0_0",
            hue="model",
            ax=axes[1],
            orient="h",
            order=categories(v["open_pair"]),
        )
    else:
        no_data(axes[1], "no (1, 5) pairs at openness (0, 0)")
    panel_note(axes[1], _all_flags([vs_base], models, fallback or {}), _n_lines(vs_base, models, many))
    axes[1].set(
        title="(b) (1, 5) pairs: difference from the (0, 0) openness pairing",
        xlabel="mean difference",
        ylabel="openness pairing",
    )
    fig.suptitle("Fig. 8: openness and agreement")
    return save(fig, out, "fig8_openness")


def all_figures(tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Figs. 4-8 from the analysis tables (names as in TABLES, read from their Parquet)."""
    tests = tables.get("six_tests")
    models = sorted(set(tests["model"])) if tests is not None and len(tests) else None
    reasons = _reasons(tests)
    supp = tables["suppression"]
    # A model without rows in a table still has its inputs' flags: those of the suppression table
    # (preferences, judge scores and calibration), which has rows for every model.
    fallback = {m: f for m in (models or []) for f in flags_of(supp, m)[:1]}
    paths = fig4_gap(tables["bootstrap_by_gap"], out, models, fallback)
    paths += fig5_suppression(supp, out, models, reasons)
    paths += fig6_anchors(tables["bootstrap_by_pref_pair"], out, models, reasons, fallback)
    paths += fig7_contentiousness(
        tables["bootstrap_by_pref_pair_contentiousness"],
        tables["bootstrap_by_pref_pair_contentiousness_b2"],
        out,
        models,
        reasons,
        fallback,
    )
    paths += fig8_openness(tables["bootstrap_by_open_sum"], tables["openness_vs_baseline"], out, models, fallback)
    return paths
