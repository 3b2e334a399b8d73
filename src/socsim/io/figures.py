"""Writing figures: every figure as PNG and PDF."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from socsim.io.parquet import atomic_write_bytes  # noqa: E402


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
