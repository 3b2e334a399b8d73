"""The Snakemake rules and the DVC stages of every registered stage, from one description.

workflow/rules/common.smk turns `rules()` into Snakemake rules (a loop with `name:`) and socsim.dvc
turns `dvc_stages()` into dvc.yaml; both come from the study contract, so the two DAGs agree by
construction (tests/pipeline/test_workflow.py checks it on the real tools).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from socsim import config, studies
from socsim.canonical import canonical_json
from socsim.stages import PARAMS_FILE, SHARD, Stage, Study

ROOT = Path(__file__).resolve().parents[2]
# Report captions a study ships (optional): workflow/report/<study>/<report>.rst. Without one, a caption
# is generated from the stage declarations into Snakemake's working folder.
CAPTIONS = Path("workflow") / "report"
GENERATED_CAPTIONS = Path(".snakemake") / "socsim-captions"


def code_files(st: Stage, root: Path = ROOT) -> list[str]:
    """The .py files of the package code a stage runs (its `code` folders and files)."""
    return _code(st.code, root)


def _code(paths: Iterable[str], root: Path = ROOT) -> list[str]:
    out: list[str] = []
    for rel in paths:
        p = root / rel
        out += sorted(str(f.relative_to(root)) for f in (p.rglob("*.py") if p.is_dir() else [p]))
    return out


def _where(study: Study, st: Stage, kind: str, ext: str) -> str:
    return f"{study.results}/{kind}/{st.name}/{SHARD}.{ext}" if st.shards else f"{study.results}/{kind}/{st.name}.{ext}"


def rules(
    params: Mapping[str, Any], params_files: tuple[str, ...] = (PARAMS_FILE,), llm_threads: int = 1
) -> list[dict[str, Any]]:
    """One plain description per Snakemake rule (sharded stages: one rule with a {shard} wildcard)."""
    out: list[dict[str, Any]] = []
    for study, st in studies.all_stages(params):
        paths = study.paths(st, params)
        outputs: dict[str, dict[str, Any]] = {}
        for name in study.output_names(st):
            art = study.artifact(st, name)
            outputs[name] = {
                "path": paths[name],
                "dir": art.kind == "dir",
                "pattern": art.pattern,
                "caption": caption(study, art.report) if art.report else None,
                "category": study.name,
                "subcategory": st.name,
            }
        out.append(
            {
                "name": st.rule_name,
                "message": message(study, st),
                "input": {**{n: paths[n] for n in st.inputs}, "code": code_files(st)},
                "output": outputs,
                "params": canonical_json(rerun_values(st, params)),
                "log": _where(study, st, "logs", "log"),
                "benchmark": _where(study, st, "benchmarks", "tsv"),
                "threads": llm_threads if embedded(st, params) else 1,
                "llm_clients": 1 if st.uses_llm else 0,
                "resources": st.job_resources,
                "command": command_param(study.command(st, paths, params_files)),
            }
        )
    sc = scorecard_inputs(params)
    if sc:
        out.append(
            {
                "name": SCORECARD_RULE,
                "message": "scorecard: every paper finding beside every model that answered (table and figure)",
                "input": {"reports": sc, "code": _code(SCORECARD_CODE)},
                "output": {
                    "scorecard": {
                        "path": SCORECARD,
                        "dir": True,
                        "pattern": "scorecard.png",
                        "caption": None,
                        "category": "scorecard",
                        "subcategory": "scorecard",
                    }
                },
                "params": canonical_json({}),
                "log": "results/logs/scorecard.log",
                "benchmark": "results/benchmarks/scorecard.tsv",
                "threads": 1,
                "llm_clients": 0,
                "resources": {},
                "command": command_param(scorecard_command(sc)),
            }
        )
    return out


# The scorecard (socsim.scorecard): one stage after every study's analysis, in the default target.
SCORECARD = "results/scorecard"
SCORECARD_RULE = "scorecard"
SCORECARD_CODE = ("src/socsim/scorecard", "src/socsim/planted/__init__.py")


def scorecard_inputs(params: Mapping[str, Any]) -> list[str]:
    """The report folders of the run's analysis stages (each study's findings): what the scorecard reads."""
    out = []
    for study, st in studies.all_stages(params):
        if reports(study, st):
            paths = study.paths(st, params)
            out += [str(paths[n]) for n in st.outputs if study.artifact(st, n).report == "tables"]
    return out


def scorecard_command(reports_: list[str]) -> str:
    return " ".join(["socsim scorecard", *reports_, "--out", SCORECARD])


def rerun_values(st: Stage, params: Mapping[str, Any]) -> dict[str, Any]:
    """The params values whose change re-runs a Snakemake job: the stage's declared keys, the models
    registry narrowed to the entries the stage calls (a new model for another study, or another study's
    server moving, re-runs nothing here). DVC tracks `models` as one key (its keys are static)."""
    values = config.subset(params, st.declared)
    if "models" in values:
        values["models"] = {
            n: _science(params["models"][n]) for n in sorted(st.model_names(params)) if n in params["models"]
        }
    return values


# How a served model's server is reached and kept, not what it computes: changing these re-runs nothing.
SERVE_OPERATIONAL = ("port", "host", "ready_timeout", "linger", "slurm_args")


MODEL_OPERATIONAL = ("concurrency",)  # requests in flight: how fast, not what


def _science(entry: Mapping[str, Any]) -> dict[str, Any]:
    entry = {k: v for k, v in entry.items() if k not in MODEL_OPERATIONAL}
    if "serve" not in entry:
        return entry
    serve = {k: v for k, v in entry["serve"].items() if k not in SERVE_OPERATIONAL}
    return {**entry, "serve": serve}


def embedded(st: Stage, params: Mapping[str, Any]) -> bool:
    """Whether a stage runs a model in process (it then takes every core: such jobs run one at a time)."""
    registry = params["models"]
    return any(registry.get(n, {}).get("backend", "embedded") == "embedded" for n in st.model_names(params))


def preflight(params: Mapping[str, Any], rule_names: Iterable[str], local: bool = True) -> None:
    """Before any job starts: every external server model the jobs to run will call must answer and serve
    its model id; the engine of every model the run serves must be installed where its server will run;
    every hf:// GGUF those jobs load (embedded models, llama_cpp servers the run starts) must be in the
    local Hub cache or fetched into it now. One error lists all that cannot be used (socsim.preflight)."""
    from socsim import preflight as models_preflight

    by_rule = {st.rule_name: st for _, st in studies.all_stages()}
    names = [n for r in set(rule_names) if r in by_rule for n in by_rule[r].model_names(params)]
    models_preflight.check(params, names, local=local)


def serve(params: Mapping[str, Any], jobs: Iterable[tuple[str, Iterable[str]]], executor: str = "local") -> bool:
    """Before any job starts (onstart): where the run's servers start (their own SLURM jobs when the jobs
    are SLURM jobs, else this machine), and for each model the run serves itself, the outputs of the jobs
    to run that call it (its server stops once they are all written, or when this run ends); False: none."""
    import os

    from socsim import serving

    os.environ[serving.LAUNCHER_ENV] = "slurm" if "slurm" in executor else "local"  # inherited by every job

    by_rule = {st.rule_name: st for _, st in studies.all_stages()}
    served = {n for n, e in params["models"].items() if e.get("serve")}
    consumers: dict[str, list[str]] = {}
    for rule, outputs in jobs:
        if rule in by_rule:
            for name in served & set(by_rule[rule].model_names(params)):
                consumers.setdefault(name, []).extend(outputs)
    if not consumers:
        return False
    serving.start_run(consumers)
    return True


def message(study: Study, st: Stage) -> str:
    """The rule's `message:`: the stage's summary (braces escaped: Snakemake formats messages), and the shard."""
    text = f"{study.name} {st.name}: {st.summary}".replace("{", "{{").replace("}", "}}")
    return text + (" [shard {wildcards.shard}]" if st.shards else "")


def caption(study: Study, report: str, root: Path | None = None) -> str:
    """The report caption of a study's `report` group (figures, tables): the study's own file, relative to
    workflow/rules/ as Snakemake reads it, else one generated from the stages that write the group."""
    root = Path.cwd() if root is None else root
    if (root / CAPTIONS / study.name / f"{report}.rst").is_file():
        return f"../report/{study.name}/{report}.rst"
    lines = [f"{report.capitalize()} of the {study.name} study (a caption generated from its stage declarations).", ""]
    for st in study.stages:
        if any(study.artifacts[a].report == report for a in st.outputs):
            lines.append(f"* ``{study.name} {st.name}``: {st.summary}")
    path = root / GENERATED_CAPTIONS / study.name / f"{report}.rst"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return str(path.resolve())


def shell_line() -> str:
    """Every rule's shell directive: the log takes the job's stdout and stderr; the console, given to the job as
    fd 3 with the log's path, takes its lines of progress (socsim.progress)."""
    from socsim.progress import CONSOLE_FD_ENV, LOG_ENV

    return f"{CONSOLE_FD_ENV}=3 {LOG_ENV}={{log}} {{params.command}} 3>&2 > {{log}} 2>&1"


def command_param(command: str) -> Callable[[Any], str]:
    """The command of one job as a Snakemake params function (the shard from the wildcards). The rules
    are made in a loop, so the shell directive, which Snakemake evaluates late, stays a constant
    (common.smk) and each rule's command is bound here, when it is made."""
    return lambda wildcards: command.replace(SHARD, wildcards.shard) if SHARD in command else command


def targets(params: Mapping[str, Any]) -> list[str]:
    """The default target: every study's outputs, then the scorecard of their findings."""
    out = [t for study in studies.all_studies() for t in study.targets(params)]
    return out + ([SCORECARD] if scorecard_inputs(params) else [])


def study_targets(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """One target rule per study (`snakemake --cores all coherence`): every output of its stages."""
    return {study.name: study.targets(params) for study in studies.all_studies()}


def reports(study: Study, st: Stage) -> bool:
    """Whether a stage writes a study's report (its findings and their verdicts: an `analyse` stage)."""
    return any(study.artifact(st, n).kind == "dir" and study.artifact(st, n).report == "tables" for n in st.outputs)


def _foreach_item(s: str) -> str:
    """A sharded stage's "{shard}" as DVC's foreach item (only a sharded stage's own paths hold it)."""
    return s.replace(SHARD, "${item}")


def _foreach_items(v: str | list[str]) -> list[str]:
    return [_foreach_item(x) for x in ([v] if isinstance(v, str) else v)]


def dvc_stages(params: Mapping[str, Any]) -> dict[str, Any]:
    """dvc.yaml's stages: the same commands, dependencies, params and outputs; a sharded stage is a
    `foreach` over its shard ids (computed from params.yaml when exported)."""
    out: dict[str, Any] = {}
    for study, st in studies.all_stages(params):
        paths = study.paths(st, params)
        entry: dict[str, Any] = {"desc": st.summary, "cmd": _foreach_item(study.command(st, paths))}
        deps = [d for n in st.inputs for d in _foreach_items(paths[n])] + list(st.code)
        entry["deps"] = deps
        entry["params"] = list(st.declared) or None
        entry["outs"] = [d for n in st.outputs for d in _foreach_items(paths[n])]
        metrics = paths["metrics"]
        assert isinstance(metrics, str)  # a stage's metrics is one file (per shard), never a list of shards
        if reports(study, st):  # the findings' verdicts and values: what `dvc exp show` compares (cached, so an
            entry["metrics"] = [{_foreach_item(metrics): {"cache": True}}]  # experiment's values can be read)
        else:  # calls, tokens, times: kept beside the outputs, out of the comparison's columns
            entry["outs"].append({_foreach_item(metrics): {"cache": False}})
        entry = {k: v for k, v in entry.items() if v is not None}
        out[st.rule_name] = {"foreach": st.shard_ids(params), "do": entry} if st.shards else entry
    if sc := scorecard_inputs(params):
        out[SCORECARD_RULE] = {
            "desc": "every paper finding beside every model that answered (table and figure)",
            "cmd": scorecard_command(sc),
            "deps": [*sc, *SCORECARD_CODE],
            "outs": [SCORECARD],
        }
    return out
