"""The revised study's synthetic fixture (tests/data/syndisco_revision: the six-model release's format) and
its `socsim facilitation import_revision` command on params.syndisco-revised.yaml, for the fast tests
(tests/studies/facilitation) and the end-to-end ones (tests/real/studies/facilitation)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.project import ROOT, run_socsim

FIXTURE = ROOT / "tests" / "data" / "syndisco_revision"
PARAMS = ("--params", "params.yaml", "--params", "params.syndisco-revised.yaml")


def data_paths(tmp: Path) -> list[str]:
    return [
        "--setups",
        str(tmp / "setups.parquet"),
        "--comments",
        str(tmp / "comments" / "all.parquet"),
        "--scores",
        str(tmp / "scores.parquet"),
        "--human-toxicity",
        str(tmp / "human_toxicity.parquet"),
        "--printed-divergence",
        str(tmp / "printed_divergence.parquet"),
    ]


def import_cmd(tmp: Path, path: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_socsim(
        "facilitation",
        "import_revision",
        *PARAMS,
        "--set",
        f"facilitation.data.path={path}",
        *extra,
        *data_paths(tmp),
        "--metrics",
        str(tmp / "import.json"),
    )
