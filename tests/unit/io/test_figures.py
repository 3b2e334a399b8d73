"""io.figures' panel notes (issue 42, "figure nits"): a note stands below its panel, where it covers nothing
any panel draws, in every layout a figure may choose, and the figure grows so its panels keep their height."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from socsim.io import figures

LONG = "degenerate input: a judge that answers 1 to every question it is asked (threshold 90%); " * 3


@pytest.mark.parametrize("layout", [None, "constrained"])
def test_notes_stand_below_their_panels_and_cover_nothing(tmp_path: Path, layout: str | None):
    """A 2 x 2 grid whose lines cross every panel corner to corner, rotated tick labels, a note of several
    lines on each panel: no note overlaps a panel, a title or another note once saved."""
    fig, axes = plt.subplots(2, 2, figsize=(8, 5), layout=layout)
    height = fig.get_figheight()
    for ax in axes.flat:
        ax.plot([0, 1], [0, 1])
        ax.plot([0, 1], [1, 0])
        ax.set_xticks([0, 0.5, 1], ["zero", "a half", "one"], rotation=45)
        ax.set(title="a panel", xlabel="x")
        figures.note(ax, [LONG, "", "n = 4 conversations"])
    figures.save(fig, tmp_path, "f")
    FigureCanvasAgg(fig).draw()  # save closed it: its canvas no longer renders
    assert fig.get_figheight() > height
    boxes = [t.get_bbox_patch().get_window_extent() for ax in fig.axes for t in ax.texts]
    assert len(boxes) == 4
    for i, box in enumerate(boxes):
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent())
            assert not box.overlaps(ax.title.get_window_extent())
        assert not any(box.overlaps(b) for b in boxes[i + 1 :])
    assert all(b.y1 < ax.get_window_extent().y0 for b, ax in zip(boxes, fig.axes))  # each under its own panel
    text = fig.axes[0].texts[0].get_text()
    assert text.endswith("\nn = 4 conversations") and all(len(x) < 120 for x in text.split("\n"))
