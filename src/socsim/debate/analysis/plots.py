"""What each DEBATE figure draws, panel by panel (socsim.io.report.Panel): the rows, the note (its n,
what was missing and the flags of its own inputs, already worded) and, where a panel has nothing to
draw, why. The figures (socsim.debate.figures) read these plot tables and only draw.

A panel's flags are those of its inputs, as the claims recorded them on the places they concern
(`Report.flags_on` on the panel's places, declared once in places.py: a Fig. 2 panel's group_level rows,
an effect-size panel's group_tests, a Fig. 3 panel's individual_level rows, a metrics panel's cells of
Table 3 / 9), in the report's order: the plots are built after the claims are assembled. What a panel
draws is computed here, down to Fig. 3's fitted lines and their bands: the figures only draw."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from socsim.debate.analysis import places, stats
from socsim.debate.analysis.measures import TABLES, Evidence, Twins
from socsim.debate.schemas import CHANGE_TESTS, METRICS, OUTCOMES, PREDICTORS, SOURCES, STEPS
from socsim.io.report import Panel, Report


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


def panel_name(tw: Twins, name: str) -> str:
    """A Sect. 6 panel's name: `name` for the first agent model, "<model>: <name>" for another (the figures
    draw each model's panels as a figure of their own)."""
    return name if tw.first else f"{tw.model}: {name}"


def fig2_group_level(rep: Report, tw: Twins) -> list[Panel]:
    """Per outcome and statistic (mean, SD): the mean over groups (± SE) of each group's statistic per
    step, per source; a source without data at a step has NaN there (its line breaks). Its flags: those
    of the group_level rows of its steps. `tw`: one agent model's Sect. 6."""
    group, out = tw.per_group, []
    gl = tw.table("group_level")
    for what, steps in STEPS.items():
        qs = list(steps)
        flags = rep.flags_on(*places.fig2_group_panel(gl, qs))
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
            note = ["n = " + ", ".join(ns), *_missing(group, qs), *flags]
            has = bool(g[stat].notna().sum())
            data = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
            why = "" if has else f"no group has a {what} {stat}"
            out.append(Panel(panel_name(tw, f"{what} {stat}"), data, note, why))
    return out


def fig2_effect_sizes(rep: Report, tw: Twins) -> list[Panel]:
    """Per quantity: our d_z and the paper's for each of the three tests (NaN: no bar, "n/a"). Its
    flags: those of the quantity's group_tests. `tw`: one agent model's Sect. 6."""
    es = rep.tables[tw.table("fig2_effect_sizes")].df
    quantities = list(dict.fromkeys(es.quantity)) or list(stats.GROUP_TESTS)
    out = []
    for q in quantities:
        e = es[es.quantity == q].set_index("test").reindex(list(CHANGE_TESTS))
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
        flags = rep.flags_on(*places.fig2_effect_panel(tw.table("group_tests"), q))
        data = pd.DataFrame(
            {
                "test": list(CHANGE_TESTS),
                "d_z": e["d_z"].astype(float).to_numpy(),
                "paper_d_z": e["paper_d_z"].astype(float).to_numpy(),
            }
        )
        out.append(Panel(panel_name(tw, q), data, [*lines, *flags]))
    return out


FIG3_COLUMNS = ["source", "kind", "x", "y", "lo", "hi"]


def _fig3_rows(source: str, pairs: pd.DataFrame) -> pd.DataFrame:
    """A source's rows of a Fig. 3 panel: its members (kind "member": x, y) and, with at least 2 distinct
    x, its least-squares line with the line's 95 % band (kind "fit": x, y, lo, hi; stats.fitted_line)."""
    line = stats.fitted_line(pairs["x"].to_numpy(dtype=float), pairs["y"].to_numpy(dtype=float))
    parts = [pairs[["x", "y"]].assign(kind="member"), *([line.assign(kind="fit")] if len(line) else [])]
    return pd.concat(parts, ignore_index=True).assign(source=source).reindex(columns=FIG3_COLUMNS)


def fig3_individual(rep: Report, tw: Twins) -> list[Panel]:
    """Per outcome and predictor: each source's members (change against the predictor, the pairs of its
    correlation: stats.fig3_pairs) and, when it has at least 3, its fitted line (_fig3_rows). Its flags:
    those of its individual_level rows. `tw`: one agent model's Sect. 6."""
    out = []
    for what in OUTCOMES:
        for predictor in PREDICTORS:
            ns, rows = [], []
            for source in SOURCES:
                pairs = stats.fig3_pairs(tw.mem, source, what, predictor)
                ns.append(f"{source}: {len(pairs)} members")
                if len(pairs) >= 3:
                    rows.append(_fig3_rows(source, pairs))
            flags = rep.flags_on(*places.fig3_panel(tw.table("individual_level"), what, predictor))
            note = ["n = " + ", ".join(ns) + " (a line needs 3)", *flags]
            data = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
            why = "" if rows else "fewer than 3 members with both values"
            out.append(Panel(panel_name(tw, f"{what} {predictor}"), data, note, why))
    return out


def metrics_by_mode(rep: Report, ts: str) -> list[Panel]:
    """Table 3 (9) by mode: per metric a bar per model and mode (NaN: "n/a"); no panels without the
    table. Its flags: those of the metric's cells of the table."""
    name = TABLES[ts][0]
    if name not in rep.tables:
        return []
    table = rep.tables[name].df
    models = list(dict.fromkeys(table.model)) if len(table) else []
    used = "; ".join(
        f"{model}: " + "/".join(str(int(v)) for v in table[table.model == model].n_used) for model in models
    )
    out = []
    for c in METRICS:
        has = bool(len(table)) and bool(table[c].notna().any())
        flags = rep.flags_on(*places.metrics_panel(name, c, zip(table.model, table["mode"])))
        note = [f"utterances compared by mode: {used}" if used else "", *flags]
        data = table[["model", "mode", c]].rename(columns={c: "value"}) if has else pd.DataFrame()
        out.append(Panel(c, data, note, "" if has else f"no {c} in any setting"))
    return out


def plots(rep: Report, ev: Evidence) -> dict[str, list[Panel]]:
    """Every figure's panels (schemas.FIGURES), from the assembled report (its tables and the places
    its flags concern) and the evidence; Sect. 6's figures have every agent model's panels (panel_name)."""
    twins = list(ev.sect6.values())
    return {
        "fig2_group_level": [p for tw in twins for p in fig2_group_level(rep, tw)],
        "fig2_effect_sizes": [p for tw in twins for p in fig2_effect_sizes(rep, tw)],
        "fig3_individual": [p for tw in twins for p in fig3_individual(rep, tw)],
        "table3_metrics": metrics_by_mode(rep, "depth"),
        "table9_metrics": metrics_by_mode(rep, "breadth"),
    }
