"""Our numbers beside the paper's: `vs_paper.csv` and `vs_paper.md` for every study.

Each study ships the paper's reported numbers as data (`data/<study>/paper.yaml`) and builds a
list of comparison rows; this module computes the difference and writes both files. A row says
whether the paper's qualitative finding holds in our run: "yes", "no", "n/a" (our run cannot
compute it, with the reason) or "degenerate input: <why>" (the inputs carry no information).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from socsim.io.parquet import atomic_write_bytes

COLUMNS = ["quantity", "ours", "paper", "difference", "finding", "finding_holds", "note"]


@dataclass
class Row:
    quantity: str  # e.g. "Table 2: Moderation Game x time"
    ours: float | None
    paper: float | None
    finding: str = ""  # the paper's qualitative claim this number supports, if any
    holds: bool | None = None  # whether that claim holds in our run (None: cannot tell)
    degenerate: str | None = None  # a degeneracy message: replaces the verdict
    note: str = ""  # why n/a, or anything a reader needs


def read_paper(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"paper reference values not found: {path}")
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def _num(x: Any) -> float | None:
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def table(rows: list[Row]) -> pd.DataFrame:
    out = []
    for r in rows:
        ours, paper = _num(r.ours), _num(r.paper)
        if r.degenerate:
            holds = r.degenerate
        elif not r.finding:
            holds = ""
        elif r.holds is None:
            holds = "n/a"
        else:
            holds = "yes" if r.holds else "no"
        out.append(
            {
                "quantity": r.quantity,
                "ours": ours,
                "paper": paper,
                "difference": None if ours is None or paper is None else ours - paper,
                "finding": r.finding,
                "finding_holds": holds,
                "note": r.note,
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def _fmt(x: object) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def markdown(df: pd.DataFrame, title: str) -> str:
    lines = [
        f"# {title}",
        "",
        "| Quantity | Ours | Paper | Difference | Finding | Holds? | Note |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in df.itertuples(index=False):
        cells = [r.quantity, _fmt(r.ours), _fmt(r.paper), _fmt(r.difference), r.finding, r.finding_holds, r.note]
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write(out_dir: str | Path, rows: list[Row], title: str) -> pd.DataFrame:
    """Write `vs_paper.csv` and `vs_paper.md` into `out_dir`; returns the table."""
    df = table(rows)
    out_dir = Path(out_dir)
    atomic_write_bytes(out_dir / "vs_paper.csv", df.to_csv(index=False, float_format="%.6g").encode())
    atomic_write_bytes(out_dir / "vs_paper.md", markdown(df, title).encode())
    return df
