"""Opinion dynamics' figures as a reader sees them, from the rendered figure (issue 42, "figure nits"): the B
and D figure's legends list only what their panel draws."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import Container
from matplotlib.figure import Figure

from socsim.io.figures import panels
from socsim.io.report import Panel, plot_table
from socsim.opinion_dynamics import figures
from socsim.opinion_dynamics.plot_layout import panel_name

NAN = float("nan")


def _panel(col: str, title: str, controls: dict[str, float]) -> Panel:
    """One panel of the B and D figure as the analysis writes it (analysis.plots.bias_diversity_panels): two
    conditions; Deffuant's baseline did not run (its values n/a), DeGroot's did; the controls given."""
    rows = [
        pd.DataFrame({"kind": "llm", "label": ["cum F none", "cum T none"], "x": [0, 1], "value": [0.5, 1.0]}).assign(
            se=0.1
        ),
        pd.DataFrame({"kind": "deffuant", "x": [0, 1], "value": [NAN, NAN]}),
        pd.DataFrame({"kind": "degroot", "x": [0, 1], "value": [0.2, 0.3]}),
        *(
            pd.DataFrame({"kind": ["control"], "label": [name], "value": [v], "k": [k]})
            for k, (name, v) in enumerate(controls.items())
        ),
    ]
    data = pd.concat(rows, ignore_index=True)
    return Panel(panel_name("bias_diversity_m", "m", col, title), data, ["n = 2 topics per cell"])


def _drawn_labels(ax: Axes) -> set[str]:
    """The labels of what the panel draws: its artists (and error bar containers) with a finite point."""

    def finite(artist: object) -> bool:
        if isinstance(artist, Container):
            return any(finite(a) for a in artist if a is not None)
        get = getattr(artist, "get_xydata", None)
        if get is None:
            return True
        xy = np.asarray(get(), dtype=float)
        return bool(np.isfinite(xy).all(axis=1).any())

    return {a.get_label() for a in [*ax.get_children(), *ax.containers] if finite(a)}


def test_bias_diversity_legends_list_only_what_their_panel_draws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A bare control's D (one value) is not drawn, and a baseline that did not run has no values: neither
    may appear in a legend beside the D panel, as they did (one legend of both panels' entries, on D)."""
    plot = [
        _panel("B", "bias B", {"control bare (false)": -0.5, "control roleplay (false)": -0.8}),
        _panel("D", "diversity D", {"control roleplay (false)": 1.4}),
    ]
    kept: list[Figure] = []
    real = figures.save
    monkeypatch.setattr(figures, "save", lambda fig, out, name: kept.append(fig) or real(fig, out, name))
    assert figures.bias_diversity_figure(panels(plot_table(plot)), tmp_path) == ["bias_diversity_m"]
    (fig,) = kept
    FigureCanvasAgg(fig).draw()  # save closed it: its canvas no longer renders
    b, d = fig.axes
    expect = {
        d: {"LLM", "degroot", "control roleplay (false)"},
        b: {"LLM", "degroot", "control bare (false)", "control roleplay (false)"},
    }
    for ax, labels in expect.items():
        legend = ax.get_legend()
        assert legend is not None, ax.get_title()
        listed = [t.get_text() for t in legend.get_texts()]
        assert sorted(listed) == sorted(labels), (ax.get_title(), listed)
        assert set(listed) <= _drawn_labels(ax)
