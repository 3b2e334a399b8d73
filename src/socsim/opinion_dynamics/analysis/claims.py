"""The paper's claims (paper 002, section 4), one judge per claim (socsim.io.claims): each returns its
findings, its vs_paper rows (its inputs' flags, never-measured share and design differences named
per row) and its flags. `CLAIMS` lists them in the report's order.

- Tables 1 and 2 and v4's global-warming runs: every cell we ran beside the seed paper's (D as
  population SD, as the tables); no finding of their own.
- Per scope (agent model, topology, start, memory) of the main runs on the uniform start, unit =
  topics (a topic's simulations share its schedule and personas), each depending on its scope's data
  only (`SCOPE_CLAIMS`): "B < 0 under false framing" judged together with the framing test (each
  bias cell's one-sample t, direction -, and its paired t, direction +: B negative in both framings
  does not follow the truth), "B higher under true framing" (each bias cell's paired t, Bonferroni
  over the fixed family, direction +), "D rises with confirmation bias" (adjacent steps of the
  per-topic D over the bias levels that ran: on three levels none < weak and weak < strong, on two
  their difference; one difference per topic, one-sample t, direction +; the claim names the levels
  that ran); every part must hold (socsim.stats.verdict.all_of).
- The uniform start's sample SD: an input of the run, never a match.
- Fig. 5's final B as the paper's text gives it, beside each of our runs of that condition.
- Outside information (section 3.3): the rate per world beside the paper's, and "more common in the
  open world" where both ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from socsim.io import findings as fd
from socsim.io import vs_paper
from socsim.io.claims import Claim, Judgement, judge_all
from socsim.io.report import Finding, Flagged, Table
from socsim.opinion_dynamics.analysis import outside_info as oi
from socsim.opinion_dynamics.analysis.measures import (
    BIAS_ORDER,
    CELL,
    MAIN,
    PAIRED_FAMILY,
    SCOPE,
    Flags,
    SimFlags,
    ValueFlags,
    _float,
    _vf,
    aggregate,
    never_measured_note,
)
from socsim.opinion_dynamics.analysis.paper import design
from socsim.opinion_dynamics.analysis.significance import TestRow, cells_flags, contrast_scores, paper_tests, steps
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd


@dataclass
class Outside:
    """The outside-information judge's labels, the setups and per_sim rows of every world, the sample."""

    labels: pd.DataFrame
    setups: pd.DataFrame
    ps: pd.DataFrame
    sample: int | None
    classifier: Mapping[str, str]


@dataclass
class Evidence:
    """What the claims judge, measured once: the paper's world's per_sim rows (`ps`) and setups, the
    classifier's flags (`flags`: per model and condition; `finals`: per group's final values), the
    paper's tests (`test_rows`), the classifier per model, the classifier prompt's design difference
    (`layout`), every world's per_sim rows (`ps_all`, Fig. 5) and the outside-information labels."""

    ps: pd.DataFrame
    paper: Mapping[str, Any]
    alpha: float
    flags: Flags = field(default_factory=dict)
    finals: ValueFlags | None = None
    setups: pd.DataFrame = field(default_factory=pd.DataFrame)
    classifier: Mapping[str, str] = field(default_factory=dict)
    test_rows: list[TestRow] | None = None  # None: computed from ps (paper_tests)
    tests_table: pd.DataFrame | None = None  # None: the test rows as a table
    layout: list[str] = field(default_factory=list)
    ps_all: pd.DataFrame | None = None  # None: ps
    classifier_all: Mapping[str, str] | None = None  # None: classifier
    outside: Outside | None = None
    sims: SimFlags = field(default_factory=SimFlags)  # every world's simulations' flags (Fig. 5 rows)

    def __post_init__(self) -> None:
        if self.test_rows is None:
            self.test_rows = paper_tests(self.ps, self.flags, self.alpha, self.finals)
        if self.tests_table is None:
            self.tests_table = pd.DataFrame([r for r, _ in self.test_rows])

    def design(self, cells: pd.DataFrame, table: str | None = None) -> list[str]:
        """The design differences of numbers made of the classifier's ratings of `cells`: the run's
        (paper.design) and the classifier prompt's order (classifier.layout) unless it is App. I's."""
        return [*design(cells, self.classifier, self.paper, table), *self.layout]

    @property
    def main(self) -> pd.DataFrame:
        """The main runs on the uniform start: what the paper's tables, tests and findings are made of."""
        ps = self.ps
        return ps[(ps.condition == MAIN) & (ps.init == "uniform")]


def _note(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


# -- Tables 1 and 2, v4's global-warming runs, the uniform start ----------------------------------------


def judge_tables(ev: Evidence) -> Judgement:
    """Every Table 1 / Table 2 cell we ran beside the seed paper's (D as population SD, as the tables),
    with its model's main-ratings flags and its own cell's final-value flags."""
    pop = ev.main.assign(D=ev.main.D_pop)  # the paper's tables: population SD whatever metrics.ddof says
    paper = ev.paper
    rows: list[vs_paper.Row] = []
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
            n = _note(f"mean over {r.n_topics} topic(s)", never_measured_note(getattr(r, "never_measured_share", None)))
            dsg = ev.design(cell, table)
            cf = dg.collect(ev.flags.get((r.model, MAIN), []), _vf(ev.finals, by, r._asdict()))
            rows.append(vs_paper.Row(f"{label}: B", r.B, p["B"], note=n, flags=cf, design=dsg))
            rows.append(vs_paper.Row(f"{label}: D (population SD)", r.D, p["D"], note=n, flags=cf, design=dsg))
    return Judgement(rows=rows)


def judge_global_warming_v4(ev: Evidence) -> Judgement:
    """v4's global-warming runs (Table 6), one run each, beside each of ours, with the simulation's flags."""
    gw = ev.paper.get("global_warming_v4", {})
    rows: list[vs_paper.Row] = []
    main = ev.main
    for r in main[main.topic == "global_warming"].itertuples(index=False):
        p = gw.get(r.memory, {}).get(r.framing, {}).get(r.bias)
        if p is None:
            continue
        label = (
            f"global warming, arXiv v4 Table 6 ({r.model}, {r.topology}, rep {r.rep}): "
            f"{r.memory}, {r.framing}, {r.bias}"
        )
        n = _note("one run each", never_measured_note(getattr(r, "never_measured_share", None)))
        dsg = ev.design(main[main.sim_id == r.sim_id], "global_warming_v4")
        sf = dg.collect(ev.flags.get((r.model, MAIN), []), _vf(ev.finals, ["sim_id"], {"sim_id": r.sim_id}))
        rows.append(vs_paper.Row(f"{label}: B", r.B, p["B"], note=n, flags=sf, design=dsg))
        rows.append(vs_paper.Row(f"{label}: D (population SD)", r.D_pop, p["D"], note=n, flags=sf, design=dsg))
    return Judgement(rows=rows)


def judge_uniform_start(ev: Evidence) -> Judgement:
    """The uniform start's sample SD beside the text's 1.49: an input of the run, not a result."""
    s = ev.setups
    start = s[(s.condition == MAIN) & (s.init == "uniform")] if len(s) else s
    if not len(start):
        return Judgement()
    initial = list(start.iloc[0]["initial"])
    row = vs_paper.Row(
        "uniform start: D (sample SD, ddof 1)",
        float(np.std(initial, ddof=1)),
        ev.paper["uniform_start"]["D_sample"],
        is_input=True,
        note=f"the assigned start, not a result of the run; N = {len(initial)}; the population SD of "
        f"the same start is {np.std(initial):.4f}",
    )
    return Judgement(rows=[row])


# -- Per scope: B follows the truth, D rises with confirmation bias ---------------------------------------


@dataclass
class Scope:
    """One scope (model, topology, start, memory) of the main runs on the uniform start: its rows
    (`g`), its tests (`one`: the false framing's one-sample t; `pair`: the paired t, where both
    framings ran) and what its vs_paper rows share."""

    ev: Evidence
    key: tuple[Any, ...]
    g: pd.DataFrame

    def __post_init__(self) -> None:
        k = self.k = dict(zip(SCOPE, self.key))
        g = self.g
        self.biases = sorted(set(g.bias), key=cast(Callable[[str], int], BIAS_ORDER.get))
        start = "" if k["init"] == "uniform" else f", {k['init']} start"
        self.part = f"{k['memory']}, {k['topology']}{start}"  # the finding's part (socsim.io.findings)
        self.label = f"{k['model']}, {self.part}"
        self.judged = fd.Scope.model(k["model"])
        mine = [(r, f) for r, f in self.ev.test_rows or [] if all(r[c] == k[c] for c in SCOPE)]
        self.one = [(r, f) for r, f in mine if r["test"] == "one-sample t: B vs 0" and r["framing"] == "false"]
        pair = [(r, f) for r, f in mine if r["test"] == "paired t: B true vs false"]
        self.pair = pair if {"true", "false"} <= set(g.framing) else []
        self.higher = [_paired_part(r, f, self.ev.alpha) for r, f in self.pair]
        claims = self.ev.paper.get("findings", {})
        self.truth = str(claims.get("truth", "B follows the truth")).split(":")[0]
        self.d_claim = str(claims.get("bias_diversity", "D rises with confirmation bias"))
        # what its vs_paper rows share: the paper's B per framing (mean over the bias levels that ran),
        # the never-measured share, the design, the flags of every cell of the scope
        ref = self.ev.paper["table1"]
        self.paper_b = {
            fr: np.mean([ref.get(k["memory"], {}).get(fr, {}).get(b, {}).get("B", np.nan) for b in self.biases])
            for fr in ("false", "true")
        }
        share = float(g.never_measured.sum() / g.n_agents.sum()) if "never_measured" in g else None
        self.nm = never_measured_note(share)
        self.row_label = f"{k['model']}, {k['memory']} ({k['topology']}), bias {'/'.join(self.biases)}"
        self.every = dg.collect(self.ev.flags.get((k["model"], MAIN), []), cells_flags(self.ev.finals, g))


def scopes(ev: Evidence) -> Iterator[Scope]:
    for key, g in ev.main.groupby(SCOPE, sort=True):
        yield Scope(ev, tuple(key), g)


def _part(name: str, v: vd.Verdict, n: int) -> vd.Verdict:
    """A claim's part named in its reason; too few topics keep the rule's own words ("n = 2 topics, needs 3")."""
    return vd.named(name, v) if n >= vd.MIN_UNITS else v


def _paired_part(r: Mapping[str, Any], f: list[dg.Flag], alpha: float) -> vd.Verdict:
    """ "B(true) > B(false)" in one bias cell: the paired t's p_adj (Bonferroni over PAIRED_FAMILY)."""
    v = vd.effect(r["p_adj"], r["mean"], r["n"], vd.MIN_UNITS, "topics", +1, f, alpha, family=PAIRED_FAMILY)
    return _part(f"{r['bias']} bias, B(true) > B(false)", v, r["n"])


def false_negative(s: Scope) -> Finding | None:
    """ "B < 0 under false framing, and below B under true framing" (None where no false framing ran)."""
    if not s.one:
        return None
    alpha = s.ev.alpha
    negative = [
        _part(
            f"{r['bias']} bias, B(false) < 0",
            vd.effect(r["p"], r["mean"], r["n"], vd.MIN_UNITS, "topics", -1, f, alpha),
            r["n"],
        )
        for r, f in s.one
    ]
    g = s.g
    return Finding(
        claim=f"{s.truth}: B < 0 under false framing, and below B under true framing ({s.label})",
        statistic="mean B under false framing (mean over topics of each bias cell, then over cells)",
        value=_float(g[g.framing == "false"].groupby(["bias", "topic"]).B.mean().groupby(level=0).mean().mean()),
        test="per bias cell: one-sample t of the per-topic B under false framing against 0 (direction -) "
        "and the paired t of B(true) - B(false) over topics (direction +, Bonferroni over the fixed "
        f"family of {PAIRED_FAMILY} paired tests); every part must hold (B < 0 in both framings "
        "does not follow the truth)",
        unit="topics",
        n=min(r["n"] for r, _ in s.one + s.pair),
        verdict=vd.all_of(negative + s.higher)
        if s.pair
        else vd.untested("needs both framings: B < 0 under false framing alone does not follow the truth", -1, alpha),
        id="od.truth_false_negative",
        scope=s.judged,
        part=s.part,
    )


def true_higher(s: Scope) -> Finding | None:
    """ "B higher under true framing" (None where not both framings ran)."""
    if not s.pair:
        return None
    means = [r["mean"] for r, _ in s.pair if r["mean"] is not None and not pd.isna(r["mean"])]
    return Finding(
        claim=f"{s.truth}: B higher under true framing ({s.label})",
        statistic="mean over bias cells of the mean per-topic B(true) - B(false)",
        value=_float(np.mean(means)) if means else None,
        test="paired t of B over topics (true vs false framing) in each bias cell, Bonferroni "
        f"over the fixed family of {PAIRED_FAMILY} paired tests (the paper's 3 bias levels x 2 memories per "
        "model, topology and start); every cell must hold",
        unit="topics",
        n=min(r["n"] for r, _ in s.pair),
        verdict=vd.all_of(s.higher),
        id="od.truth_true_higher",
        scope=s.judged,
        part=s.part,
    )


def judge_truth(s: Scope) -> Judgement:
    """The paper's "B follows the truth" in one scope: its two findings and their vs_paper rows (mean B
    under false framing; B(true) - B(false)), each with the flags of every cell of the scope."""
    j = Judgement()
    g, false_b = s.g, s.g[s.g.framing == "false"].B
    fn, th = false_negative(s), true_higher(s)
    dsg = s.ev.design(g, "table1")
    if fn is not None:
        j.findings.append(fn)
        j.rows.append(
            vs_paper.Row(
                f"{s.row_label}: mean B under false framing",
                false_b.mean() if len(false_b) else None,
                s.paper_b["false"],
                finding=fn.claim,
                verdict=fn.verdict,
                flags=s.every,  # judged with the framing test: both framings' cells
                design=dsg,
                note=_note(
                    "holds: each false-framing bias cell's B < 0 by a one-sample t over topics, and B higher "
                    "under true framing in that cell (paired t over topics, Bonferroni over "
                    f"{PAIRED_FAMILY} tests)",
                    s.nm,
                ),
            )
        )
    if th is not None:
        j.findings.append(th)
        j.rows.append(
            vs_paper.Row(
                f"{s.row_label}: B(true) - B(false)",
                g[g.framing == "true"].B.mean() - false_b.mean(),
                s.paper_b["true"] - s.paper_b["false"],
                finding=th.claim,
                verdict=th.verdict,
                flags=s.every,
                design=dsg,
                note=_note(
                    "holds: B higher under true framing in every bias cell (paired t over topics, Bonferroni over "
                    f"{PAIRED_FAMILY} tests)",
                    s.nm,
                ),
            )
        )
    return j


def d_rises(
    g: pd.DataFrame,
    biases: list[str],
    flags: list[dg.Flag],
    claim: str,
    label: str,
    alpha: float = vd.ALPHA,
    *,
    model: str,
    part: str,
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
        fl = dg.collect(flags, dg.near_constant(d, f"D step {name} over topics") if n >= vd.MIN_UNITS else None)
        mean, p = vd.one_sample(d, 0.0)
        parts.append(_part(name, vd.effect(p, mean, n, vd.MIN_UNITS, "topics", +1, fl, alpha), n))
        ns.append(n)
        shown.append(name)
    whole = (per[biases[-1]] - per[biases[0]]).dropna() if len(biases) > 1 else pd.Series(dtype=float)
    return Finding(
        claim=f"{base} ({' < '.join(biases)}; {label})",
        statistic=f"mean per-topic D({biases[-1]}) - D({biases[0]})" if len(biases) > 1 else "n/a",
        value=_float(whole.mean()) if len(whole) else None,
        test=(
            f"adjacent step(s) {'; '.join(shown)} of the per-topic D, one difference per topic, one-sample t "
            "against 0 over topics (paired); every step must hold (the paper's planned contrasts "
            "(-2, 1, 1) and (0, -1, 1) are in the tests table: they do not test this order)"
        )
        if contrasts
        else "n/a",
        unit="topics",
        n=min(ns) if ns else 0,
        verdict=vd.all_of(parts) if parts else vd.untested(f"needs 2 bias levels, ran {len(biases)}", +1, alpha),
        id="od.d_rises_with_bias",
        scope=fd.Scope.model(model),
        part=part,
    )


def d_rises_of(s: Scope) -> Finding:
    """`d_rises` in a scope, with its model's main-ratings flags and the final-value flags of its cells."""
    fl = dg.collect(s.ev.flags.get((s.k["model"], MAIN), []), cells_flags(s.ev.finals, s.g))
    return d_rises(s.g, s.biases, fl, s.d_claim, s.label, s.ev.alpha, model=s.k["model"], part=s.part)


def judge_d_rises(s: Scope) -> Judgement:
    """ "D rises with confirmation bias" in one scope: its finding, and its vs_paper row beside the
    paper's ANOVA F (App. M, over all 3 levels)."""
    f = d_rises_of(s)
    tst = cast(pd.DataFrame, s.ev.tests_table)
    rows: list[vs_paper.Row] = []
    if len(tst):
        sel = np.logical_and.reduce([tst[c] == s.k[c] for c in SCOPE]) & (tst.test == "one-way ANOVA: D by bias")
        three = len(s.biases) == 3
        for a in tst[sel].itertuples(index=False):
            rows.append(
                vs_paper.Row(
                    f"{s.row_label}: ANOVA F of D by bias",
                    a.statistic,
                    s.ev.paper.get("anova_v4", {}).get(s.k["memory"], {}).get("F") if three else None,
                    finding=f.claim,
                    verdict=f.verdict,
                    flags=s.every,
                    design=s.ev.design(s.g, "table1"),
                    note=_note(
                        "paper: arXiv v4 App. M, F(2) over 3 levels"
                        if three
                        else f"paper's F(2) needs all 3 bias levels; ran {len(s.biases)}",
                        "holds: D rises at every adjacent step of the bias levels that ran (per-topic "
                        "differences, one-sample t over topics; on 3 levels none < weak and weak < strong)",
                        s.nm,
                    ),
                )
            )
    return Judgement([f], rows)


# A scope's claims, in the report's order (each judged on every scope, scope by scope).
SCOPE_CLAIMS: list[Claim[Scope]] = [
    Claim("b_follows_the_truth", judge_truth, "Table 1, Sect. 4.1"),
    Claim("d_rises_with_bias", judge_d_rises, "Table 1, Sect. 4.2; v4 App. M"),
]


def judge_scopes(ev: Evidence) -> Judgement:
    """`SCOPE_CLAIMS` judged on every scope, scope by scope (the report keeps a scope's findings together)."""
    j = Judgement()
    for s in scopes(ev):
        for _, one in judge_all(SCOPE_CLAIMS, s):
            j = j + one
    return j


# -- Fig. 5 ---------------------------------------------------------------------------------------------


def judge_fig5(ev: Evidence) -> Judgement:
    """Fig. 5's final B as the seed paper's text gives it (and v4's), beside each of our simulations
    of the same topic, start, framing, memory and bias (paper.yaml `fig5`), every world; one run each,
    no test."""
    ref = ev.paper.get("fig5") or {}
    ps = ev.ps if ev.ps_all is None else ev.ps_all
    main = ps[ps.condition == MAIN]
    rows: list[vs_paper.Row] = []
    if not ref or not len(main):
        return Judgement()
    classifier = ev.classifier if ev.classifier_all is None else ev.classifier_all
    sel = main[(main.topic == ref["topic"]) & (main.memory == ref["memory"]) & (main.bias == ref["bias"])]
    if not len(sel):
        return Judgement()
    for r in sel.sort_values(["model", "init", "framing", "world", "topology", "rep"]).itertuples(index=False):
        p = (ref.get("runs") or {}).get(r.init, {}).get(r.framing)
        if p is None:
            continue
        label = (
            f"Fig. 5 ({r.model}, {r.topology}, {r.world} world, rep {r.rep}): {ref['topic'].replace('_', ' ')}, "
            f"{r.init} start, {r.framing} framing, {r.memory}, {r.bias} bias: final B"
        )
        dsg = [*design(main[main.sim_id == r.sim_id], classifier, ev.paper, "fig5"), *ev.layout]
        flags = ev.sims.of([r.sim_id])  # its ratings' and its own final values' flags
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
                    flags=flags,
                    design=dsg,
                )
            )
    return Judgement(rows=rows)


# -- Outside information --------------------------------------------------------------------------------


def judge_outside_info(ev: Evidence) -> Judgement:
    """The outside-information rate per world setting (its table), vs_paper rows beside the paper's
    rates, and the finding "outside information is more common in the open world" where both ran; the
    judge's flags on its table and rows."""
    o = ev.outside
    if o is None:
        return Judgement()
    labels, setups = o.labels, o.setups
    tab = oi.table(labels, setups, o.sample)
    judges = sorted(set(labels.judge_model)) if len(labels) else []
    ran = sorted(set(setups[setups.condition == MAIN].world)) if len(setups) else []
    flags = oi.judge_flags(labels) if len(labels) else {}
    table = Table(
        tab,
        "Outside information in tweets and reports, per world setting (the paper: about 15 % open, 0 % closed)",
        [
            f"world settings that ran: {', '.join(ran) or 'none'}; judge: {', '.join(judges) or 'none'}; "
            f"sample: {'all' if o.sample is None else o.sample} tweets and as many reports per world (seeded)",
            "rate = outputs with outside information / judged outputs whose answer parsed",
            "the finding (open > closed) is judged only where both worlds ran and were judged",
        ],
        flags=dg.collect(*flags.values()),
    )
    j = Judgement(rows=_outside_rate_rows(ev, o, tab, flags), tables={"outside_info": table})
    j = j + _outside_finding(ev, o, tab, flags)
    for model, fl in flags.items():
        j.flags += [
            Flagged(x, [f"outside_info ({model})", f"vs_paper (outside information rows of {model})"]) for x in fl
        ]
    return j


def _outside_rate_rows(
    ev: Evidence, o: Outside, tab: pd.DataFrame, flags: Mapping[str, list[dg.Flag]]
) -> list[vs_paper.Row]:
    ref = ev.paper.get("outside_info") or {}
    main = o.ps[o.ps.condition == MAIN]
    labels = o.labels
    rows = []
    for r in tab.itertuples(index=False):
        if not r.all_judged:
            continue
        cells = main[(main.model == r.model) & (main.world == r.world)]
        # The rate is the judge's, not the classifier's: the judge (ours a model on a seeded sample, the
        # paper's human annotators) is always a design difference.
        dsg = [d for d in design(cells, o.classifier, ev.paper) if not d.startswith(("world:", "classifier:"))]
        mine = sorted(set(labels[(labels.model == r.model)].judge_model)) if len(labels) else []
        dsg += vs_paper.differences({"outside-info judge": ", ".join(mine)}, {"outside-info judge": ref.get("judge")})
        paper = ref.get(r.world) or {}
        rows.append(
            vs_paper.Row(
                f"outside information rate, {r.world} world ({r.model}; tweets and reports)",
                r.all_rate,
                paper.get("rate"),
                note=f"{r.all_outside} of {r.all_judged} judged outputs; paper: {paper.get('note', '')}",
                flags=flags.get(r.model, []),
                design=dsg,
            )
        )
    return rows


def _outside_finding(ev: Evidence, o: Outside, tab: pd.DataFrame, flags: Mapping[str, list[dg.Flag]]) -> Judgement:
    """ "Outside information is more common in the open world", per model where both worlds were judged."""
    ref = ev.paper.get("outside_info") or {}
    claim = str(ref.get("finding", "outside information is more common in the open world"))
    main = o.ps[o.ps.condition == MAIN]
    j = Judgement()
    for model in sorted(set(tab.model)):
        t = tab[tab.model == model].set_index("world")
        if not all(w in t.index and t.loc[w, "all_judged"] > 0 for w in ("open", "closed")):
            continue
        diff, n, verdict = oi.finding(o.labels, model, flags.get(model, []), ev.alpha)
        f = Finding(
            claim=f"{claim} ({model})",
            statistic="mean per-simulation share of judged outputs with outside information, open - closed",
            value=diff,
            test="Welch t over simulations (open vs closed world), direction +",
            unit="simulations per world",
            n=n,
            verdict=verdict,
            id="od.outside_info_open_world",
            scope=fd.Scope.model(model),
        )
        ro, rc = (ref.get("open") or {}).get("rate"), (ref.get("closed") or {}).get("rate")
        cells = main[main.model == model]
        row = vs_paper.Row(
            f"outside information rate, open - closed world ({model})",
            diff,
            None if ro is None or rc is None else ro - rc,
            finding=f.claim,
            verdict=verdict,
            flags=flags.get(model, []),
            design=[d for d in design(cells, o.classifier, ev.paper) if not d.startswith("world:")],
            note="mean of per-simulation rates",
        )
        j = j + Judgement([f], [row])
    return j


CLAIMS: list[Claim[Evidence]] = [
    Claim("tables_1_and_2", judge_tables, "Tables 1 and 2"),
    Claim("global_warming_v4", judge_global_warming_v4, "v4 Table 6"),
    Claim("per_scope", judge_scopes, "Sect. 4.1-4.2 (SCOPE_CLAIMS)"),
    Claim("uniform_start", judge_uniform_start, "Sect. 4 (the uniform start's D = 1.49)"),
    Claim("fig5", judge_fig5, "Fig. 5"),
    Claim("outside_information", judge_outside_info, "Sect. 3.3; v4 App. L"),
]
