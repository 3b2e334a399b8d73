"""Trajectories, bias B and diversity D, Tables 1 and 2, the paper's tests (paper 002, section 4).

Runs on any Parquet files of the documented schemas (setups, ratings, trajectories, baseline).

- Trajectories: o_i^0 is the assigned initial opinion (source `initial`); at step t only the
  reviewer's value can change: its classified report (`classified`), or, when the classifier's
  answer did not parse, the previous value carried forward (`parse_failed`, counted); every other
  agent keeps its value (`carried`). The bare control has no initial opinion (`none`).
- Per simulation at t = T: B = mean(o^T); D_pop = population SD (ddof 0: the paper's tables and
  code) and D_sample (ddof 1: the text's "uniform start D = 1.49"); `D` is the one
  `metrics.ddof` selects (default 0, compared with the tables). Controls: B and D over every
  classified report of the control (the paper's "10 independent reports"). Also B* (truth-aligned:
  B under true framing, -B under false), the share of agents at the final mode, the number of
  opinion changes, the last step with a change, and agents that never reviewed (kept with their
  initial opinion; the original code dropped them silently).
- Tables 1 and 2: per (model, topology, memory, framing, bias) the mean over topics (Table 2: per
  category) of B and D, SE = sd(ddof 1) / sqrt(n topics); repetitions are averaged within a topic
  first (the topic stays the unit) and their spread reported separately (`rep_sd_*`).
- Tests: one-sample t of B against 0 per cell; paired t of B, false vs true framing, per (memory,
  bias), Bonferroni; one-way ANOVA of D by bias level per memory (units: topic x framing) with the
  planned contrasts (-2, 1, 1) and (0, -1, 1) on the pooled error. A test says "degenerate input:
  ..." when its inputs carry no information (a classifier that answers one value for >= 90 % of
  reports, constant values, fewer units than the test needs).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from socsim.io import vs_paper
from socsim.stats import degeneracy as dg
from socsim.stats.multitest import bonferroni

CELL = ["model", "topology", "init", "memory", "framing", "bias"]
BIAS_ORDER = {"none": 0, "weak": 1, "strong": 2}
MIN_TEST_UNITS = 3


def trajectories(setups: list[dict[str, Any]], ratings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_step = {(r["sim_id"], r["t"]): r for r in ratings}
    rows = []
    for s in setups:
        cur = list(s["initial"])
        src = ["initial" if v is not None else "none" for v in cur]
        rows += [{"sim_id": s["sim_id"], "agent": i, "t": 0, "opinion": v, "source": src[i]} for i, v in enumerate(cur)]
        for t in range(1, s["steps"] + 1):
            r = s["reviewers"][t - 1]
            rating = by_step.get((s["sim_id"], t))
            if rating is None:
                raise ValueError(f"no rating for simulation {s['sim_id']} step {t}: classify the events first")
            for i in range(s["n_agents"]):
                source = "carried" if cur[i] is not None else "none"
                if i == r:
                    if rating["parse_ok"]:
                        cur[i], source = rating["opinion"], "classified"
                    else:
                        source = "parse_failed"
                rows.append({"sim_id": s["sim_id"], "agent": i, "t": t, "opinion": cur[i], "source": source})
    return rows


def bias_diversity(values: Iterable[Any]) -> dict[str, Any]:
    a = np.asarray([v for v in values if v is not None and not pd.isna(v)], dtype=float)
    return {
        "B": float(a.mean()) if a.size else None,
        "D_pop": float(a.std(ddof=0)) if a.size else None,
        "D_sample": float(a.std(ddof=1)) if a.size > 1 else None,
        "n_values": int(a.size),
    }


def per_sim(setups: pd.DataFrame, traj: pd.DataFrame, ddof: int) -> pd.DataFrame:
    rows = []
    by_sim = {k: g for k, g in traj.groupby("sim_id", sort=False)}
    for s in setups.itertuples(index=False):
        g = by_sim[s.sim_id]
        if s.condition == "main":
            final = g[g.t == s.steps].sort_values("agent")
            values = final.opinion.tolist()
        else:  # controls: every classified report
            values = g[g.source == "classified"].opinion.tolist()
        bd = bias_diversity(values)
        wide = g.pivot(index="t", columns="agent", values="opinion").sort_index()
        changed = wide.diff().iloc[1:].fillna(0).ne(0)
        change_t = [t for t, any_ in changed.any(axis=1).items() if any_]
        counts = Counter(v for v in values if v is not None and not pd.isna(v))
        reviewed = set(g[g.source.isin(["classified", "parse_failed"])].agent)
        b = bd["B"]
        rows.append(
            {
                "sim_id": s.sim_id,
                "model": s.model,
                "topic": s.topic,
                "category": s.category,
                "framing": s.framing,
                "bias": s.bias,
                "memory": s.memory,
                "world": s.world,
                "init": s.init,
                "topology": s.topology,
                "condition": s.condition,
                "rep": s.rep,
                "n_agents": s.n_agents,
                "steps": s.steps,
                **bd,
                "D": bd["D_pop"] if ddof == 0 else bd["D_sample"],
                "B_truth": None if b is None else (b if s.framing == "true" else -b),
                "mode_share": max(counts.values()) / sum(counts.values()) if counts else None,
                "changes": int(changed.values.sum()),
                "last_change": max(change_t) if change_t else 0,
                "classified": int((g.source == "classified").sum()),
                "parse_failed": int((g.source == "parse_failed").sum()),
                "never_reviewed": int(s.n_agents - len(reviewed)) if s.condition == "main" else 0,
            }
        )
    return pd.DataFrame(rows)


def _se(x: pd.Series) -> float | None:
    return float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else None


def aggregate(ps: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean over topics +- SE (repetitions averaged within a topic first; their SD kept)."""
    topic_level = (
        ps.groupby(by + ["topic"], sort=True)
        .agg(B=("B", "mean"), D=("D", "mean"), rep_sd_B=("B", "std"), rep_sd_D=("D", "std"), reps=("B", "size"))
        .reset_index()
    )
    rows = []
    for key, g in topic_level.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        rows.append(
            {
                **dict(zip(by, key)),
                "B": g.B.mean(),
                "B_se": _se(g.B),
                "D": g.D.mean(),
                "D_se": _se(g.D),
                "n_topics": len(g),
                "reps": int(g.reps.max()),
                "rep_sd_B": g.rep_sd_B.mean() if g.reps.max() > 1 else None,
                "rep_sd_D": g.rep_sd_D.mean() if g.reps.max() > 1 else None,
            }
        )
    out = pd.DataFrame(rows)
    if len(out):
        out = (
            out.assign(_b=out.bias.map(BIAS_ORDER))
            .sort_values([c for c in by if c != "bias"] + ["_b"], kind="stable")
            .drop(columns="_b")
            .reset_index(drop=True)
        )
    return out


def show(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Table cells as the paper prints them: 'B ± SE' and 'D ± SE' (SE n/a for one topic)."""

    def f(m: Any, s: Any) -> str:
        if m is None or pd.isna(m):
            return "n/a"
        return f"{m:.2f}" if s is None or pd.isna(s) else f"{m:.2f} ± {s:.2f}"

    return pd.DataFrame(
        {
            **{c: df[c] for c in by},
            "B": [f(m, s) for m, s in zip(df.B, df.B_se)],
            "D": [f(m, s) for m, s in zip(df.D, df.D_se)],
            "n_topics": df.n_topics,
        }
    )


def classifier_flags(ratings: pd.DataFrame) -> dict[str, list[dg.Flag]]:
    """Per agent model: a classifier whose answers carry no information (one value >= 90 %)."""
    out = {}
    for model, g in ratings.groupby("model", sort=True):
        out[model] = dg.collect(dg.one_value(g.opinion.dropna().tolist(), f"opinion classifier on {model}'s reports"))
    return out


def tests(ps: pd.DataFrame, flags_of: dict[str, list[dg.Flag]], alpha: float) -> pd.DataFrame:
    main = ps[(ps.condition == "main") & (ps.init == "uniform")]
    rows = []
    topic_b = main.groupby(CELL + ["topic"], sort=True)[["B", "D"]].mean().reset_index()
    for key, g in topic_b.groupby(CELL, sort=True):
        k = dict(zip(CELL, key))
        fl = dg.collect(
            flags_of.get(k["model"], []),
            dg.too_few(len(g), MIN_TEST_UNITS, "one-sample t of B", "topics"),
            dg.near_constant(g.B, f"B ({k['framing']}, {k['bias']})") if len(g) >= MIN_TEST_UNITS else None,
        )
        t, p = stats.ttest_1samp(g.B, 0.0) if not fl else (None, None)
        rows.append(
            {
                "test": "one-sample t: B vs 0",
                **k,
                "n": len(g),
                "statistic": t,
                "p": p,
                "mean": g.B.mean(),
                "result": dg.verdict(fl, "significant" if p is not None and p < alpha else "not significant"),
            }
        )
    paired = []
    for key, g in topic_b.groupby([c for c in CELL if c != "framing"], sort=True):
        k = dict(zip([c for c in CELL if c != "framing"], key))
        w = g.pivot(index="topic", columns="framing", values="B").dropna()
        n = len(w) if {"false", "true"} <= set(w.columns) else 0
        diff = (w["true"] - w["false"]) if n else pd.Series(dtype=float)
        fl = dg.collect(
            flags_of.get(k["model"], []),
            dg.too_few(n, MIN_TEST_UNITS, "paired framing t of B", "topics"),
            dg.near_constant(diff, "B(true) - B(false)") if n >= MIN_TEST_UNITS else None,
        )
        t, p = stats.ttest_rel(w["true"], w["false"]) if not fl else (None, None)
        paired.append(
            (
                {
                    "test": "paired t: B true vs false",
                    **k,
                    "framing": "both",
                    "n": n,
                    "statistic": t,
                    "p": p,
                    "mean": diff.mean() if n else None,
                },
                fl,
            )
        )
    adj: np.ndarray | list[float] = bonferroni([r["p"] for r, _ in paired if r["p"] is not None]) if paired else []
    it = iter(adj)
    for r, fl in paired:
        p_adj = next(it) if r["p"] is not None else None
        rows.append(
            {
                **r,
                "p_adj": p_adj,
                "result": dg.verdict(fl, "significant" if p_adj is not None and p_adj < alpha else "not significant"),
            }
        )
    rows += anova_rows(main, flags_of, alpha)
    return pd.DataFrame(rows)


def anova_rows(main: pd.DataFrame, flags_of: dict[str, list[dg.Flag]], alpha: float) -> list[dict[str, Any]]:
    """One-way ANOVA of D by bias level per (model, topology, memory); units = topic x framing."""
    rows = []
    by = ["model", "topology", "init", "memory"]
    units = main.groupby(by + ["bias", "topic", "framing"], sort=True)["D"].mean().reset_index()
    for key, g in units.groupby(by, sort=True):
        k = dict(zip(by, key))
        groups = {b: g[g.bias == b].D.to_numpy() for b in BIAS_ORDER if (g.bias == b).any()}
        fl = dg.collect(
            flags_of.get(k["model"], []),
            dg.too_few(len(groups), 2, "ANOVA of D by bias", "bias levels"),
            *(dg.too_few(len(v), 2, f"ANOVA of D by bias ({b})", "units") for b, v in groups.items()),
            dg.near_constant(g.D, "D") if len(g) > 1 else None,
        )
        res = anova(groups) if not fl else {}
        if res and not np.isfinite(res["F"]):
            fl.append(dg.Flag("ANOVA of D by bias", "no variance within bias levels"))
            res = {}
        rows.append(
            {
                "test": "one-way ANOVA: D by bias",
                **k,
                "framing": "both",
                "bias": "all",
                "n": len(g),
                "statistic": res.get("F"),
                "p": res.get("p"),
                "contrast_none_vs_bias": res.get("c1"),
                "p_contrast_none_vs_bias": res.get("p1"),
                "contrast_weak_vs_strong": res.get("c2"),
                "p_contrast_weak_vs_strong": res.get("p2"),
                "mean": None,
                "result": dg.verdict(fl, "significant" if res.get("p", 1) < alpha else "not significant"),
            }
        )
    return rows


def anova(groups: dict[str, np.ndarray]) -> dict[str, Any]:
    """F and p of a one-way ANOVA, and the planned contrasts (-2, 1, 1) none vs bias and (0, -1, 1)
    weak vs strong (t on the pooled within-group mean square) when all three levels are present."""
    vals = list(groups.values())
    f, p = stats.f_oneway(*vals)
    out = {"F": float(f), "p": float(p)}
    if set(groups) == set(BIAS_ORDER):
        n = sum(len(v) for v in vals)
        mse = sum(((v - v.mean()) ** 2).sum() for v in vals) / (n - len(vals))
        for name, c in (("1", {"none": -2, "weak": 1, "strong": 1}), ("2", {"none": 0, "weak": -1, "strong": 1})):
            est = sum(c[b] * groups[b].mean() for b in groups)
            se = math.sqrt(mse * sum(c[b] ** 2 / len(groups[b]) for b in groups))
            t = est / se if se > 0 else float("nan")
            out[f"c{name}"], out[f"p{name}"] = float(t), float(2 * stats.t.sf(abs(t), n - len(vals)))
    return out


def baseline_table(ps: pd.DataFrame, base: pd.DataFrame, setups: pd.DataFrame, ddof: int) -> pd.DataFrame:
    """B and D of the LLM runs beside the numeric baselines on the same N, T, schedule and start."""
    steps = setups.set_index("sim_id").steps
    final = base[base.t == base.sim_id.map(steps)]
    rows = []
    for (sim, kind), g in final.groupby(["sim_id", "baseline"], sort=True):
        bd = bias_diversity(g.opinion.tolist())
        rows.append({"sim_id": sim, "baseline": kind, "B": bd["B"], "D": bd["D_pop"] if ddof == 0 else bd["D_sample"]})
    bdf = pd.DataFrame(rows, columns=["sim_id", "baseline", "B", "D"])
    main = ps[ps.condition == "main"]
    llm = main[["sim_id", *CELL, "topic", "B", "D"]].assign(source="llm")
    merged = [llm] + [
        main[["sim_id", *CELL, "topic"]]
        .merge(bdf[bdf.baseline == k], on="sim_id")
        .drop(columns="baseline")
        .assign(source=k)
        for k in sorted(bdf.baseline.unique())
    ]
    both = pd.concat(merged, ignore_index=True)
    return aggregate(both.rename(columns={"source": "run"}), ["run", *CELL])


def _verdict_of(rows: pd.DataFrame) -> tuple[bool | None, str | None]:
    """(holds, degenerate message) of a finding that needs every test row significant."""
    deg = [r for r in rows.result if str(r).startswith("degenerate input")]
    if deg or rows.empty:
        return None, (deg[0] if deg else None)
    return bool((rows.result == "significant").all()), None


def vs_paper_rows(
    ps: pd.DataFrame, setups: pd.DataFrame, tst: pd.DataFrame, paper: dict[str, Any], alpha: float
) -> list[vs_paper.Row]:
    """Every Table 1 / Table 2 cell we ran beside the seed paper's (D as population SD, as the
    tables), v4's global-warming runs, the two findings, and the uniform start's sample SD."""
    rows: list[vs_paper.Row] = []
    main = ps[(ps.condition == "main") & (ps.init == "uniform")]
    pop = main.assign(D=main.D_pop)  # the paper's tables: population SD whatever metrics.ddof says
    ref_of: Callable[[Any], dict[str, Any]]
    for by, ref_of, name in (
        (CELL, lambda r: paper["table1"], "Table 1"),
        (["category", *CELL], lambda r: paper["table2"].get(r.category, {}), "Table 2"),
    ):
        for r in aggregate(pop, by).itertuples(index=False):
            p = ref_of(r).get(r.memory, {}).get(r.framing, {}).get(r.bias)
            if p is None:
                continue
            where = f" {r.category}" if name == "Table 2" else ""
            label = f"{name}{where} ({r.model}, {r.topology}): {r.memory}, {r.framing} framing, {r.bias} bias"
            note = f"mean over {r.n_topics} topic(s)"
            rows.append(vs_paper.Row(f"{label}: B", r.B, p["B"], note=note))
            rows.append(vs_paper.Row(f"{label}: D (population SD)", r.D, p["D"], note=note))
    gw = paper.get("global_warming_v4", {})
    for r in main[main.topic == "global_warming"].itertuples(index=False):
        p = gw.get(r.memory, {}).get(r.framing, {}).get(r.bias)
        if p is not None:
            label = (
                f"global warming, arXiv v4 Table 6 ({r.model}, {r.topology}, rep {r.rep}): "
                f"{r.memory}, {r.framing}, {r.bias}"
            )
            rows.append(vs_paper.Row(f"{label}: B", r.B, p["B"], note="one run each"))
            rows.append(vs_paper.Row(f"{label}: D (population SD)", r.D_pop, p["D"], note="one run each"))
    ref = paper["table1"]
    for (model, topology, memory), g in main.groupby(["model", "topology", "memory"], sort=True):
        biases = sorted(set(g.bias), key=cast(Callable[[str], int], BIAS_ORDER.get))  # every bias is a key
        sel = (tst.model == model) & (tst.topology == topology) & (tst.memory == memory) & (tst.init == "uniform")
        paper_b = {
            f: np.mean([ref.get(memory, {}).get(f, {}).get(b, {}).get("B", np.nan) for b in biases])
            for f in ("false", "true")
        }
        one = tst[sel & (tst.test == "one-sample t: B vs 0") & (tst.framing == "false")]
        holds, deg = _verdict_of(one)
        false_b = g[g.framing == "false"].B
        if holds is not None:
            holds = holds and bool((one["mean"] < 0).all())
        scope = f"{model}, {memory} ({topology}), bias {'/'.join(biases)}"
        rows.append(
            vs_paper.Row(
                f"{scope}: mean B under false framing",
                false_b.mean() if len(false_b) else None,
                paper_b["false"],
                finding=paper["findings"]["truth"],
                holds=holds,
                degenerate=deg,
                note="holds: every false-framing cell's B < 0 with a significant one-sample t",
            )
        )
        pair = tst[sel & (tst.test == "paired t: B true vs false")]
        holds, deg = _verdict_of(pair)
        if holds is not None:
            holds = holds and bool((pair["mean"] > 0).all())
        diff = g[g.framing == "true"].B.mean() - false_b.mean() if {"true", "false"} <= set(g.framing) else None
        rows.append(
            vs_paper.Row(
                f"{scope}: B(true) - B(false)",
                diff,
                paper_b["true"] - paper_b["false"],
                finding=paper["findings"]["truth"],
                holds=holds,
                degenerate=deg,
                note="holds: B higher under true framing in every bias cell (paired t, Bonferroni)",
            )
        )
        an = tst[sel & (tst.test == "one-way ANOVA: D by bias")]
        d_by = g.groupby("bias").D_pop.mean()
        for a in an.itertuples(index=False):
            holds, deg = _verdict_of(an)
            if holds is not None:
                holds = holds and "none" in d_by and "strong" in d_by and bool(d_by["strong"] > d_by["none"])
            three = len(biases) == 3
            rows.append(
                vs_paper.Row(
                    f"{scope}: ANOVA F of D by bias",
                    a.statistic,
                    paper.get("anova_v4", {}).get(memory, {}).get("F") if three else None,
                    finding=paper["findings"]["bias_diversity"],
                    holds=holds,
                    degenerate=deg,
                    note="paper: arXiv v4 App. M, F(2) over 3 levels"
                    if three
                    else f"paper's F(2) needs all 3 bias levels; ran {len(biases)}; holds: p < alpha "
                    "and mean D strong > none",
                )
            )
    start = setups[(setups.condition == "main") & (setups.init == "uniform")]
    if len(start):
        initial = list(start.iloc[0]["initial"])
        rows.append(
            vs_paper.Row(
                "uniform start: D (sample SD, ddof 1)",
                float(np.std(initial, ddof=1)),
                paper["uniform_start"]["D_sample"],
                note=f"N = {len(initial)}; the population SD of the same start is {np.std(initial):.4f}",
            )
        )
    return rows
