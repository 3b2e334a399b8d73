"""The revised study's claims, one judge each (socsim.io.claims), every one judged per model and on all
models together, each scope by the one verdict rule (socsim.stats.verdict) with the discussion as the unit
(comments nest in discussions; 30 discussions per model and condition in the release).

- `strategies_lower_toxicity` (the table's strategy rows): each strategy's discussions' mean toxicity
  below No Facilitator's (Welch t over discussions), one verdict per strategy;
- `toxicity_rises_with_turn` (its turn row): No Facilitator discussions' toxicity slopes per user turn
  above 0 (one-sample t over discussions; the user turn, not the authors' message order: measures.TURN);
- `strategy_turn_interactions` (its x Turn rows): each strategy's discussions' slopes below No
  Facilitator's (Welch t over discussions), one verdict per strategy;
- `cannot_keep_silent` (Sect. 5.1, "intervene at almost any opportunity"): facilitated discussions'
  intervention rates above paper_revision.yaml's `min_intervention_rate` (socsim's reading of "almost
  any": the paper gives no number), by a sign test over discussions (rates pile up at 1, where a t test
  has no variance);
- `instructions_raise_interventions` (Sect. 5.1): each instructed strategy's intervention rates above
  Minimal Instructions' (Welch t over discussions); both must hold;
- `trolls_raise_toxicity` (the troll figure): the non-troll users' mean toxicity of a discussion rising
  with its number of active trolls (OLS over discussions, strategy and model as covariates).

Each judge returns its findings (one per scope and part), a vs_paper row per part on all models beside
the paper's claim, and its rows of the per-model grid (`grid_<claim>`, joined by the report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from socsim.facilitation.findings import REVISED_IDS
from socsim.facilitation.revision.data import NO_FACILITATOR
from socsim.facilitation.revision.measures import POOLED, in_scope
from socsim.io.claims import Claim, Judgement
from socsim.io.findings import Scope
from socsim.io.report import Finding, Table
from socsim.io.vs_paper import Row
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd
from socsim.stats.intervals import Tested, one_sample, sign_test, slope_test, welch

UNIT = "discussions"
MIN_DISCUSSIONS = vd.MIN_UNITS
INSTRUCTED = ("Moderation Guidelines", "Constructive Communications")
MINIMAL = "Minimal Instructions"
GRID = ["claim", "part", "scope", "verdict", "holds", "estimate", "ci_low", "ci_high", "n", "p", "test", "reason"]


@dataclass
class Evidence:
    """What the claims judge, measured once (report.measure)."""

    paper: Mapping[str, Any]  # data/facilitation/paper_revision.yaml
    units: pd.DataFrame  # measures.discussions
    interv: pd.DataFrame  # measures.interventions
    scopes: list[str]  # measures.scopes: all models, then each model
    flags: dict[str, list[dg.Flag]] = field(default_factory=dict)  # scope -> its toxicity's flags
    human_toxicity: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the humans' comments' (no discussions)
    humans: str = ""  # their data set's name ("" without them)


def _values(df: pd.DataFrame, column: str, **where: Any) -> np.ndarray:
    for k, v in where.items():
        df = df[df[k] == v]
    out: np.ndarray = df[column].dropna().to_numpy(dtype=float)
    return out


@dataclass(frozen=True)
class Part:
    """One part of a claim as a test of one scope's data: `run(units, interventions)`; `direction`
    is the claimed sign of the estimate."""

    name: str
    run: Callable[[pd.DataFrame, pd.DataFrame], Tested]
    direction: int
    uses_toxicity: bool = True
    note: str = ""  # what the vs_paper row says beside it (the paper's number, how the test differs)


def _judge(
    ev: Evidence, name: str, claim: str, statistic: str, test: str, parts: Sequence[Part], paper_row: str
) -> Judgement:
    """Every part on every scope: a finding per (scope, part) ("all of" the parts for the claim when it
    has several, as a last finding per scope), a vs_paper row per part on all models, and the grid rows."""
    j, grid = Judgement(), []
    for scope in ev.scopes:
        judged = Scope.all_models() if scope == POOLED else Scope.model(scope)
        units, interv = in_scope(ev.units, scope), in_scope(ev.interv, scope)
        flags = ev.flags.get(scope, [])
        verdicts = []
        for part in parts:
            t = part.run(units, interv)
            v = vd.effect(
                t.p, t.estimate, t.n, MIN_DISCUSSIONS, UNIT, part.direction, flags if part.uses_toxicity else ()
            )
            verdicts.append(vd.named(part.name, v) if len(parts) > 1 else v)
            label = f"{claim}: {part.name}" if len(parts) > 1 else claim
            j.findings.append(
                Finding(
                    f"{label} [{scope}]",
                    statistic,
                    t.estimate,
                    test,
                    UNIT,
                    t.n,
                    v,
                    t.ci,
                    id=REVISED_IDS[name],
                    scope=judged,
                    part=part.name if len(parts) > 1 else "",
                )
            )
            grid.append(_grid_row(name, part.name, scope, v, t, test))
            if scope == POOLED:
                j.rows.append(
                    Row(
                        f"{paper_row}: {part.name} (all models; {vd.with_rule(test, v.rule)})",
                        t.estimate,
                        None,
                        finding=label,
                        verdict=v,
                        flags=flags if part.uses_toxicity else (),
                        note="; ".join(x for x in (_ci_note(t), part.note) if x),
                    )
                )
        if len(parts) > 1:
            v = vd.all_of(verdicts)
            j.findings.append(
                Finding(
                    f"{claim} [{scope}]", "every part", None, test, UNIT, None, v, id=REVISED_IDS[name], scope=judged
                )
            )
            grid.append(_grid_row(name, "all parts", scope, v, Tested(None, None, v.p, 0), test))
    j.tables[f"grid_{name}"] = Table(pd.DataFrame(grid, columns=GRID), name)
    return j


def _grid_row(name: str, part: str, scope: str, v: vd.Verdict, t: Tested, test: str) -> dict[str, Any]:
    return {
        "claim": name,
        "part": part,
        "scope": scope,
        "verdict": v.label,
        "holds": v.holds,
        "estimate": t.estimate,
        "ci_low": t.ci[0] if t.ci else None,
        "ci_high": t.ci[1] if t.ci else None,
        "n": t.n or None,
        "p": t.p,
        "test": vd.with_rule(test, v.rule),
        "reason": v.reason,
    }


def _ci_note(t: Tested) -> str:
    return f"95% CI [{t.ci[0]:.4g}, {t.ci[1]:.4g}], n = {t.n} discussions (smaller side)" if t.ci else f"n = {t.n}"


def _strategies(ev: Evidence) -> list[str]:
    present = set(ev.units["strategy"])
    return [s for s in (MINIMAL, *INSTRUCTED) if s in present] + sorted(
        present - {NO_FACILITATOR, MINIMAL, *INSTRUCTED}
    )


def _versus_none(strategy: str, column: str) -> Callable[[pd.DataFrame, pd.DataFrame], Tested]:
    return lambda u, _: welch(_values(u, column, strategy=strategy), _values(u, column, strategy=NO_FACILITATOR))


def _printed(ev: Evidence, term: str, clock: bool = False) -> str:
    """The authors' printed coefficient of `term`, for a vs_paper note ("" when they print none)."""
    ref = ((ev.paper.get("toxicity_regression") or {}).get("terms") or {}).get(term)
    if not ref:
        return ""
    said = f"the authors' {term}: {ref['coef']:.3f}{ref.get('stars', '')} (MixedLM on their rows)"
    return said + ("; their clock is the message order, socsim's the user turn" if clock else "")


def strategies_lower_toxicity(ev: Evidence) -> Judgement:
    parts = [Part(s, _versus_none(s, "mean_toxicity"), -1, note=_printed(ev, s)) for s in _strategies(ev)]
    return _judge(
        ev,
        "strategies_lower_toxicity",
        "each facilitation strategy lowers toxicity against No Facilitator",
        "strategy minus No Facilitator, discussions' mean toxicity",
        "Welch t over discussions",
        parts,
        "Toxicity table, strategy row < 0",
    )


def toxicity_rises_with_turn(ev: Evidence) -> Judgement:
    part = Part(
        NO_FACILITATOR,
        lambda u, _: one_sample(_values(u, "slope", strategy=NO_FACILITATOR), 0.0),
        +1,
        note=_printed(ev, "Discussion Turn", clock=True),
    )
    return _judge(
        ev,
        "toxicity_rises_with_turn",
        "toxicity rises with the turn without a facilitator",
        "mean of No Facilitator discussions' toxicity slopes per user turn",
        "one-sample t over discussions' OLS slopes",
        [part],
        "Toxicity table, Discussion Turn > 0",
    )


def strategy_turn_interactions(ev: Evidence) -> Judgement:
    parts = [
        Part(s, _versus_none(s, "slope"), -1, note=_printed(ev, f"{s} × Turn", clock=True)) for s in _strategies(ev)
    ]
    return _judge(
        ev,
        "strategy_turn_interactions",
        "each strategy slows the rise of toxicity over the turn (strategy x turn < 0)",
        "strategy minus No Facilitator, discussions' toxicity slopes per user turn",
        "Welch t over discussions' OLS slopes",
        parts,
        "Toxicity table, strategy x Turn < 0",
    )


def cannot_keep_silent(ev: Evidence) -> Judgement:
    thr = float(ev.paper.get("min_intervention_rate", 0.9))
    part = Part(
        f"rate above {thr:g}",
        lambda _, i: sign_test(i["rate"].dropna().to_numpy(dtype=float), thr),
        +1,
        False,
        "the paper gives no number: 'almost any' read as a rate above the threshold (paper_revision.yaml)",
    )
    return _judge(
        ev,
        "cannot_keep_silent",
        f"LLM facilitators intervene at almost every opportunity (rate > {thr:g}, socsim's reading)",
        f"median per-discussion intervention rate minus {thr:g}",
        "sign test over facilitated discussions",
        [part],
        "Sect. 5.1, interventions",
    )


def instructions_raise_interventions(ev: Evidence) -> Judgement:
    def versus_minimal(s: str) -> Callable[[pd.DataFrame, pd.DataFrame], Tested]:
        return lambda _, i: welch(_values(i, "rate", strategy=s), _values(i, "rate", strategy=MINIMAL))

    present = set(ev.interv["strategy"])
    parts = [Part(s, versus_minimal(s), +1, False) for s in INSTRUCTED if s in present]
    return _judge(
        ev,
        "instructions_raise_interventions",
        "specific instructions raise the facilitator's intervention rate (vs Minimal Instructions)",
        "strategy minus Minimal Instructions, per-discussion intervention rate",
        "Welch t over facilitated discussions",
        parts,
        "Sect. 5.1, instructions",
    )


def trolls_raise_toxicity(ev: Evidence) -> Judgement:
    def run(u: pd.DataFrame, _: pd.DataFrame) -> Tested:
        return slope_test(u, "nontroll_toxicity", "active_trolls", ("strategy", "model"))

    return _judge(
        ev,
        "trolls_raise_toxicity",
        "trolls raise the other users' toxicity",
        "non-troll users' mean toxicity per active troll",
        "OLS over discussions, strategy (and model) as covariates",
        [
            Part(
                "per active troll",
                run,
                +1,
                note="the authors' troll figure also pools the basic-prompt ablation and keeps silent users' rows; "
                "socsim: the main study's non-silent comments, strategy and model as covariates",
            )
        ],
        "Troll figure, non-troll toxicity",
    )


def humans_toxicity(ev: Evidence) -> Judgement:
    """socsim's own question (the authors score the humans and never compare): each condition's discussions' mean
    toxicity against the human comments' (Welch t; the humans' discussions are not released, so their comments are
    the units there), per model and on all models; any difference, its sign read from the estimate."""
    if not ev.humans or not len(ev.human_toxicity):
        return Judgement(rows=[Row("Humans: toxicity against the human comments", None, None, note="no humans")])
    human = ev.human_toxicity

    def part(strategy: str) -> Part:
        def run(u: pd.DataFrame, _: pd.DataFrame) -> Tested:
            return welch(_values(u, "mean_toxicity", strategy=strategy), human)

        return Part(strategy, run, 0, note=f"humans: {ev.humans}, {len(human)} comments, mean {human.mean():.4g}")

    return _judge(
        ev,
        "humans_toxicity",
        "a model's discussions differ in toxicity from people's (socsim's question, not the paper's)",
        "discussions' mean toxicity minus the human comments' (Perspective, the same scorer)",
        "Welch t, the model's discussions against the human comments (their discussions are not released)",
        [part(s) for s in (NO_FACILITATOR, *_strategies(ev))],
        "Humans, toxicity",
    )


CLAIMS: list[Claim[Evidence]] = [
    Claim("strategies_lower_toxicity", strategies_lower_toxicity, "Toxicity table (strategy rows)"),
    Claim("toxicity_rises_with_turn", toxicity_rises_with_turn, "Toxicity table (Discussion Turn)"),
    Claim("strategy_turn_interactions", strategy_turn_interactions, "Toxicity table (x Turn rows)"),
    Claim("cannot_keep_silent", cannot_keep_silent, "Sect. 5.1"),
    Claim("instructions_raise_interventions", instructions_raise_interventions, "Sect. 5.1"),
    Claim("trolls_raise_toxicity", trolls_raise_toxicity, "Sect. 3 (trolls)"),
    Claim("humans_toxicity", humans_toxicity, "socsim's question (not in the paper)"),
]
