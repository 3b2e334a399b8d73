"""What each DEBATE figure draws, panel by panel (socsim.io.report.Panel): the rows, the note (its n,
what was missing and the flags of its own inputs, already worded) and, where a panel has nothing to
draw, why. The figures (socsim.debate.figures) read these plot tables and only draw.

A panel's flags are those of its inputs, in the order the report lists its flags."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from socsim.debate import stats
from socsim.debate.analysis.design import union
from socsim.debate.analysis.measures import TABLES, Evidence
from socsim.io.report import Panel, Report
from socsim.stats import degeneracy as dg

SOURCES = ("human", "llm")
STEPS = {"tweet": ["s1", "s2", "s3"], "opinion": ["o_init", "o_final"]}
TESTS = ("llm change", "human change", "llm change vs human change")
PREDICTORS = ("own initial", "partner minus own", "abs partner minus own")
METRIC_PANELS = ["s_sem", "d_stance", "d_signed_len", "d_abs_len", "rouge_l", "r_on_topic"]


def _worded(flags: Iterable[dg.Flag], order: Sequence[dg.Flag]) -> list[str]:
    """The flags' messages (each once), in the report's order of its flags."""
    mine = dg.collect(list(flags))
    return list(dict.fromkeys(f.message for f in order if f in mine))


def _split(notes: Iterable[object]) -> list[str]:
    """The distinct parts of "; "-joined notes, in order."""
    parts = (x.strip() for n in notes if isinstance(n, str) for x in n.split(";"))
    return list(dict.fromkeys(x for x in parts if x))


def _missing(group: pd.DataFrame, quantities: Iterable[str]) -> list[str]:
    """Values left out of a panel's paired statistics ("o_final missing for 2 of 4 twins"), one line
    each, from group_level's n_missing / n_members."""
    if not len(group) or not {"n_missing", "n_members"} <= set(group.columns):
        return []
    return _split([stats.missing_summary(group, SOURCES, quantities)])


def fig2_group_level(ev: Evidence, order: Sequence[dg.Flag]) -> list[Panel]:
    """Per outcome and statistic (mean, SD): the mean over groups (± SE) of each group's statistic per
    step, per source; a source without data at a step has NaN there (its line breaks)."""
    group, out = ev.per_group, []
    for what, qs in STEPS.items():
        for stat in ("mean", "sd"):
            g = group[group.quantity.isin(qs)]
            ns, rows = [], []
            for source in SOURCES:
                agg = g[g.source == source].groupby("quantity")[stat].agg(["mean", "std", "count"]).reindex(qs)
                ns.append(f"{source}: {int(agg['count'].fillna(0).max())} groups")
                if agg["count"].fillna(0).sum() == 0:
                    continue
                se = agg["std"] / np.sqrt(agg["count"])  # NaN with one group: no error bar
                rows.append(
                    pd.DataFrame(
                        {"source": source, "quantity": qs, "mean": agg["mean"].to_numpy(), "se": se.to_numpy()}
                    )
                )
            flags = [
                f
                for r in g[g.source.isin(SOURCES)].itertuples(index=False)
                for f in ev.flags.variable(r.source, r.quantity)
            ]
            note = ["n = " + ", ".join(ns), *_missing(group, qs), *_worded(flags, order)]
            has = bool(g[stat].notna().sum())
            data = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
            out.append(Panel(f"{what} {stat}", data, note, "" if has else f"no group has a {what} {stat}"))
    return out


def fig2_effect_sizes(rep: Report, ev: Evidence, order: Sequence[dg.Flag]) -> list[Panel]:
    """Per quantity: our d_z and the paper's for each of the three tests (NaN: no bar, "n/a")."""
    es = rep.tables["fig2_effect_sizes"].df
    quantities = list(dict.fromkeys(es.quantity)) or ["tweet mean", "tweet SD", "opinion mean", "opinion SD"]
    out = []
    for q in quantities:
        e = es[es.quantity == q].set_index("test").reindex(list(TESTS))
        n = pd.to_numeric(e["n_groups"], errors="coerce").max()
        g_paper = pd.to_numeric(e["paper_groups"], errors="coerce").max()
        lines = [
            f"n = {0 if pd.isna(n) else int(n)} groups (paper: {'n/a' if pd.isna(g_paper) else int(g_paper)})",
            "twins: from the humans' start, the paper's comparison (no verdict)",
        ]
        if not np.isfinite(e["d_z"].astype(float)).any():
            lines.append("no effect size of ours: fewer than 2 groups or no variance in the changes")
        if "missing" in e.columns:
            lines.extend(_split(e["missing"]))
        tests = ev.group_tests[ev.group_tests.quantity == q]
        flags = union(ev.flags.test(q, t) for t in tests.test)
        data = pd.DataFrame(
            {
                "test": list(TESTS),
                "d_z": e["d_z"].astype(float).to_numpy(),
                "paper_d_z": e["paper_d_z"].astype(float).to_numpy(),
            }
        )
        out.append(Panel(q, data, [*lines, *_worded(flags, order)]))
    return out


def _fig3_points(mem: pd.DataFrame, source: str, start: str, end: str, predictor: str) -> pd.DataFrame:
    """One source's (x, y) of a Fig. 3 panel: the change against the predictor, members with both."""
    m = mem[mem.source == source].reset_index(drop=True)
    own = m[start].astype(float)
    lookup = {(s, w): v for s, w, v in zip(m.session_id, m.worker_id, own)}
    other = pd.Series([lookup.get((s, p), np.nan) for s, p in zip(m.session_id, m.partner1)], dtype=float)
    x = {"own initial": own, "partner minus own": other - own, "abs partner minus own": (other - own).abs()}[predictor]
    y = m[end].astype(float) - own
    ok = x.notna() & y.notna()
    return pd.DataFrame({"source": source, "x": x[ok].to_numpy(), "y": y[ok].to_numpy()})


def fig3_individual(ev: Evidence, order: Sequence[dg.Flag]) -> list[Panel]:
    """Per outcome and predictor: each source's members (change against the predictor), drawn with a
    fitted line when it has at least 3."""
    out = []
    for what, (start, end) in stats.OUTCOMES.items():
        for predictor in PREDICTORS:
            ns, rows = [], []
            for source in SOURCES:
                pts = _fig3_points(ev.mem, source, start, end, predictor)
                ns.append(f"{source}: {len(pts)} members")
                if len(pts) >= 3:
                    rows.append(pts)
            ind = ev.indiv
            mine = ind[(ind.outcome == what) & (ind.predictor == predictor) & ind.source.isin(SOURCES)]
            flags = [
                f for r in mine.itertuples(index=False) for v in (start, end) for f in ev.flags.variable(r.source, v)
            ]
            note = ["n = " + ", ".join(ns) + " (a line needs 3)", *_worded(flags, order)]
            data = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
            why = "" if rows else "fewer than 3 members with both values"
            out.append(Panel(f"{what} {predictor}", data, note, why))
    return out


def metrics_by_mode(rep: Report, ev: Evidence, ts: str, order: Sequence[dg.Flag]) -> list[Panel]:
    """Table 3 (9) by mode: per metric a bar per model and mode (NaN: "n/a"); no panels without the table."""
    name = TABLES[ts][0]
    if name not in rep.tables:
        return []
    table = rep.tables[name].df
    models = list(dict.fromkeys(table.model)) if len(table) else []
    used = "; ".join(
        f"{model}: " + "/".join(str(int(v)) for v in table[table.model == model].n_used) for model in models
    )
    out = []
    for c in METRIC_PANELS:
        has = bool(len(table)) and bool(table[c].notna().any())
        flags = [
            f for r in table.itertuples(index=False) for f in ev.flags.metric(c, (r.model, r.mode, "original", ts))
        ]
        note = [f"utterances compared by mode: {used}" if used else "", *_worded(flags, order)]
        data = table[["model", "mode", c]].rename(columns={c: "value"}) if has else pd.DataFrame()
        out.append(Panel(c, data, note, "" if has else f"no {c} in any setting"))
    return out


def plots(rep: Report, ev: Evidence) -> dict[str, list[Panel]]:
    """Every figure's panels (FIGURES), from the report's tables and the evidence."""
    order = rep.all_flags
    return {
        "fig2_group_level": fig2_group_level(ev, order),
        "fig2_effect_sizes": fig2_effect_sizes(rep, ev, order),
        "fig3_individual": fig3_individual(ev, order),
        "table3_metrics": metrics_by_mode(rep, ev, "depth", order),
        "table9_metrics": metrics_by_mode(rep, ev, "breadth", order),
    }
