"""Figures of the coherence study (paper 001, Figs. 4-8), seaborn, PNG + PDF.

Several agent models: Fig. 4 and 8a colour by model; Figs. 5, 6 and 7 draw one row of panels per
model. Categorical axes are sorted ("1-1", "1-2", ...; gaps 0-4), mean agreement axes span the
score scale 1-5, and a panel without data says "no data" (with the reason when the analysis gives
one) instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from socsim.io.figures import save  # noqa: E402

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


def read_csv(path: str | Path) -> pd.DataFrame:
    """An analysis CSV as written: empty cells are missing, but "n/a" stays the text "n/a"."""
    return pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"])


def _sort_key(label: object) -> tuple[float | str, ...]:
    """Numeric order for labels such as 3, "1-5" or "0-9" (so "10" follows "9")."""
    parts = str(label).split("-")
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        return (float("inf"), str(label))


def categories(values: Iterable[object]) -> list[str]:
    return [str(v) for v in sorted(set(values), key=_sort_key)]


def no_data(ax: Axes, reason: str = "") -> None:
    ax.text(
        0.5,
        0.5,
        "no data" + (f"\n{reason}" if reason else ""),
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=9,
        color="dimgray",
        wrap=True,
    )


def _errorbars(ax: Axes, data: pd.DataFrame, x: str, hue: str | None = None, order: list[str] | None = None) -> bool:
    """Bootstrap means with intervals at sorted category positions, dodged per hue level.
    Returns False (and draws nothing) without data."""
    data = data.dropna(subset=["boot_mean"]) if len(data) else data
    if not len(data):
        return False
    order = order or categories(data[x])
    pos = {c: i for i, c in enumerate(order)}
    groups = sorted(data.groupby(hue), key=lambda kv: _sort_key(kv[0])) if hue else [(None, data)]
    width = 0.3 if len(groups) > 1 else 0.0
    for j, (label, g) in enumerate(groups):
        g = g.assign(_x=g[x].astype(str)).sort_values("_x", key=lambda s: s.map(lambda v: pos[v]))
        shift = (j - (len(groups) - 1) / 2) * width / max(len(groups) - 1, 1)
        xs = np.array([pos[v] for v in g["_x"]]) + shift
        ax.errorbar(
            xs,
            g["boot_mean"],
            yerr=[g["boot_mean"] - g["lo"], g["hi"] - g["boot_mean"]],
            fmt="o-",
            capsize=3,
            label=label,
        )
    ax.set_xticks(range(len(order)), order)
    if hue:
        ax.legend(title=hue, fontsize=7)
    return True


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


def fig4_gap(by_gap: pd.DataFrame, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 4))
    if not _errorbars(ax, by_gap, "gap", "model", order=[str(g) for g in range(5)]):
        no_data(ax)
    ax.set(
        title="Fig. 4: agreement by preference gap (bootstrap 95% interval)",
        xlabel="preference gap",
        ylabel="final agreement (1-5)",
        ylim=SCORE_RANGE,
    )
    return save(fig, out, "fig4_agreement_by_gap")


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
            g = supp[(supp["model"] == model) & (supp["panel"] == panel)] if len(supp) else supp
            g = g.dropna(subset=["observed", "expected"], how="all").sort_values("gap") if len(g) else g
            if len(g):
                for col in ("observed", "expected"):
                    h = g.dropna(subset=[col])
                    ax.errorbar(
                        h["gap"],
                        h[col],
                        yerr=[h[col] - h[f"{col}_lo"], h[f"{col}_hi"] - h[col]],
                        fmt="o-",
                        capsize=3,
                        label=col,
                    )
                ax.legend(fontsize=7)
            else:
                no_data(ax, (reasons or {}).get(model, ""))
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
    by_pair: pd.DataFrame, out: Path, models: list[str] | None = None, reasons: dict[str, str] | None = None
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
                    0.92,
                    "no data at C = 2 or 3 (one contentiousness level)",
                    ha="center",
                    transform=ax.transAxes,
                    fontsize=8,
                    color="dimgray",
                )
            ax.set(title=f"{model}: {title}", xlabel="preference pair", ylabel="mean agreement", ylim=SCORE_RANGE)
            ax.tick_params(axis="x", rotation=45)
    fig.suptitle("Fig. 7: contentiousness per preference pair (gray: the neutral topics' interval)")
    return save(fig, out, "fig7_contentiousness")


def fig8_openness(by_open: pd.DataFrame, vs_base: pd.DataFrame, out: Path) -> list[Path]:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    if not _errorbars(axes[0], by_open, "open_sum", "model"):
        no_data(axes[0])
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
    axes[1].set(
        title="(b) (1, 5) pairs: difference from the (0, 0) openness pairing",
        xlabel="mean difference",
        ylabel="openness pairing",
    )
    fig.suptitle("Fig. 8: openness and agreement")
    return save(fig, out, "fig8_openness")


def all_figures(tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    """Figs. 4-8 from the analysis tables (names as in TABLES)."""
    tests = tables.get("six_tests")
    models = sorted(set(tests["model"])) if tests is not None and len(tests) else None
    reasons = _reasons(tests)
    paths = fig4_gap(tables["bootstrap_by_gap"], out)
    paths += fig5_suppression(tables["suppression"], out, models, reasons)
    paths += fig6_anchors(tables["bootstrap_by_pref_pair"], out, models, reasons)
    paths += fig7_contentiousness(
        tables["bootstrap_by_pref_pair_contentiousness"],
        tables["bootstrap_by_pref_pair_contentiousness_b2"],
        out,
        models,
        reasons,
    )
    paths += fig8_openness(tables["bootstrap_by_open_sum"], tables["openness_vs_baseline"], out)
    return paths
