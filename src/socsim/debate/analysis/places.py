"""Where the DEBATE analysis notes a flag: every place a flag's `where` names (socsim.io.report.Flagged,
summary.json's degeneracy_flags, the `flags` table), declared once. The writers (the claims) record each
flag on the places of the numbers it concerns, and the reader (plots, through Report.flags_on, the one way
flags reach a panel) asks for the places of the rows a panel draws, both through these functions, so a
place cannot be spelt one way where a flag is written and another where it is read.

A place is a table's name in the report (the per-model name for Sect. 6: measures.table_name) and its row
or cell; a vs_paper row's place is its quantity.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from socsim.debate.schemas import CHANGE_TESTS, SOURCES

# -- where the writers put each kind of flag ------------------------------------------------------------


def metric_cell(table: str, metric: str, model: Any, mode: Any, ablation: Any) -> str:
    """A metric's cell of one setting's row of Table 3/4 (9/10) or its every-utterance table: the flags
    of that metric's inputs in that setting (stance and on-topic annotators, a missing comparator)."""
    return f"{table}.{metric}[{model} mode {mode} {ablation}]"


def group_level_row(table: str, source: str, quantity: str) -> str:
    """One source's rows of one quantity (s1..s3, o_init, o_final) of Fig. 2's group_level."""
    return f"{table}.{source}.{quantity}"


def change_test(table: str, quantity: str, test: str) -> str:
    """One change test's row of Fig. 2's group_tests or of sect6_model_written."""
    return f"{table}.{quantity}.{test}"


def individual_row(table: str, source: str, outcome: str, predictor: str) -> str:
    """One source's row of Fig. 3's individual_level (its outcome's change against the predictor)."""
    return f"{table}.{source}.{outcome}.{predictor}"


def human_on_topic(topic_set: str) -> str:
    """A topic set's row of the human_on_topic table."""
    return f"human_on_topic[{topic_set}]"


def appendix_h(metric: str) -> str:
    """One metric's tests of Appendix H (appendix_h.json)."""
    return f"appendix_h.{metric}"


def vs_paper(quantity: str) -> str:
    """A vs_paper row, by its quantity."""
    return f"vs_paper: {quantity}"


# -- what each panel shows (the reader) -----------------------------------------------------------------


def fig2_group_panel(table: str, quantities: Iterable[str]) -> list[str]:
    """The places whose flags a Fig. 2 panel notes: the group_level rows of its steps, both sources."""
    qs = list(quantities)
    return [group_level_row(table, source, q) for source in SOURCES for q in qs]


def fig2_effect_panel(table: str, quantity: str) -> list[str]:
    """The places whose flags an effect-size panel notes: the group_tests rows of its quantity."""
    return [change_test(table, quantity, t) for t in CHANGE_TESTS]


def fig3_panel(table: str, outcome: str, predictor: str) -> list[str]:
    """The places whose flags a Fig. 3 panel notes: its individual_level rows, both sources."""
    return [individual_row(table, source, outcome, predictor) for source in SOURCES]


def metrics_panel(table: str, metric: str, settings: Iterable[tuple[Any, Any]]) -> list[str]:
    """The places whose flags a metrics-by-mode panel notes: the metric's cells of Table 3 (9) in each
    (model, mode) of original memory it draws."""
    return [metric_cell(table, metric, model, mode, "original") for model, mode in settings]
