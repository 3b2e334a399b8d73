"""Coherence's figures as a reader sees them, from the rendered figure (issue 42, "figure nits"): Fig. 5's
flag box covers none of its curves whatever the data, and Fig. 7's title promises its grey band only where
one is drawn. Each figure drawn from the plot table the analysis writes (plot_table, read back by panels),
saved as the figures stage saves it, then rendered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from socsim.coherence import figures
from socsim.coherence.analysis import plots
from socsim.io.figures import panels
from socsim.io.report import Panel, plot_table

FLAG = (
    "degenerate input: coherence preferences ({m}): 92% of 12 answers are 1 (threshold 90%); degenerate input: "
    "coherence judge calibration (j): scores its calibration examples 1, 1, 1, 1, 1 (expected 1, 2, 3, 4, 5)"
)


def _flags_on(*places: str) -> list[str]:
    """Every table flagged, with a long flag (a box of several lines), as in the default run."""
    model = places[0].rsplit("(", 1)[-1].rstrip(")")
    return [FLAG.format(m=model)]


def _drawn(draw: Any, plot: list[Panel], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Figure:
    """The figure `draw` makes of `plot` (through its plot table), saved by the stage's save, then rendered."""
    kept: list[Figure] = []
    real = figures.save
    monkeypatch.setattr(figures, "save", lambda fig, out, name: kept.append(fig) or real(fig, out, name))
    draw(panels(plot_table(plot)), tmp_path)
    (fig,) = kept
    FigureCanvasAgg(fig).draw()  # save closed it: its canvas no longer renders
    return fig


def _suppression(models: tuple[str, ...]) -> pd.DataFrame:
    """Observed falling from 5 to 1 over the gaps, expected rising from 1 to 5: the lines cross every
    corner of the panel."""
    rows = []
    for m in models:
        for panel in plots.SUPPRESSION_PANELS:
            for gap in range(5):
                obs, exp = 5.0 - gap, 1.0 + gap
                rows.append(
                    {"model": m, "panel": panel, "gap": gap, "n": 4, "observed": obs, "expected": exp}
                    | {"observed_lo": obs - 0.2, "observed_hi": obs + 0.2}
                    | {"expected_lo": exp - 0.2, "expected_hi": exp + 0.2}
                )
    return pd.DataFrame(rows)


def _points(fig: Figure) -> np.ndarray:
    """Every plotted point of the figure in display coordinates: its lines' points and its collections'
    vertices (error bars, bands)."""
    out = [np.empty((0, 2))]
    for ax in fig.axes:
        for line in ax.get_lines():
            xy = np.asarray(line.get_xydata(), dtype=float)
            out.append(line.get_transform().transform(xy[np.isfinite(xy).all(axis=1)]))
        for c in ax.collections:
            for path in c.get_paths():
                out.append(c.get_transform().transform(path.vertices))
    return np.vstack(out)


def _boxes(fig: Figure) -> list[Bbox]:
    """The flag boxes (the texts drawn in a box) in display coordinates."""
    return [
        t.get_bbox_patch().get_window_extent()
        for ax in fig.axes
        for t in ax.texts
        if t.get_bbox_patch() is not None and t.get_text()
    ]


@pytest.mark.parametrize("models", [("m",), ("m1", "m2")])
def test_fig5_flag_box_covers_no_curve(tmp_path, monkeypatch, models):
    """The box stands outside every panel (below its axis, in room the layout makes for it): it covers no
    plotted point, no panel and no title of the next row's panels, whatever the data."""
    plot = plots.fig5(_suppression(models), list(models), {}, _flags_on)
    fig = _drawn(figures.fig5_suppression, plot, tmp_path, monkeypatch)
    boxes = _boxes(fig)
    assert len(boxes) == 3 * len(models)
    points = _points(fig)
    assert len(points) > 10 * len(models)
    for box in boxes:
        inside = (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
        assert not inside.any(), points[inside]
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent()), (box, ax.get_title())
            assert not box.overlaps(ax.title.get_window_extent()), ax.get_title()
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1 :])


def _by_pair_contentiousness(levels: dict[int, tuple[float, float]], model: str = "m") -> pd.DataFrame:
    """Two preference pairs at each contentiousness level given (its interval, lo and hi)."""
    rows = [
        {"model": model, "pref_pair": pair, "contentiousness": c, "n": 3, "mean": (lo + hi) / 2}
        | {"boot_mean": (lo + hi) / 2, "lo": lo, "hi": hi}
        for pair in ("1-1", "1-2")
        for c, (lo, hi) in levels.items()
    ]
    return pd.DataFrame(rows)


def _bands(fig: Figure) -> list[PolyCollection]:
    return [c for ax in fig.axes for c in ax.collections if isinstance(c, PolyCollection)]


def test_fig7_title_promises_the_grey_band_only_where_one_is_drawn(tmp_path, monkeypatch):
    """The default run has no neutral (C = 1) topic's interval to draw (one conversation, at C = 3): its
    title promised a gray band that was not there. A run with neutral topics draws the band, one per
    pair, and says what it is; a panel's legend names it where it is drawn."""
    hot = _by_pair_contentiousness({3: (1.0, 1.0)})
    fig = _drawn(figures.fig7_contentiousness, plots.fig7(hot, hot, None, {}, _flags_on), tmp_path, monkeypatch)
    assert not _bands(fig)
    title = fig.get_suptitle()
    assert "gray" not in title and "grey" not in title and "band" not in title, title
    assert "no neutral (C = 1) interval" in title

    neutral = _by_pair_contentiousness({1: (2.0, 3.0), 2: (3.5, 4.5), 3: (4.0, 4.6)})
    fig = _drawn(figures.fig7_contentiousness, plots.fig7(neutral, hot, None, {}, _flags_on), tmp_path, monkeypatch)
    bands = _bands(fig)
    assert len(bands) == 2 and all(b.axes is fig.axes[0] for b in bands)  # the B = 2 panel has no C = 1 rows
    assert "gray band: the neutral (C = 1) topics' interval" in fig.get_suptitle()
    top = bands[0].get_paths()[0].vertices[:, 1]
    assert top.min() == pytest.approx(2.0) and top.max() == pytest.approx(3.0)
    legend = fig.axes[0].get_legend()
    assert legend is not None and "1 (neutral): interval" in [t.get_text() for t in legend.get_texts()]
