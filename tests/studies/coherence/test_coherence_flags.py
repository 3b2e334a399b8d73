"""Coherence's degeneracy flags: a degenerate model said so everywhere, a judge's calibration alone, degenerate
inputs before no data, and each flag and n travelling with its own numbers (tables, panels, findings)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from socsim.coherence import analysis as an
from socsim.coherence.analysis import places, plots
from socsim.io.report import Report
from support.analysis import asked_places
from support.studies.coherence import PAPER, analysis_inputs, run_stages, synthetic_run


def test_degenerate_model_says_so_everywhere(tmp_path):
    # SmolLM2-135M-like: every preference "1", calibration examples judged 1, 1, 1, 1, 1
    paths = synthetic_run(tmp_path, prefs=[1], calibration=(1, 1, 1, 1, 1))
    out = run_stages(paths)
    flags = out["summary"]["degeneracy_flags"]
    scopes = {f["scope"] for f in flags}
    assert {"coherence preferences (m)", "coherence judge calibration (j)"} <= scopes
    pref = next(f for f in flags if f["scope"] == "coherence preferences (m)")
    assert pref["reason"] == "100% of 24 answers are 1 (threshold 90%)"
    assert pref["message"] == "degenerate input: coherence preferences (m): " + pref["reason"]
    cal = next(f for f in flags if f["scope"] == "coherence judge calibration (j)")
    assert cal["reason"].startswith("scores its calibration examples 1, 1, 1, 1, 1")
    assert out["summary"]["degenerate"] is True
    assert all(r.startswith("degenerate input: ") for r in out["tests"]["result"])
    assert out["table4_md"].count("degenerate input [") == 6 and "degenerate input: coherence" in out["table4_md"]
    assert "degenerate input" in out["table4_tex"]
    assert all(str(c).startswith("degenerate input: ") for c in out["table4_csv"].iloc[0, 1:])
    vs = out["vs_paper"]
    claims = vs[vs["finding"] != ""]  # suppression, Table 4 (Tests 1, 2, 3, 5), Finding 3: each says the flag
    assert len(claims) == 8 + 4 + 1 and claims["finding_holds"].str.startswith("degenerate input").all()
    assert (vs["flags"] != "").sum() >= len(vs) - 1  # all but the Self-BLEU share rest on the flagged inputs
    assert out["suppression"]["note"].str.startswith("degenerate input").all()
    assert out["metrics"]["degeneracy_flags"] == len(flags)


def test_panel_notes_take_their_flags_from_the_report(tmp_path):
    """One flag protocol: a panel's note shows the flags the report records on the table it draws
    (Report.flags_on), built after every flag is recorded; the openness panel shows no preference flag."""
    paths = synthetic_run(tmp_path, prefs=[1], calibration=(1, 1, 1, 1, 1))
    rep = an.analyse(analysis_inputs(paths, PAPER))
    drawn = {
        "fig4_agreement_by_gap": ["bootstrap_by_gap"],
        "fig5_suppression": ["suppression"] * 3,
        "fig6_anchors": ["bootstrap_by_pref_pair"],
        "fig7_contentiousness": ["bootstrap_by_pref_pair_contentiousness", "bootstrap_by_pref_pair_contentiousness_b2"],
        "fig8_openness": ["bootstrap_by_open_sum", "openness_vs_baseline"],
    }
    for fig, tables in drawn.items():
        for panel, table in zip(rep.plots[fig], tables, strict=True):
            flags = rep.flags_on(places.of_model(table, "m"))
            assert flags and panel.note[0] == "; ".join(flags), (fig, panel.name)
    open_sum = rep.plots["fig8_openness"][0].note[0]
    assert "coherence judge calibration (j)" in open_sum and "coherence preferences (m)" not in open_sum


def unlanded(rep: Report, asked: set[str]) -> list[str]:
    """Flags that do not reach a panel: a flag on a table a figure draws (places.DRAWS) whose place no panel
    asks for, or on a figure but on none of the tables it draws, or on such a table but not on its figure."""
    out = []
    for f in (*rep.flags, *rep.local_flags):
        for model in rep.summary["models"]:
            for figure, tables in places.DRAWS.items():
                on = [t for t in tables if places.of_model(t, model) in f.where]
                if (places.of_model(figure, model) in f.where) != bool(on):
                    out.append(f"{f.flag.scope}: {figure} ({model}) and the tables it draws disagree")
                out += [
                    f"{f.flag.scope}: {t} ({model}) read by no panel"
                    for t in on
                    if places.of_model(t, model) not in asked
                ]
    return out


def test_every_flag_on_a_drawn_table_lands_on_a_panel(tmp_path, monkeypatch):
    """Writers and the panels name a flag's place through socsim.coherence.analysis.places: every flag on a
    table a figure draws reaches a panel; a panel asking for a mistyped place is found."""
    paths = synthetic_run(tmp_path, models=("m", "n"), prefs=[1], calibration=(1, 1, 1, 1, 1))
    asked = asked_places(monkeypatch)
    rep = an.analyse(analysis_inputs(paths, PAPER))
    flagged = {t for f in rep.flags for t in places.DRAWN_BY for m in "mn" if places.of_model(t, m) in f.where}
    assert flagged == set(places.DRAWN_BY)  # every drawn table carries flags: the check checks each of them
    assert unlanded(rep, asked) == []
    # Fig. 8a's panel asks for its table under a mistyped name: its flags no longer land, and the check says so.
    typo = lambda name, model: places.of_model(name.replace("open_sum", "opensum"), model)  # noqa: E731
    monkeypatch.setattr(plots, "places", SimpleNamespace(**{**vars(places), "of_model": typo}))
    asked.clear()
    rep = an.analyse(analysis_inputs(paths, PAPER))
    missed = unlanded(rep, asked)
    assert missed and all(x.endswith("read by no panel") for x in missed), missed
    assert {x.split(": ")[-1] for x in missed} == {f"bootstrap_by_open_sum ({m}) read by no panel" for m in "mn"}


def test_judge_calibration_alone_flags_the_tests(tmp_path):
    out = run_stages(synthetic_run(tmp_path, calibration=(5, 4, 3, 2, 1)))  # answers reversed
    assert [f["scope"] for f in out["summary"]["degeneracy_flags"]] == ["coherence judge calibration (j)"]
    assert all(r.startswith("degenerate input: coherence judge calibration (j)") for r in out["tests"]["result"])


def test_degenerate_inputs_come_before_no_data(tmp_path):
    # SmolLM2-like preferences, and every conversation repetitive: the inputs' degeneracy is the reason
    paths = synthetic_run(
        tmp_path, topics=(("neutral", 1),), prefs=[1], texts=lambda t: "I agree completely with everything you say"
    )
    out = run_stages(paths)
    assert out["summary"]["conversations"] == 0
    tests = out["tests"]
    assert tests["result"].str.startswith("degenerate input: coherence preferences (m)").sum() == 5
    # Test 5 does not depend on preferences, but on the judge's scores (all 5 at gap 0)
    assert tests.set_index("test").loc[5, "result"].startswith("degenerate input: coherence final judge scores (m)")
    assert tests["detail"].str.contains("removed by the Self-BLEU filter").all()
    assert out["suppression"]["note"].str.startswith("degenerate input").all()


def test_flags_and_n_travel_with_their_numbers(tmp_path, monkeypatch):
    # preferences 1 and 5 only: gaps 0 and 4, nothing between; every preference of one value would
    # be degenerate, so two values
    captured = {}
    out = run_stages(synthetic_run(tmp_path, prefs=[1, 5], calibration=(1, 1, 1, 1, 1)), captured, monkeypatch)
    fig5 = captured["fig5_suppression"]
    ax = fig5.axes[0]
    texts = [t.get_text().replace("\n", " ") for t in ax.texts]
    assert any("n = " in t and "no data at gaps 1, 2, 3" in t for t in texts), texts
    assert any(t.startswith("degenerate input: coherence judge calibration (j)") for t in texts)
    observed = ax.get_lines()[0].get_ydata()
    assert np.isnan(np.asarray(observed[1:4], dtype=float)).all()  # no line through gaps 1-3
    assert sum(t == "no data" for t in texts) == 3
    # Table 4 and vs_paper rows carry their own inputs' flags, not the run's first
    vs = out["vs_paper"].set_index("quantity")
    assert "judge calibration" in vs.loc["Table 4: Test 5 passed (1) or failed (0) (m)", "flags"]
    assert vs["comparable"].str.startswith("no: agent model").all()  # our model is not the paper's
    design = out["summary"]["design_differences"]
    assert {"agent model: ours m, paper Qwen2.5-7B", "statements per agent: ours 2, paper 5"} <= set(design)
    where = {f["scope"]: f["where"] for f in out["summary"]["degeneracy_flags"]}
    assert "fig5_suppression (m)" in where["coherence judge calibration (j)"]
    claims = out["findings"].set_index("claim")
    supp = claims.loc[
        "disagreement suppressed: observed mean above the expected one at every gap 1-4, linear shift (m)"
    ]
    assert supp["verdict"].startswith("degenerate input: coherence judge calibration (j)") and supp["n"] > 0
