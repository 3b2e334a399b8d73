"""Flags reach the DEBATE figures (issue 44, "the house's two rooms"): on data raising every flag kind the
analysis can raise, every flag lands on the figure panels that draw what it concerns, and on no other (or,
where no figure draws it, on its table and vs_paper row), read back from the written plot tables as the
figures read them. The places a flag is written on and read from are declared once
(socsim.debate.analysis.places); a place spelt differently by the writer and the reader fails here. And
the figures only draw: Fig. 3's fitted lines and bands are the analysis' plot data."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from socsim.debate import analysis, figures
from socsim.debate.analysis import measures, places, stats
from socsim.debate.schemas import FIGURES, METRICS
from socsim.io import report
from support.analysis import plots
from support.studies.debate_inputs import STANCES, analysis_inputs, two_models

# The flag kinds, by the scope each raises on the data below (agent models m, the first, and b).
UTTERANCE_STANCE = "stance annotator (utterances)"
ON_TOPIC = "on-topic annotator"
NO_COMPARATOR = "b mode 2 original depth"  # a setting without an on-topic human comparator
HUMAN_ON_TOPIC = "on-topic annotator (human utterances)"
HUMAN_TWEETS = "stance annotator (human tweets, Sect. 6)"
TWIN_TWEETS = "stance annotator (twins' tweets, Sect. 6, m)"
TWIN_OPINIONS = "twins' final opinions (Sect. 6, m)"
KINDS = (UTTERANCE_STANCE, ON_TOPIC, NO_COMPARATOR, HUMAN_ON_TOPIC, HUMAN_TWEETS, TWIN_TWEETS, TWIN_OPINIONS)


def every_flag_inputs():
    """two_models' inputs (agent models m and b, Depth) with a memory ablation of m and the same settings in
    Breadth, and every flag kind raised: the utterances' stances one value, every on-topic label True (the
    simulated and the humans'), no comparator in b's mode 2 (Depth), the humans' tweets one stance, m's
    twins' tweets another, m's twins' final opinions one value (b's twins stay unflagged)."""
    metrics, tables, dp, paper, run, by_session = two_models(np.random.default_rng(13), groups=7)

    def more(df: pd.DataFrame) -> pd.DataFrame:
        m = df[df.model == "m"]
        abl = m[m["mode"] > 1].assign(ablation="no_private_profile")
        return pd.concat([df, abl, pd.concat([df, abl]).assign(topic_set="breadth")], ignore_index=True)

    metrics, by_session = more(metrics), more(by_session)
    none = (metrics.model == "b") & (metrics["mode"] == 2) & (metrics.topic_set == "depth")
    metrics.loc[none & (metrics.ablation == "original"), "n_used"] = 0
    ann, hann, sim = tables["annotations"], tables["human_annotations"], tables["simulated"]
    ann = ann.assign(
        stance=np.where(ann.kind == "utterance", STANCES[3], ann.stance),
        on_topic=np.where(ann.kind == "utterance", True, ann.on_topic),
    )
    ann.loc[(ann.kind == "tweet") & (ann.model == "m"), "stance"] = STANCES[1]
    hann = hann.assign(
        stance=np.where(hann.kind == "utterance", STANCES[3], STANCES[4]),
        on_topic=np.where(hann.kind == "utterance", True, hann.on_topic),
    )
    sim = sim.assign(opinion=np.where((sim.kind == "opinion") & (sim.model == "m"), STANCES[2], sim.opinion))
    tables = {**tables, "annotations": ann, "human_annotations": hann, "simulated": sim}
    return metrics, tables, dp, paper, run, by_session


@pytest.fixture(scope="module")
def flagged(tmp_path_factory: pytest.TempPathFactory) -> tuple[report.Report, Path]:
    """The report on every_flag_inputs, written (its plot tables as the figures read them)."""
    inputs = analysis_inputs(*every_flag_inputs())
    ev = measures.evidence(inputs)
    # every kind of flag the analysis raises: each field of InputFlags, for both models, and the humans' on-topic
    for tw in ev.sect6.values():
        kinds = {f.name: getattr(tw.flags, f.name) for f in fields(measures.InputFlags)}
        assert all(kinds.values()) if tw.first else all(v for k, v in kinds.items() if "llm" not in k), kinds
    assert all(ev.human_on_topic_flags.values())
    rep = analysis.analyse(inputs)
    out = tmp_path_factory.mktemp("debate-flags") / "analysis"
    report.write(rep, out)
    return rep, out


def _expected(figure: str, panel: str, f: dict[str, str]) -> set[str]:
    """The flags (messages) a panel must note: those of the numbers it draws, by what the flags concern."""
    if figure.endswith("_metrics"):  # a metric's cells of Table 3 (9): every model and mode, original memory
        own = {f[ON_TOPIC]} | ({f[UTTERANCE_STANCE]} if panel == "d_stance" else set())
        pairwise = panel != "r_on_topic" and figure == "table3_metrics"
        return own | ({f[NO_COMPARATOR]} if pairwise else set())
    model, _, name = panel.rpartition(": ")  # Sect. 6: "" is the first model, m
    if name.startswith("tweet"):  # the humans' round-1 tweet starts every source's tweet change
        return {f[HUMAN_TWEETS]} | ({f[TWIN_TWEETS]} if not model else set())
    assert name.startswith("opinion"), panel
    return {f[TWIN_OPINIONS]} if not model else set()


def test_every_flag_lands_on_the_panels_that_draw_what_it_concerns_and_no_other(flagged):
    rep, out = flagged
    by_scope = {f.flag.scope: f.flag.message for f in (*rep.flags, *rep.local_flags)}
    assert set(by_scope) == set(KINDS)
    messages = set(by_scope.values())
    drawn = plots(out, FIGURES)  # the plot tables, read back as the figures read them
    landed: set[str] = set()
    for figure, panels in drawn.items():
        assert panels, figure
        for name, p in panels.items():
            shown = {line for line in p.note if line in messages}
            assert shown == _expected(figure, name, by_scope), (figure, name)
            landed |= shown
    # every flag is on a panel, but the humans' on-topic labels, which no figure draws: on their table and row
    assert messages - landed == {by_scope[HUMAN_ON_TOPIC]}
    hot = rep.flags[[f.flag.scope for f in rep.flags].index(HUMAN_ON_TOPIC)].flag
    assert hot in rep.tables["human_on_topic"].flags
    assert any(hot in r.flags for r in rep.vs_paper if r.quantity.startswith("Sect. 4.3 human on-topic rate"))


def test_a_flag_of_cells_no_figure_draws_sits_on_the_cells(flagged):
    """Table 4 (the ablation) and Table 3's every-utterance table have no figure: their cells carry the flags."""
    rep, _ = flagged
    by_scope = {f.flag.scope: f.flag.message for f in rep.flags}
    t4 = rep.tables["table4"].df
    assert t4["flags"].str.contains(f"d_stance: {by_scope[UTTERANCE_STANCE]}", regex=False).all()
    every = rep.tables["table3_all_utterances"].df  # no on-topic filter: the stance flag alone
    assert every["flags"].str.startswith(f"d_stance: {by_scope[UTTERANCE_STANCE]}").all()
    assert not every["flags"].str.contains(by_scope[ON_TOPIC], regex=False).any()
    t3 = rep.tables["table3"].df.set_index(["model", "mode"])
    assert by_scope[NO_COMPARATOR] in t3.loc[("b", 2), "flags"]
    assert not t3.drop(index=("b", 2))["flags"].str.contains(by_scope[NO_COMPARATOR], regex=False).any()


def test_every_recorded_place_is_one_the_report_shows(flagged):
    """Each place a flag is recorded on is a row or cell of a table of the report that notes the flag, one
    metric of appendix_h.json, or a vs_paper row that carries it: no place outside what is written."""
    rep, _ = flagged
    rows = {places.vs_paper(r.quantity): r for r in rep.vs_paper}
    for f in rep.flags:
        for where in f.where:
            if where in rows:
                assert f.flag in rows[where].flags, where
                continue
            if where in {places.appendix_h(m) for m in rep.documents["appendix_h.json"]}:
                continue
            names = [n for n in rep.tables if where.startswith((f"{n}.", f"{n}["))]
            assert names, f"{where!r} names nothing the report writes"
            assert f.flag in rep.tables[max(names, key=len)].flags, where


# --- the figures only draw: Fig. 3's lines are the analysis' --------------------------------------------


def test_fig3_line_and_band_are_the_ols_fit_and_its_confidence_band():
    rng = np.random.default_rng(3)
    xs = rng.normal(size=12)
    ys = 0.4 * xs + rng.normal(size=12)
    line = stats.fitted_line(xs, ys)
    assert len(line) == stats.FIT_POINTS and line.x.iloc[0] == xs.min() and line.x.iloc[-1] == xs.max()
    pred = sm.OLS(ys, sm.add_constant(xs)).fit().get_prediction(sm.add_constant(line.x.to_numpy()))
    half = 1.96 * pred.se_mean  # the band is the mean's normal 95 % interval
    assert np.allclose(line.y, pred.predicted_mean)
    assert np.allclose(line.lo, pred.predicted_mean - half) and np.allclose(line.hi, pred.predicted_mean + half)
    assert stats.fitted_line(np.ones(4), ys[:4]).empty  # one distinct x: no line


def test_fig3_draws_the_plot_tables_lines(flagged, tmp_path, monkeypatch):
    _, out = flagged
    drawn: list = []
    monkeypatch.setattr(figures, "save", lambda fig, out, name: drawn.append(fig))
    plot = {k: p for k, p in plots(out, ["fig3_individual"])["fig3_individual"].items() if ": " not in k}
    figures.fig3(plot, tmp_path)
    [fig] = drawn
    for ax, p in zip(fig.axes, plot.values(), strict=True):
        fit = p.data[p.data.kind == "fit"]
        lines = [ln.get_xydata() for ln in ax.get_lines()]
        assert len(lines) == fit.source.nunique()
        for xy, (_, rows) in zip(lines, fit.groupby("source", sort=False), strict=True):
            assert np.array_equal(xy, rows[["x", "y"]].to_numpy(dtype=float))
    assert any(len(p.data[p.data.kind == "fit"]) for p in plot.values())
    plt.close(fig)


def test_every_metric_has_a_panel(flagged):
    _, out = flagged
    assert list(plots(out, ["table3_metrics"])["table3_metrics"]) == list(METRICS)
