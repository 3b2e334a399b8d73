"""The revised study's report: the authors' toxicity table refit as they fit it (and checked against the
printed one), socsim's fit on one row per comment, the participation table, interventions, the
discussions' measures, and every claim judged per model and on all models (claims.CLAIMS), with the
per-model grid (`claims_by_model`) and the figures' plot tables (plots.plots)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from socsim.facilitation.revision import measures as ms
from socsim.facilitation.revision import places
from socsim.facilitation.revision.claims import CLAIMS, GRID, Evidence
from socsim.facilitation.revision.data import MAIN, MODEL_LABELS
from socsim.facilitation.revision.plots import plots
from socsim.io.claims import assemble
from socsim.io.report import AnalysisInputs, Report, Table
from socsim.io.vs_paper import Row, differences
from socsim.stats import degeneracy as dg
from socsim.stats.regression import MixedResult, mixed_lm
from socsim.stats.regression import stars as regression_stars

TITLE = "Facilitation, revised study (paper 000 v4, six models): ours vs the paper"
SOURCE = "syndisco_revision"


def term_label(term: str) -> str:
    """A statsmodels term as the authors printed it ("Constant", "<strategy>", "Discussion Turn",
    "<strategy> × Turn")."""
    if term == "Intercept":
        return "Constant"
    if term in (ms.TURN, ms.USER_TURN):
        return "Discussion Turn"
    m = re.search(r"\[T\.(.+?)\]", term)
    name = m.group(1) if m else term
    return f"{name} × Turn" if term.endswith((f":{ms.TURN}", f":{ms.USER_TURN}")) else name


AUTHORS_ROWS = "the authors' rows, message order"  # their join (repeats, silent users kept), their clock
OWN_ROWS = "one row per comment, user turn"  # socsim's: non-silent comments once each, the user turn
FIT_COLUMNS = ["scope", "rows", "term", "coef", "se", "z", "p", "nobs", "groups", "group_var", "converged", "note"]


def _fit(df: pd.DataFrame, raw: str, turn: str) -> MixedResult:
    """The model with `raw` centred over the rows as `turn` (as the authors centre theirs)."""
    return mixed_lm(df.assign(**{turn: df[raw] - df[raw].mean()}), ms.formula(turn), "discussion_id")


def _fit_table(fit: MixedResult | None, scope: str, rows: str, note: str = "") -> pd.DataFrame:
    """A fit's terms as rows of mixedlm_by_model; a fit not made (a flagged scope) as one n/a row saying why."""
    if fit is None:
        return pd.DataFrame([{"scope": scope, "rows": rows, "term": "n/a", "note": note}], columns=FIT_COLUMNS)
    t = fit.table.reset_index()
    t["term"] = t["term"].map(term_label)
    t = t.assign(scope=scope, rows=rows, nobs=fit.nobs, groups=fit.n_groups, group_var=fit.group_var)
    return t.assign(converged=fit.converged, note="; ".join(x for x in (note, fit.note) if x))[FIT_COLUMNS]


def authors_table(fit: MixedResult, paper: Mapping[str, Any]) -> pd.DataFrame:
    """The authors' fit beside toxicity_regression.tex, term by term: equal when coefficient and standard
    error round to the printed values at the printed precision (3 decimals) and the stars agree."""
    printed = (paper.get("toxicity_regression") or {}).get("terms") or {}
    rows = []
    for term, r in fit.table.iterrows():
        label = term_label(str(term))
        ref = printed.get(label) or {}
        stars = regression_stars(float(r["p"]), marginal=False)  # the authors print no mark for p < .1
        equal = (
            bool(ref)
            and round(float(r["coef"]), 3) == round(float(ref["coef"]), 3)
            and round(float(r["se"]), 3) == round(float(ref["se"]), 3)
            and stars == ref.get("stars", "")
        )
        rows.append(
            {
                "term": label,
                "coef": float(r["coef"]),
                "se": float(r["se"]),
                "p": float(r["p"]),
                "stars": stars,
                "printed_coef": ref.get("coef"),
                "printed_se": ref.get("se"),
                "printed_stars": ref.get("stars"),
                "equal_to_print": equal,
            }
        )
    return pd.DataFrame(rows)


def _markdown(t: pd.DataFrame, fit: MixedResult, paper: Mapping[str, Any]) -> str:
    ref = paper.get("toxicity_regression") or {}
    lines = ["| term | ours | printed | equal |", "| --- | --- | --- | --- |"]
    for r in t.itertuples(index=False):
        printed = f"{r.printed_coef:.3f}{r.printed_stars} ({r.printed_se:.3f})" if r.printed_coef is not None else ""
        lines.append(
            f"| {r.term} | {r.coef:.3f}{r.stars} ({r.se:.3f}) | {printed} | {'yes' if r.equal_to_print else 'no'} |"
        )
    lines += [
        f"| Group variance | {fit.group_var:.4f} | {ref.get('group_variance', '')} | |",
        f"| Observations | {fit.nobs} | {ref.get('observations', '')} | |",
        f"| Groups | {fit.n_groups} | {ref.get('groups', '')} | |",
        f"| Log-likelihood | {fit.llf:.3f} | {ref.get('log_likelihood', '')} | |",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class People:
    """The revised release's humans: their comments' toxicity (no text, no discussion), their data set's name, and
    the authors' printed divergences to them (humans.read_printed; their inputs are not released)."""

    toxicity: np.ndarray = field(default_factory=lambda: np.zeros(0))
    name: str = ""
    printed: pd.DataFrame = field(default_factory=pd.DataFrame)


NOT_RECOMPUTED = (
    "as printed, inputs not released: the human texts of cmv_awry2.csv (and the authors' diversity caches) are not in "
    "the public release, so socsim cannot recompute it"
)


@dataclass
class Measured:
    ev: Evidence
    setups: pd.DataFrame
    authors: MixedResult  # the authors' fit, all models: their table (nobs: the rows their join gives)
    fits: pd.DataFrame  # mixedlm_by_model: the authors' rows and socsim's, per scope
    participation: pd.DataFrame
    uc: pd.DataFrame  # the user comments the claims rest on
    left_out: dict[str, int]
    printed: pd.DataFrame  # the authors' printed divergences to the humans (People.printed)


def _fits(rows: pd.DataFrame, uc: pd.DataFrame, flags: Mapping[str, list[dg.Flag]]) -> pd.DataFrame:
    """Both fits per scope (the authors' rows and clock; one row per comment and the user turn); a scope
    whose toxicity is flagged keeps an n/a row with its flag instead of a fit."""
    parts = []
    for scope, fl in flags.items():
        why = "; ".join(f.message for f in fl)
        authors = None if fl else _fit(ms.in_scope(rows, scope), "message_order", ms.TURN)
        own = None if fl else _fit(ms.own_frame(ms.in_scope(uc, scope)), "user_turn", ms.USER_TURN)
        parts += [_fit_table(authors, scope, AUTHORS_ROWS, why), _fit_table(own, scope, OWN_ROWS, why)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=FIT_COLUMNS)


def measure(
    setups: pd.DataFrame,
    comments: pd.DataFrame,
    scores: pd.DataFrame,
    paper: Mapping[str, Any],
    people: People | None = None,
) -> Measured:
    uc, left = ms.user_comments(comments, scores)
    scopes = ms.scopes(setups)
    flags = {
        s: dg.collect(dg.near_constant(ms.in_scope(uc, s)["toxicity"], f"released toxicity ({s})")) for s in scopes
    }
    people = people or People()
    ev = Evidence(
        paper, ms.discussions(uc, setups), ms.interventions(comments), scopes, flags, people.toxicity, people.name
    )
    rows = ms.authors_frame(comments, scores)
    authors = _fit(rows, "message_order", ms.TURN)
    fits = _fits(rows, uc, flags)
    return Measured(ev, setups, authors, fits, ms.participation(comments, paper), uc, left, people.printed)


def _span(s: pd.Series) -> int | str:
    """One number, or the range "6-10" when the values differ (0 when there are none)."""
    if not len(s):
        return 0
    lo, hi = int(s.min()), int(s.max())
    return lo if lo == hi else f"{lo}-{hi}"


def design(setups: pd.DataFrame, paper: Mapping[str, Any]) -> list[str]:
    """How the release's data differ from the revised paper's text (paper_revision.yaml `design`)."""
    main = setups[setups["condition"] == MAIN]
    ours = {
        "models": [m for m in MODEL_LABELS if m in set(main["model"])] + sorted(set(main["model"]) - set(MODEL_LABELS)),
        "strategies": sorted(main["strategy"].unique()),
        "discussions per model x strategy": _span(main.groupby(["model", "strategy"]).size()),
        "users per discussion": _span(main["participants"].map(len)),
        "user turns per discussion": _span(main["user_turns"]),
        "context (comments)": _span(main["context_h"]),
    }
    return differences(ours, paper.get("design") or {})


def vs_paper_rows(m: Measured, paper: Mapping[str, Any], at: pd.DataFrame) -> list[Row]:
    ref = paper.get("toxicity_regression") or {}
    note = "the authors' fit on the authors' rows (their join on a text hash; silent users' '\"\"' kept)"
    rows = [
        Row(
            f"Toxicity table: {r.term}",
            r.coef,
            r.printed_coef,
            note=f"{note}; printed SE {r.printed_se}, ours {r.se:.4f}",
        )
        for r in at.itertuples(index=False)
    ]
    rows += [
        Row("Toxicity table: group variance", m.authors.group_var, ref.get("group_variance"), note=note),
        Row("Toxicity table: observations", m.authors.nobs, ref.get("observations"), note=note),
        Row("Toxicity table: groups", m.authors.n_groups, ref.get("groups"), note=note),
    ]
    rows += [
        Row(f"Participation: {r.label}", r.participation, r.printed, note=f"{r.user_messages} user messages")
        for r in m.participation.itertuples(index=False)
    ]
    rows += [
        Row(f"JS to the humans, {r.dimension}: {r.condition} ({r.model})", None, r.js_printed, note=NOT_RECOMPUTED)
        for r in m.printed.itertuples(index=False)
    ]
    return rows


def tables(m: Measured, at: pd.DataFrame, paper: Mapping[str, Any]) -> dict[str, Table]:
    repeated = m.authors.nobs - len(m.uc)
    return {
        "authors_table": Table(
            at,
            "The authors' toxicity table (MixedLM, discussion as group), refit on the release beside the printed one",
            notes=[
                f"{m.authors.nobs} rows in {m.authors.n_groups} discussions, group variance {m.authors.group_var:.4f}, "
                f"log-likelihood {m.authors.llf:.3f}; converged: {m.authors.converged} ({m.authors.optimizer}"
                + (f"; {m.authors.note})" if m.authors.note else ")"),
                f"the authors' rows: {m.left_out['silent_user_turns']} silent user turns kept (their text '\"\"' was "
                f"scored) and comments whose text recurs in a discussion repeated once per copy: {repeated:+d} rows "
                f"against one row per non-silent comment ({len(m.uc)})",
            ],
            markdown=_markdown(at, m.authors, paper),
        ),
        "mixedlm_by_model": Table(
            m.fits,
            "The authors' model per model and on all models: on the authors' rows with their clock (message "
            "order), and on one row per non-silent comment with the user turn (1..15) as the clock",
        ),
        "participation": Table(m.participation, "Participation rate by model (participation.tex) beside the printed"),
        "interventions": Table(
            m.ev.interv, "Facilitator interventions per discussion (a silence: only quotes or space)"
        ),
        "intervention_rates": Table(
            ms.intervention_rates(m.ev.interv), "Facilitator intervention rates by model and strategy"
        ),
        "discussions": Table(
            m.ev.units, "Per discussion: mean toxicity, slope per turn, active trolls, non-troll toxicity"
        ),
        "printed_divergence": Table(
            m.printed, "The authors' JS divergences to the human discussions (divergence_*.tex)", notes=[NOT_RECOMPUTED]
        ),
    }


def summary(m: Measured, at: pd.DataFrame) -> dict[str, Any]:
    main = m.setups[m.setups["condition"] == MAIN]
    return {
        "source": SOURCE,
        "discussions": int(len(m.setups)),
        "discussions_main": int(len(main)),
        "user_comments_main": int(len(m.uc)),
        **m.left_out,
        "authors_table": {
            "observations": m.authors.nobs,
            "groups": m.authors.n_groups,
            "group_variance": m.authors.group_var,
            "log_likelihood": m.authors.llf,
            "terms_equal_to_print": int(at["equal_to_print"].sum()),
            "terms": int(len(at)),
        },
        "participation_equal_to_print": int(m.participation["equal_to_print"].sum()),
        "intervention_rate_main": (
            float(m.ev.interv["interventions"].sum() / m.ev.interv["opportunities"].sum()) if len(m.ev.interv) else None
        ),
    }


def claims_by_model(rep: Report) -> pd.DataFrame:
    """The claims' grid rows (their `grid_<claim>` tables, taken out of the report) as one table."""
    grids = [rep.tables.pop(n).df for n in [n for n in rep.tables if n.startswith("grid_")]]
    return pd.concat(grids, ignore_index=True) if grids else pd.DataFrame(columns=GRID)


def verdict_matrix(grid: pd.DataFrame) -> pd.DataFrame:
    """claims_by_model as people read it: a row per claim part, a column per scope, the verdict's first word."""
    if not len(grid):
        return pd.DataFrame()
    g = grid.assign(row=grid["claim"] + ": " + grid["part"], word=grid["verdict"].str.split(" ").str[0])
    order = list(dict.fromkeys(g["scope"]))
    wide = g.pivot(index="row", columns="scope", values="word")[order]
    return wide.loc[list(dict.fromkeys(g["row"]))].reset_index()


def report(m: Measured, paper: Mapping[str, Any]) -> Report:
    """The report of what `measure` measured, beside the revised paper's numbers."""
    at = authors_table(m.authors, paper)
    rep = Report(TITLE, design=design(m.setups, paper), own_data=True)
    rep.tables = tables(m, at, paper)
    rep.vs_paper = vs_paper_rows(m, paper, at)
    for scope, fl in m.ev.flags.items():  # a model's own flag: its rows and the panels that draw it
        for f in fl:
            rep.flag(f, *places.toxicity(scope), local=True)
    rep.summary = summary(m, at)
    rep = assemble(rep, CLAIMS, m.ev)
    grid = claims_by_model(rep)
    rep.tables["claims_by_model"] = Table(
        grid, "Every claim's verdict per model and on all models (discussions as units)"
    )
    rep.tables["verdict_matrix"] = Table(verdict_matrix(grid), "Verdicts at a glance (yes / no / inconclusive)")
    rep.plots = plots(rep, m.uc, m.ev.interv, grid)
    # a claim of one part is judged whole by its part; of several, by its "all parts" row
    several = set(grid.loc[grid["part"] == "all parts", "claim"])
    parts = grid[grid["part"] != "all parts"]
    whole = grid[(grid["part"] == "all parts") | ~grid["claim"].isin(several)]
    rep.metrics = {
        "authors_terms_equal_to_print": int(at["equal_to_print"].sum()),
        "authors_observations": m.authors.nobs,
        "authors_groups": m.authors.n_groups,
        "claim_parts_holding": int((parts["holds"] == True).sum()),  # noqa: E712 - holds is True, False or None
        "claim_parts_judged": int(len(parts)),
        "claims_holding_every_part": int((whole["holds"] == True).sum()),  # noqa: E712
        "claims_judged_whole": int(len(whole)),
        "degeneracy_flags": len(rep.flags),
    }
    eq = int(at["equal_to_print"].sum())
    rep.printed = [
        f"the authors' table refit: {eq} of {len(at)} terms equal to the printed ones; "
        f"{m.authors.nobs} observations, {m.authors.n_groups} groups",
        *(f.message for f in rep.all_flags),
    ]
    return rep


def analyse(inputs: AnalysisInputs) -> Report:
    """The revised study's analysis: `inputs` holds setups, comments and scores (as imported), the humans' toxicity
    and the printed divergences to them where imported, and the revised paper's numbers (paper_revision.yaml)."""
    people = None
    if "human_toxicity" in inputs.tables:
        tox = inputs["human_toxicity"]["toxicity"].dropna().to_numpy(dtype=float)
        name = str((inputs.provenance.get("human_toxicity", {}).get("data_source") or {}).get("name") or "")
        people = People(tox, name, inputs.tables.get("printed_divergence", pd.DataFrame()))
    m = measure(inputs["setups"], inputs["comments"], inputs["scores"], inputs.paper, people)
    rep = report(m, inputs.paper)
    data_source = dict(inputs.provenance.get("setups", {}).get("data_source") or {})
    if data_source:
        rep.provenance["data_source"] = data_source
    return rep
