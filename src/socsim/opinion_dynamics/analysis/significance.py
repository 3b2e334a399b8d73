"""The paper's tests (paper 002, section 4), each with its inputs' flags: one-sample t of B against 0
per cell; paired t of B, false vs true framing, per (memory, bias), Bonferroni over a fixed family
(PAIRED_FAMILY: the paper's 6 paired tests of a model, 3 bias levels x 2 memories, per model, topology
and start, whatever else the run has); one-way ANOVA of D by bias level per memory (units: topics, a
topic's D averaged over framings; 3 per level) with the paper's planned contrasts (-2, 1, 1) and
(0, -1, 1) on the pooled error (no verdict of their own: they do not test none < weak < strong).
Fewer units than a test needs: "inconclusive (n = 2 topics, needs 3)" (the verdict rule's words,
socsim.stats.verdict.too_few); a degenerate input: its flag."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from socsim.opinion_dynamics.analysis.measures import (
    BIAS_ORDER,
    CELL,
    MAIN,
    PAIRED_FAMILY,
    SCOPE,
    Flags,
    ValueFlags,
    _vf,
    messages,
)
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd
from socsim.stats.anova import contrast, one_way
from socsim.stats.multitest import bonferroni_fixed


def _result(deg: list[dg.Flag], short: str | None, p: float | None, alpha: float) -> str:
    """A tests-table cell: a degenerate input's flag, "inconclusive (too few)", or the test's result."""
    if deg:
        return deg[0].message
    if short:
        return f"inconclusive ({short})"
    return "significant" if p is not None and p < alpha else "not significant"


TestRow = tuple[dict[str, Any], list[dg.Flag]]  # a tests-table row and its inputs' degeneracy flags


def cells_flags(finals: ValueFlags | None, cells: pd.DataFrame) -> list[dg.Flag]:
    """The final-value flags of every Table 1 cell (CELL) that `cells` (per-simulation rows) covers."""
    if not finals:
        return []
    keys = cells[CELL].drop_duplicates().sort_values(CELL).to_dict("records") if len(cells) else []
    return dg.collect(*(_vf(finals, CELL, k) for k in keys))


def paper_tests(ps: pd.DataFrame, flags: Flags, alpha: float, finals: ValueFlags | None = None) -> list[TestRow]:
    """The paper's tests on the main runs (uniform start), each with its inputs' flags: the main
    ratings' classifier flag of its model, the final-value flags of the Table 1 cells it uses
    (`finals`, value_flags by CELL) and a constant input."""
    main = ps[(ps.condition == MAIN) & (ps.init == "uniform")]
    out: list[TestRow] = []
    topic_b = main.groupby(CELL + ["topic"], sort=True)[["B", "D"]].mean().reset_index()
    for key, g in topic_b.groupby(CELL, sort=True):
        k = dict(zip(CELL, key))
        short = vd.too_few(len(g), vd.MIN_UNITS, "topics")
        fl = dg.collect(
            flags.get((k["model"], MAIN), []),
            _vf(finals, CELL, k),
            dg.near_constant(g.B, f"B ({k['framing']}, {k['bias']})") if not short else None,
        )
        t, p = stats.ttest_1samp(g.B, 0.0) if not fl and not short else (None, None)
        row = {"test": "one-sample t: B vs 0", **k, "n": len(g), "statistic": t, "p": p, "mean": g.B.mean()}
        out.append(({**row, "result": _result(fl, short, p, alpha)}, fl))
    paired: list[tuple[dict[str, Any], list[dg.Flag], str | None]] = []
    by = [c for c in CELL if c != "framing"]
    for key, g in topic_b.groupby(by, sort=True):
        k = dict(zip(by, key))
        w = g.pivot(index="topic", columns="framing", values="B").dropna()
        n = len(w) if {"false", "true"} <= set(w.columns) else 0
        diff = (w["true"] - w["false"]) if n else pd.Series(dtype=float)
        short = vd.too_few(n, vd.MIN_UNITS, "topics")
        fl = dg.collect(
            flags.get((k["model"], MAIN), []),
            cells_flags(finals, main[np.logical_and.reduce([main[c] == k[c] for c in by])]),
            dg.near_constant(diff, "B(true) - B(false)") if not short else None,
        )
        t, p = stats.ttest_rel(w["true"], w["false"]) if not fl and not short else (None, None)
        row = {
            "test": "paired t: B true vs false",
            **k,
            "framing": "both",
            "n": n,
            "statistic": t,
            "p": p,
            "mean": diff.mean() if n else None,
        }
        paired.append((row, fl, short))
    for r, fl, short in paired:
        p_adj = bonferroni_fixed(r["p"], PAIRED_FAMILY)
        out.append(({**r, "p_adj": p_adj, "result": _result(fl, short, p_adj, alpha)}, fl))
    out += anova_rows(main, flags, alpha, finals)
    return out


def tests(ps: pd.DataFrame, flags: Flags, alpha: float, finals: ValueFlags | None = None) -> pd.DataFrame:
    """The paper's tests as a table, each row with its inputs' flags."""
    return pd.DataFrame([{**r, "flags": messages(fl)} for r, fl in paper_tests(ps, flags, alpha, finals)])


def anova_rows(main: pd.DataFrame, flags: Flags, alpha: float, finals: ValueFlags | None = None) -> list[TestRow]:
    """One-way ANOVA of D by bias level per (model, topology, start, memory). Units = topics: a
    topic's D per bias level is averaged over framings and repetitions (the framings of a topic
    share its schedule and personas, they are not independent units). Each bias level needs
    vd.MIN_UNITS topics, as every other test; `n` is the smallest number of topics of a level."""
    out: list[TestRow] = []
    by = SCOPE
    units = main.groupby(by + ["bias", "topic"], sort=True)["D"].mean().reset_index()
    for key, g in units.groupby(by, sort=True):
        k = dict(zip(by, key))
        groups = {b: g[g.bias == b].D.to_numpy(dtype=float) for b in BIAS_ORDER if (g.bias == b).any()}
        n = min((len(v) for v in groups.values()), default=0)
        short = vd.too_few(len(groups), 2, "bias levels") or vd.too_few(n, vd.MIN_UNITS, "topics")
        cells = main[np.logical_and.reduce([main[c] == k[c] for c in by])]
        fl = dg.collect(
            flags.get((k["model"], MAIN), []),
            cells_flags(finals, cells),
            dg.near_constant(g.D, "D") if not short else None,
        )
        res = anova(groups) if not fl and not short else {}
        if res.get("flag") is not None:
            fl.append(res["flag"])
            res = {}
        row = {
            "test": "one-way ANOVA: D by bias",
            **k,
            "framing": "both",
            "bias": "all",
            "n": n,
            "statistic": res.get("F"),
            "p": res.get("p"),
            "contrast_none_vs_bias": res.get("c1"),
            "p_contrast_none_vs_bias": res.get("p1"),
            "contrast_weak_vs_strong": res.get("c2"),
            "p_contrast_weak_vs_strong": res.get("p2"),
            "mean": None,
        }
        out.append(({**row, "result": _result(fl, short, res.get("p"), alpha)}, fl))
    return out


def anova(groups: dict[str, np.ndarray]) -> dict[str, Any]:
    """F and p of a one-way ANOVA (socsim.stats.anova.one_way; `flag` where no bias level varies
    within), and the planned contrasts of PLANNED_CONTRASTS on all three levels, (-2, 1, 1) none vs
    bias and (0, -1, 1) weak vs strong, as the paper computes them (v4 App. M: t on the pooled
    within-group mean square, the levels' topics taken as independent groups). The paper's tests,
    without a verdict: "D rises" (`d_rises`) is judged by adjacent steps, paired within topic."""
    fit = one_way(list(groups.values()), "ANOVA of D by bias", "bias level")
    if fit.flag is not None:
        return {"flag": fit.flag}
    out: dict[str, Any] = {"F": fit.F, "p": fit.p}
    if set(groups) == set(BIAS_ORDER):
        for name, (_, c) in zip(("1", "2"), PLANNED_CONTRASTS, strict=True):
            out[f"c{name}"], out[f"p{name}"] = contrast(groups, c, fit)
    return out


# The paper's planned contrasts of D over the bias levels (v4 App. M): (-2, 1, 1) none vs bias and
# (0, -1, 1) weak vs strong, on the ANOVA's pooled error (`anova`, the tests table). They do not test the
# order none < weak < strong: (-2, 1, 1) is positive when D falls from none to weak and strong is high
# enough. The finding `d_rises` is judged by adjacent steps instead (`steps`).
PLANNED_CONTRASTS: tuple[tuple[str, dict[str, int]], ...] = (
    ("none vs bias (-2, 1, 1)", {"none": -2, "weak": 1, "strong": 1}),
    ("weak vs strong (0, -1, 1)", {"none": 0, "weak": -1, "strong": 1}),
)


def steps(biases: Sequence[str]) -> list[tuple[str, dict[str, int]]]:
    """The adjacent steps of the bias levels that ran, as contrasts: none < weak < strong is (-1, 1, 0)
    "weak - none" and (0, -1, 1) "strong - weak"; two levels, their difference."""
    return [(f"{b} - {a}", {a: -1, b: 1}) for a, b in zip(biases, biases[1:])]


def contrast_scores(per: pd.DataFrame, weights: Mapping[str, int]) -> np.ndarray:
    """One contrast score per topic: sum over bias levels of weight x the topic's D at that level
    (`per`: topics x bias levels); topics without every level of the contrast are left out."""
    cols = [b for b, w in weights.items() if w != 0]
    sub = per[cols].dropna()
    scores: np.ndarray = (sub * pd.Series({b: weights[b] for b in cols})).sum(axis=1).to_numpy(dtype=float)
    return scores
