"""Where the opinion-dynamics analysis notes a flag on the figures: every place a flag's `where` names
that a figure panel reads, declared once. The writers (report: the classifier's flags, each world's,
each simulation's own) record flags on these places, and the reader (plots, through Report.flags_on, the
one way flags reach a panel) asks for the same ones, so a place cannot be spelt one way where a flag is
written and another where it is read.

A panel place starts with `FIGURES`; a simulation's own final-value flags sit on its per_sim row
(`own_place`), which the panels of that simulation read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FIGURES = "figures: "  # how every panel place starts


def main_panels(model: str, world: str | None = None) -> str:
    """Every panel made of a model's main runs of a world setting (None: the paper's world, whose flag
    also reaches Table 1's panels): where its main ratings' classifier flag is noted."""
    if world is not None:
        return f"{FIGURES}final_by_topic_{model}_* ({world} world)"
    return (
        f"{FIGURES}trajectories_{model}_*, final_distribution_{model}_*, final_by_topic_{model}_*, "
        f"bias_diversity_{model}"
    )


def final_distribution_panel(k: Mapping[str, Any]) -> str:
    """A Table 1 cell's panel of final opinions (uniform start: the final_distribution figures)."""
    m, top, mem = k["model"], k["topology"], k["memory"]
    return f"{FIGURES}final_distribution_{m}_{mem}_{top} (panel {k['framing']}, {k['bias']})"


def cell_panels(k: Mapping[str, Any]) -> list[str]:
    """The panels made of one Table 1 cell's final values: its final_distribution panel (uniform start)
    and its model's bias_diversity figure."""
    return [*([final_distribution_panel(k)] if k["init"] == "uniform" else []), bias_diversity(k["model"])]


def bias_diversity(model: str) -> str:
    """A model's B and D panels by condition."""
    return f"{FIGURES}bias_diversity_{model}"


def control_panels_of(model: str, condition: str) -> str:
    """A control's panels: its rows of the controls figures and its lines in bias_diversity."""
    return f"{FIGURES}controls_{model}_* ({condition} rows), bias_diversity_{model} ({condition} lines)"


def own_place(sim_id: object) -> str:
    """Where a simulation's own final-value flags sit (local flags of the report: its per_sim row), read by
    its trajectory and final_by_topic panels."""
    return f"per_sim ({sim_id}: final_flags)"
