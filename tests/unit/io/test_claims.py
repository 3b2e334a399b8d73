"""The claim unit and its assembler, plot tables, and the verdict rule's "too few units"."""

from __future__ import annotations

import pandas as pd
import pytest

from socsim.io import report, vs_paper
from socsim.io.claims import Claim, Judgement, assemble
from socsim.io.figures import panels
from socsim.io.report import Finding, Flagged, Panel, Report, Table, plot_table
from socsim.stats import degeneracy as dg
from socsim.stats import verdict as vd


def _mean_above(limit: float):
    def judge(ev: dict[str, list[float]]) -> Judgement:
        xs = ev["x"]
        v = vd.inconclusive_too_few(len(xs), vd.MIN_UNITS, "topics") or vd.Verdict(sum(xs) / len(xs) > limit)
        f = Finding(f"mean above {limit}", "mean", sum(xs) / len(xs), "by hand", "topics", len(xs), v)
        return Judgement([f], [vs_paper.Row(f"mean > {limit}", f.value, limit, verdict=v)])

    return judge


def test_assemble_adds_each_claims_findings_rows_flags_and_tables_in_order():
    flag = dg.Flag("toy topics", "one topic only")

    def flagged(ev):
        return Judgement(flags=[Flagged(flag, ["fig1/a"])], tables={"extra": Table(pd.DataFrame({"a": [1]}), "t")})

    ev_x = [1.0, 2.0, 6.0]
    base = Report("toy", tables={"measures": Table(pd.DataFrame({"x": ev_x}), "m")})
    rep = assemble(
        base, [Claim("low", _mean_above(1)), Claim("flag", flagged), Claim("high", _mean_above(5))], {"x": ev_x}
    )
    assert [f.claim for f in rep.findings] == ["mean above 1", "mean above 5"]
    assert [f.verdict.holds for f in rep.findings] == [True, False]
    assert [r.quantity for r in rep.vs_paper] == ["mean > 1", "mean > 5"]
    assert [(f.flag.message, f.where) for f in rep.flags] == [(flag.message, ["fig1/a"])]
    assert list(rep.tables) == ["measures", "extra"]


def test_too_few_units_is_the_rules_words_and_inconclusive():
    rep = assemble(Report("toy"), [Claim("c", _mean_above(1))], {"x": [3.0, 4.0]})
    assert rep.findings[0].verdict.label == "inconclusive (n = 2 topics, needs 3)"
    assert vd.effect(0.001, 1.0, 2, vd.MIN_UNITS, "topics").label == "inconclusive (n = 2 topics, needs 3)"


def test_assemble_refuses_two_claims_of_one_name_or_one_table_twice():
    twice = Claim("c", lambda ev: Judgement(tables={"t": Table(pd.DataFrame(), "t")}))
    with pytest.raises(ValueError, match="claims named twice: c"):
        assemble(Report("toy"), [twice, twice], None)
    other = Claim("d", twice.judge)
    with pytest.raises(ValueError, match="claim d: table\\(s\\) t written twice"):
        assemble(Report("toy"), [twice, other], None)


def test_plot_table_round_trips_through_the_report_folder(tmp_path):
    rep = Report(
        "toy",
        plots={
            "fig1": [
                Panel("a", pd.DataFrame({"x": [1.5, 2.5], "g": ["u", "v"]}), ["n = 2 topics", "flag: one model"]),
                Panel("b", pd.DataFrame(), ["n = 0 topics"], "no topic with two runs"),
            ]
        },
    )
    report.write(rep, tmp_path)
    got = panels(report.read(tmp_path, "plot_fig1"))
    assert list(got) == ["a", "b"]
    assert got["a"].note == ["n = 2 topics", "flag: one model"] and got["a"].no_data == ""
    assert got["a"].data["x"].tolist() == [1.5, 2.5] and got["a"].data["g"].tolist() == ["u", "v"]
    assert got["b"].data.empty and got["b"].no_data == "no topic with two runs" and got["b"].note == ["n = 0 topics"]
    assert (tmp_path / "plot_fig1.csv").exists()
    assert list(plot_table(rep.plots["fig1"]).columns[:3]) == ["panel", "note", "has_data"]


def test_a_panel_without_rows_says_why_and_flags_reach_the_places_they_name(tmp_path):
    rep = Report("toy", plots={"fig1": [Panel("a", pd.DataFrame())]})  # no rows, no reason given
    report.write(rep, tmp_path)
    assert panels(report.read(tmp_path, "plot_fig1"))["a"].no_data == "no rows"
    assert not (tmp_path / "plot_fig1.md").exists()  # plot tables are data: Parquet and CSV only
    flag = dg.Flag("toy ratings", "all 5")
    rep.flag(flag, "fig1/a", "table1")
    assert rep.flags_on("fig1/a") == [flag.message] and rep.flags_on("fig1/b") == []
