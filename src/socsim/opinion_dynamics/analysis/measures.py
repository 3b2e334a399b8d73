"""What the opinion-dynamics analysis measures (paper 002, section 4): trajectories, B and D per
simulation and per table cell, the agents never measured, and the classifier's degeneracy judged on
the ratings (and the final values) that feed each number.

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
- The classifier's degeneracy (one value for >= 90 % of its answers) is judged per agent model on the
  ratings that feed each number (`classifier_flags`: the main simulations' and each control's, never
  pooled). B and D at T are made of each measured agent's last classified report, which can be one
  value where the ratings over all steps are not: the same rule is judged on those final values per
  Table 1 cell, per Table 2 cell and per simulation (`value_flags`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from socsim.stats import degeneracy as dg

CELL = ["model", "topology", "init", "memory", "framing", "bias"]
SCOPE = ["model", "topology", "init", "memory"]  # a finding's scope (framing and bias are its parts)
BIAS_ORDER = {"none": 0, "weak": 1, "strong": 2}
MEMORIES = ("cumulative", "reflective")
# The paired t of B (true vs false framing) is Bonferroni-adjusted over a fixed family, the paper's: its
# paired tests of one model (3 bias levels x 2 memories), here per model, topology and start. Fixed, so a
# test's p_adj (and the verdicts made of it) never depends on what else a run has: other models,
# topologies or starts, or fewer cells (then it is conservative). No run has more (params schema).
PAIRED_FAMILY = len(BIAS_ORDER) * len(MEMORIES)
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


@dataclass(frozen=True)
class SimFlags:
    """Per simulation (of every world setting): the flags of its ratings (its model's classifier flags
    for its condition, judged on its world's ratings) and of its own final values (main runs:
    `value_flags` by sim_id), as flags, never as their messages. A simulation's own flags sit on its
    per_sim row, its per_topic row, its vs_paper rows and its figure panels, not on the run's list."""

    ratings: Mapping[str, list[dg.Flag]] = field(default_factory=dict)
    own: Mapping[str, list[dg.Flag]] = field(default_factory=dict)

    def __or__(self, other: SimFlags) -> SimFlags:
        return SimFlags({**self.ratings, **other.ratings}, {**self.own, **other.own})

    def of(self, sims: Iterable[str]) -> list[dg.Flag]:
        """The ratings' flags of `sims`, then their own final values' (in order, without duplicates)."""
        sims = [str(s) for s in sims]
        return dg.collect(*(self.ratings.get(s, []) for s in sims), *(self.own.get(s, []) for s in sims))


def sim_flags(setups: pd.DataFrame, flags: Flags, finals: ValueFlags) -> SimFlags:
    """`SimFlags` of the simulations of one world setting (`setups`), from its classifier flags (per
    model and condition) and its final values' flags (`value_flags`, by sim_id)."""
    rows = list(setups.itertuples(index=False))
    return SimFlags(
        {str(s.sim_id): list(flags.get((s.model, s.condition), [])) for s in rows},
        {str(s.sim_id): _vf(finals, ["sim_id"], {"sim_id": s.sim_id}) for s in rows if s.condition == MAIN},
    )


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


def _float(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


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
# Per topic (Fig. 4)

TOPIC_KEY = ["model", "topology", "init", "memory", "world", "category", "topic", "framing", "bias"]


def per_topic(ps: pd.DataFrame, flags: SimFlags) -> pd.DataFrame:
    """B and D per topic and condition of the main runs (every start and world): the mean over
    repetitions, their SD, the share of agents never measured, and the flags of the simulations'
    ratings and final values (`flags`)."""
    main = ps[ps.condition == MAIN]
    cols = [*TOPIC_KEY, "B", "D", "D_pop", "D_sample", "reps", "rep_sd_B", "rep_sd_D", "never_measured_share", "flags"]
    rows = []
    for key, g in main.groupby(TOPIC_KEY, sort=True):
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
                "flags": messages(flags.of(g.sim_id)),
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
