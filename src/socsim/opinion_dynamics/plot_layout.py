"""How the opinion-dynamics plot tables name their panels (shared by the analysis that writes them and
the figures that draw them): a plot table holds every figure of its kind (`FIGURES`), and a panel's
name is `<figure file>|<figure title>|<column>|<row>`, the panels of a figure written row by row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, TypeVar

SEP = "|"
FIGURES = ("trajectories", "controls", "final_distribution", "final_by_topic", "bias_diversity")
P = TypeVar("P")


class Where(NamedTuple):
    figure: str  # the file name, e.g. "trajectories_m_fire_cumulative_uniform_complete"
    title: str  # what the figure's title names, e.g. "m / fire / cumulative / uniform / complete"
    column: str
    row: str


def panel_name(figure: str, title: str, column: str, row: str) -> str:
    return SEP.join((figure, title, column, row))


def by_figure(panels: Mapping[str, P]) -> dict[str, list[tuple[Where, P]]]:
    """The panels of a plot table grouped by figure, each with where it sits, in the order written."""
    out: dict[str, list[tuple[Where, P]]] = {}
    for name, p in panels.items():
        w = Where(*name.split(SEP, 3))
        out.setdefault(w.figure, []).append((w, p))
    return out
