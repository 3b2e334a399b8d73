"""Our numbers beside the paper's: `vs_paper.parquet` (canonical), `.csv`, `.md` and `.tex`.

Each study ships the paper's reported numbers as data (`data/<study>/paper.yaml`) and builds a
list of comparison rows; this module computes the difference and writes the table (one place for
every study). Per row:

- `finding_holds`: whether the paper's qualitative finding holds in our run, by the one verdict
  rule (socsim.stats.verdict): "yes", "no (...)", "inconclusive (...)", or the row's own
  degeneracy flag ("degenerate input: <why>"); "n/a" when our run cannot compute it.
- `comparable`: "yes", or "no: <what differs in design>" (model, steps, encoder, data source,
  fixture data; the notes below the table say how) or "no: ours is an input of the run". A row that
  is not comparable gives no verdict of agreement: its `finding_holds` is about our run only, and its
  difference is not a gap to close. On the paper's own data (`own_data`: its released data
  re-analysed) the design differences are the data's from the paper's text, not a run's: rows say
  "yes: the paper's own data (they differ from its text: <what>)" and the notes "The paper's data
  differ from its text: ...".
- `flags`: the degeneracy flags of this row's own inputs (never the first flag of the run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from socsim.io import tables
from socsim.stats import degeneracy as dg
from socsim.stats.verdict import Verdict

COLUMNS = ["quantity", "ours", "paper", "difference", "finding", "finding_holds", "comparable", "flags", "note"]
SHOWN = ["Quantity", "Ours", "Paper", "Difference", "Finding", "Holds?", "Comparable?", "Flags", "Note"]


@dataclass
class Row:
    quantity: str  # e.g. "Table 2: Moderation Game x time"
    ours: float | None
    paper: float | None
    finding: str = ""  # the paper's qualitative claim this number supports, if any
    holds: bool | None = None  # whether that claim holds in our run (None: cannot tell); see `verdict`
    degenerate: str | None = None  # a degeneracy message: replaces the verdict
    note: str = ""  # why n/a, or anything a reader needs
    verdict: Verdict | None = None  # the claim's verdict by the one rule (preferred over `holds`)
    flags: Sequence[dg.Flag] = field(default_factory=list)  # this row's own inputs' flags
    design: Sequence[str] | None = None  # design differences from the paper (None: the report's)
    is_input: bool = False  # "ours" is an input of the run (e.g. the uniform start), not a result


def read_paper(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"paper reference values not found: {path}")
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def differences(ours: dict[str, Any], paper: dict[str, Any]) -> list[str]:
    """Design differences, in words: each key whose values differ, e.g. "model: ours smollm2-135m,
    paper gpt-4o-mini". Values may be lists (shown joined); a key the paper does not state is skipped."""

    def shown(v: Any) -> str:
        return ", ".join(map(str, v)) if isinstance(v, list | tuple) else str(v)

    return [
        f"{k}: ours {shown(ours[k])}, paper {shown(paper[k])}"
        for k in ours
        if paper.get(k) is not None and shown(ours[k]) != shown(paper[k])
    ]


def _num(x: Any) -> float | None:
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _holds(r: Row) -> str:
    if r.flags:
        return r.flags[0].message
    if r.degenerate:
        return r.degenerate
    if r.verdict is not None:
        return r.verdict.label
    if not r.finding:
        return ""
    return "n/a" if r.holds is None else "yes" if r.holds else "no"


def _comparable(r: Row, design: Sequence[str], own_data: bool) -> str:
    diff = ", ".join(d.split(":")[0] for d in (design if r.design is None else r.design))
    if r.is_input:
        return "no: ours is an input of the run"
    if own_data:
        return "yes: the paper's own data" + (f" (they differ from its text: {diff})" if diff else "")
    return f"no: {diff}" if diff else "yes"


def table(rows: list[Row], design: Sequence[str] = (), own_data: bool = False) -> pd.DataFrame:
    """The rows as a table. `own_data`: the data are the paper's own, so `design` lists how they
    differ from its text and the rows are comparable (module docstring)."""
    out = []
    for r in rows:
        ours, paper = _num(r.ours), _num(r.paper)
        comparable = _comparable(r, design, own_data)
        out.append(
            {
                "quantity": r.quantity,
                "ours": ours,
                "paper": paper,
                "difference": None if ours is None or paper is None else ours - paper,
                "finding": r.finding,
                "finding_holds": _holds(r),
                "comparable": comparable,
                "flags": "; ".join(f.message for f in r.flags),
                "note": r.note,
            }
        )
    return pd.DataFrame(out, columns=COLUMNS).astype({c: "float64" for c in ("ours", "paper", "difference")})


def write(
    out_dir: str | Path, rows: list[Row], title: str, design: Sequence[str] = (), own_data: bool = False
) -> pd.DataFrame:
    """Write `vs_paper.*` into `out_dir` (socsim.io.tables); returns the table. `design`: the run's
    design differences from the paper, for rows that do not state their own; `own_data`: the data
    are the paper's own, and `design` says how they differ from its text."""
    df = table(rows, design, own_data)
    shown = df.astype(object).copy()
    for c in ("ours", "paper", "difference"):
        shown[c] = [tables.cell(v, ".3f") for v in df[c]]
    shown.columns = SHOWN
    own = [d for r in rows for d in (r.design or []) if d not in design]
    lead = "The paper's data differ from its text" if own_data else "Design differs from the paper"
    notes = [f"{lead}: {d}" for d in [*design, *dict.fromkeys(own)]]
    tables.write(df, out_dir, "vs_paper", title, notes, shown)
    return df
