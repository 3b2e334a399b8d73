"""What a stage left behind: its metrics JSON, the rows of its call cache."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path


def read_metrics(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def cache_rows(cache_path: Path) -> int:
    """The model calls in a call cache (0: no cache yet, or no table yet)."""
    if not Path(cache_path).exists():
        return 0
    conn = sqlite3.connect(str(cache_path), timeout=30)
    try:
        return conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()
