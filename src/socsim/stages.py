"""The registry of pipeline stages: one source of truth for the CLI, Snakemake and DVC.

Each stage names its inputs, outputs, metrics file and the params keys it reads. The CLI
builds `socsim <study> <stage> --help` from it, the Snakemake rules take their input/output/
params/shell from it (workflow/rules/common.smk), and `socsim dvc export` writes dvc.yaml
from it; tests/test_workflow.py proves the three agree.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Callable

PARAMS_FILE = "params.yaml"


@dataclass(frozen=True)
class Stage:
    study: str
    name: str
    summary: str
    run: Callable  # run(ctx: StageContext) -> None
    inputs: dict[str, str] = field(default_factory=dict)  # CLI name -> default path
    outputs: dict[str, str] = field(default_factory=dict)  # CLI name -> default path (Parquet etc.)
    metrics: str | None = None  # metrics JSON path (DVC metrics, not cached)
    params: tuple[str, ...] = ()  # dotted params keys the stage reads
    directories: tuple[str, ...] = ()  # names of outputs that are directories
    uses_llm: bool = False

    @property
    def rule_name(self) -> str:
        return f"{self.study}_{self.name}"

    def all_outputs(self) -> dict[str, str]:
        outs = dict(self.outputs)
        if self.metrics:
            outs["metrics"] = self.metrics
        return outs

    def command(self, inputs: dict[str, str] | None = None, outputs: dict[str, str] | None = None,
                params_files: tuple[str, ...] = (PARAMS_FILE,)) -> str:
        """The shell command that runs this stage on the given paths."""
        inputs = inputs or self.inputs
        outputs = outputs or self.all_outputs()
        parts = ["socsim", self.study, self.name]
        for pf in params_files:
            parts += ["--params", pf]
        for name, path in {**inputs, **outputs}.items():
            parts += ["--" + name.replace("_", "-"), path]
        return " ".join(shlex.quote(p) for p in parts)


_REGISTRY: dict[tuple[str, str], Stage] = {}


def register(stage: Stage) -> Stage:
    key = (stage.study, stage.name)
    if key in _REGISTRY:
        raise ValueError(f"stage {key} registered twice")
    _REGISTRY[key] = stage
    return stage


def _load_studies() -> None:
    # Importing a study's package registers its stages.
    import socsim.coherence.stages  # noqa: F401
    import socsim.facilitation.stages  # noqa: F401


def all_stages() -> list[Stage]:
    _load_studies()
    return list(_REGISTRY.values())


def get(study: str, name: str) -> Stage:
    _load_studies()
    try:
        return _REGISTRY[(study, name)]
    except KeyError:
        raise KeyError(f"no stage {study} {name}") from None


def studies() -> dict[str, list[Stage]]:
    out: dict[str, list[Stage]] = {}
    for s in all_stages():
        out.setdefault(s.study, []).append(s)
    return out
