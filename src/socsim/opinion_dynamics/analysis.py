"""Trajectories, bias B and diversity D, Tables 1 and 2, the paper's tests and findings (paper 002,
section 4).

`analyse` returns a report (socsim.io.report): the tables, the findings judged by the one verdict
rule (socsim.stats.verdict), the degeneracy flags with the tables, rows and figure panels they
concern, and the vs_paper rows. It runs on any Parquet files of the documented schemas (setups,
ratings, trajectories, baseline).

- Trajectories: o_i^0 is the assigned initial opinion (source `initial`); at step t only the
  reviewer's value can change: its classified report (`classified`), or, when the classifier's
  answer did not parse, the previous value carried forward (`parse_failed`, counted); every other
  agent keeps its value (`carried`). The bare control has no initial opinion (`none`).
- Per simulation at t = T: B = mean(o^T); D_pop = population SD (ddof 0: the paper's tables and
  code) and D_sample (ddof 1: the text's "uniform start D = 1.49"); `D` is the one
  `metrics.ddof` selects (default 0, compared with the tables). Controls: B and D over every
  classified report of the control (the paper's "10 independent reports"); D is n/a (None, never
  0) where fewer than 2 values feed it (a bare control: one report per simulation). Also B* (truth-aligned:
  B under true framing, -B under false), the share of agents at the final mode, the number of
  opinion changes, the last step with a change, agents that never reviewed, and agents **never
  measured**: no classified report up to T (they never reviewed, or their reviews did not parse),
  so their final opinion is their initial one. They stay in B and D, as in the paper, and their
  share is printed beside every number they enter (expected 1 - (1 - 1/N)^T measured: 83 % at the
  defaults N = 5, T = 8; 47 % at N = 10, T = 6).
- Tables 1 and 2: per (model, topology, start, memory, framing, bias) the mean over topics (Table 2:
  per category) of B and D, SE = sd(ddof 1) / sqrt(n topics); repetitions are averaged within a
  topic first (the topic stays the unit) and their spread reported separately (`rep_sd_*`).
- The paper's tests (`tests`): one-sample t of B against 0 per cell; paired t of B, false vs true
  framing, per (memory, bias), Bonferroni over a fixed family (PAIRED_FAMILY: the paper's 6 paired
  tests of a model, 3 bias levels x 2 memories, per model, topology and start, whatever else the run
  has); one-way ANOVA of D by bias level per memory (units: topics, a topic's D averaged over
  framings; 3 per level) with the paper's planned contrasts (-2, 1, 1) and (0, -1, 1) on the pooled
  error (no verdict of their own: they do not test none < weak < strong). Fewer units than a test
  needs: "inconclusive (n = 2 topics, needs 3)" (the verdict rule's words); a degenerate input: its
  flag.
- Findings (unit = topics: the simulations of a topic share its schedule and personas), per agent
  model, topology and memory on the uniform start, each depending on its scope's data only: "B < 0
  under false framing" judged together with the framing test (each bias cell's one-sample t,
  direction -, and its paired t, direction +: B negative in both framings does not follow the
  truth), "B higher under true framing" (each bias cell's paired t, Bonferroni over the fixed family,
  direction +), "D rises with confirmation bias" (adjacent steps of the per-topic D over the bias
  levels that ran: on three levels none < weak and weak < strong, on two their difference; one
  difference per topic, one-sample t, direction +; the claim names the levels that ran); every part
  must hold (socsim.stats.verdict.all_of: "yes" when every part holds, "no" when a part is reversed
  at alpha / parts).
- Flags travel with their numbers. The classifier's degeneracy (one value for >= 90 % of its
  answers) is judged per agent model on the ratings that feed each number: the main simulations'
  ratings for Tables 1 and 2, the tests, the findings and their vs_paper rows; each control's
  ratings for its own rows. B and D at T are made of each measured agent's last classified report,
  which can be one value where the ratings over all steps are not: the same rule is judged on those
  final values per Table 1 cell, per Table 2 cell and per simulation (`value_flags`), and each flag
  goes to its own cell's rows, tests, findings, vs_paper rows and figure panels. Every table row,
  vs_paper row and figure panel carries its inputs' flags and never-measured share.
- vs_paper: every design difference from the paper (data/opinion_dynamics/paper.yaml `design`:
  agent model, classifier, steps T, agents N, world, topology, topics) is named per row; the
  uniform start's D is an input of the run, never a match.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from socsim.io import vs_paper
from socsim.io.report import Finding, Report, Table
from socsim.opinion_dynamics import materials
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd

CELL = ["model", "topology", "init", "memory", "framing", "bias"]
SCOPE = ["model", "topology", "init", "memory"]  # a finding's scope (framing and bias are its parts)
BIAS_ORDER = {"none": 0, "weak": 1, "strong": 2}
MEMORIES = ("cumulative", "reflective")
# The paired t of B (true vs false framing) is Bonferroni-adjusted over a fixed family, the paper's: its
# paired tests of one model (3 bias levels x 2 memories), here per model, topology and start. Fixed, so a
# test's p_adj (and the verdicts made of it) never depends on what else a run has: other models,
# topologies or starts, or fewer cells (then it is conservative). No run has more (params schema).
PAIRED_FAMILY = len(BIAS_ORDER) * len(MEMORIES)
MIN_TEST_UNITS = 3
MAIN = "main"
TITLE = "Opinion dynamics (paper 002): our run beside the paper's Tables 1 and 2 (seed) and v4"
NEVER_MEASURED = "never measured: {pct} % of agents (final opinion = initial)"

FINAL_SCOPE = "last classified opinion of each measured agent"

Flags = Mapping[tuple[str, str], list[dg.Flag]]  # (agent model, condition) -> its ratings' flags
# (grouping columns, their values) -> the flags of the values that feed that group's B and D at T
ValueFlags = Mapping[tuple[tuple[str, ...], tuple[Any, ...]], list[dg.Flag]]


def messages(flags: Iterable[dg.Flag]) -> str:
    """A flags cell: the messages, "; "-separated ("" for none)."""
    return "; ".join(f.message for f in flags)


def never_measured_note(share: float | None) -> str:
    """ "never measured: 60 % of agents (...)", or "" when no agent was unmeasured or n/a."""
    if share is None or pd.isna(share) or share <= 0:
        return ""
    return NEVER_MEASURED.format(pct=round(100 * float(share)))


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
    """B (mean), D_pop and D_sample (SD, ddof 0 and 1) and the number of values; D is n/a (None)
    when fewer than 2 values feed it (a single value has no spread to measure, not a spread of 0)."""
    a = np.asarray([v for v in values if v is not None and not pd.isna(v)], dtype=float)
    return {
        "B": float(a.mean()) if a.size else None,
        "D_pop": float(a.std(ddof=0)) if a.size > 1 else None,
        "D_sample": float(a.std(ddof=1)) if a.size > 1 else None,
        "n_values": int(a.size),
    }


def final_values(setups: pd.DataFrame, traj: pd.DataFrame) -> pd.DataFrame:
    """The values of the main simulations' B and D at T that the classifier made: the last
    classified report of each measured agent (its final opinion). The agents never measured enter
    B and D with their initial opinion, which no classifier saw. Columns sim_id, agent, t, opinion."""
    steps = setups.set_index("sim_id").steps
    main = set(setups[setups.condition == MAIN].sim_id)
    c = traj[(traj.source == "classified") & traj.sim_id.isin(main)]
    c = c[c.t <= c.sim_id.map(steps)]
    last = c.sort_values(["sim_id", "agent", "t"]).groupby(["sim_id", "agent"], sort=True).tail(1)
    return last[["sim_id", "agent", "t", "opinion"]].reset_index(drop=True)


def cell_label(key: Mapping[str, Any]) -> str:
    """ "smollm2-135m, complete, uniform, cumulative, false framing, none bias" (with the category,
    or "simulation <id>", where the key has them)."""
    parts = [f"simulation {key['sim_id']}"] if "sim_id" in key else []
    parts += [f"category {key['category']}"] if "category" in key else []
    parts += [f"{key[c]}{' framing' if c == 'framing' else ' bias' if c == 'bias' else ''}" for c in CELL if c in key]
    return ", ".join(parts)


def final_flags(values: Iterable[Any], key: Mapping[str, Any]) -> list[dg.Flag]:
    """The classifier's degeneracy (one value >= 90 %) on the values that feed one group's B and D
    at T (`final_values` of its simulations, pooled); `key` names the group (a table row, a panel)."""
    return dg.collect(dg.one_value(values, f"{FINAL_SCOPE} ({cell_label(key)})"))


def value_flags(ps: pd.DataFrame, values: pd.DataFrame, *bys: Sequence[str]) -> dict[Any, list[dg.Flag]]:
    """For each grouping in `bys` (a table's row key: CELL for Table 1, category + CELL for Table 2,
    sim_id per simulation) and each group of the main runs in `ps`: `final_flags` on the values that
    feed its B and D at T. Keyed by (grouping, group key); each group's flag is its own. `ps`: any
    per-simulation rows with those columns, `condition` and `sim_id` (per_sim, or the setups)."""
    per = {str(k): g.opinion.tolist() for k, g in values.groupby("sim_id", sort=False)}
    main = ps[ps.condition == MAIN]
    out: dict[Any, list[dg.Flag]] = {}
    for by in bys:
        for key, g in main.groupby(list(by), sort=True):
            key = key if isinstance(key, tuple) else (key,)
            vals = [v for s in g.sim_id for v in per.get(str(s), [])]
            out[(tuple(by), key)] = final_flags(vals, dict(zip(by, key)))
    return out


def _vf(finals: ValueFlags | None, by: Sequence[str], row: Mapping[str, Any]) -> list[dg.Flag]:
    """The flags of one group's final values (`value_flags`), [] where none were judged."""
    return list((finals or {}).get((tuple(by), tuple(row[c] for c in by)), []))


def per_sim(
    setups: pd.DataFrame, traj: pd.DataFrame, ddof: int, flags: Flags | None = None, finals: ValueFlags | None = None
) -> pd.DataFrame:
    """One row per simulation. `flags`: its model's classifier flags for its condition's ratings;
    `final_flags`: those of its own final values (`value_flags` by sim_id; main runs)."""
    rows = []
    by_sim = {k: g for k, g in traj.groupby("sim_id", sort=False)}
    for s in setups.itertuples(index=False):
        g = by_sim[s.sim_id]
        main = s.condition == MAIN
        if main:
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
        measured = set(g[(g.source == "classified") & (g.t <= s.steps)].agent)
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
                "never_reviewed": int(s.n_agents - len(reviewed)) if main else 0,
                # controls: B and D are over classified reports only, no agent enters unmeasured
                "never_measured": int(s.n_agents - len(measured)) if main else None,
                "never_measured_share": (s.n_agents - len(measured)) / s.n_agents if main else None,
                "flags": messages((flags or {}).get((s.model, s.condition), [])),
                "final_flags": messages(_vf(finals, ["sim_id"], {"sim_id": s.sim_id})) if main else "",
            }
        )
    out = pd.DataFrame(rows)
    if len(out):
        out = out.astype({"never_measured": "Int64", "never_measured_share": "float64"})
    return out


def _se(x: pd.Series) -> float | None:
    return float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else None


def _mean_all(x: pd.Series) -> float:
    """The mean, n/a (NaN) when any value is n/a: a mean over fewer units than the cell names is not
    the cell's."""
    return float(x.mean(skipna=False)) if len(x) else float("nan")


def aggregate(
    ps: pd.DataFrame, by: list[str], flags: Flags | None = None, finals: ValueFlags | None = None
) -> pd.DataFrame:
    """Mean over topics +- SE (repetitions averaged within a topic first; their SD kept); the share
    of the cell's agents never measured (when `ps` has it), the number of values per simulation
    that feed B and D (when `ps` has `n_values`) and, given `flags` / `finals`, the flags of the
    cell's ratings (its model's, for its condition: `condition` in `by`, else the main runs') and of
    the cell's own final values (`value_flags` by `by`). D is n/a where a simulation's is."""
    nm = "never_measured" in ps.columns
    nv = "n_values" in ps.columns
    agg: dict[str, tuple[str, Any]] = {
        "B": ("B", "mean"),
        "D": ("D", _mean_all),
        "rep_sd_B": ("B", "std"),
        "rep_sd_D": ("D", "std"),
        "reps": ("B", "size"),
    }
    if nm:
        agg |= {"_nm": ("never_measured", "sum"), "_na": ("n_agents", "sum"), "_nm_n": ("never_measured", "count")}
    if nv:
        agg |= {"_nv_lo": ("n_values", "min"), "_nv_hi": ("n_values", "max")}
    topic_level = ps.groupby(by + ["topic"], sort=True).agg(**agg).reset_index()
    rows = []
    for key, g in topic_level.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        row = {
            **dict(zip(by, key)),
            "B": g.B.mean(),
            "B_se": _se(g.B),
            "D": _mean_all(g.D),
            "D_se": _se(g.D) if g.D.notna().all() else None,
            "n_topics": len(g),
            "reps": int(g.reps.max()),
            "rep_sd_B": g.rep_sd_B.mean() if g.reps.max() > 1 else None,
            "rep_sd_D": g.rep_sd_D.mean() if g.reps.max() > 1 else None,
        }
        if nm:
            row["never_measured_share"] = float(g._nm.sum() / g._na.sum()) if g._nm_n.sum() else None
        if nv:
            lo, hi = int(g._nv_lo.min()), int(g._nv_hi.max())
            row["values_per_sim"] = str(lo) if lo == hi else f"{lo}-{hi}"
        if flags is not None or finals is not None:
            cond = row["condition"] if "condition" in row else MAIN
            row["flags"] = messages(dg.collect((flags or {}).get((row["model"], cond), []), _vf(finals, by, row)))
        rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        out = (
            out.assign(_b=out.bias.map(BIAS_ORDER))
            .sort_values([c for c in by if c != "bias"] + ["_b"], kind="stable")
            .drop(columns="_b")
            .reset_index(drop=True)
        )
        if nm:
            out = out.astype({"never_measured_share": "float64"})
    return out


def _pct(x: Any) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{round(100 * float(x))} %"


def show(df: pd.DataFrame, by: list[str], values: bool = False) -> pd.DataFrame:
    """Table cells as the paper prints them: 'B ± SE' and 'D ± SE' (SE n/a for one topic; D n/a
    where fewer than 2 values feed it); with `values` the number of values per simulation that feed
    them; the share of agents never measured and the cell's flags beside them, when the table has
    them."""

    def f(m: Any, s: Any) -> str:
        if m is None or pd.isna(m):
            return "n/a"
        return f"{m:.2f}" if s is None or pd.isna(s) else f"{m:.2f} ± {s:.2f}"

    out = pd.DataFrame(
        {
            **{c: df[c] for c in by},
            "B": [f(m, s) for m, s in zip(df.B, df.B_se)],
            "D": [f(m, s) for m, s in zip(df.D, df.D_se)],
            "n_topics": df.n_topics,
        }
    )
    if values and "values_per_sim" in df.columns:
        out["values per sim"] = df.values_per_sim
    if "never_measured_share" in df.columns:
        out["never measured"] = [_pct(x) for x in df.never_measured_share]
    if "flags" in df.columns:
        out["flags"] = df["flags"]
    return out


# ---------------------------------------------------------------------------------------------------
# The classifier's flags: judged on the ratings that feed each number


def with_condition(ratings: pd.DataFrame, setups: pd.DataFrame) -> pd.DataFrame:
    """The ratings with their simulation's condition (main | control_roleplay | control_bare)."""
    return ratings.merge(setups[["sim_id", "condition"]], on="sim_id", how="left", validate="many_to_one")


def classifier_flags(ratings: pd.DataFrame) -> dict[tuple[str, str], list[dg.Flag]]:
    """Per (agent model, condition): a classifier whose answers on those reports carry no
    information (one value >= 90 %). The main runs and each control are judged on their own
    ratings, never pooled: the numbers of one are not made of the other's ratings."""
    out = {}
    for (model, cond), g in ratings.groupby(["model", "condition"], sort=True):
        scope = f"opinion classifier on {model}'s reports ({'main simulations' if cond == MAIN else cond})"
        out[(str(model), str(cond))] = dg.collect(dg.one_value(g.opinion.dropna().tolist(), scope))
    return out


def rating_shares(ratings: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (agent model, condition): how many reports were rated, and the most common value's share."""
    rows = []
    for (model, cond), g in ratings.groupby(["model", "condition"], sort=True):
        v = g.opinion.dropna()
        top = v.value_counts()
        rows.append(
            {
                "model": model,
                "condition": cond,
                "ratings": int(len(g)),
                "parsed": int(len(v)),
                "top_value": int(top.index[0]) if len(top) else None,
                "top_share": float(top.iloc[0] / len(v)) if len(top) else None,
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------------
# The paper's tests


def _result(deg: list[dg.Flag], short: str | None, p: float | None, alpha: float) -> str:
    """A tests-table cell: a degenerate input's flag, "inconclusive (too few)", or the test's result."""
    if deg:
        return deg[0].message
    if short:
        return f"inconclusive ({short})"
    return "significant" if p is not None and p < alpha else "not significant"


def _too_few(n: int, need: int, unit: str) -> str | None:
    """ "n = 2 topics, needs 3" (the verdict rule's words) when n < need, else None."""
    return vd.effect(None, None, n, need, unit).reason if n < need else None


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
        short = _too_few(len(g), MIN_TEST_UNITS, "topics")
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
        short = _too_few(n, MIN_TEST_UNITS, "topics")
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


def bonferroni_fixed(p: float | None, family: int) -> float | None:
    """A p Bonferroni-adjusted over a fixed family of `family` tests: min(1, family x p); None stays None."""
    return None if p is None or pd.isna(p) else min(1.0, float(p) * family)


def tests(ps: pd.DataFrame, flags: Flags, alpha: float, finals: ValueFlags | None = None) -> pd.DataFrame:
    """The paper's tests as a table, each row with its inputs' flags."""
    return pd.DataFrame([{**r, "flags": messages(fl)} for r, fl in paper_tests(ps, flags, alpha, finals)])


def anova_rows(main: pd.DataFrame, flags: Flags, alpha: float, finals: ValueFlags | None = None) -> list[TestRow]:
    """One-way ANOVA of D by bias level per (model, topology, start, memory). Units = topics: a
    topic's D per bias level is averaged over framings and repetitions (the framings of a topic
    share its schedule and personas, they are not independent units). Each bias level needs
    MIN_TEST_UNITS topics, as every other test; `n` is the smallest number of topics of a level."""
    out: list[TestRow] = []
    by = SCOPE
    units = main.groupby(by + ["bias", "topic"], sort=True)["D"].mean().reset_index()
    for key, g in units.groupby(by, sort=True):
        k = dict(zip(by, key))
        groups = {b: g[g.bias == b].D.to_numpy(dtype=float) for b in BIAS_ORDER if (g.bias == b).any()}
        n = min((len(v) for v in groups.values()), default=0)
        short = _too_few(len(groups), 2, "bias levels") or _too_few(n, MIN_TEST_UNITS, "topics")
        cells = main[np.logical_and.reduce([main[c] == k[c] for c in by])]
        fl = dg.collect(
            flags.get((k["model"], MAIN), []),
            cells_flags(finals, cells),
            dg.near_constant(g.D, "D") if not short else None,
        )
        res = anova(groups) if not fl and not short else {}
        if res and not np.isfinite(res["F"]):
            fl.append(dg.Flag("ANOVA of D by bias", "no variance within bias levels"))
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
    """F and p of a one-way ANOVA, and the planned contrasts of PLANNED_CONTRASTS on all three levels,
    (-2, 1, 1) none vs bias and (0, -1, 1) weak vs strong, as the paper computes them (v4 App. M: t on
    the pooled within-group mean square, the levels' topics taken as independent groups). The paper's
    tests, without a verdict: "D rises" (`d_rises`) is judged by adjacent steps, paired within topic."""
    vals = list(groups.values())
    f, p = stats.f_oneway(*vals)
    out = {"F": float(f), "p": float(p)}
    if set(groups) == set(BIAS_ORDER):
        n = sum(len(v) for v in vals)
        mse = sum(((v - v.mean()) ** 2).sum() for v in vals) / (n - len(vals))
        for name, (_, c) in zip(("1", "2"), PLANNED_CONTRASTS, strict=True):
            est = sum(c[b] * groups[b].mean() for b in groups)
            se = math.sqrt(mse * sum(c[b] ** 2 / len(groups[b]) for b in groups))
            t = est / se if se > 0 else float("nan")
            out[f"c{name}"], out[f"p{name}"] = float(t), float(2 * stats.t.sf(abs(t), n - len(vals)))
    return out


def baseline_table(
    ps: pd.DataFrame,
    base: pd.DataFrame,
    setups: pd.DataFrame,
    ddof: int,
    flags: Flags | None = None,
    finals: ValueFlags | None = None,
) -> pd.DataFrame:
    """B and D of the LLM runs beside the numeric baselines on the same N, T, schedule and start.
    `never_measured_share`: the LLM runs' agents never measured; the baselines' agents never reviewed
    (they keep their initial opinion too). `flags`: the LLM rows' classifier flags (the baselines
    use no model) and their cells' final-value flags (`finals`, by CELL)."""
    steps = setups.set_index("sim_id").steps
    final = base[base.t == base.sim_id.map(steps)]
    rows = []
    for (sim, kind), g in final.groupby(["sim_id", "baseline"], sort=True):
        bd = bias_diversity(g.opinion.tolist())
        rows.append({"sim_id": sim, "baseline": kind, "B": bd["B"], "D": bd["D_pop"] if ddof == 0 else bd["D_sample"]})
    bdf = pd.DataFrame(rows, columns=["sim_id", "baseline", "B", "D"])
    main = ps[ps.condition == MAIN]
    nm = ["never_measured", "n_agents"] if "never_measured" in main.columns else []
    llm = main[["sim_id", *CELL, "topic", "B", "D", *nm]].assign(source="llm")
    keep = ["sim_id", *CELL, "topic", *(["n_agents"] if nm else [])]
    others = [
        main[keep + (["never_reviewed"] if nm else [])]
        .rename(columns={"never_reviewed": "never_measured"})
        .merge(bdf[bdf.baseline == k], on="sim_id")
        .drop(columns="baseline")
        .assign(source=k)
        for k in sorted(bdf.baseline.unique())
    ]
    both = pd.concat([llm, *others], ignore_index=True)
    out = aggregate(both.rename(columns={"source": "run"}), ["run", *CELL])
    if (flags is not None or finals is not None) and len(out):
        out["flags"] = [
            messages(dg.collect((flags or {}).get((r["model"], MAIN), []), _vf(finals, CELL, r)))
            if r["run"] == "llm"
            else ""
            for r in out.to_dict("records")
        ]
    return out


# ---------------------------------------------------------------------------------------------------
# Findings (the one verdict rule; unit = topics)


def _scope_label(k: Mapping[str, Any]) -> str:
    start = "" if k["init"] == "uniform" else f", {k['init']} start"
    return f"{k['model']}, {k['memory']}, {k['topology']}{start}"


def findings(
    ps: pd.DataFrame,
    tests_: list[TestRow],
    flags: Flags,
    paper: Mapping[str, Any],
    alpha: float,
    finals: ValueFlags | None = None,
) -> dict[tuple[Any, ...], dict[str, Finding]]:
    """Per scope (model, topology, start, memory) of the main runs on the uniform start: the paper's
    "B follows the truth" as `false_negative` (B < 0 under false framing, judged together with the
    framing test: negative in both framings is not following the truth) and `true_higher` (B higher
    under true framing), and `d_rises` ("D rises with confirmation bias", by adjacent steps), each by
    the one verdict rule over topics (`vd.all_of`: every part must hold). The B findings carry their
    tests' flags; `d_rises` the model's main-ratings flags and the final-value flags of every cell of
    its scope (`finals`). A verdict depends on its scope's data only."""
    claims = paper.get("findings", {})
    truth = str(claims.get("truth", "B follows the truth")).split(":")[0]
    main = ps[(ps.condition == MAIN) & (ps.init == "uniform")]
    out: dict[tuple[Any, ...], dict[str, Finding]] = {}
    for key, g in main.groupby(SCOPE, sort=True):
        k = dict(zip(SCOPE, key))
        fl = dg.collect(flags.get((k["model"], MAIN), []), cells_flags(finals, g))
        label = _scope_label(k)
        biases = sorted(set(g.bias), key=cast(Callable[[str], int], BIAS_ORDER.get))
        mine = [(r, f) for r, f in tests_ if all(r[c] == k[c] for c in SCOPE)]
        found: dict[str, Finding] = {}
        one = [(r, f) for r, f in mine if r["test"] == "one-sample t: B vs 0" and r["framing"] == "false"]
        pair = [(r, f) for r, f in mine if r["test"] == "paired t: B true vs false"]
        pair = pair if {"true", "false"} <= set(g.framing) else []
        higher = [_paired_part(r, f, alpha) for r, f in pair]
        if one:
            negative = [
                _part(
                    f"{r['bias']} bias, B(false) < 0",
                    vd.effect(r["p"], r["mean"], r["n"], MIN_TEST_UNITS, "topics", -1, f, alpha),
                    r["n"],
                )
                for r, f in one
            ]
            found["false_negative"] = Finding(
                claim=f"{truth}: B < 0 under false framing, and below B under true framing ({label})",
                statistic="mean B under false framing (mean over topics of each bias cell, then over cells)",
                value=_float(
                    g[g.framing == "false"].groupby(["bias", "topic"]).B.mean().groupby(level=0).mean().mean()
                ),
                test="per bias cell: one-sample t of the per-topic B under false framing against 0 (direction -) "
                "and the paired t of B(true) - B(false) over topics (direction +, Bonferroni over the fixed "
                f"family of {PAIRED_FAMILY} paired tests), two-sided; every part must hold (B < 0 in both framings "
                "does not follow the truth)",
                unit="topics",
                n=min(r["n"] for r, _ in one + pair),
                verdict=vd.all_of(negative + higher)
                if pair
                else vd.Verdict(None, "needs both framings: B < 0 under false framing alone does not follow the truth"),
            )
        if pair:
            means = [r["mean"] for r, _ in pair if r["mean"] is not None and not pd.isna(r["mean"])]
            found["true_higher"] = Finding(
                claim=f"{truth}: B higher under true framing ({label})",
                statistic="mean over bias cells of the mean per-topic B(true) - B(false)",
                value=_float(np.mean(means)) if means else None,
                test="paired t of B over topics (true vs false framing) in each bias cell, two-sided, Bonferroni "
                f"over the fixed family of {PAIRED_FAMILY} paired tests (the paper's 3 bias levels x 2 memories per "
                "model, topology and start); every cell must hold",
                unit="topics",
                n=min(r["n"] for r, _ in pair),
                verdict=vd.all_of(higher),
            )
        found["d_rises"] = d_rises(
            g, biases, fl, claims.get("bias_diversity", "D rises with confirmation bias"), label, alpha
        )
        out[tuple(key)] = found
    return out


def _part(name: str, v: vd.Verdict, n: int) -> vd.Verdict:
    """A claim's part named in its reason; too few topics keep the rule's own words ("n = 2 topics, needs 3")."""
    return vd.named(name, v) if n >= MIN_TEST_UNITS else v


def _paired_part(r: Mapping[str, Any], f: list[dg.Flag], alpha: float) -> vd.Verdict:
    """ "B(true) > B(false)" in one bias cell: the paired t's p_adj (Bonferroni over PAIRED_FAMILY)."""
    v = vd.effect(r["p_adj"], r["mean"], r["n"], MIN_TEST_UNITS, "topics", +1, f, alpha, family=PAIRED_FAMILY)
    return _part(f"{r['bias']} bias, B(true) > B(false)", v, r["n"])


def _float(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


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


def d_rises(
    g: pd.DataFrame, biases: list[str], flags: list[dg.Flag], claim: str, label: str, alpha: float = vd.ALPHA
) -> Finding:
    """ "D rises with confirmation bias" in one scope, by adjacent steps of the bias levels that ran
    (`steps`: none < weak and weak < strong on three levels), topics as the unit: a topic's D per level
    is averaged over framings and repetitions, each step gives one difference per topic
    (`contrast_scores`), tested by a one-sample t against 0 over topics (a paired t), two-sided,
    direction +; every step must hold (`vd.all_of`: an intersection-union test, so a "yes" says that
    every step rises; a "no" needs one step falling at alpha / steps). The claim names the levels that
    ran ("(none < strong; ...)"), replacing the paper's list of levels."""
    per = g.groupby(["topic", "bias"]).D.mean().unstack("bias")
    base = re.sub(r"\s*\([^()]*<[^()]*\)\s*$", "", claim)
    contrasts = steps(biases)
    parts, ns, shown = [], [], []
    for name, weights in contrasts:
        d = contrast_scores(per, weights)
        n = len(d)
        fl = dg.collect(flags, dg.near_constant(d, f"D step {name} over topics") if n >= MIN_TEST_UNITS else None)
        mean, p = vd.one_sample(d, 0.0)
        parts.append(_part(name, vd.effect(p, mean, n, MIN_TEST_UNITS, "topics", +1, fl, alpha), n))
        ns.append(n)
        shown.append(name)
    whole = (per[biases[-1]] - per[biases[0]]).dropna() if len(biases) > 1 else pd.Series(dtype=float)
    return Finding(
        claim=f"{base} ({' < '.join(biases)}; {label})",
        statistic=f"mean per-topic D({biases[-1]}) - D({biases[0]})" if len(biases) > 1 else "n/a",
        value=_float(whole.mean()) if len(whole) else None,
        test=(
            f"adjacent step(s) {'; '.join(shown)} of the per-topic D, one difference per topic, one-sample t "
            "against 0 over topics (paired), two-sided; every step must hold (the paper's planned contrasts "
            "(-2, 1, 1) and (0, -1, 1) are in the tests table: they do not test this order)"
        )
        if contrasts
        else "n/a",
        unit="topics",
        n=min(ns) if ns else 0,
        verdict=vd.all_of(parts) if parts else vd.Verdict(None, f"needs 2 bias levels, ran {len(biases)}"),
    )


# ---------------------------------------------------------------------------------------------------
# vs_paper


def _shown(v: Any) -> str:
    vals = sorted({str(x) for x in (v if isinstance(v, list | tuple | set | pd.Series | np.ndarray) else [v])})
    return ", ".join(vals)


def design(
    cells: pd.DataFrame, classifier: Mapping[str, str], paper: Mapping[str, Any], table: str | None = None
) -> list[str]:
    """The design differences of the numbers made of `cells` (per-simulation rows: model, steps,
    n_agents, world, topology, topic) from the paper's (paper.yaml `design`; `topics` per `table`)."""
    ref = dict(paper.get("design") or {})
    topics = ref.pop("topics", {}) or {}
    models = sorted(set(cells.model)) if "model" in cells else []
    ours: dict[str, Any] = {"agent model": models, "classifier": sorted({classifier.get(m, "unknown") for m in models})}
    for col, name in (("steps", "steps T"), ("n_agents", "agents N"), ("world", "world"), ("topology", "topology")):
        if col in cells:
            ours[name] = sorted({str(x) for x in cells[col]})
    if table is not None and "topic" in cells:
        per = cells.groupby("category").topic.nunique() if table == "table2" else [cells.topic.nunique()]
        ours["topics"] = max(per) if len(cells) else 0
        ref["topics"] = topics.get(table)
    ours = {k: _shown(v) for k, v in ours.items()}
    return vs_paper.differences(ours, {k: _shown(v) if v is not None else None for k, v in ref.items()})


def vs_paper_rows(
    ps: pd.DataFrame,
    setups: pd.DataFrame,
    found: Mapping[tuple[Any, ...], Mapping[str, Finding]],
    tst: pd.DataFrame,
    paper: dict[str, Any],
    flags: Flags,
    classifier: Mapping[str, str],
    finals: ValueFlags | None = None,
) -> list[vs_paper.Row]:
    """Every Table 1 / Table 2 cell we ran beside the seed paper's (D as population SD, as the
    tables), v4's global-warming runs, the findings, and the uniform start's sample SD (an input).
    Each row carries its inputs' flags (the main ratings' classifier flag of its model and the
    final-value flags of its own cell, simulation or, for a finding, the cells it is made of:
    `finals`), the share of agents never measured, and its own design differences."""
    rows: list[vs_paper.Row] = []
    main = ps[(ps.condition == MAIN) & (ps.init == "uniform")]
    pop = main.assign(D=main.D_pop)  # the paper's tables: population SD whatever metrics.ddof says

    def fl(model: str) -> list[dg.Flag]:
        return flags.get((model, MAIN), [])

    def note(*parts: str) -> str:
        return "; ".join(p for p in parts if p)

    ref_of: Callable[[Any], dict[str, Any]]
    for by, ref_of, name, table in (
        (CELL, lambda r: paper["table1"], "Table 1", "table1"),
        (["category", *CELL], lambda r: paper["table2"].get(r.category, {}), "Table 2", "table2"),
    ):
        for r in aggregate(pop, by).itertuples(index=False):
            p = ref_of(r).get(r.memory, {}).get(r.framing, {}).get(r.bias)
            if p is None:
                continue
            where = f" {r.category}" if name == "Table 2" else ""
            label = f"{name}{where} ({r.model}, {r.topology}): {r.memory}, {r.framing} framing, {r.bias} bias"
            cell = pop[np.logical_and.reduce([pop[c] == getattr(r, c) for c in by])]
            n = note(f"mean over {r.n_topics} topic(s)", never_measured_note(getattr(r, "never_measured_share", None)))
            dsg = design(cell, classifier, paper, table)
            cf = dg.collect(fl(r.model), _vf(finals, by, r._asdict()))
            rows.append(vs_paper.Row(f"{label}: B", r.B, p["B"], note=n, flags=cf, design=dsg))
            rows.append(vs_paper.Row(f"{label}: D (population SD)", r.D, p["D"], note=n, flags=cf, design=dsg))
    gw = paper.get("global_warming_v4", {})
    for r in main[main.topic == "global_warming"].itertuples(index=False):
        p = gw.get(r.memory, {}).get(r.framing, {}).get(r.bias)
        if p is not None:
            label = (
                f"global warming, arXiv v4 Table 6 ({r.model}, {r.topology}, rep {r.rep}): "
                f"{r.memory}, {r.framing}, {r.bias}"
            )
            n = note("one run each", never_measured_note(getattr(r, "never_measured_share", None)))
            dsg = design(main[main.sim_id == r.sim_id], classifier, paper, "global_warming_v4")
            sf = dg.collect(fl(r.model), _vf(finals, ["sim_id"], {"sim_id": r.sim_id}))
            rows.append(vs_paper.Row(f"{label}: B", r.B, p["B"], note=n, flags=sf, design=dsg))
            rows.append(vs_paper.Row(f"{label}: D (population SD)", r.D_pop, p["D"], note=n, flags=sf, design=dsg))
    ref = paper["table1"]
    for key, g in main.groupby(SCOPE, sort=True):
        k = dict(zip(SCOPE, key))
        model, topology, memory = k["model"], k["topology"], k["memory"]
        f = found.get(tuple(key), {})
        biases = sorted(set(g.bias), key=cast(Callable[[str], int], BIAS_ORDER.get))  # every bias is a key
        paper_b = {
            fr: np.mean([ref.get(memory, {}).get(fr, {}).get(b, {}).get("B", np.nan) for b in biases])
            for fr in ("false", "true")
        }
        share = float(g.never_measured.sum() / g.n_agents.sum()) if "never_measured" in g else None
        nm = never_measured_note(share)
        dsg = design(g, classifier, paper, "table1")
        scope = f"{model}, {memory} ({topology}), bias {'/'.join(biases)}"
        false_b = g[g.framing == "false"].B
        every = dg.collect(fl(model), cells_flags(finals, g))  # the flags of every cell of the scope
        if "false_negative" in f:
            rows.append(
                vs_paper.Row(
                    f"{scope}: mean B under false framing",
                    false_b.mean() if len(false_b) else None,
                    paper_b["false"],
                    finding=f["false_negative"].claim,
                    verdict=f["false_negative"].verdict,
                    flags=every,  # judged with the framing test: both framings' cells
                    design=dsg,
                    note=note(
                        "holds: each false-framing bias cell's B < 0 by a one-sample t over topics, and B higher "
                        "under true framing in that cell (paired t over topics, Bonferroni over "
                        f"{PAIRED_FAMILY} tests)",
                        nm,
                    ),
                )
            )
        if "true_higher" in f:
            diff = g[g.framing == "true"].B.mean() - false_b.mean()
            rows.append(
                vs_paper.Row(
                    f"{scope}: B(true) - B(false)",
                    diff,
                    paper_b["true"] - paper_b["false"],
                    finding=f["true_higher"].claim,
                    verdict=f["true_higher"].verdict,
                    flags=every,
                    design=dsg,
                    note=note(
                        "holds: B higher under true framing in every bias cell (paired t over topics, Bonferroni over "
                        f"{PAIRED_FAMILY} tests)",
                        nm,
                    ),
                )
            )
        sel = np.logical_and.reduce([tst[c] == k[c] for c in SCOPE]) & (tst.test == "one-way ANOVA: D by bias")
        three = len(biases) == 3
        for a in tst[sel].itertuples(index=False):
            rows.append(
                vs_paper.Row(
                    f"{scope}: ANOVA F of D by bias",
                    a.statistic,
                    paper.get("anova_v4", {}).get(memory, {}).get("F") if three else None,
                    finding=f["d_rises"].claim,
                    verdict=f["d_rises"].verdict,
                    flags=every,
                    design=dsg,
                    note=note(
                        "paper: arXiv v4 App. M, F(2) over 3 levels"
                        if three
                        else f"paper's F(2) needs all 3 bias levels; ran {len(biases)}",
                        "holds: D rises at every adjacent step of the bias levels that ran (per-topic "
                        "differences, one-sample t over topics; on 3 levels none < weak and weak < strong)",
                        nm,
                    ),
                )
            )
    start = setups[(setups.condition == MAIN) & (setups.init == "uniform")]
    if len(start):
        initial = list(start.iloc[0]["initial"])
        rows.append(
            vs_paper.Row(
                "uniform start: D (sample SD, ddof 1)",
                float(np.std(initial, ddof=1)),
                paper["uniform_start"]["D_sample"],
                is_input=True,
                note=f"the assigned start, not a result of the run; N = {len(initial)}; the population SD of "
                f"the same start is {np.std(initial):.4f}",
            )
        )
    return rows


# ---------------------------------------------------------------------------------------------------
# The report


def paper_world(worlds: Iterable[str]) -> str:
    """The world setting of the paper's tables: closed where it ran (the paper reports only it)."""
    ran = sorted(set(worlds))
    return "closed" if "closed" in ran or not ran else ran[0]


def analyse(
    setups: pd.DataFrame,
    traj: pd.DataFrame,
    ratings: pd.DataFrame,
    baseline: pd.DataFrame,
    paper: dict[str, Any],
    ddof: int,
    alpha: float,
    outside: pd.DataFrame | None = None,
    outside_sample: int | None = 0,
    classifier_layout: str = "shared_first",
) -> Report:
    """The study's report: per_sim, table1, table2, controls, tests, baseline, per_topic, the
    findings, the flags with where they apply, vs_paper (with Fig. 5's reported B) and the run's
    design differences; `outside`: the outside-information judge's labels (outside_info table,
    finding and vs_paper rows). Where both world settings ran, the paper's tables, tests, findings,
    controls and baselines are the closed world's (the paper reports only it); per_sim and per_topic
    hold every world, and the outside-information rate is per world. `classifier_layout` (the
    classifier's prompt order, classifier.layout) is a design difference of the run and of every
    vs_paper row made of the classifier's ratings unless it is App. I's."""
    pw = paper_world(setups.world) if len(setups) else "closed"
    here = setups.world == pw if len(setups) else pd.Series(dtype=bool)
    if len(setups) and not here.all():
        ids = set(setups[here].sim_id)
        rep = _analyse_one(
            setups[here].reset_index(drop=True),
            traj[traj.sim_id.isin(ids)],
            ratings[ratings.sim_id.isin(ids)],
            baseline[baseline.sim_id.isin(ids)],
            paper,
            ddof,
            alpha,
        )
        parts = [rep.tables["per_sim"].df]
        for _, sw in setups[~here].groupby("world", sort=True):
            ids = set(sw.sim_id)
            tw, rw = traj[traj.sim_id.isin(ids)], ratings[ratings.sim_id.isin(ids)]
            fl = classifier_flags(with_condition(rw, sw))
            parts.append(per_sim(sw, tw, ddof, fl, value_flags(sw, final_values(sw, tw), ["sim_id"])))
        order = {s: i for i, s in enumerate(setups.sim_id)}
        ps_all = pd.concat(parts, ignore_index=True)
        ps_all = ps_all.iloc[np.argsort([order[s] for s in ps_all.sim_id], kind="stable")].reset_index(drop=True)
        t = rep.tables["per_sim"]
        rep.tables["per_sim"] = Table(
            ps_all,
            t.title,
            [*t.notes, f"every world setting; the paper's tables use the {pw} world only"],
            flags=t.flags,
        )
        for name in ("table1", "table2", "tests", "controls", "baseline"):
            rep.tables[name].notes = [*rep.tables[name].notes, f"{pw} world only (the paper's); other worlds: per_sim"]
    else:
        rep = _analyse_one(setups, traj, ratings, baseline, paper, ddof, alpha)
    ps = rep.tables["per_sim"].df
    pt = per_topic(ps)
    rep.tables["per_topic"] = Table(
        pt,
        "B and D per topic (mean over repetitions; Fig. 4 per topic)",
        [
            "D = the per_sim D (metrics.ddof); rep_sd_*: SD over repetitions where more than one ran",
            "flags: the classifier's on the model's ratings of the world, and on each simulation's final values",
        ],
        show_per_topic(pt),
        flags=rep.tables["per_sim"].flags,
    )
    classifier = (
        {str(m): _shown(list(g.classifier_model.unique())) for m, g in ratings.groupby("model", sort=True)}
        if "classifier_model" in ratings and len(ratings)
        else {}
    )
    rep.vs_paper += fig5_rows(ps, paper, classifier)
    layout = vs_paper.differences(
        {"classifier prompt": materials.LAYOUTS[classifier_layout]}, {"classifier prompt": materials.LAYOUTS["paper"]}
    )
    rep.design += layout
    for row in rep.vs_paper:  # every row so far is made of the classifier's ratings (the judge's come next)
        if row.design is not None and not row.is_input:
            row.design = [*row.design, *layout]
    if outside is not None:
        outside_info_report(rep, outside, setups, ps, paper, classifier, outside_sample, alpha)
    return rep


def _analyse_one(
    setups: pd.DataFrame,
    traj: pd.DataFrame,
    ratings: pd.DataFrame,
    baseline: pd.DataFrame,
    paper: dict[str, Any],
    ddof: int,
    alpha: float,
) -> Report:
    """The report of one world setting: per_sim, table1, table2, controls, tests, baseline, the
    findings, the flags with where they apply, vs_paper and the run's design differences."""
    rated = with_condition(ratings, setups)
    flags = classifier_flags(rated)
    classifier = (
        {str(m): _shown(list(g.classifier_model.unique())) for m, g in rated.groupby("model", sort=True)}
        if "classifier_model" in rated
        else {}
    )
    fv = final_values(setups, traj)
    by1, by2 = CELL, ["category", *CELL]
    finals = value_flags(setups, fv, by1, by2, ["sim_id"])
    ps = per_sim(setups, traj, ddof, flags, finals)
    main, ctrl = ps[ps.condition == MAIN], ps[ps.condition != MAIN]
    d_note = f"D = {'population' if ddof == 0 else 'sample'} SD (metrics.ddof = {ddof}); mean over topics ± SE"
    fv_note = (
        f"flags: the classifier's on the model's main ratings, and on the values that feed the row's B and D at T "
        f"({FINAL_SCOPE}), judged per row"
    )
    nm_note = (
        "never measured: agents without a classified report up to T; their final opinion is their initial one "
        "(kept in B and D, as in the paper)"
    )
    rep = Report(TITLE)

    def table_flags(keys: Iterable[tuple[str, str]]) -> list[dg.Flag]:
        return dg.collect(*(flags.get(k, []) for k in keys))

    main_keys = [(m, MAIN) for m in sorted(set(main.model))]
    ctrl_keys = sorted({(str(m), str(c)) for m, c in zip(ctrl.model, ctrl.condition)})

    def row_flags(by: Sequence[str]) -> list[dg.Flag]:
        return dg.collect(*(v for (b, _), v in finals.items() if b == tuple(by)))

    rep.tables["per_sim"] = Table(
        ps,
        "Per simulation: B, D (population and sample SD), dynamics, agents never measured, flags",
        [nm_note, f"final_flags: the classifier's on the simulation's own final values ({FINAL_SCOPE})"],
        flags=dg.collect(table_flags([*main_keys, *ctrl_keys]), row_flags(["sim_id"])),
    )
    t1 = aggregate(main, by1, flags, finals)
    rep.tables["table1"] = Table(
        t1,
        "Table 1: B and D per condition (all topics)",
        [d_note, nm_note, fv_note],
        show(t1, by1),
        flags=dg.collect(table_flags(main_keys), row_flags(by1)),
    )
    t2 = aggregate(main, by2, flags, finals)
    rep.tables["table2"] = Table(
        t2,
        "Table 2: B and D per topic category",
        [d_note, nm_note, fv_note],
        show(t2, by2),
        flags=dg.collect(table_flags(main_keys), row_flags(by2)),
    )
    by_c = ["model", "condition", "framing", "bias"]
    tc = aggregate(ctrl.drop(columns=["never_measured", "never_measured_share"]), by_c, flags)
    rep.tables["controls"] = Table(
        tc,
        "Controls: B and D over every classified report (no interaction)",
        [
            d_note,
            "D n/a where fewer than 2 values feed it (values per sim: the classified reports of each simulation; "
            "a bare control has one)",
            "each control's flags are judged on its own ratings (every one of them feeds its B and D)",
        ],
        show(tc, by_c, values=True),
        flags=table_flags(ctrl_keys),
    )
    test_rows = paper_tests(ps, flags, alpha, finals)
    tst = pd.DataFrame([{**r, "flags": messages(f)} for r, f in test_rows])
    rep.tables["tests"] = Table(
        tst,
        "The paper's tests (one-sample t of B, paired framing t, ANOVA of D by bias)",
        [
            f"alpha = {alpha}",
            f"each test needs {MIN_TEST_UNITS} topics (units; the ANOVA: per bias level, a topic's D averaged over "
            "framings and repetitions); fewer: inconclusive",
            f"paired t: p_adj = min(1, {PAIRED_FAMILY} p), Bonferroni over a fixed family, the paper's "
            f"{PAIRED_FAMILY} paired tests of a model (3 bias levels x 2 memories), here per model, topology and "
            "start, whatever else the run has",
            "ANOVA: the paper's planned contrasts (-2, 1, 1) and (0, -1, 1), without a verdict of their own; "
            "the finding 'D rises' is judged by adjacent steps (findings)",
        ],
        flags=dg.collect(*(f for _, f in test_rows)),
    )
    base = baseline_table(ps, baseline, setups, ddof, flags, finals)
    rep.tables["baseline"] = Table(
        base,
        "B and D: LLM runs beside the numeric baselines (same N, T, schedule, start)",
        [d_note, "never_measured_share: the LLM runs' agents never measured; the baselines' agents never reviewed"],
        flags=dg.collect(table_flags(main_keys), row_flags(by1)),
    )
    found = findings(ps, test_rows, flags, paper, alpha, finals)
    rep.findings = [f for fs in found.values() for f in fs.values()]
    rep.vs_paper = vs_paper_rows(ps, setups, found, tst, paper, flags, classifier, finals)
    run_design = design(main[main.init == "uniform"] if len(main) else main, classifier, paper)
    rep.design = run_design
    for m in sorted(set(main.model)):
        for f in flags.get((m, MAIN), []):
            rep.flag(
                f,
                f"per_sim ({m}, main)",
                "table1",
                "table2",
                "tests",
                "baseline (llm rows)",
                f"findings ({m})",
                f"vs_paper ({m}: Table 1, Table 2, v4 and finding rows)",
                f"figures: trajectories_{m}_*, final_distribution_{m}_*, bias_diversity_{m}",
            )
    for (by, key), fls in finals.items():
        k = dict(zip(by, key))
        for f in fls:
            if by == ("sim_id",):
                s = main[main.sim_id == k["sim_id"]].iloc[0]
                rep.flag(
                    f,
                    f"per_sim ({k['sim_id']}: final_flags)",
                    *(["vs_paper (its arXiv v4 global-warming rows)"] if s.topic == "global_warming" else []),
                    f"figures: trajectories_{s.model}_{s.topic}_{s.memory}_{s.init}_{s.topology} "
                    f"(panel {s.framing} framing, {s.bias} bias)",
                )
            elif by == tuple(by2):
                rep.flag(f, f"table2 ({cell_label(k)})", f"vs_paper (its Table 2 rows: {cell_label(k)})")
            else:
                m, top, mem = k["model"], k["topology"], k["memory"]
                start = k["init"] == "uniform"
                rep.flag(
                    f,
                    f"table1 ({cell_label(k)})",
                    f"baseline (llm row: {cell_label(k)})",
                    *(
                        [
                            f"tests ({m}, {top}, {mem}: the tests of this cell)",
                            f"findings ({m}, {mem}, {top})",
                            f"vs_paper (Table 1 rows and finding rows of {m}, {mem}, {top})",
                            f"figures: final_distribution_{m}_{mem}_{top} (panel {k['framing']}, {k['bias']})",
                        ]
                        if start
                        else []
                    ),
                    f"figures: bias_diversity_{m}",
                )
    for m, c in ctrl_keys:
        for f in flags.get((m, c), []):
            rep.flag(
                f,
                f"per_sim ({m}, {c})",
                f"controls ({m}, {c})",
                f"figures: controls_{m}_* ({c} rows), bias_diversity_{m} ({c} lines)",
            )
    for _, fl in test_rows:
        for f in fl:
            if not f.scope.startswith(("opinion classifier", FINAL_SCOPE)):
                rep.flag(f, "tests", "findings")
    nm_total = int(main.never_measured.sum()) if len(main) else 0
    agents = int(main.n_agents.sum()) if len(main) else 0
    rep.summary = {
        "simulations": int(len(ps)),
        "main": int(len(main)),
        "controls": int(len(ctrl)),
        "d_definition": d_note,
        "parse_failed": int(ps.parse_failed.sum()) if len(ps) else 0,
        "agents_never_reviewed": int(ps.never_reviewed.sum()) if len(ps) else 0,
        "agents_never_measured": nm_total,
        "never_measured_share": nm_total / agents if agents else None,
        "classifier_ratings": rating_shares(rated),
    }
    return rep


# ---------------------------------------------------------------------------------------------------
# Per topic (Fig. 4), Fig. 5's reported B, outside information

TOPIC_KEY = ["model", "topology", "init", "memory", "world", "category", "topic", "framing", "bias"]


def per_topic(ps: pd.DataFrame) -> pd.DataFrame:
    """B and D per topic and condition of the main runs (every start and world): the mean over
    repetitions, their SD, the share of agents never measured, and the flags of the simulations'
    ratings and final values."""
    main = ps[ps.condition == MAIN]
    cols = [*TOPIC_KEY, "B", "D", "D_pop", "D_sample", "reps", "rep_sd_B", "rep_sd_D", "never_measured_share", "flags"]
    rows = []
    for key, g in main.groupby(TOPIC_KEY, sort=True):
        fl: list[str] = []
        for cell in [*g["flags"], *g["final_flags"]]:
            fl += [m for m in str(cell).split("; ") if m and m not in fl]
        rows.append(
            {
                **dict(zip(TOPIC_KEY, key)),
                "B": _float(g.B.mean()),
                "D": _mean_all(g.D),
                "D_pop": _mean_all(g.D_pop),
                "D_sample": _mean_all(g.D_sample),
                "reps": len(g),
                "rep_sd_B": _float(g.B.std()) if len(g) > 1 else None,
                "rep_sd_D": _float(g.D.std()) if len(g) > 1 else None,
                "never_measured_share": float(g.never_measured.sum() / g.n_agents.sum()),
                "flags": "; ".join(fl),
            }
        )
    out = pd.DataFrame(rows, columns=cols)
    if len(out):
        out = (
            out.assign(_b=out.bias.map(BIAS_ORDER))
            .sort_values([c for c in TOPIC_KEY if c != "bias"] + ["_b"], kind="stable")
            .drop(columns="_b")
            .reset_index(drop=True)
        )
    return out.astype({c: "float64" for c in ("B", "D", "D_pop", "D_sample", "rep_sd_B", "rep_sd_D")})


def show_per_topic(pt: pd.DataFrame) -> pd.DataFrame:
    def f(x: Any) -> str:
        return "n/a" if x is None or pd.isna(x) else f"{x:.2f}"

    return pd.DataFrame(
        {
            **{c: pt[c] for c in TOPIC_KEY},
            "B": [f(x) for x in pt.B],
            "D": [f(x) for x in pt.D],
            "reps": pt.reps,
            "never measured": [_pct(x) for x in pt.never_measured_share],
            "flags": pt.flags,
        }
    )


def fig5_rows(ps: pd.DataFrame, paper: Mapping[str, Any], classifier: Mapping[str, str]) -> list[vs_paper.Row]:
    """Fig. 5's final B as the seed paper's text gives it (and v4's), beside each of our simulations
    of the same topic, start, framing, memory and bias (paper.yaml `fig5`); one run each, no test."""
    ref = paper.get("fig5") or {}
    main = ps[ps.condition == MAIN]
    rows: list[vs_paper.Row] = []
    if not ref or not len(main):
        return rows
    sel = main[(main.topic == ref["topic"]) & (main.memory == ref["memory"]) & (main.bias == ref["bias"])]
    for r in sel.sort_values(["model", "init", "framing", "world", "topology", "rep"]).itertuples(index=False):
        p = (ref.get("runs") or {}).get(r.init, {}).get(r.framing)
        if p is None:
            continue
        label = (
            f"Fig. 5 ({r.model}, {r.topology}, {r.world} world, rep {r.rep}): {ref['topic'].replace('_', ' ')}, "
            f"{r.init} start, {r.framing} framing, {r.memory}, {r.bias} bias: final B"
        )
        cell = main[main.sim_id == r.sim_id]
        dsg = design(cell, classifier, paper, "fig5")
        flags = [m for m in f"{r.flags}; {r.final_flags}".split("; ") if m]
        nm = never_measured_note(r.never_measured_share)
        for source, key in (("seed text", "B"), ("arXiv v4", "B_v4")):
            if p.get(key) is None:
                continue
            rows.append(
                vs_paper.Row(
                    f"{label} ({source})",
                    r.B,
                    p[key],
                    note="; ".join(x for x in (f"one run; the start's B is {p.get('B_start')}", nm) if x),
                    flags=[_flag_of(m) for m in flags],  # per_sim carries its flags as messages
                    design=dsg,
                )
            )
    return rows


def _flag_of(message: str) -> dg.Flag:
    """A flag back from its message ("degenerate input: <scope>: <why>")."""
    body = message.removeprefix("degenerate input: ")
    scope, _, why = body.rpartition(": ")
    return dg.Flag(scope, why)


def outside_info_report(
    rep: Report,
    labels: pd.DataFrame,
    setups: pd.DataFrame,
    ps: pd.DataFrame,
    paper: Mapping[str, Any],
    classifier: Mapping[str, str],
    sample_n: int | None,
    alpha: float,
) -> None:
    """The outside-information rate per world setting (a table), vs_paper rows beside the paper's
    rates, and the finding "outside information is more common in the open world" where both ran."""
    from socsim.opinion_dynamics import outside_info as oi

    tab = oi.table(labels, setups, sample_n)
    judges = sorted(set(labels.judge_model)) if len(labels) else []
    ran = sorted(set(setups[setups.condition == MAIN].world)) if len(setups) else []
    flags = oi.judge_flags(labels) if len(labels) else {}
    rep.tables["outside_info"] = Table(
        tab,
        "Outside information in tweets and reports, per world setting (the paper: about 15 % open, 0 % closed)",
        [
            f"world settings that ran: {', '.join(ran) or 'none'}; judge: {', '.join(judges) or 'none'}; "
            f"sample: {'all' if sample_n is None else sample_n} tweets and as many reports per world (seeded)",
            "rate = outputs with outside information / judged outputs whose answer parsed",
            "the finding (open > closed) is judged only where both worlds ran and were judged",
        ],
        flags=dg.collect(*flags.values()),
    )
    ref = paper.get("outside_info") or {}
    main = ps[ps.condition == MAIN]
    for r in tab.itertuples(index=False):
        if not r.all_judged:
            continue
        cells = main[(main.model == r.model) & (main.world == r.world)]
        # The rate is the judge's, not the classifier's: the judge (ours a model on a seeded sample, the
        # paper's human annotators) is always a design difference.
        dsg = [d for d in design(cells, classifier, paper) if not d.startswith(("world:", "classifier:"))]
        mine = sorted(set(labels[(labels.model == r.model)].judge_model)) if len(labels) else []
        dsg += vs_paper.differences({"outside-info judge": ", ".join(mine)}, {"outside-info judge": ref.get("judge")})
        rows_flags = flags.get(r.model, [])
        rows = vs_paper.Row(
            f"outside information rate, {r.world} world ({r.model}; tweets and reports)",
            r.all_rate,
            (ref.get(r.world) or {}).get("rate"),
            note=f"{r.all_outside} of {r.all_judged} judged outputs; paper: {(ref.get(r.world) or {}).get('note', '')}",
            flags=rows_flags,
            design=dsg,
        )
        rep.vs_paper.append(rows)
    claim = str(ref.get("finding", "outside information is more common in the open world"))
    for model in sorted(set(tab.model)):
        t = tab[tab.model == model].set_index("world")
        if not all(w in t.index and t.loc[w, "all_judged"] > 0 for w in ("open", "closed")):
            continue
        diff, n, verdict = oi.finding(labels, model, flags.get(model, []), alpha)
        f = Finding(
            claim=f"{claim} ({model})",
            statistic="mean per-simulation share of judged outputs with outside information, open - closed",
            value=diff,
            test="Welch t over simulations (open vs closed world), two-sided, direction +",
            unit="simulations per world",
            n=n,
            verdict=verdict,
        )
        rep.findings.append(f)
        ro, rc = (ref.get("open") or {}).get("rate"), (ref.get("closed") or {}).get("rate")
        cells = main[main.model == model]
        rep.vs_paper.append(
            vs_paper.Row(
                f"outside information rate, open - closed world ({model})",
                diff,
                None if ro is None or rc is None else ro - rc,
                finding=f.claim,
                verdict=verdict,
                flags=flags.get(model, []),
                design=[d for d in design(cells, classifier, paper) if not d.startswith("world:")],
                note="mean of per-simulation rates",
            )
        )
    for model, fl in flags.items():
        for x in fl:
            rep.flag(x, f"outside_info ({model})", f"vs_paper (outside information rows of {model})")
