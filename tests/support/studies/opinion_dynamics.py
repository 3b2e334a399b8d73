"""The opinion-dynamics verdict tests' shared helpers (issue 34): the paper's numbers, the level and the
nominal rate of a claim read in its direction, the three bias levels, the scope of od_synthetic's rows,
the replicate-noise bound (`_at_most`) and the findings per scope (`_findings`), for the small designs
(tests/studies/opinion_dynamics/test_od_verdicts.py) and the paper-shaped ones
(tests/real/studies/opinion_dynamics)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from scipy import stats

from socsim.io import vs_paper
from socsim.io.report import Finding
from support.project import ROOT
from support.studies.od_synthetic import findings

PAPER = vs_paper.read_paper(ROOT / "data" / "opinion_dynamics" / "paper.yaml")
ALPHA = 0.05
NOMINAL = ALPHA / 2  # a two-sided test at alpha, read in its claimed direction
THREE = ["none", "weak", "strong"]
KEY = ("m", "complete", "uniform", "cumulative")


def _at_most(count: int, reps: int, rate: float = NOMINAL) -> bool:
    """`count` of `reps` is within replicate noise of a rate at most `rate` (binomial tail >= 0.001)."""
    return bool(stats.binom.sf(count - 1, reps, rate) >= 0.001)


def _findings(ps: pd.DataFrame) -> dict[tuple[Any, ...], dict[str, Finding]]:
    return findings(ps, PAPER, alpha=ALPHA)
