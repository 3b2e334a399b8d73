"""The study contract: studies, their artifacts and stages, shards, the params view (the stage context, what a
stage's run() receives, is `socsim.context`).

A study (`Study`) owns its paths: every artifact it reads or writes is declared once, by name,
with its path, schema and row keys. A stage (`Stage`) names the artifacts it reads and writes,
the params keys it reads, whether it calls an LLM and, for simulate/annotate stages, how it is
sharded (shard ids computed from params, so Snakemake and DVC know them when the DAG is built).
`socsim <study> <stage>` (cli.py), the Snakemake rules (workflow/rules/common.smk) and dvc.yaml
(socsim.dvc) are all generated from these declarations; the registry of studies is
`socsim.studies`. This module imports no study.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from socsim.config import ParamsError, get_dotted

PARAMS_FILE = "params.yaml"
SHARD = "{shard}"  # placeholder in a sharded artifact's path (a Snakemake wildcard, a DVC foreach item)
ALL = "all"  # the shard id of a stage's single shard when it is not split

# The keys that change a model's answers, declared once: every LLM stage reads them (the models registry
# as a whole: DVC and Snakemake track params by static keys, and registry names may hold dots).
LLM_KEYS = ("models", "llm.sampling.temperature", "llm.sampling.top_p")
# The package code every stage runs (relative to src/socsim), and what LLM stages run besides.
CORE_CODE = (
    "__init__.py",
    "stages.py",
    "context.py",
    "config.py",
    "canonical.py",
    "legacy.py",
    "cli.py",
    "seeds.py",
    "progress.py",
    "io",
    "stats",
)
# the LLM layer, the registry, the servers a run starts, the planted model (its answers)
LLM_CODE = ("llm", "sim", "models.py", "runtime.py", "serving", "planted")
SRC = "src/socsim"
# Cluster resources of a job (Snakemake `resources:`, read by the SLURM executor). A stage that calls a
# model runs longer, and on the embedded backend uses two cores; other stages take the profile's
# default-resources. A stage may declare its own (Stage.resources).
LLM_RESOURCES: Mapping[str, int] = {"runtime": 240, "mem_mb": 8000, "cpus_per_task": 2}


@dataclass(frozen=True)
class Artifact:
    """A file or folder a study reads or writes. A sharded artifact has "{shard}" in its path:
    one Parquet file per shard, read back as one table in `keys` order."""

    path: str
    schema: pa.Schema | None = None  # Parquet artifacts: the columns and types
    keys: tuple[str, ...] = ()  # row order of a Parquet artifact (and of its shards, read together)
    kind: Literal["file", "dir"] = "file"
    report: str | None = None  # caption (workflow/report/<study>/<report>.rst) for `snakemake --report`
    pattern: str = "{name}.png"  # files of a reported folder that go into the report
    # A report folder's tables other stages read (e.g. the figures' plot tables): written by every run
    # (StageContext.write_report checks) and the only ones they may read (StageContext.report_table).
    tables: tuple[str, ...] = ()

    @property
    def sharded(self) -> bool:
        return SHARD in self.path

    def at(self, shard: str) -> str:
        return self.path.replace(SHARD, shard)


def analysis_folder(path: str, figures: Sequence[str]) -> Artifact:
    """A study's analysis folder: its tables in the Snakemake report (CSV), one declared plot table per
    figure (`plot_<figure>`, what the figures stage reads: StageContext.plots)."""
    return Artifact(path, kind="dir", report="tables", pattern="{name}.csv", tables=tuple(f"plot_{f}" for f in figures))


ShardFn = Callable[[Mapping[str, Any]], dict[str, dict[str, Any]]]  # params -> {shard id: {column: value}}
ModelsFn = Callable[[Mapping[str, Any]], dict[str, str]]  # params -> {model name: the params key naming it}


@dataclass(frozen=True)
class Stage:
    name: str
    summary: str
    run: Callable[[Any], None]  # receives the stage's socsim.context.StageContext (a floor above this module)
    inputs: tuple[str, ...] = ()  # artifact names
    outputs: tuple[str, ...] = ()  # artifact names
    params: tuple[str, ...] = ()  # dotted params keys read (LLM stages also read LLM_KEYS)
    uses_llm: bool = False
    shards: ShardFn | None = None  # split into one job per shard id (simulate, annotate, ...)
    models: ModelsFn | None = None  # LLM stages: the registry names it may call (socsim.models)
    length_depends_on_answers: bool = False  # episodes end on what is said ("Goodbye."): `socsim plan` bounds calls
    resources: Mapping[str, int] | None = None  # cluster resources (None: LLM_RESOURCES for LLM stages)
    # (params key, value): the stage is part of a run only when the key has that value, or one of them when
    # it is a tuple (where a study's data come from: made by the run, or imported); None: always. Stages that
    # write the same artifact switch on the same key. The key is read to build the DAG, not by the stage
    # (declare it to read it).
    when: tuple[str, Any] | None = None
    study: str = ""  # set by Study

    @property
    def rule_name(self) -> str:
        return f"{self.study}_{self.name}"

    def job(self, shard: str) -> str:
        """One run of the stage as logs and messages name it: "<study>.<stage>[ shard <id>]"."""
        return f"{self.study}.{self.name}" + (f" shard {shard}" if self.shards else "")

    @property
    def job_resources(self) -> dict[str, int]:
        """The job's cluster resources: its own, else LLM_RESOURCES for a stage that calls a model."""
        if self.resources is not None:
            return dict(self.resources)
        return dict(LLM_RESOURCES) if self.uses_llm else {}

    @property
    def declared(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.params) | (set(LLM_KEYS) if self.uses_llm else set())))

    @property
    def code(self) -> tuple[str, ...]:
        """The package code this stage runs: its study's sub-package and the shared packages."""
        shared = CORE_CODE + (LLM_CODE if self.uses_llm else ())
        return tuple(f"{SRC}/{p}" for p in (self.study, *shared))

    def shard_table(self, params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Shard id -> shard-key values; the shard function sees only the stage's declared params."""
        if not self.shards:
            return {ALL: {}}
        return self.shards(ParamsView(params, self.declared, self.rule_name))

    def shard_ids(self, params: Mapping[str, Any]) -> list[str]:
        return sorted(self.shard_table(params))

    def active(self, params: Mapping[str, Any]) -> bool:
        """Whether the stage is part of a run on these params (Stage.when)."""
        return self.when is None or get_dotted(params, self.when[0]) in when_values(self)

    def model_names(self, params: Mapping[str, Any]) -> dict[str, str]:
        """The registry names this stage may call on these params -> the params key that names each."""
        if self.models is None:
            return {}
        return self.models(ParamsView(params, self.declared, self.rule_name))


def shard_table(values: list[dict[str, Any]], keys: list[str]) -> dict[str, dict[str, Any]]:
    """Shards of a stage from the distinct combinations of its shard-key values: id -> values.
    `keys` empty: one shard `all` holding everything. Ids join the values with '.'."""
    out: dict[str, dict[str, Any]] = {}
    for v in values:
        sub = {k: v[k] for k in keys}
        sid = ".".join(str(sub[k]) for k in keys) or ALL
        if out.setdefault(sid, sub) != sub:
            raise ParamsError(f"two shards share the id {sid!r}: {out[sid]} and {sub}")
        bad = set(sid) - set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")
        if bad:
            raise ParamsError(f"shard id {sid!r} has characters not allowed in a file name: {''.join(sorted(bad))}")
    return out


class Study:
    """A study: its artifacts (by name) and its stages, in pipeline order."""

    def __init__(self, name: str, artifacts: dict[str, Artifact], stages: list[Stage]):
        self.name = name
        self.artifacts = dict(artifacts)
        self.stages = [replace(s, study=name) for s in stages]
        self.results = f"results/{name}"
        for st in self.stages:
            for a in (*st.inputs, *st.outputs):
                if a not in self.artifacts:
                    raise ValueError(f"stage {name}.{st.name} names an undeclared artifact {a!r}")
        for a in self.artifacts:  # several writers of one artifact: never in the same run
            writers = [st for st in self.stages if a in st.outputs]
            for i, s1 in enumerate(writers):
                for s2 in writers[i + 1 :]:
                    if not _exclusive(s1, s2):
                        raise ValueError(
                            f"stages {name}.{s1.name} and {name}.{s2.name} both write {a!r}: give them "
                            "`when` values of one params key"
                        )
        for st in self.stages:  # a sharded stage reads a sharded input shard by shard: same shards
            for a in st.inputs:
                if not self.artifacts[a].sharded:
                    continue
                producers = [p for p in self.stages if a in p.outputs and not _exclusive(p, st)]
                if not producers:
                    raise ValueError(f"stage {name}.{st.name} reads sharded {a!r}, which no stage writes")
                if st.shards and any(p.shards is not st.shards for p in producers):
                    raise ValueError(f"stage {name}.{st.name} reads {a!r} shard by shard but is sharded differently")

    def _metrics_path(self, st: Stage) -> str:
        return (
            f"{self.results}/metrics/{st.name}/{SHARD}.json" if st.shards else f"{self.results}/metrics/{st.name}.json"
        )

    def stage(self, name: str) -> Stage:
        for st in self.stages:
            if st.name == name:
                return st
        raise KeyError(f"no stage {self.name} {name}")

    def active(self, params: Mapping[str, Any]) -> list[Stage]:
        """The stages of a run on these params (Stage.when), in pipeline order."""
        return [st for st in self.stages if st.active(params)]

    def producer(self, artifact: str, params: Mapping[str, Any] | None = None) -> Stage | None:
        """The stage that writes `artifact` (on `params`: the one active there; several may write it)."""
        return next(
            (st for st in self.stages if artifact in st.outputs and (params is None or st.active(params))), None
        )

    def artifact(self, st: Stage, name: str) -> Artifact:
        return Artifact(self._metrics_path(st)) if name == "metrics" else self.artifacts[name]

    def output_names(self, st: Stage) -> tuple[str, ...]:
        return (*st.outputs, "metrics")

    def paths(self, st: Stage, params: Mapping[str, Any] | None, shard: str = SHARD) -> dict[str, str | list[str]]:
        """Every input and output of a stage, resolved: a sharded artifact of this stage's own
        shard is one path (`shard`, or the "{shard}" wildcard), a sharded input of an unsharded
        stage is the sorted list of its producer's shard files (needs params), a sharded output of
        an unsharded stage its one shard `all` (e.g. data imported whole)."""
        out: dict[str, str | list[str]] = {}
        for name in (*st.inputs, *self.output_names(st)):
            art = self.artifact(st, name)
            if not art.sharded:
                out[name] = art.path
            elif st.shards:
                out[name] = art.at(shard)
            elif name in st.outputs:  # an unsharded stage writes a sharded artifact whole: its one shard
                out[name] = art.at(ALL)
            else:
                producer = self.producer(name, params)
                if producer is None:  # its writers are not part of a run on these params
                    raise ParamsError(f"{self.name} {st.name} reads {name!r}, which no stage writes on these params")
                out[name] = [art.at(s) for s in producer.shard_ids(params)] if params is not None else art.path
        return out

    def command(
        self,
        st: Stage,
        paths: dict[str, str | list[str]],
        params_files: Iterable[str] = (PARAMS_FILE,),
        shard: str | None = None,
    ) -> str:
        """The shell command that runs a stage on the given paths."""
        parts = ["socsim", self.name, st.name]
        for pf in params_files:
            parts += ["--params", pf]
        if st.shards:
            parts += ["--shard", shard or SHARD]
        for name, value in paths.items():
            parts += ["--" + name.replace("_", "-"), *([value] if isinstance(value, str) else value)]
        return " ".join(map(_quote, parts))

    def targets(self, params: Mapping[str, Any]) -> list[str]:
        """Every output of every stage (all shards): what `snakemake` builds for this study."""
        out: list[str] = []
        for st in self.active(params):
            for name in self.output_names(st):
                art = self.artifact(st, name)
                out += [art.at(s) for s in st.shard_ids(params)] if art.sharded else [art.path]
        return out


def job_lock(st: Stage, paths: Mapping[str, Path | list[Path]], shard: str) -> AbstractContextManager[None]:
    """The lock a run of one stage shard holds while it runs (socsim.io.lock): a second run of the same shard
    (a job of a killed Snakemake still running, `dvc repro` beside Snakemake) stops at once, touching no output.
    Its file is beside the shard's metrics, the one output every stage writes, one per shard."""
    from socsim.io.lock import exclusive

    metrics = paths["metrics"]
    assert isinstance(metrics, Path)  # one file per shard
    return exclusive(metrics.parent / f".{metrics.name}.lock", st.job(shard))


def when_values(st: Stage) -> tuple[Any, ...]:
    """The values of its `when` key for which a stage is part of a run (empty: no `when`)."""
    if st.when is None:
        return ()
    value = st.when[1]
    return value if isinstance(value, tuple) else (value,)


def _exclusive(a: Stage, b: Stage) -> bool:
    """Whether two stages are never in the same run: `when` on one key with no value in common."""
    return (
        a.when is not None
        and b.when is not None
        and a.when[0] == b.when[0]
        and not set(when_values(a)) & set(when_values(b))
    )


def _quote(part: str) -> str:
    """shlex.quote, leaving the "{shard}" placeholder bare (Snakemake and DVC substitute it)."""
    return part if shlex.quote(part.replace(SHARD, "x")) == part.replace(SHARD, "x") else shlex.quote(part)


class ParamsView(Mapping[str, Any]):
    """Read-only view of params that refuses every key the stage did not declare, so that
    "a params change re-runs exactly the stages that read it" holds by construction."""

    def __init__(self, data: Mapping[str, Any], declared: tuple[str, ...], stage: str, prefix: str = "") -> None:
        self._data, self._declared, self._stage, self._prefix = data, declared, stage, prefix

    def _full(self, key: str) -> str:
        return f"{self._prefix}.{key}" if self._prefix else str(key)

    def _allowed(self, full: str) -> str | None:
        """'value' (full is declared or below a declared key), 'view' (above one), None (neither)."""
        if any(full == d or full.startswith(d + ".") for d in self._declared):
            return "value"
        if any(d.startswith(full + ".") for d in self._declared):
            return "view"
        return None

    def __getitem__(self, key: str) -> Any:
        full = self._full(key)
        kind = self._allowed(full)
        if kind is None:
            raise ParamsError(
                f"stage {self._stage} read params key {full!r}, which it does not declare "
                f"(declared: {', '.join(self._declared) or 'none'}); add it to the stage's params"
            )
        value = self._data[key]
        return ParamsView(value, self._declared, self._stage, full) if kind == "view" else value

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._data if self._allowed(self._full(k)))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"ParamsView({self._stage}: {', '.join(self._declared)})"
