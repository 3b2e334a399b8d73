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


def _f(claim: str, holds: bool | None, reason: str = "", value: float | None = 0.5, n: int | None = 12, ci=None):
    return rp.Finding(claim, "stat", value, "t", "discussions", n, Verdict(holds, reason), ci)


TWO = {"smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct", "planted": MODEL_IDS["planted"]}


def test_each_model_is_a_column_and_the_claim_is_a_row(tmp_path):
    _folder(
        tmp_path / "run",
        "coherence",
        [
            _f("Test 1: gap lowers agreement (smollm2-135m)", None, "degenerate input: one value"),
            _f("Test 1: gap lowers agreement (planted)", True, ci=(0.1, 0.9)),
            _f("Test 5: openness raises agreement (planted)", False, "estimate in the opposite direction, p = 0.01"),
        ],
        TWO,
    )
    long, cols = sc.scorecard(sc.read_sources([str(tmp_path / "run")]))
    assert list(cols["model"]) == ["smollm2-135m", "planted"]  # the control last
    assert list(cols["control"]) == [False, True]
    cell = long.set_index(["claim", "model"])
    assert cell.loc[("Test 1: gap lowers agreement", "smollm2-135m"), "verdict"] == "degenerate"
    assert cell.loc[("Test 1: gap lowers agreement", "planted"), "verdict"] == "holds"
    assert cell.loc[("Test 1: gap lowers agreement", "planted"), "ci_low"] == 0.1
    assert cell.loc[("Test 5: openness raises agreement", "planted"), "verdict"] == "no"
    assert cell.loc[("Test 5: openness raises agreement", "smollm2-135m"), "verdict"] == "not run"
    assert cell.loc[("Test 1: gap lowers agreement", "planted"), "identity"].startswith(MODEL_IDS["planted"])


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        (
            "B follows the truth (smollm2-135m, cumulative, complete)",
            ("B follows the truth (cumulative, complete)", "smollm2-135m"),
        ),
        ("Mode 1 > Mode 3 (depth, smollm2-135m)", ("Mode 1 > Mode 3 (depth)", "smollm2-135m")),
        ("each strategy lowers toxicity [qwen2.5-7b]", ("each strategy lowers toxicity", "qwen2.5-7b")),
        ("each strategy lowers toxicity [all models]", ("each strategy lowers toxicity", sc.POOLED)),
        ("rate >= 0.9 (the paper: 1.0)", ("rate >= 0.9 (the paper: 1.0)", sc.POOLED)),
        ("Test 1 (smollm2-135m-x)", ("Test 1 (smollm2-135m-x)", sc.POOLED)),  # a name only where it is a whole item
    ],
)
def test_the_model_is_taken_out_of_the_claim(claim, expected):
    assert sc.split_model(claim, ["smollm2-135m", "planted"]) == expected


def test_sources_stand_side_by_side_and_a_one_model_run_owns_its_unnamed_findings(tmp_path):
    _folder(tmp_path / "a", "facilitation", [_f("facilitators lower toxicity", True)], {"smollm2-135m": "s"})
    _folder(tmp_path / "b", "facilitation", [_f("facilitators lower toxicity", False)], {"smollm2-135m": "s"})
    long, cols = sc.scorecard(sc.read_sources([f"one={tmp_path / 'a'}", f"two={tmp_path / 'b'}"]))
    assert sorted(zip(cols["source"], cols["model"], strict=True)) == [("one", "smollm2-135m"), ("two", "smollm2-135m")]
    assert dict(zip(long["source"], long["verdict"], strict=True)) == {"one": "holds", "two": "no"}


def test_two_runs_of_one_model_and_source_are_refused(tmp_path):
    _folder(tmp_path / "a", "facilitation", [_f("x", True)], {"smollm2-135m": "s"})
    _folder(tmp_path / "b", "facilitation", [_f("x", True)], {"smollm2-135m": "s"})
    with pytest.raises(sc.ScorecardError, match="two reports of facilitation judge the model smollm2-135m"):
        sc.read_sources([str(tmp_path / "a"), str(tmp_path / "b")])


def test_a_report_of_another_version_and_a_folder_without_reports_are_refused(tmp_path):
    out = _folder(tmp_path / "a", "debate", [_f("x", True)], {"m": "m"})
    prov = json.loads((out / "provenance.json").read_text())
    write_json(out / "provenance.json", {**prov, "socsim_version": "0.0.1"})
    with pytest.raises(sc.ScorecardError, match="another socsim version"):
        sc.read_sources([str(tmp_path / "a")])
    write_json(out / "provenance.json", prov)
    old = pd.read_parquet(out / "findings.parquet").drop(columns=["ci_low", "ci_high"])
    old.to_parquet(out / "findings.parquet")
    with pytest.raises(sc.ScorecardError, match="lack ci_low, ci_high"):
        sc.read_sources([str(tmp_path / "a")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(sc.ScorecardError, match="no report folder"):
        sc.read_sources([str(tmp_path / "empty")])


def test_parts_and_pooled_findings_give_way_to_the_whole_claim_per_model(tmp_path):
    findings = [
        _f("strategies lower toxicity: Rules [all models]", True),
        _f("strategies lower toxicity [all models]", True),
        _f("strategies lower toxicity: Rules [m1]", True),
        _f("strategies lower toxicity [m1]", None, "p = 0.2"),
        _f("strategies lower toxicity [m2]", True),
    ]
    _folder(tmp_path / "r", "facilitation", findings, {"m1": "a", "m2": "b"})
    long, cols = sc.scorecard(sc.read_sources([str(tmp_path / "r")]))
    assert set(long["claim"]) == {"strategies lower toxicity"}
    assert dict(zip(long["model"], long["verdict"], strict=True)) == {"m1": "inconclusive", "m2": "holds"}


def test_the_written_scorecard_names_every_report_and_draws_the_grid(tmp_path):
    _folder(tmp_path / "run", "coherence", [_f("Test 1 (planted)", True), _f("Test 1 (smollm2-135m)", None)], TWO)
    text = sc.main([str(tmp_path / "run")], tmp_path / "out")
    assert "planted · generated: 1 holds" in text
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert [r["path"] for r in prov["reports"]] == [str(tmp_path / "run" / "coherence" / "analysis")]
    table = (tmp_path / "out" / "scorecard_table.md").read_text()
    assert "planted · generated: control (planted effects, not a language model)" in table
    assert (tmp_path / "out" / "scorecard.png").stat().st_size > 10_000


def test_the_scorecard_is_the_default_targets_last_stage_in_snakemake_and_dvc():
    params = load(["params.yaml"])
    rule = next(r for r in workflow.rules(params) if r["name"] == workflow.SCORECARD_RULE)
    assert rule["input"]["reports"] == workflow.scorecard_inputs(params)
    assert {f"results/{s}/analysis" for s in sc.study_names()} <= set(rule["input"]["reports"])
    assert workflow.targets(params)[-1] == workflow.SCORECARD
    stage = workflow.dvc_stages(params)[workflow.SCORECARD_RULE]
    assert stage["outs"] == [workflow.SCORECARD] and set(rule["input"]["reports"]) <= set(stage["deps"])
