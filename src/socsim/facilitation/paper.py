"""The facilitation study's report (socsim.io.report): tables, findings judged by the one verdict
rule (socsim.stats.verdict), flags where they apply, and our results beside paper 000's
(data/facilitation/paper.yaml).

Findings and the tests that carry them (units: discussions, since comments nest in them; at least
MIN_DISCUSSIONS per strategy or group):

- Finding 1 (facilitators lower toxicity): every strategy's discussions less toxic than No
  Moderator's (Welch t over the discussions' mean toxicity); and toxicity differs across strategies
  by the ANOVA over discussion means. The rating-level ANOVA (the paper's test, pseudo-replicated) is
  shown beside the paper's p and the comment-level one beside it, both without a verdict. (Table 2's
  clustered p rests on as few clusters as there are discussions and rejects too often with few of
  them, so it carries no finding.)
- Finding 2, the paper's headline (more elaborate strategies fail to decrease toxicity beyond No
  Instructions): a claim of no difference. Each elaborate strategy's discussions' mean toxicity does
  not differ from No Instructions' (Welch t over discussions), and the test had power >= 0.8 to find
  the effect paper.yaml `finding2_no_gain` names (socsim's choice).
- Finding 2 (Table 2 part: elaborate strategies lower toxicity over time vs No Moderator): each
  elaborate strategy's discussions' toxicity slopes over time below No Moderator's (Welch t over the
  discussions' OLS slopes).
- Finding 3 (facilitators intervene at almost every opportunity): the mean per-discussion rate of
  interventions (replies neither silent nor an echo) above socsim's threshold (paper.yaml; the paper
  gives no number), one-sample t over discussions.
- Fig. 5 (respond turn taking has the lowest diversity; Qwen the highest): Welch t over discussions
  against every other group.
- Fig. 6 (trolls raise other users' toxicity with the instruction prompt, not the basic one): Welch t
  over discussions' mean non-troll toxicity, with minus without trolls, under the instruction prompt,
  and that effect larger than under the basic prompt.

`source` says what the data are: "generated" (socsim's run) or "syndisco_release" (the paper's own
released discussions and ratings). On the paper's own data vs_paper's design differences are how the
release differs from the paper's text, not how a run differs from the paper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from socsim.facilitation import analysis as an
from socsim.facilitation.setups import NO_MODERATOR
from socsim.io import report as rp
from socsim.io.vs_paper import Row, differences, read_paper
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd
from socsim.stats.regression import OLSResult

ALPHA = vd.ALPHA
SOURCES = ("generated", "syndisco_release")  # socsim's run; the paper's own released data
TITLE = "Facilitation (paper 000): ours vs the paper"
NEEDS_TROLLS = "needs discussions with and without trolls under both prompts"
BY_DISCUSSION = "Welch t over discussions (means, or slopes for x time) vs No Moderator, each term"
TOXICITY_PLACES = ("table2_ols", "pairwise_ttests", "fig3", "fig6", "vs_paper: Table 2, Findings 1-2, Fig. 6")


def _f(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def design(setups: pd.DataFrame, annotations: pd.DataFrame, paper: dict[str, Any]) -> list[str]:
    """How the data's design differs from the paper's (data/facilitation/paper.yaml `design`).
    Discussions per model x strategy: one number, or the range "6-10" when the cells differ."""
    main = setups[setups["condition"] == an.MAIN]
    cells = main.groupby(["model", "strategy"]).size()
    lo, hi = (int(cells.min()), int(cells.max())) if len(cells) else (0, 0)
    ours = {
        "models": sorted(main["model"].unique()),
        "discussions per model x strategy": hi if lo == hi else f"{lo}-{hi}",
        "annotators": int(annotations["annotator_id"].nunique()),
    }
    return differences(ours, paper.get("design") or {})


def discussion_units(rated: pd.DataFrame) -> pd.DataFrame:
    """One row per main-study discussion: its strategy, its mean user-comment toxicity and the slope
    of its toxicity on time (OLS over its ratings; NaN with fewer than 2 distinct times)."""
    users = an._main_users(rated).dropna(subset=["toxicity", "time"])
    rows = []
    for (did, strategy), g in users.groupby(["discussion_id", "strategy"]):
        t, y = g["time"].to_numpy(dtype=float), g["toxicity"].to_numpy(dtype=float)
        slope = float(np.polyfit(t, y, 1)[0]) if len(np.unique(t)) >= 2 else np.nan
        rows.append({"discussion_id": did, "strategy": strategy, "mean": float(y.mean()), "slope": slope})
    return pd.DataFrame(rows, columns=["discussion_id", "strategy", "mean", "slope"])


def strategy_contrasts(rated: pd.DataFrame, terms: list[str], flags: list[dg.Flag]) -> tuple[vd.Verdict, int]:
    """Findings 1 and 2 at the unit of the claim, the discussion: for each named Table 2 term, the
    strategy's discussions against No Moderator's by Welch t, claimed below zero: "S" on the
    discussions' mean toxicity, "S×time" on their toxicity slopes over time. Every term must hold,
    each with at least MIN_DISCUSSIONS discussions a side. Returns the verdict and the fewest
    discussions involved."""
    if not terms:
        return vd.Verdict(None, "no terms to test"), 0
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
        parts.append(vd.effect(p, diff, n, an.MIN_DISCUSSIONS, "discussions", direction=-1, flags=flags))
    return vd.all_of(parts), min(ns)


def _means(units: pd.DataFrame, strategy: str) -> np.ndarray:
    values: np.ndarray = units.loc[units["strategy"] == strategy, "mean"].dropna().to_numpy(dtype=float)
    return values


def pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    """The pooled standard deviation of two samples (NaN with fewer than 3 values or an empty side)."""
    dof = len(a) + len(b) - 2
    if not len(a) or not len(b) or dof < 1:
        return float("nan")
    ss = float(((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum())
    return float(np.sqrt(ss / dof))


def power_to_find(effect: float, a: np.ndarray, b: np.ndarray) -> float | None:
    """Power of a two-sample t test at these group sizes to find a difference of `effect` (raw
    units), standardised by the samples' pooled SD (None when that SD is zero or undefined)."""
    sd = pooled_sd(a, b)
    return vd.power_t(effect / sd, len(a), len(b)) if np.isfinite(sd) and sd > 0 else None


def _g(x: float | None, fmt: str = ".3g") -> str:
    return "n/a" if x is None or not np.isfinite(x) else format(x, fmt)


def no_gain_over(
    rated: pd.DataFrame, strategies: list[str], reference: str, effect: float, flags: list[dg.Flag]
) -> tuple[vd.Verdict, int, str]:
    """Finding 2's headline, a claim of no difference: each strategy's discussions' mean toxicity
    does not differ from `reference`'s (two-sided Welch t over discussion means) and the test had
    power >= vd.POWER to find a difference of `effect` toxicity points (vd.no_difference). Every
    strategy must hold. Returns the verdict, the fewest discussions a side, and a note with each
    strategy's difference, p and power."""
    if not strategies:
        return vd.Verdict(None, "no strategies to compare"), 0, ""
    units = discussion_units(rated)
    ref = _means(units, reference)
    parts, ns, notes = [], [], []
    for strategy in strategies:
        a = _means(units, strategy)
        diff, p = vd.welch(a, ref)
        power = power_to_find(effect, a, ref)
        n = min(len(a), len(ref))
        ns.append(n)
        parts.append(vd.no_difference(p, power, n, an.MIN_DISCUSSIONS, "discussions", flags))
        notes.append(f"{strategy} {_g(diff, '+.3f')} (p = {_g(p)}, power {_g(power, '.2f')}, n = {len(a)})")
    return vd.all_of(parts), min(ns), f"minus {reference} (n = {len(ref)}): " + "; ".join(notes)


def _ordering(groups: dict[str, np.ndarray], key: str, direction: int, what: str) -> vd.Verdict:
    """`key`'s group lies below (direction -1) or above (+1) every other group: Welch t per pair."""
    if key not in groups or len(groups) < 2:
        return vd.Verdict(None, f"needs {what} and at least one other group")
    parts = []
    for other, values in sorted(groups.items()):
        if other == key:
            continue
        diff, p = vd.welch(groups[key], values)
        n = min(len(groups[key]), len(values))
        parts.append(vd.effect(p, diff, n, an.MIN_DISCUSSIONS, "discussions per group", direction))
    return vd.all_of(parts)


Part = tuple[list[rp.Finding], list[Row]]


def _with(note: str, extra: str) -> str:
    return "; ".join(x for x in (note, extra) if x)


def _terms(ols: OLSResult) -> tuple[dict[str, pd.Series], str]:
    """Table 2's rows by their printed label, and "n/a: <why>" when the model is not available."""
    return {an._term_label(t): r for t, r in ols.table.iterrows()}, f"n/a: {ols.unavailable}" if ols.unavailable else ""


def table2_rows(paper: dict[str, Any], ols: OLSResult, seed_msg: str) -> Part:
    """Table 2, coefficient by coefficient (the paper's stars rest on plain errors; ours on clustered)."""
    ours, na = _terms(ols)
    out: list[Row] = []
    for name, ref in (paper.get("table2") or {}).items():
        r = ours.get(name)
        if r is None:
            note = na or "term not in our model (no ratings of that strategy)"
        elif ols.unavailable:
            note = na
        else:
            p = r["p_cluster"]
            note = f"our clustered p = {p:.3g}" if np.isfinite(p) else "our clustered p: not identified"
        note = _with(note, f"paper stars: {ref['stars'] or 'none'}")
        coef = _f(r["coef"]) if r is not None else None
        out.append(Row(f"Table 2: {name}", coef, ref["coef"], note=note, flags=ols.flags))
    out.append(Row("Table 2: Adj. R²", _f(ols.adj_r2), paper.get("adj_r2"), note=_with(na, seed_msg), flags=ols.flags))
    return [], out


def finding1(rated: pd.DataFrame, ols: OLSResult) -> Part:
    """Every strategy lowers toxicity against No Moderator (discussions as units)."""
    ours, na = _terms(ols)
    strategies = [n for n in ours if n != "Intercept" and "time" not in n]
    v, n = strategy_contrasts(rated, strategies, ols.flags)
    claim = "LLM facilitators lower toxicity"
    stat = "every strategy's mean toxicity below No Moderator's"
    row = Row(
        f"Finding 1: every strategy's mean toxicity below No Moderator's (Welch t over discussions, p < {ALPHA})",
        None,
        None,
        finding=claim,
        verdict=v,
        flags=ols.flags,
        note=na or ", ".join(f"{k}: {ours[k]['coef']:.3f}" for k in strategies),
    )
    return [rp.Finding(claim, stat, None, BY_DISCUSSION, "discussions", n, v)], [row]


def anova_rows(paper: dict[str, Any], anova: dict[str, dict[str, Any]], seed_msg: str) -> Part:
    """The ANOVA across strategies at each level, each row naming its unit. Only the discussion level
    carries a verdict; the rating level (the paper's test) stands beside the paper's p."""
    findings: list[rp.Finding] = []
    out: list[Row] = []
    for level in an.LEVELS:
        if level not in anova:
            continue
        a = anova[level]
        a_flags = [dg.Flag(f["scope"], f["reason"]) for f in a.get("flags", [])]
        p = a.get("p")
        quantity = f"Finding 1: ANOVA p across strategies ({an.UNIT_WORDS[level]})"
        if level != "discussion":
            ref = paper.get("finding1_anova_p") if level == "rating" else None
            out.append(Row(quantity, p, ref, flags=a_flags, note=_with(an.NO_VERDICT[level], seed_msg)))
            continue
        n = min(a.get("n", {}).values(), default=0)
        va = vd.effect(p, a.get("F"), n, an.MIN_DISCUSSIONS, "discussions per strategy", flags=a_flags)
        claim = "toxicity differs across strategies"
        findings.append(
            rp.Finding(claim, "F", _f(a.get("F")), "one-way ANOVA over discussion means", "discussions", n, va)
        )
        note = "one mean per discussion; the paper reports only the rating-level p"
        out.append(
            Row(
                quantity,
                p,
                None,
                finding=f"{claim} (p < {ALPHA})",
                verdict=va,
                flags=a_flags,
                note=_with(note, seed_msg),
            )
        )
    return findings, out


def finding2_no_gain(paper: dict[str, Any], rated: pd.DataFrame, flags: list[dg.Flag]) -> Part:
    """The paper's headline Finding 2 as a claim of no difference (no_gain_over), with the effect
    paper.yaml `finding2_no_gain` names (socsim's choice)."""
    spec = paper.get("finding2_no_gain") or {}
    elaborate = list(paper.get("finding2_elaborate") or [])
    reference, effect = str(spec.get("reference", "No Instructions")), spec.get("effect")
    if effect is None:
        v, n, note = vd.Verdict(None, "paper.yaml names no effect to look for (finding2_no_gain)"), 0, ""
    else:
        v, n, note = no_gain_over(rated, elaborate, reference, float(effect), flags)
    why = spec.get("why", "socsim's choice")
    looks_for = f"effect looked for: {effect} toxicity points ({why})"
    looks_for += ", standardised by the pooled SD of the two strategies' discussion means"
    claim = f"more elaborate facilitation strategies fail to decrease toxicity beyond {reference}"
    test = f"Welch t over discussions' mean toxicity, each vs {reference}; power >= {vd.POWER:g} to find the effect"
    row = Row(
        f"Finding 2: elaborate strategies' mean toxicity no different from {reference} "
        f"(Welch t over discussions, power >= {vd.POWER:g})",
        None,
        None,
        finding=claim,
        verdict=v,
        flags=flags,
        note=_with(note, looks_for),
    )
    return [rp.Finding(claim, f"elaborate minus {reference} mean toxicity", None, test, "discussions", n, v)], [row]


def finding2_table2(paper: dict[str, Any], rated: pd.DataFrame, ols: OLSResult) -> Part:
    """The paper's secondary claim (Table 2): the elaborate strategies' x time terms are negative,
    judged on the discussions' slopes against No Moderator's."""
    ours, na = _terms(ols)
    terms = [f"{n}×time" for n in paper.get("finding2_elaborate") or []]
    v, n = strategy_contrasts(rated, terms, ols.flags)
    claim = "elaborate strategies reduce toxicity over time vs No Moderator"
    stat = "toxicity slopes over time below No Moderator's"
    have = {t: _f(ours[t]["coef"]) for t in terms if t in ours}
    row = Row(
        "Finding 2 (Table 2 part): " + ", ".join(terms) + f" < 0 (Welch t of discussions' slopes, p < {ALPHA})",
        None,
        None,
        finding=claim,
        verdict=v,
        flags=ols.flags,
        note=na or ", ".join(f"{k}: {x:.4f}" for k, x in have.items() if x is not None) or "terms not estimated",
    )
    return [rp.Finding(claim, stat, None, BY_DISCUSSION, "discussions", n, v)], [row]


def intervention_rates(main: pd.DataFrame) -> dict[str, float]:
    """Interventions per opportunity of each strategy's facilitators, highest first."""
    sums = main.groupby("strategy")[["interventions", "opportunities"]].sum()
    rates = {str(s): float(r["interventions"] / r["opportunities"]) for s, r in sums.iterrows()}
    return dict(sorted(rates.items(), key=lambda kv: -kv[1]))


def finding3(paper: dict[str, Any], interv: pd.DataFrame) -> Part:
    """Interventions at almost every opportunity (per-discussion rates above socsim's threshold)."""
    main = interv[interv["condition"] == an.MAIN]
    rate = float(main["interventions"].sum() / main["opportunities"].sum()) if len(main) else None
    thr = paper.get("finding3_min_intervention_rate")
    diff, p = vd.one_sample(main["rate"].to_numpy(dtype=float), float(thr)) if thr is not None else (None, None)
    v = vd.effect(p, diff, len(main), an.MIN_DISCUSSIONS, "discussions", direction=+1)
    claim = f"facilitators intervene at almost every opportunity (rate >= {thr})"
    reading = f"threshold {thr}: socsim's reading of 'almost any opportunity'; the paper gives no number"
    if len(main):
        by = ", ".join(f"{s} {r:.2f}" for s, r in intervention_rates(main).items())
        detail = f"by strategy: {by}; {int(main['echoes'].sum())} echoes of earlier comments not counted"
    else:
        detail = "no facilitator turns"
    row = Row(
        f"Finding 3: facilitator intervention rate (main study; threshold {thr}, socsim's reading)",
        rate,
        None,
        finding=claim,
        verdict=v,
        note=f"{reading}; {detail}",
    )
    finding = rp.Finding(
        claim,
        "mean rate per discussion - threshold",
        diff,
        "one-sample t over discussions",
        "discussions",
        len(main),
        v,
    )
    return [finding], [row]


def turn_taking_row(paper: dict[str, Any], reply: dict[str, Any]) -> Part:
    """The observed reply rate beside the paper's, and what a uniform pick among the other users gives."""
    note = f"over {reply.get('turns', 0)} user turns of respond discussions"
    uniform = reply.get("uniform_rate")
    if uniform is not None:
        users = ", ".join(map(str, reply.get("users", [])))
        note += (
            f"; a uniform pick among the other users gives {uniform:.3f} (1 / (users - 1), {users} users per "
            "discussion), the rule of Fig. 5b's random turn taking: where ours is near it, respond ran as a "
            "uniform pick and Fig. 5b compares two nearly identical rules"
        )
    return [], [
        Row("Turn taking: observed P(speaker_t = speaker_t-2)", reply.get("rate"), paper.get("reply_rate"), note=note)
    ]


def fig5(paper: dict[str, Any], div: pd.DataFrame) -> Part:
    """Diversity orderings (Fig. 5), discussions as units."""
    findings: list[rp.Finding] = []
    out: list[Row] = []
    synth = div[div["source"] == "synthetic"].dropna(subset=["diversity"])
    tt_groups = synth[synth["condition"].eq(an.MAIN) | synth["condition"].str.startswith("tt_")]
    abl = synth[synth["condition"] != an.MAIN]
    if len(abl):
        model, strategy = abl["model"].iloc[0], abl["strategy"].iloc[0]
        tt_groups = tt_groups[(tt_groups["model"] == model) & (tt_groups["strategy"] == strategy)]
    by_tt = {k: g["diversity"].to_numpy(dtype=float) for k, g in tt_groups.groupby("turn_taking")}
    v5b = _ordering(by_tt, "respond", -1, "respond turn taking")
    claim5b = "the paper's turn taking gives the lowest diversity of the turn-taking functions"
    n5b = min((len(v) for v in by_tt.values()), default=0)
    findings.append(rp.Finding(claim5b, "respond minus each other", None, "Welch t per pair", "discussions", n5b, v5b))
    out.append(
        Row(
            "Fig. 5b: mean diversity with respond turn taking",
            _f(float(by_tt["respond"].mean())) if "respond" in by_tt else None,
            None,
            finding=claim5b,
            verdict=v5b,
            note=", ".join(f"{k}: {v.mean():.3f} (n = {len(v)})" for k, v in by_tt.items()) or "no ablation",
        )
    )
    main_div = synth[synth["condition"] == an.MAIN]
    by_model = {k: g["diversity"].to_numpy(dtype=float) for k, g in main_div.groupby("model")}
    qwen = [m for m in by_model if str(paper.get("ablation_model", "qwen")).lower() in m.lower()]
    v5a = _ordering(by_model, qwen[0], +1, "a Qwen model") if qwen else vd.Verdict(None, "no Qwen model in this run")
    claim5a = "Qwen has the highest diversity of the models"
    n5a = min((len(v) for v in by_model.values()), default=0)
    findings.append(rp.Finding(claim5a, "Qwen minus each other", None, "Welch t per pair", "discussions", n5a, v5a))
    out.append(
        Row(
            "Fig. 5a: mean diversity of the Qwen model",
            _f(float(by_model[qwen[0]].mean())) if qwen else None,
            None,
            finding=claim5a,
            verdict=v5a,
            note=", ".join(f"{k}: {v.mean():.3f} (n = {len(v)})" for k, v in by_model.items()),
        )
    )
    return findings, out


def fig6(tt: pd.DataFrame, flags: list[dg.Flag]) -> Part:
    """Trolls and the instruction prompt, one mean non-troll toxicity per discussion."""
    v6, effects, note6 = _troll_verdict(tt, flags)
    claim = "trolls raise other users' toxicity only with the instruction prompt"
    finding = rp.Finding(
        claim,
        "non-troll toxicity, with minus without trolls (instruction prompt)",
        effects.get("instruction prompt"),
        "Welch t over discussions; and the instruction effect above the basic one",
        "discussions",
        None,
        v6,
    )
    row = Row(
        "Fig. 6: non-troll toxicity, with minus without trolls (instruction prompt)",
        effects.get("instruction prompt"),
        None,
        finding=claim,
        verdict=v6,
        flags=flags,
        note=note6,
    )
    return [finding], [row]


def findings_and_rows(
    paper: dict[str, Any],
    rated: pd.DataFrame,
    ols: OLSResult,
    anova: dict[str, dict[str, Any]],
    interv: pd.DataFrame,
    reply: dict[str, Any],
    div: pd.DataFrame,
    tt: pd.DataFrame,
    flags: list[dg.Flag],
    seed_msg: str = "",
) -> tuple[list[rp.Finding], list[Row]]:
    """Every claim's findings and vs_paper rows, in the table's order. `seed_msg`: the note on the
    rows that rest on ratings when seed ratings were excluded ("" when none were)."""
    parts = [
        table2_rows(paper, ols, seed_msg),
        finding1(rated, ols),
        anova_rows(paper, anova, seed_msg),
        finding2_no_gain(paper, rated, flags),
        finding2_table2(paper, rated, ols),
        finding3(paper, interv),
        turn_taking_row(paper, reply),
        fig5(paper, div),
        fig6(tt, flags),
    ]
    return [f for fs, _ in parts for f in fs], [r for _, rs in parts for r in rs]


def _troll_verdict(tt: pd.DataFrame, flags: list[dg.Flag]) -> tuple[vd.Verdict, dict[str, float], str]:
    tt = tt.dropna(subset=["toxicity"])
    basic = tt[tt["condition"] == an.BASIC]
    if not len(basic):
        return (
            vd.Verdict(None, "no basic-prompt ablation"),
            {},
            "needs discussions with and without trolls under both prompts",
        )
    model, strategy = basic["model"].iloc[0], basic["strategy"].iloc[0]
    cells = {
        "instruction prompt": tt[(tt["condition"] == an.MAIN) & (tt["model"] == model) & (tt["strategy"] == strategy)],
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
        return (
            vd.Verdict(None, "needs discussions with and without trolls under both prompts"),
            effects,
            ("needs discussions with and without trolls under both prompts"),
        )
    ins, bas = per["instruction prompt"], per["basic prompt"]
    n = min(len(v) for g in (ins, bas) for v in g.values())
    diff, p = vd.welch(ins["with trolls"], ins["without trolls"])
    v_ins = vd.effect(p, diff, n, an.MIN_DISCUSSIONS, "discussions per cell", +1, flags)
    # The difference of the two effects: its SE from the four cells' variances (Welch-Satterthwaite).
    cells4 = [ins["with trolls"], ins["without trolls"], bas["with trolls"], bas["without trolls"]]
    var = [float(np.var(c, ddof=1)) / len(c) if len(c) > 1 else np.nan for c in cells4]
    dd = effects["instruction prompt"] - effects["basic prompt"]
    se = float(np.sqrt(np.sum(var)))
    p_dd = None
    if np.isfinite(se) and se > 0:
        dof = np.sum(var) ** 2 / np.sum([v**2 / (len(c) - 1) for v, c in zip(var, cells4)])
        p_dd = float(2 * sps.t.sf(abs(dd / se), dof))
    v_dd = vd.effect(p_dd, dd, n, an.MIN_DISCUSSIONS, "discussions per cell", +1, flags)
    note = (
        f"basic prompt: {effects['basic prompt']:.3f}; difference of the effects {dd:.3f}; "
        f"fewest discussions per cell {n}"
    )
    return vd.all_of([v_ins, v_dd]), effects, note


def report(
    setups: pd.DataFrame,
    comments: pd.DataFrame,
    annotations: pd.DataFrame,
    paper_file: str | Path,
    time: str,
    human: pd.DataFrame | None,
    agreement: dict[str, Any],
    *,
    source: str = "generated",
) -> rp.Report:
    """The whole analysis as a report (after socsim.facilitation.analysis.check_ratings;
    `agreement`: socsim.facilitation.analysis.agreement of the annotations; `source`: one of SOURCES,
    "syndisco_release" when the data are the paper authors' own release)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    paper = read_paper(paper_file)
    expected = sorted(setups.loc[setups["condition"] == an.MAIN, "strategy"].unique())
    rated, seeds = an.rated_and_seeds(comments, annotations, setups, time=time)
    notes = [an.seed_note(seeds)] if seeds else []
    seed_msg = "; ".join(notes)
    means = an.comment_means(rated)
    div = an.diversity_table(comments, setups, human)
    flags = an.toxicity_flags(rated)
    ols = an.toxicity_ols(rated, expected, flags)
    table2, md, tex = an.ols_tables(ols, time, notes)
    anova, pairwise = an.anova_and_pairwise(means, flags, expected, rated)
    interv = an.interventions(comments)
    tt = an.troll_toxicity(means)
    reply = an.observed_reply_rate(comments, setups)
    findings, rows = findings_and_rows(paper, rated, ols, anova, interv, reply, div, tt, flags, seed_msg)
    rep = rp.Report(
        TITLE,
        findings=findings,
        vs_paper=rows,
        design=design(setups, annotations, paper),
        own_data=source == "syndisco_release",
    )
    rep.tables = {
        "diversity": rp.Table(div, "Diversity per discussion (1 - mean ROUGE-L F1 over its comment pairs)"),
        "table2_ols": rp.Table(table2, "Table 2: OLS toxicity ~ strategy * time", markdown=md, latex=tex),
        "pairwise_ttests": rp.Table(
            pairwise,
            "Pairwise Student t-tests of toxicity (Holm within each level)",
            notes=[f"{level}: {words}" for level, words in an.UNIT_WORDS.items()] + notes,
        ),
        "interventions": rp.Table(interv, "Facilitator interventions per discussion (not silent, not an echo)"),
        "nontroll_toxicity": rp.Table(tt, "Toxicity of non-troll users' comments"),
        "nontroll_toxicity_groups": rp.Table(an.troll_groups(tt), "Fig. 6: non-troll toxicity levels per group"),
    }
    for f in flags:
        rep.flag(f, *TOXICITY_PLACES)
    for f in ols.flags:
        rep.flag(f, "table2_ols", "vs_paper: Table 2, Findings 1-2")
    for level, a in anova.items():
        a["seed_ratings_excluded"] = seeds
        for fj in a["flags"]:
            rep.flag(dg.Flag(fj["scope"], fj["reason"]), "anova.json", f"pairwise_ttests ({level})", f"fig3 ({level})")
    rep.documents = {"anova.json": anova}  # agreement.json: written by the stage before the ratings are checked
    rep.summary = {
        "source": source,
        "time": time,
        "notes": notes,
        "seed_ratings_excluded": seeds,
        "discussions": int(setups["discussion_id"].nunique()),
        "discussions_main": int((setups["condition"] == an.MAIN).sum()),
        "rated_user_comments_main": int(sum(anova["comment"]["n"].values())),
        "rating_rows_main": int(sum(anova["rating"]["n"].values())),
        "ratings": agreement["ratings"],
        "parse_failure_rate": agreement["parse_failure_rate"],
        "toxicity_distribution_main": an.toxicity_distribution(rated),
        "krippendorff_alpha_toxicity": agreement["krippendorff_alpha_toxicity"],
        "ols": {
            "available": ols.unavailable is None,
            "reason": ols.unavailable,
            "adj_r2": ols.adj_r2,
            "nobs": ols.nobs,
            "discussions": ols.n_clusters,
            "note": ols.note,
        },
        "anova": {
            level: {"unit": a["unit"], "F": a["F"], "p": a["p"], "verdict": a["verdict"]} for level, a in anova.items()
        },
        "strategies_without_ratings": anova["comment"]["no_ratings"],
        "observed_reply_rate": reply,
        "facilitator_intervention_rate_all_conditions": (
            float(interv["interventions"].sum() / interv["opportunities"].sum()) if len(interv) else None
        ),
    }
    return rep
