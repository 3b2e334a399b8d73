"""What Figs. 3-6 draw (socsim.io.report.Panel): each panel's rows, its note (flags of its inputs and
its n, already worded) and why it has no data. socsim.facilitation.figures draws them and decides
nothing. Built from the assembled report (after socsim.io.claims.assemble, so the claims' flags are in
it): its tables, and a panel's flags are the report's flags placed on it (`Report.flags_on`, on the places
declared in socsim.facilitation.analysis.places, where the flags are written)."""

from __future__ import annotations

import pandas as pd

from socsim.facilitation.analysis import places
from socsim.facilitation.analysis.measures import LEVELS, MAIN, UNITS, ablation_baseline, human_note
from socsim.io.report import Panel, Report, n_range
from socsim.stats import verdict as vd
from socsim.stats.regression import stars

STAR_P = "p_holm"  # the stars of Fig. 3 show Holm-adjusted p (within each level)


def _fig3_note(pw: pd.DataFrame, level: str, flags: list[str]) -> list[str]:
    """A Fig. 3 panel's note: its n, why it has no stars (at most two reasons) and its other flags."""
    counts = {**dict(zip(pw["strategy_a"], pw["n_a"])), **dict(zip(pw["strategy_b"], pw["n_b"]))}
    verdicts = sorted({v for v in pw["verdict"] if v})
    lines = [n_range(list(counts.values()), f"{UNITS[level]} per strategy") if counts else ""]
    lines += [f"no stars: {v}" for v in verdicts[:2]] + ([f"(+{len(verdicts) - 2} more)"] if len(verdicts) > 2 else [])
    return lines + [f for f in flags if not any(f in v for v in verdicts)]


def fig3(pairwise: pd.DataFrame, rep: Report) -> list[Panel]:
    """One panel per test level: the difference of mean toxicity, row strategy minus column strategy,
    each cell labelled with stars from the Holm-adjusted p where the level carries a verdict."""
    pairwise = pairwise.assign(verdict=pairwise["verdict"].fillna(""))
    levels = [lv for lv in LEVELS if lv in set(pairwise["level"])] or ["comment"]
    panels = []
    for level in levels:
        pw = pairwise[pairwise["level"] == level]
        cells = []
        for _, r in pw.iterrows():
            mark = "" if r["verdict"] else stars(r[STAR_P])
            for a, b, sign in ((r["strategy_a"], r["strategy_b"], 1), (r["strategy_b"], r["strategy_a"], -1)):
                cells.append(
                    {"row": a, "column": b, "diff": sign * r["diff"], "label": f"{sign * r['diff']:.2f}{mark}"}
                )
        data = pd.DataFrame(cells, columns=["row", "column", "diff", "label"])
        empty = not len(data) or not data["diff"].notna().any()
        note = _fig3_note(pw, level, rep.flags_on(*places.fig3_panel(level)))
        panels.append(Panel(level, data, note, "no pair of strategies with ratings" if empty else ""))
    return panels


def fig4(interv: pd.DataFrame) -> list[Panel]:
    """Facilitator interventions per discussion of the main study, by strategy."""
    data = interv.loc[interv["condition"] == MAIN, ["strategy", "interventions"]]
    if not len(data):
        return [Panel("interventions", data, (), "no facilitator turns in the main study")]
    counts = data.groupby("strategy").size()
    echoes = int(interv.loc[interv["condition"] == MAIN, "echoes"].sum())
    note = n_range(counts.tolist(), "discussions per strategy") + (
        f"; {echoes} echoes of earlier comments not counted as interventions"
    )
    return [Panel("interventions", data, [note])]


def _fig5_panel(name: str, rows: pd.DataFrame, human: pd.DataFrame) -> Panel:
    """A Fig. 5 panel: its groups' diversity (and the human discussions'), `x` the group's place on the
    x axis (sorted, Human last), and a note naming groups of fewer than MIN_UNITS discussions."""
    data = pd.concat([rows, human], ignore_index=True).dropna(subset=["diversity"])[["group", "diversity"]]
    if not len(data):
        return Panel(name, data, (), "no discussions in this panel")
    order = sorted(set(data["group"]) - {"Human"}) + (["Human"] if (data["group"] == "Human").any() else [])
    data = data.assign(x=data["group"].map({g: i for i, g in enumerate(order)}))
    counts = data.groupby("group").size()
    few = [f"{g}: n = {counts[g]}" for g in order if counts[g] < vd.MIN_UNITS]
    return Panel(name, data, [f"fewer than {vd.MIN_UNITS} discussions: " + ", ".join(few)] if few else ())


def fig5(div: pd.DataFrame) -> list[Panel]:
    """(a) diversity per model (main study); (b) turn taking and (c) prompt ablations against the
    main-study cell of the ablations' own model and strategy; and the figure's caption: that baseline
    and whether human discussions are drawn beside them."""
    human = div[div["source"] == "human"].assign(group="Human")
    synth = div[div["source"] == "synthetic"]
    main = synth[synth["condition"] == MAIN]
    base, base_label = ablation_baseline(div)
    tt = synth[synth["condition"].str.startswith("tt_")]
    prompts = synth[synth["condition"].isin(["no_sdb", "no_roles", "basic_instructions"])]
    rows = {
        "(a) model": main.assign(group=main["model"]),
        "(b) turn taking": pd.concat([base.assign(group=base["turn_taking"]), tt.assign(group=tt["turn_taking"])]),
        "(c) prompts": pd.concat([base.assign(group="full prompt"), prompts.assign(group=prompts["condition"])]),
    }
    caption = pd.DataFrame({"baseline": [base_label], "human_note": [human_note(div)], "human": [bool(len(human))]})
    return [*(_fig5_panel(name, r, human) for name, r in rows.items()), Panel("caption", caption)]


CELLS = [(p, t) for p in ("instruction prompt", "basic prompt") for t in ("with trolls", "without trolls")]


def fig6(groups: pd.DataFrame, rep: Report) -> list[Panel]:
    """The proportion of non-troll comments at each toxicity level within each group (the basic-prompt
    ablation and the main-study cell of its model and strategy, with and without trolls), `group`
    naming each with its n; the note names the groups without data and the flags of the ratings."""
    if not len(groups):
        return [
            Panel("non-troll toxicity", groups, (), "no basic-prompt ablation in the data: nothing comparable to plot")
        ]
    model, strategy = groups["model"].iloc[0], groups["strategy"].iloc[0]
    data = groups[(groups["model"] == model) & (groups["strategy"] == strategy)]
    data = data.assign(group=data["prompt"] + ", " + data["trolls"] + " (n = " + data["n"].astype(str) + ")")
    cells = set(zip(data["prompt"], data["trolls"]))
    missing = [f"{p}, {t}" for p, t in CELLS if (p, t) not in cells]
    lines = ["n = non-troll comments per group (legend)"]
    lines += ["no data: " + "; ".join(missing)] if missing else []
    cols = ["model", "strategy", "group", "toxicity_level", "proportion"]
    return [Panel("non-troll toxicity", data[cols], [*lines, *rep.flags_on(*places.FIG6_PANEL)])]


def plots(rep: Report) -> dict[str, list[Panel]]:
    """Every figure's panels (its plot table plot_<name>), from the assembled report's tables and flags."""
    t = rep.tables
    return {
        "fig3_pairwise_toxicity": fig3(t[places.PAIRWISE].df, rep),
        "fig4_interventions": fig4(t["interventions"].df),
        "fig5_diversity": fig5(t["diversity"].df),
        "fig6_nontroll_toxicity": fig6(t["nontroll_toxicity_groups"].df, rep),
    }
