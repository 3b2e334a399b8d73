"""The scorecard's figure: a grid read at a glance, drawn from the scorecard's long table only (socsim.scorecard).

Rows are the findings grouped by study, each with the paper version that states it; the first column is the
paper's own result (in words), then the models by source (the humans' column named by its data, controls last,
marked as controls, each control cell with what it can speak to: planted and powered, planted, or not planted),
each cell coloured by its verdict with its effect and n written in it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from socsim.io import figures as fig_io
from socsim.planted import MODEL_IDS

COLOURS = {
    "holds": "#4daf4a",
    "no": "#e41a1c",
    "inconclusive": "#d9d9d9",
    "degenerate": "#984ea3",
    "not claimed in this version": "#f2e6c9",
    "not run": "#ffffff",
}
PAPER_COLOUR = "#cfe2f3"
ORDER = list(COLOURS)


MARKS = {
    "planted, powered": "[planted, powered]",
    "planted, not powered here": "[planted]",
    "not planted": "[not planted]",
}


def _short(row: pd.Series) -> str:
    mark = MARKS.get(str(row.get("mark") or ""), "")  # a control's cell: what it can speak to
    if row["verdict"] == "not run":
        return "not run"
    if row["verdict"] == "not claimed in this version":
        return "not claimed\nin this\nversion"
    lines = [str(row["verdict"])]
    if pd.notna(row["value"]):
        lines.append(f"{row['value']:.2g}")
    if pd.notna(row["n"]):
        lines.append(f"n={int(row['n'])}")
    return "\n".join([*lines, *([mark] if mark else [])])


def draw(long: pd.DataFrame, cols: pd.DataFrame, out: Path, name: str) -> list[Path]:
    key = ["study", "finding_id", "part"]
    claims = long.drop_duplicates(key)[[*key, "claim", "version", "paper"]].reset_index(drop=True)
    columns = list(cols["column"])
    keyed = long.assign(column=long["model"] + " · " + long["source"]).set_index([*key, "column"])
    grid = np.zeros((len(claims), len(columns) + 1), dtype=int)
    text = [["" for _ in range(len(columns) + 1)] for _ in range(len(claims))]
    for i, c in enumerate(claims.itertuples(index=False)):
        grid[i, 0] = len(ORDER)  # the paper's column
        text[i][0] = textwrap.fill(textwrap.shorten(str(c.paper), 60, placeholder=" ..."), 22)
        for j, col in enumerate(columns, 1):
            row = keyed.loc[(c.study, c.finding_id, c.part, col)]
            row = row.iloc[0] if isinstance(row, pd.DataFrame) else row
            grid[i, j] = ORDER.index(str(row["verdict"]))
            text[i][j] = _short(row)
    columns = ["the paper", *columns]
    width = 5.5 + 1.05 * len(columns)
    height = 1.6 + 0.42 * len(claims)
    fig, ax = plt.subplots(figsize=(width, height))
    colours = ListedColormap([*(COLOURS[v] for v in ORDER), PAPER_COLOUR])
    ax.imshow(grid, cmap=colours, vmin=0, vmax=len(ORDER), aspect="auto")
    for i in range(len(claims)):
        for j in range(len(columns)):
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=5.5 if j else 4.8, linespacing=1.0)
    ax.set_xticks(range(len(columns)))
    labels = ["the paper\n(its own result)"]
    for r in cols.itertuples():
        kind = "null twin" if str(r.identity).startswith(MODEL_IDS["null"]) else "planted"
        label = f"{textwrap.fill(str(r.model), 18)}\n{r.source}" + (f"\n(control: {kind})" if r.control else "")
        labels.append(label)
    ax.set_xticklabels(labels, fontsize=6.5, rotation=0)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(claims)))
    shown = [
        textwrap.fill(textwrap.shorten(f"{c} [{v}]", 116, placeholder=" ..."), 60)
        for c, v in zip(claims["claim"], claims["version"], strict=True)
    ]
    ax.set_yticklabels(shown, fontsize=6, linespacing=1.0)
    ax.set_xticks(np.arange(-0.5, len(columns)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(claims)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    studies = claims["study"].astype(str).to_numpy()
    for study in dict.fromkeys(studies):  # a line above each study's rows, its name beside them on the right
        rows = np.flatnonzero(studies == study)
        if rows[0]:
            ax.axhline(rows[0] - 0.5, color="black", linewidth=1.2)
        middle = (rows[0] + rows[-1]) / 2
        ax.text(len(columns) - 0.4, middle, study, ha="left", va="center", rotation=-90, fontsize=7, weight="bold")
    ax.legend(
        handles=[Patch(facecolor=COLOURS[v], edgecolor="grey", label=v) for v in ORDER],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.01),
        ncol=len(ORDER),
        fontsize=7,
        frameon=False,
    )
    ax.set_title(
        "Scorecard: each paper finding (rows, [the paper version stating it]) on each model and source (columns)",
        fontsize=9,
        pad=30,
    )
    return fig_io.save(fig, out, name)
