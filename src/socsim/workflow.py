"""The Snakemake rules and the DVC stages of every registered stage, from one description.

workflow/rules/common.smk turns `rules()` into Snakemake rules (a loop with `name:`) and socsim.dvc
turns `dvc_stages()` into dvc.yaml; both come from the study contract, so the two DAGs agree by
construction (tests/test_workflow.py checks it on the real tools).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from socsim import config, studies
from socsim.stages import PARAMS_FILE, SHARD, Stage, Study

ROOT = Path(__file__).resolve().parents[2]


def code_files(st: Stage, root: Path = ROOT) -> list[str]:
    """The .py files of the package code a stage runs (its `code` folders and files)."""
    out: list[str] = []
    for rel in st.code:
        p = root / rel
        out += sorted(str(f.relative_to(root)) for f in (p.rglob("*.py") if p.is_dir() else [p]))
    return out


def _where(study: Study, st: Stage, kind: str, ext: str) -> str:
    return f"{study.results}/{kind}/{st.name}/{SHARD}.{ext}" if st.shards else f"{study.results}/{kind}/{st.name}.{ext}"


def rules(params: Mapping, params_files: tuple[str, ...] = (PARAMS_FILE,), llm_threads: int = 1) -> list[dict]:
    """One plain description per Snakemake rule (sharded stages: one rule with a {shard} wildcard)."""
    out = []
    for study, st in studies.all_stages():
        paths = study.paths(st, params)
        outputs = {}
        for name in study.output_names(st):
            art = study.artifact(st, name)
            outputs[name] = {
                "path": paths[name],
                "dir": art.kind == "dir",
                "pattern": art.pattern,
                "caption": f"../report/{study.name}/{art.report}.rst" if art.report else None,
                "category": study.name,
                "subcategory": st.name,
            }
        out.append(
            {
                "name": st.rule_name,
                "input": {**{n: paths[n] for n in st.inputs}, "code": code_files(st)},
                "output": outputs,
                "params": config.canonical_json(config.subset(params, st.declared)),
                "log": _where(study, st, "logs", "log"),
                "benchmark": _where(study, st, "benchmarks", "tsv"),
                "threads": llm_threads if st.uses_llm else 1,
                "llm_clients": 1 if st.uses_llm else 0,
                "command": command_param(study.command(st, paths, params_files)),
            }
        )
    return out


def command_param(command: str):
    """The command of one job as a Snakemake params function (the shard from the wildcards). The rules
    are made in a loop, so the shell directive, which Snakemake evaluates late, stays a constant
    ("{params.command} > {log} 2>&1") and each rule's command is bound here, when it is made."""
    return lambda wildcards: command.replace(SHARD, wildcards.shard) if SHARD in command else command


def targets(params: Mapping) -> list[str]:
    return [t for study in studies.all_studies() for t in study.targets(params)]


def dvc_stages(params: Mapping) -> dict[str, Any]:
    """dvc.yaml's stages: the same commands, dependencies, params and outputs; a sharded stage is a
    `foreach` over its shard ids (computed from params.yaml when exported)."""
    out: dict[str, Any] = {}
    for study, st in studies.all_stages():
        paths = study.paths(st, params)
        item = "${item}" if st.shards else SHARD

        def sub(s: str, item: str = item) -> str:
            return s.replace(SHARD, item)

        def flat(v: str | list[str]) -> list[str]:
            return [sub(x) for x in ([v] if isinstance(v, str) else v)]

        entry: dict[str, Any] = {"cmd": sub(study.command(st, paths))}
        deps = [d for n in st.inputs for d in flat(paths[n])] + list(st.code)
        entry["deps"] = deps
        entry["params"] = list(st.declared) or None
        entry["outs"] = [d for n in st.outputs for d in flat(paths[n])]
        entry["metrics"] = [{sub(paths["metrics"]): {"cache": False}}]
        entry = {k: v for k, v in entry.items() if v is not None}
        out[st.rule_name] = {"foreach": st.shard_ids(params), "do": entry} if st.shards else entry
    return out
