"""The paper params planned: their coherence grid (960 agents per cell, 2 million planned calls),
facilitation's 144 discussions (their echo check compares every intervention with the comments before it)
and opinion dynamics' 360 simulations of T = 100 take minutes to plan, so they are cut here (every model,
strategy, world and topic stays; in full in docs/benchmarks.md). DEBATE's data come from the Hub: the fixture has the
same layout. Still 30 s of planning: in the slow lane (the other shipped params: tests/unit/contract/test_plan.py)."""

from __future__ import annotations

import pytest

from support.plans import check_plan
from support.project import ROOT

pytestmark = pytest.mark.slow


def test_the_paper_params_plan_without_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    overrides = [
        "coherence.agents_per_cell=4",
        "facilitation.discussions_per_cell=2",
        "facilitation.ablations.discussions=2",
        "opinion_dynamics.steps=10",
        "debate.data.source=fixture",
    ]
    check_plan(["params.yaml", "params.paper.yaml"], overrides, tmp_path, capsys)
