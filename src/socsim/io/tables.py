"""A table as CSV, Markdown and LaTeX from one DataFrame (values shown as they are)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from socsim.io.parquet import atomic_write_bytes


def tex_escape(s: str) -> str:
    """Text as LaTeX: its special characters escaped (and ± as math)."""
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("%", r"\%"),
        ("&", r"\&"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("±", r"$\pm$"),
    ):
        s = s.replace(a, b)
    return s


def write(
    df: pd.DataFrame,
    out_dir: str | Path,
    name: str,
    title: str,
    notes: Sequence[str] = (),
    shown: pd.DataFrame | None = None,
) -> None:
    """`<name>.csv` (the values), `<name>.md` and `<name>.tex` (the cells of `shown`, default the
    values, as text; notes below)."""
    out_dir = Path(out_dir)
    atomic_write_bytes(out_dir / f"{name}.csv", df.to_csv(index=False, float_format="%.6g").encode())
    df = df if shown is None else shown
    cells = df.astype(object).map(
        lambda v: (
            "n/a"
            if v is None or (isinstance(v, float) and math.isnan(v))
            else f"{v:.4g}"
            if isinstance(v, float)
            else str(v)
        )
    )
    md = [f"# {title}", "", "| " + " | ".join(map(str, df.columns)) + " |", "|---" * len(df.columns) + "|"]
    md += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in cells.itertuples(index=False)]
    md += ["", *(f"- {n}" for n in notes)]
    tex = [
        f"% {title}",
        r"\begin{tabular}{" + "l" * len(df.columns) + "}",
        r"\hline",
        " & ".join(tex_escape(str(c)) for c in df.columns) + r" \\",
        r"\hline",
    ]
    tex += [" & ".join(tex_escape(c) for c in row) + r" \\" for row in cells.itertuples(index=False)]
    tex += [r"\hline", r"\end{tabular}", *(f"% {n}" for n in notes)]
    atomic_write_bytes(out_dir / f"{name}.md", ("\n".join(md) + "\n").encode())
    atomic_write_bytes(out_dir / f"{name}.tex", ("\n".join(tex) + "\n").encode())
