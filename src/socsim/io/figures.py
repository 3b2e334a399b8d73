"""Writing figures: every figure as PNG and PDF, drawn from the report's plot tables.

A figure reads its plot table (socsim.io.report.plot_table: the rows of each panel, its note and
whether it has data) with `panels`, draws each panel, puts its note on it (`note`) or says why it
has no data (`no_data`). Figures import nothing from an analysis: what a panel says is decided there.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
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
    run leaves no half-written image, and the file gets the umask's mode."""
    out_dir.mkdir(parents=True, exist_ok=True)
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


def note(ax: Axes, lines: Sequence[str], where: str = "top") -> None:
    """A visible note on a panel (flags of its inputs, "n = 2 conversations", "never measured: 60 %
    of agents"), in red: boxed inside the axes at the "top" or "bottom", or "below" them (under the
    x label, for panels such as heatmaps whose every cell holds data)."""
    import textwrap

    lines = [x for x in lines if x]
    if not lines:
        return
    if where == "below":
        text = "\n".join(textwrap.fill(x, 90) for x in lines)
        label = ax.get_xlabel()
        ax.set_xlabel((label + "\n\n" if label else "") + text, color="firebrick", fontsize=7)
        return
    text = "\n".join(textwrap.fill(x, 60) for x in lines)
    y, va = (0.98, "top") if where == "top" else (0.02, "bottom")
    ax.text(
        0.02,
        y,
        text,
        transform=ax.transAxes,
        ha="left",
        va=va,
        fontsize=6.5,
        color="firebrick",
        bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "firebrick", "alpha": 0.9},
        zorder=10,
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
