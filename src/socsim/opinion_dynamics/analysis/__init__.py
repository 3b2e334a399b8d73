"""The opinion-dynamics analysis (paper 002, section 4), split along its seams: `measures` (trajectories,
B and D per simulation and per table cell, the classifier's flags on the ratings and final values that
feed each number), `significance` (the paper's tests), `paper` (the run's design differences from the
paper), `claims` (one judge per paper claim, `CLAIMS`), `places` (the figure panels' places of a flag,
declared once for its writers and the panels that read it), `plots` (what each figure draws, with its
panels' notes and statistics) and `report` (`analyse(inputs) -> Report`, the base report of the paper's
world, `world_report(inputs)`, assembled with the claims)."""

from socsim.opinion_dynamics.analysis.claims import CLAIMS, Evidence, Outside, d_rises
from socsim.opinion_dynamics.analysis.measures import (
    CELL,
    FINAL_SCOPE,
    SimFlags,
    aggregate,
    baseline_table,
    bias_diversity,
    classifier_flags,
    per_sim,
    per_topic,
    show,
    show_per_topic,
    sim_flags,
    trajectories,
)
from socsim.opinion_dynamics.analysis.paper import design, paper_world
from socsim.opinion_dynamics.analysis.report import analyse
from socsim.opinion_dynamics.analysis.significance import anova, anova_rows, paper_tests, tests

__all__ = [
    "CELL",
    "CLAIMS",
    "FINAL_SCOPE",
    "Evidence",
    "Outside",
    "SimFlags",
    "aggregate",
    "analyse",
    "anova",
    "anova_rows",
    "baseline_table",
    "bias_diversity",
    "classifier_flags",
    "d_rises",
    "design",
    "paper_tests",
    "paper_world",
    "per_sim",
    "per_topic",
    "show",
    "show_per_topic",
    "sim_flags",
    "tests",
    "trajectories",
]
