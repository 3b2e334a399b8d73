"""Our facilitation results beside paper 000's (data/facilitation/paper.yaml): rows for
socsim.io.vs_paper (analysis/vs_paper.csv and .md).

Rows: every Table 2 coefficient and Adj. R2; Finding 1 (every strategy lowers toxicity against
No Moderator, ANOVA significant: comment level as the paper, and discussion level); Finding 2
(the elaborate strategies' x time terms are negative); Finding 3 (facilitators intervene at
almost every opportunity); the observed reply rate (40 %); the ablations' diversity orderings
(respond has the lowest diversity of the turn-taking functions; Qwen the highest of the models);
Fig. 6 (trolls raise other users' toxicity with the instruction prompt more than with the basic
one). Rows that depend on toxicity ratings say "degenerate input: <why>" when they are flagged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from socsim.facilitation.analysis import BASIC, MAIN, _term_label
from socsim.io.vs_paper import Row
from socsim.stats import degeneracy as dg
from socsim.stats.regression import OLSResult

ALPHA = 0.05


def _f(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


MIN_GROUP = 2  # discussions per group before an ordering of group means is called a finding


def _negative_and_significant(ours: dict[str, Any], coefs: dict[str, Any]) -> bool:
    """The paper's claim is a significant negative coefficient: the sign alone is not enough."""
    return all(v < 0 and np.isfinite(ours[k]["p"]) and ours[k]["p"] < ALPHA for k, v in coefs.items())


def rows(
    paper: dict[str, Any],
    ols: OLSResult,
    anova: dict[str, dict[str, Any]],
    interv: pd.DataFrame,
    reply: dict[str, Any],
    div: pd.DataFrame,
    tt: pd.DataFrame,
    flags: list[dg.Flag],
) -> list[Row]:
    degenerate = dg.verdict(flags, "") or None
    out: list[Row] = []
    ours = {_term_label(t): r for t, r in ols.table.iterrows()}
    na = f"n/a: {ols.unavailable}" if ols.unavailable else ""
    table2_degenerate = dg.verdict(ols.flags, "") or None  # ols.flags starts with the toxicity flags

    # Table 2, coefficient by coefficient.
    for name, ref in (paper.get("table2") or {}).items():
        r = ours.get(name)
        coef = _f(r["coef"]) if r is not None else None
        if r is None:
            note = na or "term not in our model (no ratings of that strategy)"
        elif ols.unavailable:
            note = na
        elif ols.flags:
            note = "our p withheld: " + ols.flags[0].message
        else:
            note = f"our p = {r['p']:.3g}" if np.isfinite(r["p"]) else ""
        note = "; ".join(x for x in (note, f"paper stars: {ref['stars'] or 'none'}") if x)
        out.append(Row(f"Table 2: {name}", coef, ref["coef"], note=note, degenerate=table2_degenerate))
    out.append(Row("Table 2: Adj. R²", _f(ols.adj_r2), paper.get("adj_r2"), note=na, degenerate=table2_degenerate))

    # Finding 1: facilitators lower toxicity.
    strategy_coefs = {n: _f(r["coef"]) for n, r in ours.items() if n != "Intercept" and "time" not in n}
    holds = None
    if strategy_coefs and all(v is not None for v in strategy_coefs.values()):
        holds = _negative_and_significant(ours, strategy_coefs)
    out.append(
        Row(
            f"Finding 1: every strategy's Table 2 coefficient < 0 (vs No Moderator), p < {ALPHA}",
            None,
            None,
            finding="LLM facilitators lower toxicity",
            holds=holds,
            degenerate=table2_degenerate,
            note=na or ", ".join(f"{k}: {v:.3f}" for k, v in strategy_coefs.items() if v is not None),
        )
    )
    for level in ("comment", "discussion"):
        a = anova.get(level, {})
        p = a.get("p")
        verdict = a.get("verdict") or None
        out.append(
            Row(
                f"Finding 1: ANOVA p across strategies ({level} level)",
                p,
                paper.get("finding1_anova_p"),
                finding=f"toxicity differs across strategies (p < {ALPHA})",
                holds=None if p is None else p < ALPHA,
                degenerate=verdict,
                note=("the paper's test" if level == "comment" else "one mean per discussion")
                + ("" if p is not None or verdict else "; too few units"),
            )
        )

    # Finding 2: the elaborate strategies' x time terms are negative.
    names = paper.get("finding2_elaborate") or []
    vals = {n: _f(ours[f"{n}×time"]["coef"]) if f"{n}×time" in ours else None for n in names}
    have = {k: v for k, v in vals.items() if v is not None}
    out.append(
        Row(
            "Finding 2: " + ", ".join(f"{n}×time" for n in names) + f" < 0, p < {ALPHA}",
            None,
            None,
            finding="elaborate strategies reduce toxicity over time vs No Moderator",
            holds=(
                _negative_and_significant(ours, {f"{k}×time": v for k, v in have.items()})
                if have and len(have) == len(vals)
                else None
            ),
            degenerate=table2_degenerate,
            note=na or ", ".join(f"{k}: {v:.4f}" for k, v in have.items()) or "terms not estimated",
        )
    )

    # Finding 3: interventions at almost every opportunity.
    main = interv[interv["condition"] == MAIN]
    rate = float(main["interventions"].sum() / main["opportunities"].sum()) if len(main) else None
    thr = paper.get("finding3_min_intervention_rate")
    out.append(
        Row(
            "Finding 3: facilitator intervention rate (main study)",
            rate,
            None,
            finding=f"facilitators intervene at almost every opportunity (rate >= {thr})",
            holds=None if rate is None or thr is None else rate >= thr,
            note="" if rate is not None else "no facilitator turns",
        )
    )

    # Turn taking.
    out.append(
        Row(
            "Turn taking: observed P(speaker_t = speaker_t-2)",
            reply.get("rate"),
            paper.get("reply_rate"),
            note=f"over {reply.get('turns', 0)} user turns of respond discussions",
        )
    )

    # Ablations: diversity orderings (Fig. 5).
    synth = div[div["source"] == "synthetic"].dropna(subset=["diversity"])
    tt_groups = synth[synth["condition"].eq(MAIN) | synth["condition"].str.startswith("tt_")]
    abl = synth[synth["condition"] != MAIN]
    if len(abl):
        model, strategy = abl["model"].iloc[0], abl["strategy"].iloc[0]
        tt_groups = tt_groups[(tt_groups["model"] == model) & (tt_groups["strategy"] == strategy)]
    by_tt = tt_groups.groupby("turn_taking")["diversity"].mean()
    few_tt = tt_groups.groupby("turn_taking").size().min() < MIN_GROUP if len(tt_groups) else True
    holds = None
    if "respond" in by_tt and len(by_tt) >= 2 and not few_tt:
        holds = bool(by_tt["respond"] == by_tt.min())
    out.append(
        Row(
            "Fig. 5b: mean diversity with respond turn taking",
            _f(by_tt.get("respond", np.nan)),
            None,
            finding="the paper's turn taking gives the lowest diversity of the turn-taking functions",
            holds=holds,
            note=(", ".join(f"{k}: {v:.3f}" for k, v in by_tt.items()) or "no ablation")
            + (f"; n/a: fewer than {MIN_GROUP} discussions in a group" if few_tt and len(by_tt) else ""),
        )
    )
    by_model = synth[synth["condition"] == MAIN].groupby("model")["diversity"].mean()
    qwen = [m for m in by_model.index if str(paper.get("ablation_model", "qwen")).lower() in m.lower()]
    few_model = bool(len(by_model)) and synth[synth["condition"] == MAIN].groupby("model").size().min() < MIN_GROUP
    holds = bool(by_model[qwen[0]] == by_model.max()) if qwen and len(by_model) >= 2 and not few_model else None
    out.append(
        Row(
            "Fig. 5a: mean diversity of the Qwen model",
            _f(by_model[qwen[0]]) if qwen else None,
            None,
            finding="Qwen has the highest diversity of the models",
            holds=holds,
            note=", ".join(f"{k}: {v:.3f}" for k, v in by_model.items())
            + ("" if qwen else "; no Qwen model in this run"),
        )
    )

    # Fig. 6: trolls and the instruction prompt.
    effects: dict[str, float] = {}
    tt = tt.dropna(subset=["toxicity"])
    basic = tt[tt["condition"] == BASIC]
    if len(basic):
        model, strategy = basic["model"].iloc[0], basic["strategy"].iloc[0]
        cell = {
            "instruction prompt": tt[(tt["condition"] == MAIN) & (tt["model"] == model) & (tt["strategy"] == strategy)],
            "basic prompt": basic,
        }
        for prompt, d in cell.items():
            m = d.groupby("trolls")["toxicity"].mean()
            if {"with trolls", "without trolls"} <= set(m.index):
                effects[prompt] = float(m["with trolls"] - m["without trolls"])
    holds = effects["instruction prompt"] > max(0.0, effects["basic prompt"]) if len(effects) == 2 else None
    out.append(
        Row(
            "Fig. 6: non-troll toxicity, with minus without trolls (instruction prompt)",
            effects.get("instruction prompt"),
            None,
            finding="trolls raise other users' toxicity only with the instruction prompt",
            holds=holds,
            degenerate=degenerate,
            note=(
                f"basic prompt: {effects['basic prompt']:.3f}"
                if "basic prompt" in effects
                else "needs discussions with and without trolls under both prompts"
            ),
        )
    )
    return out
