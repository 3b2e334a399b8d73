"""Writing figures: every figure as PNG and PDF, drawn from the report's plot tables.

A figure reads its plot table (socsim.io.report.plot_table: the rows of each panel, its note and
whether it has data) with `panels`, draws each panel, puts its note under it (`note`) or says why it
has no data (`no_data`). Figures import nothing from an analysis: what a panel says is decided there.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import Collection  # noqa: E402
from matplotlib.container import Container  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from socsim.io.parquet import atomic_write_bytes  # noqa: E402
from socsim.io.report import PLOT_COLUMNS, Panel  # noqa: E402


def panels(plot: pd.DataFrame) -> dict[str, Panel]:
    """A plot table back as its panels, in the order the analysis wrote them: each panel's rows
    (without the plot columns), its note lines, and why it has no data ("" when it has)."""
    out: dict[str, Panel] = {}
    for name, rows in plot.groupby("panel", sort=False):
        has = bool(rows["has_data"].iloc[0])
        note = rows["note"].iloc[0]
        lines = str(note).split("\n") if isinstance(note, str) and note else []
        said = rows["no_data"].iloc[0] if "no_data" in rows else None
        why = "" if has else said if isinstance(said, str) and said else "no rows"
        data = rows.drop(columns=[c for c in (*PLOT_COLUMNS, "no_data") if c in rows]).reset_index(drop=True)
        out[str(name)] = Panel(str(name), data if has else data.iloc[0:0], lines, why)
    return out


def save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    """Each file rendered in memory, then written atomically (as every artifact): an interrupted
    run leaves no half-written image, and the file gets the umask's mode. A figure that chose no layout
    is laid out by matplotlib's tight layout (which takes every colour bar, unlike constrained layout's on
    a colour bar made before it): it makes room for what stands outside the panels (the notes below them,
    rotated tick labels, the figure's title and x label), so nothing there overlaps a neighbouring panel."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _grow_for_notes(fig)
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("tight")
    paths: list[Path] = []
    for ext in ("png", "pdf"):
        path = out_dir / f"{name}.{ext}"
        buf = io.BytesIO()
        # No creation date in the PDF: re-runs give the same bytes.
        fig.savefig(
            buf, format=ext, dpi=150, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None
        )
        atomic_write_bytes(path, buf.getvalue())
        paths.append(path)
    plt.close(fig)
    return paths


CHAR_WIDTH = 0.6  # a character's width in ems (DejaVu Sans averages about 0.55)
NOTE_FONTSIZE = 6.5
NOTE_GAP = 4  # points between the x axis's labels and the note's box
NOTE_PAD = 0.3  # the box's padding, in font sizes (matplotlib's default)
NOTE_LINE_SPACING = 1.2  # matplotlib's default
NOTE_GID = "socsim-note"  # how save() finds a panel's note


def wrap(text: str, width_pt: float, fontsize: float) -> str:
    """`text` broken into lines of at most `width_pt` points (matplotlib's own wrap breaks at the figure's
    edge, so a long note in one panel ran into the next)."""
    return textwrap.fill(text, width=max(10, int(width_pt / (fontsize * CHAR_WIDTH))))


def wrapped(ax: Axes, text: str, fontsize: float, share: float = 0.9) -> str:
    """`text` broken into lines that fit `share` of the panel's width."""
    return wrap(text, ax.bbox.width / ax.figure.dpi * 72 * share, fontsize)


def _cell_width_pt(ax: Axes, share: float = 0.8) -> float:
    """`share` of the width of the panel's cell in the figure's grid, in points: the panel's width once the
    layout has placed it (its width before is that of matplotlib's default margins)."""
    spec = ax.get_subplotspec()
    cell = (len(spec.colspan) / spec.get_gridspec().ncols) if spec is not None else 1.0
    return ax.figure.bbox.width / ax.figure.dpi * 72 * cell * share


def _under_axis(ax: Axes, renderer: Any) -> Bbox:
    """The panel with its x axis's ticks, tick labels and label, in display coordinates: a note placed at
    its bottom stands under all of them."""
    axis = ax.xaxis.get_tightbbox(renderer) if ax.xaxis.get_visible() else None
    return Bbox.union([ax.bbox, axis]) if axis is not None else ax.bbox


def _note_height(text: Text) -> float:
    """A note's height in inches: its lines, its box's padding and the gap above it."""
    lines = text.get_text().count("\n") + 1
    return (lines * NOTE_FONTSIZE * NOTE_LINE_SPACING + 2 * NOTE_PAD * NOTE_FONTSIZE + NOTE_GAP) / 72


def _grow_for_notes(fig: Figure) -> None:
    """The figure taller by the tallest note of each row of panels, so that the panels keep their height
    once the layout has made room for the notes under them."""
    rows: dict[object, float] = {}
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        row = (id(spec.get_gridspec()), spec.rowspan.start) if spec is not None else id(ax)
        for t in ax.texts:
            if t.get_gid() == NOTE_GID:
                rows[row] = max(rows.get(row, 0.0), _note_height(t))
    if rows:
        fig.set_figheight(fig.get_figheight() + sum(rows.values()))


def note(ax: Axes, lines: Sequence[str]) -> None:
    """A visible note on a panel (flags of its inputs, "n = 2 conversations", "never measured: 60 %
    of agents"), in red, boxed below the panel: under its x axis's tick labels and label, from its left
    edge, each line wrapped to its width. Outside the axes it covers nothing the panel draws, whatever
    the data; the figure's layout makes room for it (`save`)."""
    lines = [x for x in lines if x]
    if not lines:
        return
    ax.annotate(
        "\n".join(wrap(x, _cell_width_pt(ax), NOTE_FONTSIZE) for x in lines),
        xy=(0, 0),
        xycoords=("axes fraction", partial(_under_axis, ax)),  # x: the panel's left edge; y: under its axis
        xytext=(0, -NOTE_GAP),
        textcoords="offset points",
        ha="left",
        va="top",
        fontsize=NOTE_FONTSIZE,
        color="firebrick",
        linespacing=NOTE_LINE_SPACING,
        bbox={"boxstyle": f"round,pad={NOTE_PAD}", "facecolor": "white", "edgecolor": "firebrick", "alpha": 0.9},
        annotation_clip=False,
        gid=NOTE_GID,
    )


def _drawn(artist: Any) -> bool:
    """Whether an artist shows anything: a line or collection with a finite point, a container (error
    bars) with a part that does; other artists (patches, texts) are taken as drawn."""
    if isinstance(artist, Container):
        return any(_drawn(a) for a in artist if a is not None)
    if isinstance(artist, Line2D):
        points = np.asarray(artist.get_xydata(), dtype=float)
    elif isinstance(artist, Collection):
        paths = [p.vertices for p in artist.get_paths()]
        points = np.vstack(paths) if paths else np.empty((0, 2))
    else:
        return True
    return bool(len(points)) and bool(np.isfinite(points).all(axis=1).any())


def legend(ax: Axes, **kwargs: Any) -> None:
    """The panel's legend, of what the panel draws: an artist without a finite point (a line of n/a
    values) is left out; nothing drawn with a label, no legend."""
    entries = [(h, lab) for h, lab in zip(*ax.get_legend_handles_labels()) if _drawn(h)]
    if entries:
        ax.legend(*map(list, zip(*entries)), **kwargs)


def no_data(ax: Axes, why: str) -> None:
    """A panel whose cell has no data: says so in its middle, no axes drawn through it."""
    ax.text(0.5, 0.5, f"no data: {why}", transform=ax.transAxes, ha="center", va="center", fontsize=8, color="gray")
    ax.set_xticks([])
    ax.set_yticks([])
