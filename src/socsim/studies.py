"""The registry: the one list of studies. The CLI, the Snakemake rules and dvc.yaml are built from it.

Adding a study: write its package (with a `STUDY` in its `stages` module), its data/<study>/ folder,
its params section with the schema fragment workflow/schemas/<study>.schema.yaml, its tests, and
one line below.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from socsim.stages import Stage, Study

STUDY_MODULES = (
    "socsim.facilitation.stages",
    "socsim.coherence.stages",
    "socsim.opinion_dynamics.stages",
    "socsim.debate.stages",
)


def all_studies() -> list[Study]:
    return [importlib.import_module(m).STUDY for m in STUDY_MODULES]


def study(name: str) -> Study:
    for s in all_studies():
        if s.name == name:
            return s
    raise KeyError(f"no study {name!r} (studies: {', '.join(s.name for s in all_studies())})")


def all_stages(params: Mapping[str, Any] | None = None) -> list[tuple[Study, Stage]]:
    """Every registered stage; with `params`, those of a run on them (Stage.when)."""
    return [(s, st) for s in all_studies() for st in (s.stages if params is None else s.active(params))]
