"""The facilitation study's report (socsim.io.report): tables, findings judged by the one verdict
rule (socsim.stats.verdict), flags where they apply, and our results beside paper 000's
(data/facilitation/paper.yaml).

Findings and the tests that carry them (units: discussions, since comments nest in them; at least
MIN_DISCUSSIONS per strategy or group):

- Finding 1 (facilitators lower toxicity): every strategy's discussions less toxic than No
  Moderator's (Welch t over the discussions' mean toxicity); and toxicity differs across strategies
  by the ANOVA over discussion means. The comment-level ANOVA (the paper's test) is shown beside the
  paper's p, without a verdict. (Table 2's clustered p rests on as few clusters as there are
  discussions and rejects too often with few of them, so it carries no finding.)
- Finding 2 (elaborate strategies lower toxicity over time): each elaborate strategy's discussions'
  toxicity slopes over time below No Moderator's (Welch t over the discussions' OLS slopes).
- Finding 3 (facilitators intervene at almost every opportunity): the mean per-discussion rate of
  interventions (replies neither silent nor an echo) above the paper's threshold, one-sample t over
  discussions.
- Fig. 5 (respond turn taking has the lowest diversity; Qwen the highest): Welch t over discussions
  against every other group.
- Fig. 6 (trolls raise other users' toxicity with the instruction prompt, not the basic one): Welch t
  over discussions' mean non-troll toxicity, with minus without trolls, under the instruction prompt,
  and that effect larger than under the basic prompt.
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
TITLE = "Facilitation (paper 000): ours vs the paper"
NEEDS_TROLLS = "needs discussions with and without trolls under both prompts"
TOXICITY_PLACES = ("table2_ols", "pairwise_ttests", "fig3", "fig6", "vs_paper: Table 2, Findings 1-2, Fig. 6")


def _f(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def design(setups: pd.DataFrame, annotations: pd.DataFrame, paper: dict[str, Any]) -> list[str]:
    """How this run's design differs from the paper's (data/facilitation/paper.yaml `design`)."""
    main = setups[setups["condition"] == an.MAIN]
    cells = main.groupby(["model", "strategy"]).size()
    ours = {
        "models": sorted(main["model"].unique()),
        "discussions per model x strategy": int(cells.max()) if len(cells) else 0,
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
) -> tuple[list[rp.Finding], list[Row]]:
    findings: list[rp.Finding] = []
    out: list[Row] = []
    ours = {an._term_label(t): r for t, r in ols.table.iterrows()}
    na = f"n/a: {ols.unavailable}" if ols.unavailable else ""
    by_discussion = "Welch t over discussions (means, or slopes for x time) vs No Moderator, each term"

    # Table 2, coefficient by coefficient (the paper's stars rest on plain errors; ours on clustered).
    for name, ref in (paper.get("table2") or {}).items():
        r = ours.get(name)
        if r is None:
            note = na or "term not in our model (no ratings of that strategy)"
        elif ols.unavailable:
            note = na
        else:
            p = r["p_cluster"]
            note = f"our clustered p = {p:.3g}" if np.isfinite(p) else "our clustered p: not identified"
        note = "; ".join(x for x in (note, f"paper stars: {ref['stars'] or 'none'}") if x)
        coef = _f(r["coef"]) if r is not None else None
        out.append(Row(f"Table 2: {name}", coef, ref["coef"], note=note, flags=ols.flags))
    out.append(Row("Table 2: Adj. R²", _f(ols.adj_r2), paper.get("adj_r2"), note=na, flags=ols.flags))

    # Finding 1: every strategy lowers toxicity against No Moderator (discussions as units).
    strategies = [n for n in ours if n != "Intercept" and "time" not in n]
    v1, n1 = strategy_contrasts(rated, strategies, ols.flags)
    claim1 = "LLM facilitators lower toxicity"
    stat1 = "every strategy's mean toxicity below No Moderator's"
    findings.append(rp.Finding(claim1, stat1, None, by_discussion, "discussions", n1, v1))
    out.append(
        Row(
            f"Finding 1: every strategy's mean toxicity below No Moderator's (Welch t over discussions, p < {ALPHA})",
            None,
            None,
            finding=claim1,
            verdict=v1,
            flags=ols.flags,
            note=na or ", ".join(f"{k}: {ours[k]['coef']:.3f}" for k in strategies),
        )
    )
    for level in ("comment", "discussion"):
        a = anova.get(level, {})
        a_flags = [dg.Flag(f["scope"], f["reason"]) for f in a.get("flags", [])]
        p = a.get("p")
        if level == "comment":
            out.append(
                Row(
                    "Finding 1: ANOVA p across strategies (comment level, the paper's test)",
                    p,
                    paper.get("finding1_anova_p"),
                    flags=a_flags,
                    note="no verdict: comments of one discussion are not independent (see the discussion level)",
                )
            )
            continue
        n = min(a.get("n", {}).values(), default=0)
        va = vd.effect(p, a.get("F"), n, an.MIN_DISCUSSIONS, "discussions per strategy", flags=a_flags)
        claim = "toxicity differs across strategies"
        findings.append(
            rp.Finding(claim, "F", _f(a.get("F")), "one-way ANOVA over discussion means", "discussions", n, va)
        )
        out.append(
            Row(
                "Finding 1: ANOVA p across strategies (discussion level)",
                p,
                None,
                finding=f"{claim} (p < {ALPHA})",
                verdict=va,
                flags=a_flags,
                note="one mean per discussion; the paper reports only the comment-level p",
            )
        )

    # Finding 2: the elaborate strategies' x time terms are negative (discussions' slopes as units).
    terms = [f"{n}×time" for n in paper.get("finding2_elaborate") or []]
    v2, n2 = strategy_contrasts(rated, terms, ols.flags)
    claim2 = "elaborate strategies reduce toxicity over time vs No Moderator"
    stat2 = "toxicity slopes over time below No Moderator's"
    findings.append(rp.Finding(claim2, stat2, None, by_discussion, "discussions", n2, v2))
    have = {t: _f(ours[t]["coef"]) for t in terms if t in ours}
    out.append(
        Row(
            "Finding 2: " + ", ".join(terms) + f" < 0 (Welch t of discussions' slopes, p < {ALPHA})",
            None,
            None,
            finding=claim2,
            verdict=v2,
            flags=ols.flags,
            note=na or ", ".join(f"{k}: {v:.4f}" for k, v in have.items() if v is not None) or "terms not estimated",
        )
    )

    # Finding 3: interventions at almost every opportunity (per-discussion rates).
    main = interv[interv["condition"] == an.MAIN]
    rate = float(main["interventions"].sum() / main["opportunities"].sum()) if len(main) else None
    thr = paper.get("finding3_min_intervention_rate")
    diff, p = vd.one_sample(main["rate"].to_numpy(dtype=float), float(thr)) if thr is not None else (None, None)
    v3 = vd.effect(p, diff, len(main), an.MIN_DISCUSSIONS, "discussions", direction=+1)
    claim3 = f"facilitators intervene at almost every opportunity (rate >= {thr})"
    findings.append(
        rp.Finding(
            claim3,
            "mean rate per discussion - threshold",
            diff,
            "one-sample t over discussions",
            "discussions",
            len(main),
            v3,
        )
    )
    out.append(
        Row(
            "Finding 3: facilitator intervention rate (main study)",
            rate,
            None,
            finding=claim3,
            verdict=v3,
            note=f"{int(main['echoes'].sum())} echoes of earlier comments not counted"
            if len(main)
            else "no facilitator turns",
        )
    )

    out.append(
        Row(
            "Turn taking: observed P(speaker_t = speaker_t-2)",
            reply.get("rate"),
            paper.get("reply_rate"),
            note=f"over {reply.get('turns', 0)} user turns of respond discussions",
        )
    )

    # Ablations: diversity orderings (Fig. 5), discussions as units.
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

    # Fig. 6: trolls and the instruction prompt, one mean non-troll toxicity per discussion.
    v6, effects, note6 = _troll_verdict(tt, flags)
    claim6 = "trolls raise other users' toxicity only with the instruction prompt"
    findings.append(
        rp.Finding(
            claim6,
            "non-troll toxicity, with minus without trolls (instruction prompt)",
            effects.get("instruction prompt"),
            "Welch t over discussions; and the instruction effect above the basic one",
            "discussions",
            None,
            v6,
        )
    )
    out.append(
        Row(
            "Fig. 6: non-troll toxicity, with minus without trolls (instruction prompt)",
            effects.get("instruction prompt"),
            None,
            finding=claim6,
            verdict=v6,
            flags=flags,
            note=note6,
        )
    )
    return findings, out


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
) -> rp.Report:
    """The whole analysis as a report (after socsim.facilitation.analysis.check_ratings;
    `agreement`: socsim.facilitation.analysis.agreement of the annotations)."""
    paper = read_paper(paper_file)
    expected = sorted(setups.loc[setups["condition"] == an.MAIN, "strategy"].unique())
    rated = an.rated_comments(comments, annotations, setups, time=time)
    means = an.comment_means(rated)
    div = an.diversity_table(comments, setups, human)
    flags = an.toxicity_flags(rated)
    ols = an.toxicity_ols(rated, expected, flags)
    table2, md, tex = an.ols_tables(ols, time)
    anova, pairwise = an.anova_and_pairwise(means, flags, expected)
    interv = an.interventions(comments)
    tt = an.troll_toxicity(means)
    reply = an.observed_reply_rate(comments, setups)
    findings, rows = findings_and_rows(paper, rated, ols, anova, interv, reply, div, tt, flags)
    rep = rp.Report(TITLE, findings=findings, vs_paper=rows, design=design(setups, annotations, paper))
    rep.tables = {
        "diversity": rp.Table(div, "Diversity per discussion (1 - mean ROUGE-L F1 over its comment pairs)"),
        "table2_ols": rp.Table(table2, "Table 2: OLS toxicity ~ strategy * time", markdown=md, latex=tex),
        "pairwise_ttests": rp.Table(pairwise, "Pairwise Student t-tests of toxicity (Holm within each level)"),
        "interventions": rp.Table(interv, "Facilitator interventions per discussion (not silent, not an echo)"),
        "nontroll_toxicity": rp.Table(tt, "Toxicity of non-troll users' comments"),
        "nontroll_toxicity_groups": rp.Table(an.troll_groups(tt), "Fig. 6: non-troll toxicity levels per group"),
    }
    for f in flags:
        rep.flag(f, *TOXICITY_PLACES)
    for f in ols.flags:
        rep.flag(f, "table2_ols", "vs_paper: Table 2, Findings 1-2")
    for level, a in anova.items():
        for fj in a["flags"]:
            rep.flag(dg.Flag(fj["scope"], fj["reason"]), "anova.json", f"pairwise_ttests ({level})", f"fig3 ({level})")
    rep.documents = {"anova.json": anova}  # agreement.json: written by the stage before the ratings are checked
    rep.summary = {
        "time": time,
        "discussions": int(setups["discussion_id"].nunique()),
        "discussions_main": int((setups["condition"] == an.MAIN).sum()),
        "rated_user_comments_main": int(sum(anova["comment"]["n"].values())),
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
        "anova": {level: {"F": a["F"], "p": a["p"], "verdict": a["verdict"]} for level, a in anova.items()},
        "strategies_without_ratings": anova["comment"]["no_ratings"],
        "observed_reply_rate": reply,
        "facilitator_intervention_rate_all_conditions": (
            float(interv["interventions"].sum() / interv["opportunities"].sum()) if len(interv) else None
        ),
    }
    return rep
