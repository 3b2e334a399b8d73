"""The one table writer: a DataFrame as Parquet (the canonical form: figures and downstream code
read it), CSV, Markdown and LaTeX (for people). Values are written as they are; the text forms show
the cells of `shown` when given (formatted numbers, flags in place of stars) and notes below."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from socsim.io.parquet import atomic_write_bytes, read_table


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
        ("×", r"$\times$"),
    ):
        s = s.replace(a, b)
    return s


def _arrow(df: pd.DataFrame) -> pa.Table:
    """The frame as an Arrow table without pandas' metadata (the bytes depend only on the values).
    An object column of mixed types (numbers and words) is written as text."""
    df = df.reset_index(drop=True)
    df.attrs = {}  # pandas would store them as metadata: the values alone make the file
    try:
        table = pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        df = df.copy()
        for c in df.columns:
            if df[c].dtype == object:
                df[c] = df[c].map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
        table = pa.Table.from_pandas(df, preserve_index=False)
    return table.replace_schema_metadata(None)


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(_arrow(df), sink, compression="zstd")
    atomic_write_bytes(path, sink.getvalue().to_pybytes())


def read(out_dir: str | Path, name: str) -> pd.DataFrame:
    """A table written by `write`, from its Parquet form."""
    path = Path(out_dir) / f"{name}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"table not found: {path}")
    return read_table(path).to_pandas()


def cell(v: object, fmt: str = ".4g") -> str:
    """A value as a table cell: n/a for missing, numbers by `fmt`."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float):
        return format(v, fmt)
    return str(v)


def write(
    df: pd.DataFrame,
    out_dir: str | Path,
    name: str,
    title: str,
    notes: Sequence[str] = (),
    shown: pd.DataFrame | None = None,
    markdown: str | None = None,
    latex: str | None = None,
    text: bool = True,
) -> None:
    """`<name>.parquet` and `<name>.csv` (the values), `<name>.md` and `<name>.tex` (the cells of
    `shown`, default the values, as text; notes below), or the given `markdown` / `latex` text.
    `text=False`: the values only (Parquet and CSV), for data no one reads as a table (plot tables)."""
    out_dir = Path(out_dir)
    write_parquet(df, out_dir / f"{name}.parquet")
    atomic_write_bytes(out_dir / f"{name}.csv", df.to_csv(index=False, float_format="%.6g").encode())
    if not text:
        return
    df = df if shown is None else shown
    cells = df.astype(object).map(cell)
    if markdown is None:
        md = [f"# {title}", "", "| " + " | ".join(map(str, df.columns)) + " |", "|---" * len(df.columns) + "|"]
        md += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in cells.itertuples(index=False)]
        md += ["", *(f"- {n}" for n in notes)]
        markdown = "\n".join(md) + "\n"
    if latex is None:
        tex = [
            f"% {title}",
            r"\begin{tabular}{" + "l" * len(df.columns) + "}",
            r"\hline",
            " & ".join(tex_escape(str(c)) for c in df.columns) + r" \\",
            r"\hline",
        ]
        tex += [" & ".join(tex_escape(c) for c in row) + r" \\" for row in cells.itertuples(index=False)]
        tex += [r"\hline", r"\end{tabular}", *(f"% {n}" for n in notes)]
        latex = "\n".join(tex) + "\n"
    atomic_write_bytes(out_dir / f"{name}.md", markdown.encode())
    atomic_write_bytes(out_dir / f"{name}.tex", latex.encode())
