"""The registry: the one list of studies. The CLI, the Snakemake rules and dvc.yaml are built from it.

Adding a study: write its package (with a `STUDY` in its `stages` module), its data/<study>/ folder,
its params section with the schema fragment workflow/schemas/<study>.schema.yaml, its tests, and
one line below.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from socsim import models
from socsim.config import ParamsError
from socsim.models import ModelSpec
from socsim.stages import ParamsView, Stage, Study

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


def model_references(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every model name the registered stages would use on these params -> the stages that use it."""
    out: dict[str, list[str]] = {}
    for study, st in all_stages(params):
        if st.models is None:
            continue
        view = ParamsView(params, st.declared, st.rule_name)
        for name, where in st.models(view).items():
            out.setdefault(name, []).append(f"{study.name}.{st.name} ({where})")
    return out


def check_models(params: Mapping[str, Any]) -> dict[str, ModelSpec]:
    """Resolve every model the stages use (unknown names, incomplete entries: one error listing them all)."""
    problems, specs = [], {}
    for name, users in sorted(model_references(params).items()):
        try:
            specs[name] = models.resolve(params, name, users[0].split(" (")[1].rstrip(")"))
        except ParamsError as exc:
            problems.append(f"{exc} [used by {', '.join(users)}]")
    if problems:
        raise ParamsError("the models registry does not resolve:\n  " + "\n  ".join(problems))
    return specs
