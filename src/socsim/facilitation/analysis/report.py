"""The facilitation study's report (socsim.io.report): its measured tables, summary, design
differences and plot tables, with every claim's findings, vs_paper rows and flags added by the one
assembler (socsim.io.claims.assemble over claims.CLAIMS).

`source` says what the data are: "generated" (socsim's run) or "syndisco_release" (the paper's own
released discussions and ratings, as the setups' provenance records them). On the paper's own data
vs_paper's design differences are how the release differs from the paper's text, not how a run
differs from the paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from socsim.facilitation.analysis import measures as ms
from socsim.facilitation.analysis import places
from socsim.facilitation.analysis import tests as ts
from socsim.facilitation.analysis.claims import CLAIMS, Evidence
from socsim.facilitation.analysis.plots import plots
from socsim.io.claims import assemble, judge_all
from socsim.io.findings import Scope, study_findings
from socsim.io.report import AnalysisInputs, Finding, Report, Table
from socsim.io.vs_paper import differences

SOURCES = ("generated", "syndisco_release")  # socsim's run; the paper's own released data
TABLES = ("setups", "comments", "annotations")  # the tables the analysis reads from its inputs
TITLE = "Facilitation (paper 000): ours vs the paper"


class NoUsableRatings(ValueError):
    """No rating is usable: the analysis stops, and `partial` holds what it could report (agreement.json,
    the parse-failure rates), which the stage writes before the error ends it."""

    def __init__(self, message: str, partial: Report):
        super().__init__(message)
        self.partial = partial


def analyse(inputs: AnalysisInputs) -> Report:
    """The study's analysis: `inputs` holds setups, comments and annotations (their provenance says
    where the data come from), params `analysis.time` and `analysis.human_reference`, and the paper's
    numbers. Raises NoUsableRatings (with agreement.json) when no rating is usable."""
    annotations = inputs["annotations"]
    agreement = ms.agreement(annotations)
    try:
        ms.check_ratings(annotations)
    except ValueError as e:
        raise NoUsableRatings(str(e), Report(TITLE, documents={"agreement.json": agreement})) from e
    return report(inputs, agreement)


@dataclass
class Measured:
    """What the analysis measured once: the claims' evidence and what the tables and summary add."""

    ev: Evidence
    setups: pd.DataFrame
    annotations: pd.DataFrame
    time: str
    seeds: int  # usable ratings of seed opinions excluded by rule
    notes: list[str]  # the report's notes (the seed ratings excluded)
    pairwise: pd.DataFrame
    table2: tuple[pd.DataFrame, str, str]  # Table 2 as values, Markdown and LaTeX


def humans_of(inputs: AnalysisInputs) -> tuple[pd.DataFrame | None, str]:
    """The human discussions among `inputs` (the humans stage's table) and their name (its provenance's), or
    (None, "") without any."""
    table = inputs.tables.get("humans")
    if table is None or not len(table):
        return None, ""
    name = str((inputs.provenance.get("humans", {}).get("data_source") or {}).get("name") or "")
    if not name:
        raise ValueError("the human discussions' provenance names no data set (data_source.name)")
    return table, name


def measure(inputs: AnalysisInputs, human: pd.DataFrame | None, humans: str = "") -> Measured:
    """Everything measured once on `inputs`' setups, comments and annotations (params `analysis.time`),
    `human`: the human discussions (Fig. 5), if any, named `humans`."""
    setups, comments, annotations = (inputs[k] for k in TABLES)
    paper, time = inputs.paper, inputs.params["analysis"]["time"]
    expected = sorted(setups.loc[setups["condition"] == ms.MAIN, "strategy"].unique())
    rated, seeds = ms.rated_and_seeds(comments, annotations, setups, time=time)
    notes = [ms.seed_note(seeds)] if seeds else []
    means = ms.comment_means(rated)
    flags = ms.toxicity_flags(rated)
    ols = ts.toxicity_ols(rated, expected, flags)
    anova, pairwise = ts.anova_and_pairwise(means, flags, expected, rated)
    ev = Evidence(
        paper=paper,
        rated=rated,
        ols=ols,
        anova=anova,
        interv=ms.interventions(comments),
        reply=ms.observed_reply_rate(comments, setups),
        div=ms.diversity_table(comments, setups, human, humans),
        tt=ms.troll_toxicity(means),
        flags=flags,
        seed_msg="; ".join(notes),
    )
    return Measured(ev, setups, annotations, time, seeds, notes, pairwise, ts.ols_tables(ols, time, notes))


def design(setups: pd.DataFrame, annotations: pd.DataFrame, paper: Mapping[str, Any]) -> list[str]:
    """How the data's design differs from the paper's (data/facilitation/paper.yaml `design`).
    Discussions per model x strategy: one number, or the range "6-10" when the cells differ."""
    main = setups[setups["condition"] == ms.MAIN]
    cells = main.groupby(["model", "strategy"]).size()
    lo, hi = (int(cells.min()), int(cells.max())) if len(cells) else (0, 0)
    ours = {
        "models": sorted(main["model"].unique()),
        "discussions per model x strategy": hi if lo == hi else f"{lo}-{hi}",
        "annotators": int(annotations["annotator_id"].nunique()),
    }
    return differences(ours, paper.get("design") or {})


def tables(m: Measured) -> dict[str, Table]:
    """The measured tables (Table 2, the tests at three levels, interventions, diversity, trolls)."""
    table2, md, tex = m.table2
    return {
        "diversity": Table(m.ev.div, "Diversity per discussion (1 - mean ROUGE-L F1 over its comment pairs)"),
        places.TABLE2: Table(table2, "Table 2: OLS toxicity ~ strategy * time", markdown=md, latex=tex),
        places.PAIRWISE: Table(
            m.pairwise,
            "Pairwise Student t-tests of toxicity (Holm within each level)",
            notes=[f"{level}: {words}" for level, words in ms.UNIT_WORDS.items()] + m.notes,
        ),
        "interventions": Table(m.ev.interv, "Facilitator interventions per discussion (not silent, not an echo)"),
        "nontroll_toxicity": Table(m.ev.tt, "Toxicity of non-troll users' comments"),
        "nontroll_toxicity_groups": Table(ms.troll_groups(m.ev.tt), "Fig. 6: non-troll toxicity levels per group"),
    }


def summary(m: Measured, agreement: Mapping[str, Any], source: str) -> dict[str, Any]:
    ev, anova, ols, setups = m.ev, m.ev.anova, m.ev.ols, m.setups
    interv = ev.interv
    return {
        "source": source,
        "time": m.time,
        "notes": m.notes,
        "seed_ratings_excluded": m.seeds,
        "discussions": int(setups["discussion_id"].nunique()),
        "discussions_main": int((setups["condition"] == ms.MAIN).sum()),
        "rated_user_comments_main": int(sum(anova["comment"]["n"].values())),
        "rating_rows_main": int(sum(anova["rating"]["n"].values())),
        "ratings": agreement["ratings"],
        "parse_failure_rate": agreement["parse_failure_rate"],
        "toxicity_distribution_main": ms.toxicity_distribution(ev.rated),
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
        "observed_reply_rate": ev.reply,
        "facilitator_intervention_rate_all_conditions": (
            float(interv["interventions"].sum() / interv["opportunities"].sum()) if len(interv) else None
        ),
    }


def base_report(m: Measured, agreement: dict[str, Any], source: str) -> Report:
    """The report before its claims: measured tables, the ratings' flags, anova.json and agreement.json,
    the summary and the design differences."""
    rep = Report(TITLE, design=design(m.setups, m.annotations, m.ev.paper), own_data=source == "syndisco_release")
    rep.tables = tables(m)
    for f in m.ev.flags:
        rep.flag(f, *places.RATINGS)
    for a in m.ev.anova.values():
        a["seed_ratings_excluded"] = m.seeds
    rep.documents = {"anova.json": m.ev.anova, "agreement.json": agreement}
    rep.summary = summary(m, agreement, source)
    return rep


def by_model(inputs: AnalysisInputs) -> list[Finding]:
    """Every claim judged on each model's discussions alone (`inputs` with only that model's rows), its
    claim suffixed " [<model>]" (the revised study's scopes, socsim.facilitation.revision.claims): pooled
    findings mix the models, a model is judged on its own. None with one model (the pooled findings are
    that model's). The findings against the humans are judged per model already (fig5_humans)."""
    setups = inputs["setups"]
    models = sorted(setups["model"].unique())
    if len(models) < 2:
        return []
    out: list[Finding] = []
    for model in models:
        ids = setups.loc[setups["model"] == model, "discussion_id"]
        own = {k: inputs[k][inputs[k]["discussion_id"].isin(ids)].reset_index(drop=True) for k in TABLES}
        ev = measure(replace(inputs, tables=own), None).ev
        judged = per_model([f for _, j in judge_all(CLAIMS, ev) for f in j.findings])
        out += [f.judged_on(Scope.model(model), claim=f"{f.claim} [{model}]") for f in judged]
    return out


def per_model(findings: list[Finding]) -> list[Finding]:
    """The findings a model can be judged on alone: not those that compare the models (`across_models`: one
    model's discussions cannot say whether Qwen is the most diverse), which stand on the models together."""
    declared = study_findings("facilitation")
    return [f for f in findings if not declared[f.id].across_models and f.scope is None]


def report(inputs: AnalysisInputs, agreement: dict[str, Any]) -> Report:
    """The whole analysis as a report, on usable ratings (after measures.check_ratings; `agreement`:
    measures.agreement of the annotations), with the figures' plot tables, the stage's metrics and the
    lines it prints. The setups' provenance names the data's source (one of SOURCES; socsim's run when
    it names none). With more than one model, every claim is also judged on each model's discussions
    alone (by_model)."""
    data_source = dict(inputs.provenance.get("setups", {}).get("data_source") or {})
    human, humans = humans_of(inputs)
    source = str(data_source.get("source", "generated"))
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    m = measure(inputs, human, humans)
    rep = assemble(base_report(m, agreement, source), CLAIMS, m.ev)
    rep.plots = plots(rep)  # after assemble: the claims' flags reach the panels (Report.flags_on)
    models = sorted(inputs["setups"]["model"].unique())
    pooled = Scope.model(models[0]) if len(models) == 1 else Scope.all_models()  # (one model: its findings)
    rep.findings = [f if f.scope else f.judged_on(pooled) for f in rep.findings] + by_model(inputs)
    if data_source:
        rep.provenance["data_source"] = data_source
    anova = m.ev.anova
    rep.metrics = {
        "ols_adj_r2": m.ev.ols.adj_r2,
        "ols_nobs": m.ev.ols.nobs,
        "anova_p": anova["rating"]["p"],  # the paper's test: rating rows (pseudo-replicated, no verdict)
        "anova_p_comment": anova["comment"]["p"],
        "anova_p_discussion": anova["discussion"]["p"],
        "degeneracy_flags": len(rep.flags),
        "parse_failure_rate": agreement["parse_failure_rate"],
        "krippendorff_alpha_toxicity": agreement["krippendorff_alpha_toxicity"],
    }
    rep.printed = [*m.notes, *(f.message for f in rep.all_flags)]
    return rep
