"""DEBATE's figures as a reader sees them (issue 42, "figure nits"): Fig. 2 as effect sizes lists in its legend
only the bars some panel draws (a run whose own d_z are all n/a draws only the paper's)."""

from __future__ import annotations

import pandas as pd
import pytest

from socsim.debate import figures
from socsim.io.report import Panel

NAN = float("nan")


@pytest.mark.parametrize(("ours", "labels"), [(NAN, ["paper"]), (0.4, ["ours", "paper"])])
def test_fig2_effect_sizes_legend_lists_only_what_is_drawn(tmp_path, monkeypatch, ours, labels):
    drawn = []
    monkeypatch.setattr(figures, "save", lambda fig, out, name: drawn.append(fig))
    data = pd.DataFrame({"d_z": [ours] * 3, "paper_d_z": [0.5, 0.2, 0.3]})
    plot = {q: Panel(q, data, []) for q in ("tweet stance", "opinion", "tweet stance (all)", "opinion (all)")}
    figures.fig2_effect_sizes(plot, tmp_path)
    [fig] = drawn
    assert [t.get_text() for legend in fig.legends for t in legend.get_texts()] == labels
