"""The facilitation study's statistical tests (paper 000), each naming its unit:

- OLS toxicity ~ C(strategy, Treatment("No Moderator")) * time over user comments (one row per
  annotator rating, as the paper), plain and cluster-robust (by discussion) errors (Table 2);
- one-way ANOVA across strategies and pairwise Student t-tests (raw and Holm p) at three levels
  (measures.UNITS): "rating" (every rating row a unit: the paper's ANOVA and Fig. 3,
  pseudo-replicated, since a comment's ratings and a discussion's comments are not independent),
  "comment" (each comment's mean over its annotators) and "discussion" (each discussion's mean
  toxicity: the honest test of a strategy effect, the only level that carries a verdict);
- the claims' tests over discussions (Welch t of means or slopes against No Moderator, a claim of no
  difference with power, orderings of groups, the troll effect under two prompts).

A flagged input makes the tables print "degenerate input: <why>" instead of stars, F/p verdicts or
coefficients; too few units makes a test inconclusive with its n (socsim.stats.verdict).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.facilitation.analysis.measures import (
    BASIC,
    LEVELS,
    MAIN,
    TOXICITY_SCOPE,
    UNIT_WORDS,
    UNITS,
    discussion_units,
    main_users,
    missing_strategies,
    toxicity_flags,
)
from socsim.facilitation.setups import NO_MODERATOR
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd
from socsim.stats.anova import one_way
from socsim.stats.multitest import holm
from socsim.stats.regression import OLSResult, ols_plain_and_clustered, stars, unavailable
from socsim.stats.ttest import difference_of_effects, power_to_find

# A comment-level test's p treats the comments of one discussion as independent: no verdict rests on it.
NESTED = "no verdict: comments of one discussion are not independent (see the discussion level)"
# A rating-level test's p treats the ratings of one comment, and the comments of one discussion, as
# independent observations (pseudo-replication): no verdict rests on it either.
PSEUDO = (
    "no verdict: the ratings of one comment and the comments of one discussion are not independent "
    "(pseudo-replication; see the discussion level)"
)
NO_VERDICT = {"rating": PSEUDO, "comment": NESTED, "discussion": ""}
# Per strategy (or group), before a discussion-level or clustered test gives a verdict: the verdict rule's.
MIN_DISCUSSIONS = vd.MIN_UNITS


# -- Table 2 -------------------------------------------------------------------------------------


def _missing_note(missing: list[str]) -> str:
    return ("no usable ratings for " + ", ".join(missing) + " (not in the model)") if missing else ""


def toxicity_ols(
    rated: pd.DataFrame, expected_strategies: list[str] | None = None, flags: list[dg.Flag] | None = None
) -> OLSResult:
    """Table 2. n/a with the reason when the ratings are constant, the reference strategy has no
    ratings, or there are no more ratings than terms; stars withheld (flags) when one rating value
    makes up >= 90 %. `expected_strategies` (the main study's strategies in the setups) names the
    strategies without any usable rating in the note. `flags`: toxicity_flags(rated), if already known."""
    users = main_users(rated).dropna(subset=["toxicity", "time"]).copy()
    formula = f'toxicity ~ C(strategy, Treatment("{NO_MODERATOR}")) * time'
    flags = toxicity_flags(rated) if flags is None else flags
    strategies = users["strategy"].unique()
    note = _missing_note(missing_strategies(expected_strategies, strategies))
    if NO_MODERATOR not in strategies or len(strategies) < 2:
        reason = (
            f"needs ratings of '{NO_MODERATOR}' (the reference) and of at least one other strategy in "
            f"the main study; have: {sorted(strategies) or 'none'}"
        )
        return unavailable(users.iloc[:0], formula, "discussion_id", reason, flags, note)
    constant = dg.near_constant(users["toxicity"], TOXICITY_SCOPE)
    if constant is not None:
        return unavailable(users, formula, "discussion_id", constant.message, flags, note)
    few = vd.too_few(len(users), 2 * len(strategies) + 1, "ratings")  # more ratings than the model's terms
    if few is not None:
        return unavailable(users, formula, "discussion_id", few, flags, note)
    res = ols_plain_and_clustered(users, formula, cluster="discussion_id")
    perfect = None
    if res.resid_ss <= dg.VARIANCE_TOL * max(1, res.nobs):
        perfect = dg.Flag(
            "Table 2 OLS", "perfect fit: the residuals are zero, so standard errors and p-values carry no information"
        )
    res.flags = dg.collect(flags, perfect)
    notes = [note] if note else []
    per_strategy = users.groupby("strategy")["discussion_id"].nunique()
    if (per_strategy < MIN_DISCUSSIONS).any():
        # With one discussion per strategy the strategy terms absorb whole clusters and the
        # cluster-robust errors collapse to zero: they are not identified; with two they rest on
        # two clusters per term. Not reported below MIN_DISCUSSIONS.
        res.table[["se_cluster", "p_cluster"]] = np.nan
        notes.append(
            f"clustered errors need at least {MIN_DISCUSSIONS} discussions per strategy "
            f"(fewest here: {int(per_strategy.min())}); not reported"
        )
    res.note = "; ".join(notes)
    return res


def term_label(term: str) -> str:
    """A Table 2 term as printed: "Rules Only", "Rules Only×time"."""
    label = term.replace(f'C(strategy, Treatment("{NO_MODERATOR}"))[T.', "").replace("]", "")
    return label.replace(":time", "×time")


def _num(x: float, fmt: str = ".3f") -> str:
    return "n/a" if x is None or not np.isfinite(x) else format(x, fmt)


def ols_tables(res: OLSResult, time: str = "user_index", notes: Sequence[str] = ()) -> tuple[pd.DataFrame, str, str]:
    """Table 2 as a data frame (CSV), Markdown and LaTeX. Unavailable: every cell n/a with the
    reason; degenerate inputs: coefficients without stars and the flag in place of the stars.
    `notes`: further sentences below the table (e.g. the seed ratings excluded)."""
    t = res.table.reset_index()
    t.insert(0, "variable", [term_label(x) for x in t["term"]])
    withheld = f"n/a: {res.unavailable}" if res.unavailable else dg.verdict(res.flags, "")
    # Stars only from the discussion-clustered p: ratings of one discussion are not independent,
    # and the plain p rejects a null strategy effect in about half of all runs (issue 20).
    t["stars"] = "" if withheld else [stars(p) if np.isfinite(p) else "" for p in t["p_cluster"]]
    t["verdict"] = withheld
    md = ["| Variable | Toxicity | SE | SE (clustered by discussion) |", "| --- | --- | --- | --- |"]
    tex = [r"\begin{tabular}{lrrr}", r"\hline", r"Variable & Toxicity & SE & SE (cluster) \\", r"\hline"]
    for _, r in t.iterrows():
        coef = _num(r["coef"]) + r["stars"]
        se = _num(r["se"])
        se_c = _num(r["se_cluster"])
        md.append(f"| {r['variable']} | {coef} | {se} | {se_c} |")
        name = r["variable"].replace("×", r"$\times$").replace("_", r"\_")
        tex.append(f"{name} & {coef} & {se} & {se_c} \\\\")
    time_words = (
        "time = index of the comment among its discussion's user comments (seed opinion = 1)"
        if time == "user_index"
        else "time = position among all non-silent comments (seed = 0)"
    )
    head = [withheld if res.unavailable else f"Stars withheld: {withheld}"] if withheld else []
    legend = (
        ""
        if head
        else " Stars: . p<0.1, * p<0.05, ** p<0.01, *** p<0.001, from the discussion-clustered errors only"
        " (none where they are not identified)."
    )
    note = (
        f"Adj. R² = {_num(res.adj_r2)}; N = {res.nobs} ratings; {res.n_clusters} discussions; {time_words}."
        + legend
        + (f" Note: {res.note}." if res.note else "")
        + "".join(f" {n}." for n in notes)
    )
    md += ["", *head, note]
    tex += [r"\hline", r"\end{tabular}", *("% " + h for h in head), "% " + note]
    return t, "\n".join(md) + "\n", "\n".join(tex) + "\n"


# -- ANOVA and pairwise t-tests at three levels ----------------------------------------------------


def unit_values(frame: pd.DataFrame, level: str) -> pd.DataFrame:
    """The units of a test over the main study's user comments: rating rows (rating level; `frame`:
    rated_comments), comments (comment level; `frame`: comment_means, each comment's mean over its
    annotators) or discussions (discussion level; `frame`: comment_means, one mean per discussion)."""
    users = main_users(frame).dropna(subset=["toxicity"])
    if level in ("rating", "comment"):
        return users[["discussion_id", "strategy", "toxicity"]].reset_index(drop=True)
    if level == "discussion":
        return users.groupby(["discussion_id", "strategy"], as_index=False)["toxicity"].mean()
    raise ValueError(f"level must be one of {LEVELS}")


PAIRWISE_COLUMNS = [
    "level",
    "strategy_a",
    "strategy_b",
    "n_a",
    "n_b",
    "mean_a",
    "mean_b",
    "diff",
    "t",
    "p",
    "p_holm",
    "verdict",
]


def _anova(
    groups: dict[str, np.ndarray], units: pd.DataFrame, level: str, flags: Sequence[dg.Flag], missing: list[str]
) -> dict[str, Any]:
    """The one-way ANOVA of toxicity across strategies at `level` (anova.json's entry)."""
    unit = UNITS[level]
    anova: dict[str, Any] = {
        "level": level,
        "unit": unit,
        "unit_description": UNIT_WORDS[level],
        "strategies": sorted(groups),
        "n": {s: int(len(v)) for s, v in sorted(groups.items())},
        "no_ratings": missing,
        "F": None,
        "p": None,
    }
    usable = {s: v for s, v in groups.items() if len(v) >= 2}
    # Too few units is no degeneracy: the test is inconclusive, with the n (socsim.stats.verdict).
    few = vd.inconclusive_too_few(len(usable), 2, f"strategies with at least 2 {unit}")
    constant = dg.near_constant(units["toxicity"], f"toxicity per {unit[:-1]}")
    anova_flags = dg.collect(list(flags), constant)
    excluded = sorted(s for s, v in groups.items() if len(v) < 2)
    if excluded:
        anova["excluded"] = {"strategies": excluded, "reason": f"fewer than 2 {unit}"}
    if few is None and constant is None:
        fit = one_way(list(usable.values()), f"toxicity per {unit[:-1]} within strategies", "strategy")
        if fit.flag is not None:
            anova_flags = dg.collect(anova_flags, fit.flag)
        else:
            anova.update(F=fit.F, p=fit.p)
    anova["verdict"] = dg.verdict(anova_flags, few.label if few else NO_VERDICT[level])
    anova["flags"] = dg.as_json(anova_flags)
    return anova


def _pair(a: str, b: str, va: np.ndarray, vb: np.ndarray, level: str, flags: Sequence[dg.Flag]) -> dict[str, Any]:
    """Student's t-test of two strategies at `level` (a row of the pairwise table, without p_holm)."""
    unit = UNITS[level]
    few = vd.inconclusive_too_few(min(len(va), len(vb)), 2, unit)
    pair_const = dg.near_constant(np.concatenate([va, vb]), f"toxicity per {unit[:-1]} of {a} and {b}")
    t = p = np.nan
    pair_flags = dg.collect(list(flags), pair_const)
    if few is None and pair_const is None:
        t, p = sps.ttest_ind(va, vb)
        if not np.isfinite(t):
            t = p = np.nan
            pair_flags = dg.collect(
                pair_flags,
                dg.Flag(f"t-test {a} vs {b} at {level} level", "no variance within either strategy: t is infinite"),
            )
    return {
        "level": level,
        "strategy_a": a,
        "strategy_b": b,
        "n_a": len(va),
        "n_b": len(vb),
        "mean_a": float(np.mean(va)),
        "mean_b": float(np.mean(vb)),
        "diff": float(np.mean(va) - np.mean(vb)),
        "t": float(t),
        "p": float(p),
        "verdict": dg.verdict(pair_flags, few.label if few else NO_VERDICT[level]),
    }


def group_tests(
    units: pd.DataFrame, level: str, flags: Sequence[dg.Flag] = (), expected_strategies: list[str] | None = None
) -> tuple[dict[str, Any], pd.DataFrame]:
    """ANOVA and pairwise Student t-tests (raw and Holm p) of toxicity across strategies, one unit
    per row of `units`. `verdict` is "" for a usable test; else "degenerate input: <why>",
    "inconclusive (...)" (too few units), or NO_VERDICT[level] at the rating and comment levels (no
    verdict rests on them)."""
    groups = {s: g["toxicity"].to_numpy(dtype=float) for s, g in units.groupby("strategy")}
    anova = _anova(groups, units, level, flags, missing_strategies(expected_strategies, groups))
    rows = [_pair(a, b, groups[a], groups[b], level, flags) for a, b in itertools.combinations(sorted(groups), 2)]
    pairwise = pd.DataFrame(rows, columns=[c for c in PAIRWISE_COLUMNS if c != "p_holm"])
    ok = pairwise["p"].notna()
    pairwise["p_holm"] = np.nan
    pairwise.loc[ok, "p_holm"] = holm(pairwise.loc[ok, "p"].to_numpy())
    return anova, pairwise[PAIRWISE_COLUMNS]


def anova_and_pairwise(
    means: pd.DataFrame,
    flags: Sequence[dg.Flag] = (),
    expected_strategies: list[str] | None = None,
    rated: pd.DataFrame | None = None,
) -> tuple[dict[str, dict[str, Any]], pd.DataFrame]:
    """Every level: {"rating": anova, "comment": anova, "discussion": anova} and one pairwise table
    with a `level` column (Holm within each level). `means`: comment_means; `rated`: the rating rows
    (rated_comments), without which the rating level is left out."""
    frames = {"rating": rated, "comment": means, "discussion": means}
    anovas: dict[str, dict[str, Any]] = {}
    tables: list[pd.DataFrame] = []
    for level in LEVELS:
        frame = frames[level]
        if frame is None:
            continue
        anovas[level], table = group_tests(unit_values(frame, level), level, flags, expected_strategies)
        tables.append(table)
    return anovas, pd.concat(tables, ignore_index=True)


# -- the claims' tests over discussions ------------------------------------------------------------


def strategy_contrasts(rated: pd.DataFrame, terms: list[str], flags: list[dg.Flag]) -> tuple[vd.Verdict, int]:
    """Findings 1 and 2 at the unit of the claim, the discussion: for each named Table 2 term, the
    strategy's discussions against No Moderator's by Welch t, claimed below zero: "S" on the
    discussions' mean toxicity, "S×time" on their toxicity slopes over time. Every term must hold,
    each with at least MIN_DISCUSSIONS discussions a side. Returns the verdict and the fewest
    discussions involved."""
    if not terms:
        return vd.untested("no terms to test", -1), 0
    units = discussion_units(rated)
    ref = units[units["strategy"] == NO_MODERATOR]
    parts, ns = [], []
    for term in terms:
        strategy, measure = (term.removesuffix("×time"), "slope") if term.endswith("×time") else (term, "mean")
        a = units.loc[units["strategy"] == strategy, measure].dropna().to_numpy(dtype=float)
        b = ref[measure].dropna().to_numpy(dtype=float)
        n = min(len(a), len(b))
        ns.append(n)
        diff, p = vd.welch(a, b)
        parts.append(vd.effect(p, diff, n, MIN_DISCUSSIONS, "discussions", direction=-1, flags=flags))
    return vd.all_of(parts), min(ns)


def _means(units: pd.DataFrame, strategy: str) -> np.ndarray:
    values: np.ndarray = units.loc[units["strategy"] == strategy, "mean"].dropna().to_numpy(dtype=float)
    return values


def fmt(x: float | None, spec: str = ".3g") -> str:
    """A number in a note ("n/a" when missing or not finite)."""
    return "n/a" if x is None or not np.isfinite(x) else format(x, spec)


def no_gain_over(
    rated: pd.DataFrame, strategies: list[str], reference: str, effect: float, flags: list[dg.Flag]
) -> tuple[vd.Verdict, int, str]:
    """Finding 2's headline, a claim of no difference: each strategy's discussions' mean toxicity
    does not differ from `reference`'s (two-sided Welch t over discussion means) and the test had
    power >= vd.POWER to find a difference of `effect` toxicity points (vd.no_difference). Every
    strategy must hold. Returns the verdict, the fewest discussions a side, and a note with each
    strategy's difference, p and power."""
    if not strategies:
        return vd.Verdict(None, "no strategies to compare", rules=(vd.no_difference_rule(),)), 0, ""
    units = discussion_units(rated)
    ref = _means(units, reference)
    parts, ns, notes = [], [], []
    for strategy in strategies:
        a = _means(units, strategy)
        diff, p = vd.welch(a, ref)
        power = power_to_find(effect, a, ref)
        n = min(len(a), len(ref))
        ns.append(n)
        parts.append(vd.no_difference(p, power, n, MIN_DISCUSSIONS, "discussions", flags))
        notes.append(f"{strategy} {fmt(diff, '+.3f')} (p = {fmt(p)}, power {fmt(power, '.2f')}, n = {len(a)})")
    return vd.all_of(parts), min(ns), f"minus {reference} (n = {len(ref)}): " + "; ".join(notes)


def ordering(groups: dict[str, np.ndarray], key: str, direction: int, what: str) -> vd.Verdict:
    """`key`'s group lies below (direction -1) or above (+1) every other group: Welch t per pair."""
    if key not in groups or len(groups) < 2:
        return vd.untested(f"needs {what} and at least one other group", direction)
    parts = []
    for other, values in sorted(groups.items()):
        if other == key:
            continue
        diff, p = vd.welch(groups[key], values)
        n = min(len(groups[key]), len(values))
        parts.append(vd.effect(p, diff, n, MIN_DISCUSSIONS, "discussions per group", direction))
    return vd.all_of(parts)


NEEDS_TROLLS = "needs discussions with and without trolls under both prompts"


def troll_verdict(tt: pd.DataFrame, flags: list[dg.Flag]) -> tuple[vd.Verdict, dict[str, float], str]:
    """Fig. 6's claim over discussions' mean non-troll toxicity: with minus without trolls above zero
    under the instruction prompt (Welch t), and that effect above the basic prompt's (difference of
    effects). Returns the verdict, each prompt's effect and a note."""
    tt = tt.dropna(subset=["toxicity"])
    basic = tt[tt["condition"] == BASIC]
    if not len(basic):
        return vd.untested("no basic-prompt ablation", +1), {}, NEEDS_TROLLS
    model, strategy = basic["model"].iloc[0], basic["strategy"].iloc[0]
    cells = {
        "instruction prompt": tt[(tt["condition"] == MAIN) & (tt["model"] == model) & (tt["strategy"] == strategy)],
        "basic prompt": basic,
    }
    effects: dict[str, float] = {}
    per: dict[str, dict[str, np.ndarray]] = {}
    for prompt, d in cells.items():
        means = d.groupby(["discussion_id", "trolls"], as_index=False)["toxicity"].mean()
        per[prompt] = {k: g["toxicity"].to_numpy(dtype=float) for k, g in means.groupby("trolls")}
        if {"with trolls", "without trolls"} <= set(per[prompt]):
            effects[prompt] = float(per[prompt]["with trolls"].mean() - per[prompt]["without trolls"].mean())
    if len(effects) < 2:
        return vd.untested(NEEDS_TROLLS, +1), effects, NEEDS_TROLLS
    ins, bas = per["instruction prompt"], per["basic prompt"]
    n = min(len(v) for g in (ins, bas) for v in g.values())
    diff, p = vd.welch(ins["with trolls"], ins["without trolls"])
    v_ins = vd.effect(p, diff, n, MIN_DISCUSSIONS, "discussions per cell", +1, flags)
    dd = effects["instruction prompt"] - effects["basic prompt"]
    cells4 = [ins["with trolls"], ins["without trolls"], bas["with trolls"], bas["without trolls"]]
    v_dd = vd.effect(difference_of_effects(cells4, dd), dd, n, MIN_DISCUSSIONS, "discussions per cell", +1, flags)
    note = (
        f"basic prompt: {effects['basic prompt']:.3f}; difference of the effects {dd:.3f}; "
        f"fewest discussions per cell {n}"
    )
    return vd.all_of([v_ins, v_dd]), effects, note
