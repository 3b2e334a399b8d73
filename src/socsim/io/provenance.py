"""Provenance recorded in every artifact: params read (values + hash), model, seed, versions."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

import socsim
from socsim.config import params_hash


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the source tree socsim runs from, when it is a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(socsim.__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def provenance(
    stage: str, params_values: dict[str, Any], seed: int | None, model: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "stage": stage,
        "params": params_values,
        "params_hash": params_hash(params_values),
        "seed": seed,
        "model": model,
        "socsim_version": socsim.__version__,
        "git_commit": git_commit(),
    }
