"""Coherence's analyse and figures stages on synthetic Parquet inputs: the report on coherent data, its
claims in order, the figures from the plot tables only, and the edge cases (an unparsed answer, several
models, no judgments, every conversation removed by Self-BLEU, one topic)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from socsim.coherence import analysis as an
from support.project import ROOT
from support.studies.coherence import PAPER, analysis_inputs, run_stages, synthetic_run


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


FIGS = [
    "fig4_agreement_by_gap.png",
    "fig5_suppression.png",
    "fig6_anchors.png",
    "fig7_contentiousness.png",
    "fig8_openness.png",
]


def test_stages_on_coherent_synthetic_data(tmp_path):
    out = run_stages(synthetic_run(tmp_path))
    tests = out["tests"].set_index("test")
    assert tests.loc[1, "result"] == "pass" and tests.loc[5, "result"] == "pass"
    # contentiousness plays no part, but it cannot be shown: one topic a level, and a test with the
    # topic as unit cannot reject with 3 topics (every grouping of them is the same comparison)
    assert tests.loc[4, "raw_result"] == (
        "inconclusive (the topic-level test cannot reject at 0.01 with 3 topics (1 at C = 1, 1 at C = 2, "
        "1 at C = 3): its smallest p is 1)"
    )
    assert out["summary"]["degeneracy_flags"] == [] and out["figures"] == FIGS
    assert "degenerate" not in out["table4_md"]
    vs = out["vs_paper"].set_index("quantity")
    # Table 3's gap-0 distribution, computed independently from the inputs
    conv = pd.read_csv(tmp_path / "analysis/conversations.csv")
    gap0 = conv.loc[conv["gap"] == 0, "agreement"]
    for k in range(1, 6):
        row = vs.loc[f"Table 3: P(score {k}) at gap 0, observed (m)"]
        assert row["ours"] == pytest.approx((gap0 == k).mean(), abs=1e-6)
        assert row["difference"] == pytest.approx(row["ours"] - row["paper"], abs=1e-6)
    assert vs.loc["Table 3: P(score 1) at gap 0, observed (m)", "paper"] == pytest.approx(0.000204)
    assert vs.loc["Table 4: Test 1 passed (1) or failed (0) (m)", "finding_holds"] == "yes"
    assert pd.isna(vs.loc["Table 4: Test 2 passed (1) or failed (0) (m)", "paper"])  # no paper row for "m"
    d4 = vs.loc["Observed - expected mean at gap 4, linear shift (m)"]
    # by hand: the expected gap-4 distribution is gap 0's inverted (s -> 6 - s), so its mean is 6 - mean(gap 0)
    by_hand = conv.loc[conv["gap"] == 4, "agreement"].mean() - (6 - gap0.mean())
    assert d4["ours"] == pytest.approx(by_hand, abs=1e-6) and d4["paper"] == pytest.approx(1.8)
    assert d4["finding_holds"] == ("yes" if by_hand > 0 else "no")


def test_one_unparsed_answer_keeps_integer_profiles(tmp_path, monkeypatch):
    captured = {}
    paths = synthetic_run(tmp_path, null_profile=True)
    from socsim.io.parquet import read_table

    assert read_table(paths["profiles"]).to_pandas()["preference"].dtype == float  # the null makes it float
    out = run_stages(paths, captured, monkeypatch)
    conv = pd.read_csv(tmp_path / "analysis/conversations.csv", dtype={"pref_pair": str, "open_pair": str})
    assert set(conv["pref_pair"]) == {f"{a}-{b}" for a, b in itertools.combinations_with_replacement(range(1, 6), 2)}
    assert not conv["open_pair"].str.contains(".", regex=False).any()
    tests = out["tests"].set_index("test")
    assert tests.loc[3, "raw_result"] in ("pass", "fail")
    # Test 6 (the strict rule by default) ran its comparisons on integer openness pairings
    assert tests.loc[6, "comparisons"] >= 1 and tests.loc[6, "detail"].startswith(
        "strict rule (our reading of the paper's text): lowest 0-0 "
    )
    labels = [t.get_text() for ax in captured["fig6_anchors"].axes for t in ax.texts]
    assert "1-5" in labels and "1-1" in labels and not any("." in t for t in labels)


def test_several_models_are_drawn_apart_on_sorted_axes(tmp_path, monkeypatch):
    captured = {}
    out = run_stages(synthetic_run(tmp_path, models=("m2", "m1")), captured, monkeypatch)
    assert sorted(out["tests"]["model"].unique()) == ["m1", "m2"]
    fig5, fig6, fig7 = captured["fig5_suppression"], captured["fig6_anchors"], captured["fig7_contentiousness"]
    assert len(fig5.axes) == 2 * 3 and len(fig6.axes) == 2 and len(fig7.axes) == 2 * 2
    for fig in (fig5, fig6, fig7, captured["fig4_agreement_by_gap"]):
        for ax in fig.axes:
            lo, hi = ax.get_ylim()
            assert lo <= 1 and hi >= 5 and lo > 0.5 and hi < 5.5  # the score scale
    assert [ax.get_title().split(":")[0] for ax in fig5.axes[::3]] == ["m1", "m2"]
    assert "m1" in fig6.axes[0].get_title() and "m2" in fig6.axes[1].get_title()
    ticks = [t.get_text() for t in fig7.axes[0].get_xticklabels()]
    assert ticks == sorted(ticks) and ticks[0] == "1-1" and ticks[-1] == "5-5"
    # every line of a panel belongs to one model: m1's panel has as many points as m1's table rows
    by = pd.read_csv(tmp_path / "analysis/bootstrap_by_pref_pair_contentiousness.csv")
    drawn = sum(len(line.get_xdata()) for line in fig7.axes[0].get_lines() if line.get_linestyle() == "-")
    assert drawn == ((by["model"] == "m1") & (by["contentiousness"] > 1)).sum()


def test_no_judgments_keeps_the_model_row(tmp_path, monkeypatch):
    from socsim.coherence import schemas
    from socsim.io.parquet import write_table

    paths = synthetic_run(tmp_path)
    write_table(paths["judgments"], [], schemas.JUDGMENTS, ["conversation_id", "turn"], {})
    captured = {}
    out = run_stages(paths, captured, monkeypatch)
    tests = out["tests"]
    assert list(tests["model"]) == ["m"] * 6 and set(tests["result"]) == {"n/a"}
    assert tests["detail"].iloc[0].startswith("none of ") and "parsed final judgment" in tests["detail"].iloc[0]
    assert out["table4_md"].count("n/a [1]") == 6 and "[1] n/a: none of" in out["table4_md"]
    assert out["table4_csv"].iloc[0]["test1"].startswith("n/a: none of")
    assert out["summary"]["no_data"]["m"].startswith("none of") and out["figures"] == FIGS
    for name in ("fig4_agreement_by_gap", "fig5_suppression", "fig6_anchors", "fig7_contentiousness", "fig8_openness"):
        assert any(t.startswith("no data") for t in _texts(captured[name])), name
    assert (out["vs_paper"]["finding_holds"].fillna("").isin(["n/a", ""])).all()


def test_all_removed_by_self_bleu(tmp_path, monkeypatch):
    paths = synthetic_run(tmp_path, texts=lambda t: "I agree completely with everything you say")
    captured = {}
    out = run_stages(paths, captured, monkeypatch)
    assert out["summary"]["conversations"] == 0 and out["summary"]["removed_by_self_bleu"] > 0
    assert set(out["tests"]["result"]) == {"n/a"}
    assert "removed by the Self-BLEU filter" in out["tests"]["detail"].iloc[0]
    assert out["suppression"]["note"].str.contains("removed by the Self-BLEU filter").all()
    assert any("Self-BLEU" in t for t in _texts(captured["fig5_suppression"]))


def test_one_topic(tmp_path, monkeypatch):
    captured = {}
    out = run_stages(synthetic_run(tmp_path, topics=(("neutral", 1),)), captured, monkeypatch)
    tests = out["tests"].set_index("test")
    assert tests.loc[4, "result"] == "n/a" and "two contentiousness levels" in tests.loc[4, "detail"]
    assert tests.loc[1, "result"] == "pass"
    assert any("one contentiousness level" in t for t in _texts(captured["fig7_contentiousness"]))


def test_the_report_is_its_claims_in_order_and_the_figures_draw_only_plot_tables(tmp_path):
    """analyse = the base report plus each claim's findings and vs_paper rows in CLAIMS' order; the
    figures read only the plot tables (one per figure, declared by the analysis folder) and import
    nothing from the analysis."""
    import ast

    from socsim.coherence import schemas, stages
    from socsim.io.claims import judge_all

    paths = synthetic_run(tmp_path)
    inputs = analysis_inputs(paths, PAPER)
    rep = an.analyse(inputs)
    judged = judge_all(an.CLAIMS, an.gather(inputs))
    assert [c.name for c, _ in judged][:2] == ["disagreement_suppressed", "test1"]
    assert [f.claim for f in rep.findings] == [f.claim for _, j in judged for f in j.findings]
    assert [r.quantity for r in rep.vs_paper] == [r.quantity for _, j in judged for r in j.rows]
    assert list(rep.plots) == list(schemas.FIGURES)
    assert stages.ARTIFACTS["analysis"].tables == tuple(f"plot_{f}" for f in schemas.FIGURES)
    source = (ROOT / "src/socsim/coherence/figures.py").read_text()
    imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module is not None}
    assert not any(m.startswith("socsim.coherence.analysis") for m in imported), imported
