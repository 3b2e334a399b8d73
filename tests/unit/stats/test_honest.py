"""Degeneracy flags, the side-by-side table with the paper, strict JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from socsim.io import vs_paper
from socsim.io.parquet import write_json
from socsim.stats import degeneracy as dg


def test_one_value_flags_at_the_threshold_and_not_below():
    assert dg.one_value([1] * 9 + [2], "prefs") is not None  # 90 %
    assert dg.one_value([1] * 8 + [2, 3], "prefs") is None  # 80 %
    f = dg.one_value([3.0] * 19 + [None, 1.0, float("nan")], "toxicity")
    assert f.message == "degenerate input: toxicity: 95% of 20 answers are 3 (threshold 90%)"
    assert dg.one_value([], "judge").reason == "no usable answers"


def test_near_constant_and_calibration():
    assert dg.near_constant([2.5, 2.5, 2.5], "x").reason == "constant: all 3 values are 2.5"
    assert dg.near_constant([1.0, 1.0 + 1e-9], "x") is not None  # numerically zero variance
    assert dg.near_constant([1.0, 1.001], "x") is None
    assert dg.near_constant(np.random.default_rng(0).normal(size=50), "x") is None
    # too few units is the verdict rule's ("inconclusive (n = 2 discussions, needs 3)"), never a flag
    assert not hasattr(dg, "too_few")
    # a judge that answers 1 to every calibration example is flagged; one within 1 point is not
    f = dg.miscalibrated([1, 2, 3, 4, 5], [1, 1, 1, 1, 1], "judge")
    assert "scores its calibration examples 1, 1, 1, 1, 1 (expected 1, 2, 3, 4, 5)" in f.reason
    assert dg.miscalibrated([1, 2, 3, 4, 5], [1, 3, 3, 5, 5], "judge") is None
    assert "mean error 2.60" in dg.miscalibrated([1, 2, 3, 4, 5], [5, 4, 3, 1, 1], "judge").reason
    assert dg.miscalibrated([1, 5], [None, None], "judge").reason == "no calibration example answered"


def test_collect_and_verdict():
    a, b = dg.Flag("a", "why"), dg.Flag("b", "why")
    flags = dg.collect(None, a, [None, b, a])
    assert flags == [a, b]
    assert dg.verdict(flags, "pass") == "degenerate input: a: why"
    assert dg.verdict([], "pass") == "pass"
    assert dg.as_json([a]) == [{"scope": "a", "reason": "why", "message": "degenerate input: a: why"}]


def test_vs_paper_table_and_files(tmp_path):
    rows = [
        vs_paper.Row("coef", 0.25, 0.5, "negative", holds=False),
        vs_paper.Row("r", float("nan"), -0.3, "r < 0", note="too few"),
        vs_paper.Row("ratio", 1.0, None),
        vs_paper.Row("tests", 0.1, 0.2, "passes", holds=True, degenerate="degenerate input: judge: constant"),
    ]
    df = vs_paper.write(tmp_path, rows, "Study vs paper")
    assert list(df.columns) == vs_paper.COLUMNS
    assert df.loc[0, "difference"] == pytest.approx(-0.25)
    assert df["finding_holds"].tolist() == ["no", "n/a", "", "degenerate input: judge: constant"]
    assert math.isnan(df.loc[1, "difference"]) and math.isnan(df.loc[1, "ours"])
    back = pd.read_csv(tmp_path / "vs_paper.csv")
    assert back["quantity"].tolist() == ["coef", "r", "ratio", "tests"]
    md = (tmp_path / "vs_paper.md").read_text()
    assert "| coef | 0.250 | 0.500 | -0.250 | negative | no |" in md and "| r | n/a | -0.300 | n/a |" in md


def test_write_json_is_strict(tmp_path):
    write_json(
        tmp_path / "x.json",
        {"a": float("nan"), "b": [np.float64("-inf"), np.int64(3), 1.5], "c": {"d": np.float32(2.5), 4: True}},
    )
    text = (tmp_path / "x.json").read_text()
    assert "NaN" not in text and "Infinity" not in text

    def strict(token):
        raise ValueError(token)

    assert json.loads(text, parse_constant=strict) == {"a": None, "b": [None, 3, 1.5], "c": {"4": True, "d": 2.5}}
