"""The scorecard (socsim.scorecard) on report folders written by the real report writer (socsim.io.report),
with the provenance and metrics a run writes beside them: rows, columns, cells, sources side by side, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import socsim
from socsim import scorecard as sc
from socsim import workflow
from socsim.config import load
from socsim.io import report as rp
from socsim.io.findings import Scope, study_findings
from socsim.io.parquet import write_json
from socsim.planted import MODEL_IDS
from socsim.stats.verdict import Verdict


def _folder(root: Path, study: str, findings: list[rp.Finding], answered: dict[str, str], **prov) -> Path:
    """results/<study>/analysis as a run leaves it: the report, its provenance, the LLM stages' metrics."""
    out = root / study / "analysis"
    rp.write(rp.Report(f"{study}: ours vs the paper", findings=findings), out)
    write_json(out / "provenance.json", {"stage": f"{study}.analyse", "socsim_version": socsim.__version__, **prov})
    models = {
        name: {"identity": {"backend": "openai", "model_id": mid, "runtime": "x"}} for name, mid in answered.items()
    }
    write_json(root / study / "metrics" / "simulate" / "all.json", {"models": models})
    return out


def _f(
    fid: str,
    scope: Scope,
    holds: bool | None,
    reason: str = "",
    value: float | None = 0.5,
    n: int | None = 12,
    ci=None,
    part: str = "",
):
    """A finding of `fid` judged on `scope` (its wording in the report is the study's, not what the scorecard shows)."""
    wording = f"the wording of {fid} ({scope.name})"
    return rp.Finding(
        wording, "stat", value, "t", "discussions", n, Verdict(holds, reason), ci, id=fid, scope=scope, part=part
    )


TWO = {"smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct", "planted": MODEL_IDS["planted"]}
SMOL, PLANTED = Scope.model("smollm2-135m"), Scope.model("planted")


def test_each_model_is_a_column_and_each_finding_id_a_row(tmp_path):
    _folder(
        tmp_path / "run",
        "coherence",
        [
            _f("coh.test1", SMOL, None, "degenerate input: one value"),
            _f("coh.test1", PLANTED, True, ci=(0.1, 0.9)),
            _f("coh.test5", PLANTED, False, "estimate in the opposite direction, p = 0.01"),
        ],
        TWO,
    )
    long, cols = sc.scorecard(sc.read_sources([str(tmp_path / "run")]))
    assert list(cols["model"]) == ["smollm2-135m", "planted"]  # the control last
    assert list(cols["control"]) == [False, True]
    cell = long.set_index(["finding_id", "model"])
    assert cell.loc[("coh.test1", "smollm2-135m"), "verdict"] == "degenerate"
    assert cell.loc[("coh.test1", "planted"), "verdict"] == "holds"
    assert cell.loc[("coh.test1", "planted"), "ci_low"] == 0.1
    assert cell.loc[("coh.test5", "planted"), "verdict"] == "no"
    assert cell.loc[("coh.test5", "smollm2-135m"), "verdict"] == "not run"
    assert cell.loc[("coh.test1", "planted"), "identity"].startswith(MODEL_IDS["planted"])
    declared = study_findings("coherence")["coh.test1"]  # the row: the paper's wording and result, not the report's
    assert cell.loc[("coh.test1", "planted"), "claim"] == declared.wording
    assert cell.loc[("coh.test1", "planted"), "paper"] == declared.paper


def test_sources_stand_side_by_side(tmp_path):
    one = {"smollm2-135m": "s"}
    _folder(tmp_path / "a", "facilitation", [_f("fac.toxicity_lowered", SMOL, True)], one)
    _folder(tmp_path / "b", "facilitation", [_f("fac.toxicity_lowered", SMOL, False)], one)
    long, cols = sc.scorecard(sc.read_sources([f"one={tmp_path / 'a'}", f"two={tmp_path / 'b'}"]))
    assert sorted(zip(cols["source"], cols["model"], strict=True)) == [("one", "smollm2-135m"), ("two", "smollm2-135m")]
    assert dict(zip(long["source"], long["verdict"], strict=True)) == {"one": "holds", "two": "no"}


def test_the_two_versions_of_paper_000_stand_side_by_side_and_neither_says_not_run_for_the_other(tmp_path):
    era = [_f("fac.intervene_almost_always", Scope.model("llama"), True)]
    era += [_f("fac.toxicity_differs", Scope.model("llama"), True)]
    rev = [_f("facr.intervene_almost_always", Scope.model("llama"), False, "p = 0.2")]
    _folder(tmp_path / "era", "facilitation", era, {"llama": "l"})
    _folder(tmp_path / "rev", "facilitation", rev, {"llama": "l"})
    long, _ = sc.scorecard(sc.read_sources([f"era={tmp_path / 'era'}", f"rev={tmp_path / 'rev'}"]))
    ids = list(dict.fromkeys(long["finding_id"]))
    # the counterparts side by side, in the order the study declares them
    assert ids == ["fac.toxicity_differs", "fac.intervene_almost_always", "facr.intervene_almost_always"]
    cell = long.set_index(["finding_id", "source"])
    assert cell.loc[("facr.intervene_almost_always", "era"), "verdict"] == sc.NOT_CLAIMED
    assert cell.loc[("fac.intervene_almost_always", "rev"), "verdict"] == sc.NOT_CLAIMED
    assert cell.loc[("fac.toxicity_differs", "rev"), "verdict"] == sc.NOT_CLAIMED
    assert "revised" in cell.loc[("fac.intervene_almost_always", "rev"), "reason"]
    assert cell.loc[("fac.intervene_almost_always", "era"), "differs"].startswith(
        "counterpart of facr.intervene_almost_always"
    )
    assert {cell.loc[(i, "era"), "version"] for i in ids} == {"paper-era", "revised (v4)"}


def test_the_humans_are_a_column_named_by_their_data_never_a_model_or_all_models(tmp_path):
    humans = Scope.humans("fixture (synthetic)")
    findings = [
        _f("deb.humans_no_change", humans, True, part="tweet mean"),
        _f("deb.twins_converge", SMOL, None, "p = 0.3"),
    ]
    _folder(tmp_path / "run", "debate", findings, {"smollm2-135m": "s"})  # a one-model run
    long, cols = sc.scorecard(sc.read_sources([str(tmp_path / "run")]))
    assert list(cols["model"]) == ["smollm2-135m", "humans (fixture (synthetic))"]
    cell = long.set_index(["finding_id", "model"])
    assert cell.loc[("deb.humans_no_change", "humans (fixture (synthetic))"), "verdict"] == "holds"
    assert cell.loc[("deb.humans_no_change", "smollm2-135m"), "verdict"] == "not run"
    assert cell.loc[("deb.humans_no_change", "humans (fixture (synthetic))"), "claim"].endswith("(tweet mean)")
    assert sc.POOLED not in set(cols["model"])


def test_two_runs_of_one_model_and_source_are_refused(tmp_path):
    _folder(tmp_path / "a", "facilitation", [_f("fac.toxicity_lowered", SMOL, True)], {"smollm2-135m": "s"})
    _folder(tmp_path / "b", "facilitation", [_f("fac.toxicity_lowered", SMOL, True)], {"smollm2-135m": "s"})
    with pytest.raises(sc.ScorecardError, match="two reports of facilitation judge the model smollm2-135m"):
        sc.read_sources([str(tmp_path / "a"), str(tmp_path / "b")])


def test_a_report_of_another_version_an_undeclared_finding_and_a_folder_without_reports_are_refused(tmp_path):
    out = _folder(tmp_path / "a", "debate", [_f("deb.llm_longer", Scope.model("m"), True)], {"m": "m"})
    prov = json.loads((out / "provenance.json").read_text())
    write_json(out / "provenance.json", {**prov, "socsim_version": "0.0.1"})
    with pytest.raises(sc.ScorecardError, match="another socsim version"):
        sc.read_sources([str(tmp_path / "a")])
    write_json(out / "provenance.json", prov)
    old = pd.read_parquet(out / "findings.parquet").drop(columns=["ci_low", "finding_id"])
    old.to_parquet(out / "findings.parquet")
    with pytest.raises(sc.ScorecardError, match="lack finding_id, ci_low"):
        sc.read_sources([str(tmp_path / "a")])
    _folder(tmp_path / "b", "debate", [_f("deb.no_such_finding", Scope.model("m"), True)], {"m": "m"})
    with pytest.raises(sc.ScorecardError, match=r"ids debate does not declare \(deb.no_such_finding\)"):
        sc.read_sources([str(tmp_path / "b")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(sc.ScorecardError, match="no report folder"):
        sc.read_sources([str(tmp_path / "empty")])


def test_a_finding_without_its_id_or_scope_is_not_written(tmp_path):
    bare = rp.Finding("x", "stat", 0.5, "t", "discussions", 12, Verdict(True, ""), id="coh.test1")
    with pytest.raises(ValueError, match="without its id or scope"):
        rp.write(rp.Report("r", findings=[bare]), tmp_path / "r")


def test_parts_and_pooled_findings_give_way_to_the_whole_finding_per_model(tmp_path):
    fid, everyone = "facr.toxicity_lowered", Scope.all_models()
    findings = [
        _f(fid, everyone, True, part="Rules"),
        _f(fid, everyone, True),
        _f(fid, Scope.model("m1"), True, part="Rules"),
        _f(fid, Scope.model("m1"), None, "p = 0.2"),
        _f(fid, Scope.model("m2"), True),
    ]
    _folder(tmp_path / "r", "facilitation", findings, {"m1": "a", "m2": "b"})
    long, cols = sc.scorecard(sc.read_sources([str(tmp_path / "r")]))
    assert set(zip(long["finding_id"], long["part"])) == {(fid, "")}
    assert dict(zip(long["model"], long["verdict"], strict=True)) == {"m1": "inconclusive", "m2": "holds"}


def test_the_written_scorecard_names_every_report_and_draws_the_grid(tmp_path):
    findings = [_f("coh.test1", PLANTED, True), _f("coh.test1", SMOL, None)]
    _folder(tmp_path / "run", "coherence", findings, TWO)
    text = sc.main([str(tmp_path / "run")], tmp_path / "out")
    assert "planted · generated: 1 holds" in text
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert [r["path"] for r in prov["reports"]] == [str(tmp_path / "run" / "coherence" / "analysis")]
    table = (tmp_path / "out" / "scorecard_table.md").read_text()
    assert "planted · generated: control (planted effects, not a language model)" in table
    assert "every model passes" in table  # the paper's own result, beside the verdicts
    assert (tmp_path / "out" / "scorecard.png").stat().st_size > 10_000


def test_the_scorecard_is_the_default_targets_last_stage_in_snakemake_and_dvc():
    params = load(["params.yaml"])
    rule = next(r for r in workflow.rules(params) if r["name"] == workflow.SCORECARD_RULE)
    assert rule["input"]["reports"] == workflow.scorecard_inputs(params)
    assert {f"results/{s}/analysis" for s in sc.study_names()} <= set(rule["input"]["reports"])
    assert workflow.targets(params)[-1] == workflow.SCORECARD
    stage = workflow.dvc_stages(params)[workflow.SCORECARD_RULE]
    assert stage["outs"] == [workflow.SCORECARD] and set(rule["input"]["reports"]) <= set(stage["deps"])


def test_a_controls_cells_say_what_it_can_speak_to(tmp_path):
    three = {**TWO, "planted-null": MODEL_IDS["null"]}
    null = Scope.model("planted-null")
    findings = [
        _f("coh.test1", PLANTED, True),  # powered by the control design (POWERED)
        _f("coh.test2", PLANTED, None, "p = 0.3"),  # planted, not powered here (PLANTED)
        _f("coh.disagreement_suppressed", PLANTED, False, "p = 0.9", part="linear shift"),  # nothing planted
        _f("coh.test1", null, None, "p = 0.6"),
        _f("coh.test1", SMOL, True),
    ]
    _folder(tmp_path / "run", "coherence", findings, three)
    long, _ = sc.scorecard(sc.read_sources([str(tmp_path / "run")]))
    mark = long.set_index(["finding_id", "model"])["mark"]
    assert mark[("coh.test1", "planted")] == "planted, powered"
    assert mark[("coh.test2", "planted")] == "planted, not powered here"
    assert mark[("coh.disagreement_suppressed", "planted")] == "not planted"
    assert mark[("coh.test1", "planted-null")] == "not planted"  # the null twin plants nothing
    assert mark[("coh.test1", "smollm2-135m")] == ""  # a language model's cell has no mark
    assert mark[("coh.test2", "planted-null")] == ""  # nor a cell that was not run
    cells = {sc.cell_text(r) for r in long.to_dict("records") if r["model"] == "planted"}
    assert any(c.startswith("holds") and c.endswith("[planted, powered]") for c in cells), cells


def test_a_finding_that_compares_the_models_stands_on_the_models_together(tmp_path):
    together, llama = Scope.all_models(), Scope.model("llama")
    findings = [_f("fac.qwen_highest_diversity", together, True), _f("fac.toxicity_lowered", llama, True)]
    _folder(tmp_path / "run", "facilitation", findings, {"llama": "l"})
    long, cols = sc.scorecard(sc.read_sources([str(tmp_path / "run")]))
    assert list(cols["model"]) == ["llama", "the models together"]  # kept: no model was judged on it alone
    cell = long.set_index(["finding_id", "model"])
    assert cell.loc[("fac.qwen_highest_diversity", "the models together"), "verdict"] == "holds"
    assert cell.loc[("fac.qwen_highest_diversity", "llama"), "reason"].startswith("it compares the models")


def test_the_null_twins_allowance_counts_directional_findings_and_lists_no_difference_claims_beside(tmp_path):
    """Coherence's Test 2 and 4 are claims of no difference (they hold on a null at their power's rate): left out of
    the count that the binomial allowance bounds, listed beside it with their verdict's words."""
    null = Scope.model("planted-null")
    _folder(
        tmp_path / "run",
        "coherence",
        [
            _f("coh.test1", null, True),
            _f("coh.test5", null, None, "p = 0.4 >= 0.05"),
            _f("coh.test2", null, True, "p = 0.6 with power 0.91 at n = 40 conversations"),
            _f("coh.test4", null, None, "p = 0.3 but power 0.4 < 0.8"),
        ],
        {"planted-null": MODEL_IDS["null"]},
    )
    long, _ = sc.scorecard(sc.read_sources([str(tmp_path / "run")]))
    assert sc.no_difference(long).tolist() == [study_findings("coherence")[f].no_difference for f in long["finding_id"]]
    first, beside = sc.null_lines(long)
    assert f"1 of 2 directional findings hold; allowance {sc.null_allowance(2)}" in first
    assert beside.strip().startswith("and 1 of 2 claims of no difference hold")
    assert "coh.test2: holds (p = 0.6 with power 0.91" in beside and "coh.test4: inconclusive" in beside


def test_claims_of_any_difference_are_counted_beside_the_directional_ones_at_alpha(tmp_path):
    """Facilitation's ANOVA ("toxicity differs across strategies") holds on a null at alpha, twice a directional
    claim's one-sided rate: its own line and allowance (Binomial(n, 0.05)), not in the directional count."""
    null = Scope.model("planted-null")
    _folder(
        tmp_path / "run",
        "facilitation",
        [_f("fac.toxicity_differs", null, True), _f("fac.toxicity_lowered", null, None, "p = 0.4 >= 0.05")],
        {"planted-null": MODEL_IDS["null"]},
    )
    long, _ = sc.scorecard(sc.read_sources([str(tmp_path / "run")]))
    assert sc.any_difference(long).tolist() == [f == "fac.toxicity_differs" for f in long["finding_id"]]
    first, beside = sc.null_lines(long)
    assert f"0 of 1 directional findings hold; allowance {sc.null_allowance(1)}" in first
    assert sc.null_allowance(1, 0.05) == 0  # P(X = 0) of Binomial(1, 0.05) is 0.95: the 95 % quantile is 0
    assert beside.strip() == "and 1 of 1 claims of any difference hold; allowance 0 (Binomial(1, 0.05)): ABOVE"
