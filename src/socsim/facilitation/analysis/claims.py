"""Paper 000's claims, one judge function each (socsim.io.claims): findings judged by the one verdict
rule (socsim.stats.verdict), vs_paper rows beside the paper's numbers (data/facilitation/paper.yaml)
and the flags each raises, where they apply. `CLAIMS` lists them in the report's order.

The tests that carry them (units: discussions, since comments nest in them; at least
tests.MIN_DISCUSSIONS per strategy or group):

- Table 2, coefficient by coefficient, beside the paper's (no finding: its clustered p rests on as few
  clusters as there are discussions and rejects too often with few of them).
- Finding 1 (facilitators lower toxicity): every strategy's discussions less toxic than No
  Moderator's (Welch t over the discussions' mean toxicity); and toxicity differs across strategies
  by the ANOVA over discussion means. The rating-level ANOVA (the paper's test, pseudo-replicated) is
  shown beside the paper's p and the comment-level one beside it, both without a verdict.
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
- Turn taking: the observed reply rate beside the paper's (no finding).
- Fig. 5 (respond turn taking has the lowest diversity; Qwen the highest): Welch t over discussions
  against every other group.
- Fig. 6 (trolls raise other users' toxicity with the instruction prompt, not the basic one): Welch t
  over discussions' mean non-troll toxicity, with minus without trolls, under the instruction prompt,
  and that effect larger than under the basic prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from socsim.facilitation.analysis import places
from socsim.facilitation.analysis import tests as ts
from socsim.facilitation.analysis.measures import (
    LEVELS,
    MAIN,
    UNIT_WORDS,
    ablation_baseline,
    ablation_cell,
    intervention_rates,
)
from socsim.io.claims import Claim, Judgement
from socsim.io.findings import Scope
from socsim.io.report import Finding, Flagged
from socsim.io.vs_paper import Row
from socsim.seeds import derive_seed
from socsim.stats import degeneracy as dg
from socsim.stats import divergence as dv
from socsim.stats import verdict as vd
from socsim.stats.regression import OLSResult

ALPHA = vd.ALPHA
BY_DISCUSSION = "Welch t over discussions (means, or slopes for x time) vs No Moderator, each term"


@dataclass
class Evidence:
    """What the claims judge, measured once (socsim.facilitation.analysis.report.evidence)."""

    paper: Mapping[str, Any]  # data/facilitation/paper.yaml
    rated: pd.DataFrame  # the rating rows of user comments (measures.rated_and_seeds)
    ols: OLSResult  # Table 2
    anova: dict[str, dict[str, Any]]  # level -> its ANOVA (anova.json)
    interv: pd.DataFrame  # facilitator interventions per discussion
    reply: dict[str, Any]  # the observed reply rate (measures.observed_reply_rate)
    div: pd.DataFrame  # diversity per discussion
    tt: pd.DataFrame  # non-troll toxicity per comment
    flags: list[dg.Flag]  # of the main study's toxicity ratings
    seed_msg: str = ""  # the note on the rows that rest on ratings when seed ratings were excluded


def _f(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _finding(fid: str, claim: str, stat: str, value: float | None, test: str, n: int | None, v: vd.Verdict) -> Finding:
    """A finding of paper finding `fid` (socsim.facilitation.findings), discussions as its unit."""
    return Finding(claim, stat, value, test, "discussions", n, v, id=fid)


def _with(note: str, extra: str) -> str:
    return "; ".join(x for x in (note, extra) if x)


def _terms(ols: OLSResult) -> tuple[dict[str, pd.Series], str]:
    """Table 2's rows by their printed label, and "n/a: <why>" when the model is not available."""
    return {ts.term_label(t): r for t, r in ols.table.iterrows()}, f"n/a: {ols.unavailable}" if ols.unavailable else ""


def table2(ev: Evidence) -> Judgement:
    """Table 2, coefficient by coefficient (the paper's stars rest on plain errors; ours on clustered)."""
    ols = ev.ols
    ours, na = _terms(ols)
    out: list[Row] = []
    for name, ref in (ev.paper.get("table2") or {}).items():
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
    r2_note = _with(na, ev.seed_msg)
    out.append(Row("Table 2: Adj. R²", _f(ols.adj_r2), ev.paper.get("adj_r2"), note=r2_note, flags=ols.flags))
    return Judgement(rows=out, flags=[Flagged(f, list(places.TABLE2_FIT)) for f in ols.flags])


def finding1(ev: Evidence) -> Judgement:
    """Every strategy lowers toxicity against No Moderator (discussions as units)."""
    ours, na = _terms(ev.ols)
    strategies = [n for n in ours if n != "Intercept" and "time" not in n]
    v, n = ts.strategy_contrasts(ev.rated, strategies, ev.ols.flags)
    claim = "LLM facilitators lower toxicity"
    stat = "every strategy's mean toxicity below No Moderator's"
    row = Row(
        f"Finding 1: every strategy's mean toxicity below No Moderator's (Welch t over discussions, p < {ALPHA})",
        None,
        None,
        finding=claim,
        verdict=v,
        flags=ev.ols.flags,
        note=na or ", ".join(f"{k}: {ours[k]['coef']:.3f}" for k in strategies),
    )
    return Judgement(
        [_finding("fac.toxicity_lowered", claim, stat, None, BY_DISCUSSION, n, v)],
        [row],
    )


def _anova_flags(a: dict[str, Any]) -> list[dg.Flag]:
    return [dg.Flag(f["scope"], f["reason"]) for f in a.get("flags", [])]


def anova_levels(ev: Evidence) -> Judgement:
    """The ANOVA across strategies at each level, each row naming its unit. Only the discussion level
    carries a verdict; the rating level (the paper's test) stands beside the paper's p. Each level's
    flags sit on anova.json and that level's pairwise tests and Fig. 3 panel."""
    j = Judgement()
    for level in LEVELS:
        if level not in ev.anova:
            continue
        a = ev.anova[level]
        a_flags = _anova_flags(a)
        p = a.get("p")
        quantity = f"Finding 1: ANOVA p across strategies ({UNIT_WORDS[level]})"
        if level != "discussion":
            ref = ev.paper.get("finding1_anova_p") if level == "rating" else None
            j.rows.append(Row(quantity, p, ref, flags=a_flags, note=_with(ts.NO_VERDICT[level], ev.seed_msg)))
            continue
        n = min(a.get("n", {}).values(), default=0)
        va = vd.effect(p, a.get("F"), n, ts.MIN_DISCUSSIONS, "discussions per strategy", flags=a_flags)
        claim = "toxicity differs across strategies"
        j.findings.append(
            _finding("fac.toxicity_differs", claim, "F", _f(a.get("F")), "one-way ANOVA over discussion means", n, va)
        )
        note = _with("one mean per discussion; the paper reports only the rating-level p", ev.seed_msg)
        j.rows.append(Row(quantity, p, None, finding=f"{claim} (p < {ALPHA})", verdict=va, flags=a_flags, note=note))
    for level, a in ev.anova.items():
        j.flags += [Flagged(f, list(places.anova(level))) for f in _anova_flags(a)]
    return j


def finding2_no_gain(ev: Evidence) -> Judgement:
    """The paper's headline Finding 2 as a claim of no difference (tests.no_gain_over), with the effect
    paper.yaml `finding2_no_gain` names (socsim's choice)."""
    spec = ev.paper.get("finding2_no_gain") or {}
    elaborate = list(ev.paper.get("finding2_elaborate") or [])
    reference, effect = str(spec.get("reference", "No Instructions")), spec.get("effect")
    if effect is None:
        why = "paper.yaml names no effect to look for (finding2_no_gain)"
        v, n, note = vd.Verdict(None, why, rules=(vd.no_difference_rule(),)), 0, ""
    else:
        v, n, note = ts.no_gain_over(ev.rated, elaborate, reference, float(effect), ev.flags)
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
        flags=ev.flags,
        note=_with(note, looks_for),
    )
    return Judgement(
        [_finding("fac.no_gain_beyond_simple", claim, f"elaborate minus {reference} mean toxicity", None, test, n, v)],
        [row],
    )


def finding2_table2(ev: Evidence) -> Judgement:
    """The paper's secondary claim (Table 2): the elaborate strategies' x time terms are negative,
    judged on the discussions' slopes against No Moderator's."""
    ours, na = _terms(ev.ols)
    terms = [f"{n}×time" for n in ev.paper.get("finding2_elaborate") or []]
    v, n = ts.strategy_contrasts(ev.rated, terms, ev.ols.flags)
    claim = "elaborate strategies reduce toxicity over time vs No Moderator"
    stat = "toxicity slopes over time below No Moderator's"
    have = {t: _f(ours[t]["coef"]) for t in terms if t in ours}
    row = Row(
        "Finding 2 (Table 2 part): " + ", ".join(terms) + f" < 0 (Welch t of discussions' slopes, p < {ALPHA})",
        None,
        None,
        finding=claim,
        verdict=v,
        flags=ev.ols.flags,
        note=na or ", ".join(f"{k}: {x:.4f}" for k, x in have.items() if x is not None) or "terms not estimated",
    )
    return Judgement(
        [_finding("fac.elaborate_lower_over_time", claim, stat, None, BY_DISCUSSION, n, v)],
        [row],
    )


def finding3(ev: Evidence) -> Judgement:
    """Interventions at almost every opportunity (per-discussion rates above socsim's threshold)."""
    main = ev.interv[ev.interv["condition"] == MAIN]
    rate = float(main["interventions"].sum() / main["opportunities"].sum()) if len(main) else None
    thr = ev.paper.get("finding3_min_intervention_rate")
    diff, p = vd.one_sample(main["rate"].to_numpy(dtype=float), float(thr)) if thr is not None else (None, None)
    v = vd.effect(p, diff, len(main), ts.MIN_DISCUSSIONS, "discussions", direction=+1)
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
    test = "one-sample t over discussions"
    return Judgement(
        [
            _finding(
                "fac.intervene_almost_always", claim, "mean rate per discussion - threshold", diff, test, len(main), v
            )
        ],
        [row],
    )


def turn_taking(ev: Evidence) -> Judgement:
    """The observed reply rate beside the paper's, and what a uniform pick among the other users gives."""
    reply = ev.reply
    note = f"over {reply.get('turns', 0)} user turns of respond discussions"
    uniform = reply.get("uniform_rate")
    if uniform is not None:
        users = ", ".join(map(str, reply.get("users", [])))
        note += (
            f"; a uniform pick among the other users gives {uniform:.3f} (1 / (users - 1), {users} users per "
            "discussion), the rule of Fig. 5b's random turn taking: where ours is near it, respond ran as a "
            "uniform pick and Fig. 5b compares two nearly identical rules"
        )
    quantity = "Turn taking: observed P(speaker_t = speaker_t-2)"
    return Judgement(rows=[Row(quantity, reply.get("rate"), ev.paper.get("reply_rate"), note=note)])


def _synthetic(div: pd.DataFrame) -> pd.DataFrame:
    return div[div["source"] == "synthetic"].dropna(subset=["diversity"])


def fig5b(ev: Evidence) -> Judgement:
    """Respond turn taking has the lowest diversity of the turn-taking functions (the ablations' cell)."""
    synth = _synthetic(ev.div)
    tt_groups = synth[synth["condition"].eq(MAIN) | synth["condition"].str.startswith("tt_")]
    cell = ablation_cell(synth)
    if cell is not None:
        tt_groups = tt_groups[(tt_groups["model"] == cell[0]) & (tt_groups["strategy"] == cell[1])]
    by_tt = {k: g["diversity"].to_numpy(dtype=float) for k, g in tt_groups.groupby("turn_taking")}
    v = ts.ordering(by_tt, "respond", -1, "respond turn taking")
    claim = "the paper's turn taking gives the lowest diversity of the turn-taking functions"
    n = min((len(x) for x in by_tt.values()), default=0)
    row = Row(
        "Fig. 5b: mean diversity with respond turn taking",
        _f(float(by_tt["respond"].mean())) if "respond" in by_tt else None,
        None,
        finding=claim,
        verdict=v,
        note=", ".join(f"{k}: {x.mean():.3f} (n = {len(x)})" for k, x in by_tt.items()) or "no ablation",
    )
    return Judgement(
        [_finding("fac.respond_lowest_diversity", claim, "respond minus each other", None, "Welch t per pair", n, v)],
        [row],
    )


def fig5a(ev: Evidence) -> Judgement:
    """Qwen has the highest diversity of the models (main study)."""
    synth = _synthetic(ev.div)
    main_div = synth[synth["condition"] == MAIN]
    by_model = {k: g["diversity"].to_numpy(dtype=float) for k, g in main_div.groupby("model")}
    qwen = [m for m in by_model if str(ev.paper.get("ablation_model", "qwen")).lower() in m.lower()]
    v = ts.ordering(by_model, qwen[0], +1, "a Qwen model") if qwen else vd.untested("no Qwen model in this run", +1)
    claim = "Qwen has the highest diversity of the models"
    n = min((len(x) for x in by_model.values()), default=0)
    row = Row(
        "Fig. 5a: mean diversity of the Qwen model",
        _f(float(by_model[qwen[0]].mean())) if qwen else None,
        None,
        finding=claim,
        verdict=v,
        note=", ".join(f"{k}: {x.mean():.3f} (n = {len(x)})" for k, x in by_model.items()),
    )
    return Judgement(
        [_finding("fac.qwen_highest_diversity", claim, "Qwen minus each other", None, "Welch t per pair", n, v)],
        [row],
    )


def fig6(ev: Evidence) -> Judgement:
    """Trolls and the instruction prompt, one mean non-troll toxicity per discussion."""
    v, effects, note = ts.troll_verdict(ev.tt, ev.flags)
    claim = "trolls raise other users' toxicity only with the instruction prompt"
    stat = "non-troll toxicity, with minus without trolls (instruction prompt)"
    test = "Welch t over discussions; and the instruction effect above the basic one"
    finding = _finding(
        "fac.trolls_need_instruction_prompt", claim, stat, effects.get("instruction prompt"), test, None, v
    )
    row = Row(
        "Fig. 6: non-troll toxicity, with minus without trolls (instruction prompt)",
        effects.get("instruction prompt"),
        None,
        finding=claim,
        verdict=v,
        flags=ev.flags,
        note=note,
    )
    return Judgement([finding], [row])


# Fig. 5 against the humans: what "closely matches" means (socsim.stats.divergence.CLOSE) and how it is judged.
JS_TEST = (
    f"the authors' JS divergence of the discussions' diversity distributions (KDE on {dv.POINTS} points of [0, 1]), "
    f"its 95 % percentile interval from {{repeats}} resamples of both sides' discussions; 'closely matches': within "
    f"{dv.CLOSE} (two normals half an SD apart); holds when the interval lies above it (one-sided at "
    f"{vd.ALPHA / 2:g}) and a permutation test of the JS rejects one distribution (one-sided, p < {vd.ALPHA / 2:g}), "
    "no when the interval lies below"
)
ABLATION_TEST = (
    "the ablation's JS to the humans minus the main cell's, its 95 % percentile interval from {repeats} resamples of "
    "the three groups' discussions; holds when the interval lies above 0 (one-sided at {alpha1}), no when below, each "
    "only when a permutation test of the JS rejects one distribution for the ablation and the main cell (one-sided, "
    "p < {alpha1})"
)
REPEATS = 1000
ABLATION_PARTS = {"no_sdb": "without SDBs", "no_roles": "without roles", "basic_instructions": "basic instructions"}


def _rng(part: str) -> np.random.Generator:
    """The resampling's generator, by the part judged (the same part resamples alike in every run)."""
    return np.random.default_rng(derive_seed(0, "fig5 humans", part))


def not_close(
    div: np.ndarray, human: np.ndarray, part: str
) -> tuple[float | None, tuple[float, float] | None, vd.Verdict]:
    """Whether `div`'s distribution does not closely match the humans' (JS_TEST): the JS, its interval, the verdict."""
    few = vd.inconclusive_too_few(min(len(div), len(human)), ts.MIN_DISCUSSIONS, "discussions a side")
    if few:
        return None, None, few
    value = dv.js(div, human)
    rng = _rng(part)
    ci = dv.interval(dv.resampled(div, human, rng, REPEATS))
    sizes = f"n = {len(div)} and {len(human)} human discussions"
    if ci is None or not np.isfinite(value):
        return None, None, vd.Verdict(None, f"the divergence could not be computed ({sizes})")
    lo, hi = ci
    span = f"JS {value:.3f}, 95 % interval [{lo:.3f}, {hi:.3f}]"
    if lo > dv.CLOSE:
        p = dv.permutation_p(div, human, rng, REPEATS)
        if not p < vd.ALPHA / 2:  # few discussions of one distribution: a JS and interval above 0 all the same
            why = f"{span} above the margin {dv.CLOSE}, but one distribution is not rejected (permutation p = {p:.3g})"
            return value, ci, vd.Verdict(None, f"{why}, {sizes}")
        held = f"{span} above the margin {dv.CLOSE} (permutation p = {p:.3g}): does not closely match, {sizes}"
        return value, ci, vd.Verdict(True, held)
    if hi < dv.CLOSE:
        return value, ci, vd.Verdict(False, f"{span} below the margin {dv.CLOSE}: closely matches, {sizes}")
    return value, ci, vd.Verdict(None, f"{span} spans the margin {dv.CLOSE}, {sizes}")


def _diversities(rows: pd.DataFrame) -> np.ndarray:
    out: np.ndarray = rows["diversity"].dropna().to_numpy(dtype=float)
    return out


def fig5_humans(ev: Evidence) -> Judgement:
    """Fig. 5 against the human discussions (ev.humans), discussions as units, each part its own finding in the
    humans' column: each model's main-study diversity does not closely match the humans' (5a); nor does any
    turn-taking function's in the ablations' cell (5b); and each ablation's lies farther from the humans' than the
    main cell's (5c: SDBs, roles and the instruction prompt bring it closer)."""
    people = ev.div[ev.div["source"] == "human"]
    if not len(people):
        row = Row("Fig. 5: JS divergence to the human discussions", None, None, note="no human reference")
        return Judgement(rows=[row])
    name, human = str(people["humans"].iloc[0]), _diversities(people)
    scope, synth = Scope.humans(name), _synthetic(ev.div)
    test, unit = JS_TEST.format(repeats=REPEATS), "discussions"
    j = Judgement()

    def judged(fid: str, claim: str, part: str, div: np.ndarray, fig: str) -> None:
        value, ci, v = not_close(div, human, f"{fid} {part}")
        n = min(len(div), len(human))
        stat = "JS to the humans"
        j.findings.append(Finding(claim, stat, value, test, unit, n, v, ci, id=fid, scope=scope, part=part))
        j.rows.append(
            Row(
                f"{fig}: JS to the humans ({part})",
                value,
                None,
                finding=claim,
                verdict=v,
                note=f"humans: {name}; the paper-era version prints no JS (its Fig. 5 draws them)",
            )
        )

    main = synth[synth["condition"] == MAIN]
    for model, rows in main.groupby("model"):
        claim = "none of the models closely matches the diversity of human discussions"
        judged("fac.humans_diversity_not_matched", claim, str(model), _diversities(rows), "Fig. 5a")
    cell = ablation_cell(synth)
    if cell is not None:
        tt = synth[(synth["condition"].eq(MAIN) | synth["condition"].str.startswith("tt_"))]
        tt = tt[(tt["model"] == cell[0]) & (tt["strategy"] == cell[1])]
        for fn, rows in tt.groupby("turn_taking"):
            claim = "every turn-taking function's diversity diverges from the humans'"
            judged("fac.humans_turn_taking_diverge", claim, str(fn), _diversities(rows), "Fig. 5b")
        base, label = ablation_baseline(ev.div)
        for condition, part in ABLATION_PARTS.items():
            rows = synth[synth["condition"] == condition]
            if len(rows):
                j.findings.append(_farther(_diversities(rows), _diversities(base), human, scope, part, label))
    return j


def _farther(abl: np.ndarray, base: np.ndarray, human: np.ndarray, scope: Scope, part: str, label: str) -> Finding:
    """Fig. 5c for one ablation: its JS to the humans above the main cell's (ABLATION_TEST)."""
    claim = "SDBs, roles and the instruction prompt bring the diversity closer to the humans'"
    test, n = ABLATION_TEST.format(repeats=REPEATS, alpha1=f"{vd.ALPHA / 2:g}"), min(len(abl), len(base), len(human))
    stat = f"JS to the humans, {part} minus {label}"
    few = vd.inconclusive_too_few(n, ts.MIN_DISCUSSIONS, "discussions a group")
    if few:
        return Finding(
            claim, stat, None, test, "discussions", n, few, id="fac.humans_ablations_farther", scope=scope, part=part
        )
    value = dv.js(abl, human) - dv.js(base, human)
    rng = _rng(f"fac.humans_ablations_farther {part}")
    draws = np.array(
        [
            dv.js(rng.choice(abl, abl.size), h) - dv.js(rng.choice(base, base.size), h)
            for h in (rng.choice(human, human.size) for _ in range(REPEATS))
        ]
    )
    ci = dv.interval(draws)
    if ci is None or not np.isfinite(value):
        v = vd.Verdict(None, f"the divergence could not be computed (n = {n} discussions)")
    else:
        span = f"difference {value:+.3f}, 95 % interval [{ci[0]:+.3f}, {ci[1]:+.3f}], n = {n} discussions"
        holds = True if ci[0] > 0 else False if ci[1] < 0 else None
        words = {True: "farther from the humans", False: "closer to the humans", None: "the interval spans 0"}
        p = dv.permutation_p(abl, base, rng, REPEATS) if holds is not None else None
        if p is not None and not p < vd.ALPHA / 2:  # the ablation and the main cell: one distribution
            v = vd.Verdict(
                None, f"{span}, but the ablation and the main cell are one distribution (permutation p = {p:.3g})"
            )
        else:
            v = vd.Verdict(holds, f"{span}: {words[holds]}" + (f" (permutation p = {p:.3g})" if p is not None else ""))
    return Finding(
        claim, stat, value, test, "discussions", n, v, ci, id="fac.humans_ablations_farther", scope=scope, part=part
    )


CLAIMS: list[Claim[Evidence]] = [
    Claim("table2", table2, "Table 2"),
    Claim("finding1", finding1, "Finding 1"),
    Claim("finding1_anova", anova_levels, "Finding 1 (ANOVA)"),
    Claim("finding2_no_gain", finding2_no_gain, "Finding 2"),
    Claim("finding2_table2", finding2_table2, "Finding 2, Table 2"),
    Claim("finding3", finding3, "Finding 3"),
    Claim("turn_taking", turn_taking, "Sect. 3 (turn taking)"),
    Claim("fig5b_turn_taking", fig5b, "Fig. 5b"),
    Claim("fig5a_models", fig5a, "Fig. 5a"),
    Claim("fig6_trolls", fig6, "Fig. 6"),
    Claim("fig5_humans", fig5_humans, "Fig. 5 (humans)"),
]
