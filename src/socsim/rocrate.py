"""`socsim rocrate`: a finished run as a Workflow Run RO-Crate a reviewer can check (docs/reproducibility.md).

The crate (https://w3id.org/ro/wfrun/workflow/0.5, and its Provenance Run Crate extension for the steps) is a
folder: `ro-crate-metadata.json` (RO-Crate 1.1) beside copies of what the run read and wrote, each file with
its sha256 and size. Its graph:

- the workflow: the Snakefile (File, SoftwareSourceCode, ComputationalWorkflow, HowTo; Snakemake), its rule
  files, schemas, profiles and pinned requirements; one tool (`socsim <study> <stage>`) and one step per rule;
- the run: a CreateAction of the workflow (`object` params.yaml and the data it read, `result` every artifact),
  the engine's OrganizeAction, and per job (stage shard) a CreateAction of its tool (inputs, outputs, times
  from its log) with a ControlAction of its step; each job's log and benchmark are files `about` it;
- socsim's own provenance on the actions as PropertyValues (`additionalProperty`): per model registry name the
  identity that answered (model id, sha, runtime, dialect), the engine, the sampling, calls, requests and cache
  hits, from each stage's metrics JSON; the params hash, seed, socsim version and commit from each job's
  output provenance. The run's action sums them over its jobs.

The jobs are found from what the run left, not from params: a stage ran where its metrics JSON is (one per
shard), and its inputs and outputs are the registry's declarations (socsim.stages) at those shards; the
scorecard where its provenance.json is. Files of the results folder that no job wrote are left out.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import quote

import socsim
from socsim import studies, workflow
from socsim.canonical import canonical_json
from socsim.io.model_record import ModelRecord, records
from socsim.io.parquet import UnreadableError, read_provenance
from socsim.stages import ALL, SHARD, Stage, Study

METADATA = "ro-crate-metadata.json"
CONTEXT: list[Any] = [
    "https://w3id.org/ro/crate/1.1/context",
    {"sha256": "http://schema.org/sha256"},  # not in the 1.1 context (schema.org 10): added as RO-Crate 1.1 allows
]
RO_CRATE = "https://w3id.org/ro/crate/1.1"
WORKFLOW_RO_CRATE = "https://w3id.org/workflowhub/workflow-ro-crate/1.0"
PROFILES = {  # the root's conformsTo: permalink -> (name, version)
    "https://w3id.org/ro/wfrun/process/0.5": ("Process Run Crate", "0.5"),
    "https://w3id.org/ro/wfrun/workflow/0.5": ("Workflow Run Crate", "0.5"),
    "https://w3id.org/ro/wfrun/provenance/0.5": ("Provenance Run Crate", "0.5"),
    WORKFLOW_RO_CRATE: ("Workflow RO-Crate", "1.0"),
}
SNAKEMAKE_LANGUAGE = "https://w3id.org/workflowhub/workflow-ro-crate#snakemake"
MAIN_WORKFLOW = "Snakefile"
# The workflow's definition beside the Snakefile (project-relative; folders taken whole).
WORKFLOW_FILES = {
    "workflow/rules": "the workflow's rules, generated from socsim's stage registry",
    "workflow/schemas": "the schema params.yaml is validated against before anything runs",
    "workflow/report": "captions of `snakemake --report`",
    "profiles": "Snakemake profiles (default: a plain `snakemake`; slurm)",
    "envs/requirements.txt": "the pinned Python environment",
}
PARAMS = "params.yaml"
RESULTS = "results"  # the registry's paths start here (socsim.stages.Study.results)
# Per model, what the crate records of its metrics (besides its identity and server): the accounting.
ACCOUNTING = (
    "calls",
    "requests",
    "cache_hits",
    "retries",
    "parse_failures",
    "parse_failures_cut",
    "prompt_tokens",
    "completion_tokens",
)
FORMATS = {
    ".parquet": "application/vnd.apache.parquet",
    ".json": "application/json",
    ".csv": "text/csv",
    ".md": "text/markdown",
    ".tex": "application/x-tex",
    ".png": "image/png",
    ".pdf": "application/pdf",
    ".log": "text/plain",
    ".tsv": "text/tab-separated-values",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".jsonl": "application/jsonl",
    ".smk": "text/x-python",
    ".txt": "text/plain",
    ".rst": "text/x-rst",
}


class CrateError(ValueError):
    """A run the crate cannot be made of (the CLI prints it as an error)."""


# -- the run's jobs, from what it left ----------------------------------------------------------------------


@dataclass
class Job:
    """One job of the run: a stage shard (or the scorecard) with its files (project-relative paths) and what
    it recorded."""

    rule: str
    study: str  # the study (or "scorecard")
    label: str  # as its log names it: "<study>.<stage>[ shard <id>]"
    name: str  # the tool: "socsim <study> <stage>"
    summary: str
    command: str
    inputs: list[str]
    outputs: list[str]
    shard: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    metrics_file: str = "metrics"  # where each was read (named in the PropertyValues)
    provenance_file: str = "provenance"
    traces: list[str] = field(default_factory=list)  # its log and benchmark
    start: str | None = None
    end: str | None = None

    @property
    def slug(self) -> str:
        return quote(self.rule + (f"/{self.shard}" if self.shard is not None else ""), safe="/.-_+")


class Run:
    """A finished run's folders: `results` (the registry's `results/`) inside `project` (the Snakefile's
    folder: params.yaml, data/, workflow/)."""

    def __init__(self, results: Path, project: Path | None = None) -> None:
        self.results = Path(results)
        self.project = Path(project) if project is not None else self.results.resolve().parent

    def where(self, rel: str) -> Path:
        """A project-relative path of the registry on disk."""
        head, _, tail = rel.partition("/")
        return self.results / tail if head == RESULTS else self.project / rel


def _trace(study: Study, st: Stage, kind: str, ext: str, shard: str) -> str:
    """A job's log or benchmark as the Snakemake rules name it (socsim.workflow.rules)."""
    return f"{study.results}/{kind}/{st.name}/{shard}.{ext}" if st.shards else f"{study.results}/{kind}/{st.name}.{ext}"


def shards_run(run: Run, study: Study, st: Stage) -> list[str]:
    """The shards of a stage that finished: where its metrics JSON is (written last, by every stage)."""
    metrics = study.artifact(st, "metrics").path
    if not st.shards:
        return [ALL] if run.where(metrics).is_file() else []
    folder = run.where(metrics).parent
    return sorted(f.stem for f in folder.glob("*.json") if not f.name.startswith(".")) if folder.is_dir() else []


def _input_files(run: Run, study: Study, name: str, done: Mapping[str, list[str]]) -> list[str]:
    """The files of one input of an unsharded stage: a sharded artifact is every shard its writer finished."""
    art = study.artifacts[name]
    if not art.sharded:
        return [art.path]
    writer = next((w for w in study.stages if name in w.outputs and done.get(w.name)), None)
    if writer is not None:
        return [art.at(s if writer.shards else ALL) for s in done[writer.name]]
    pattern = art.path.replace(SHARD, "*")
    head, _, tail = pattern.partition("/")
    base = run.results if head == RESULTS else run.project
    found = sorted(base.glob(tail if head == RESULTS else pattern))
    return [
        f"{RESULTS}/{p.relative_to(run.results)}" if head == RESULTS else str(p.relative_to(run.project)) for p in found
    ]


def stage_jobs(run: Run, study: Study) -> list[Job]:
    """The jobs of one study's stages that finished, in pipeline order."""
    done = {st.name: shards_run(run, study, st) for st in study.stages}
    jobs = []
    for st in study.stages:
        for shard in done[st.name]:
            paths = study.paths(st, None, shard)
            inputs: dict[str, str | list[str]] = {
                n: _input_files(run, study, n, done) if study.artifacts[n].sharded and not st.shards else paths[n]
                for n in st.inputs
            }
            outputs = {n: paths[n] for n in study.output_names(st)}
            metrics_path = outputs["metrics"]
            assert isinstance(metrics_path, str)  # one metrics file per shard
            job = Job(
                rule=st.rule_name,
                study=study.name,
                label=st.job(shard),
                name=f"socsim {study.name} {st.name}",
                summary=st.summary,
                command=study.command(st, {**inputs, **outputs}, shard=shard),
                inputs=_flat(inputs.values()),
                outputs=_flat(outputs.values()),
                shard=shard if st.shards else None,
                metrics=_read_json(run.where(metrics_path)),
                metrics_file=metrics_path,
                traces=[_trace(study, st, "logs", "log", shard), _trace(study, st, "benchmarks", "tsv", shard)],
            )
            job.provenance, job.provenance_file = _provenance(run, job.outputs)
            jobs.append(job)
    return jobs


def scorecard_job(run: Run) -> Job | None:
    """The scorecard, where the run made it: its inputs are the reports its provenance names."""
    prov = _read_json(run.where(f"{workflow.SCORECARD}/provenance.json"))
    if not prov:
        return None
    reports = sorted({str(r["path"]) for r in prov.get("reports", []) if r.get("path")})
    return Job(
        rule=workflow.SCORECARD_RULE,
        study=workflow.SCORECARD_RULE,
        label=workflow.SCORECARD_RULE,
        name="socsim scorecard",
        summary="every paper finding beside every model that answered (table and figure)",
        command=workflow.scorecard_command(reports),
        inputs=reports,
        outputs=[workflow.SCORECARD],
        provenance=prov,
        provenance_file=f"{workflow.SCORECARD}/provenance.json",
        traces=[f"{RESULTS}/logs/scorecard.log", f"{RESULTS}/benchmarks/scorecard.tsv"],
    )


def discover(run: Run) -> list[Job]:
    """Every job of the run that finished, with its times (its log's start and end lines, else its outputs')."""
    if not run.results.is_dir():
        raise FileNotFoundError(f"no results folder {run.results}")
    jobs = [j for study in studies.all_studies() for j in stage_jobs(run, study)]
    if (sc := scorecard_job(run)) is not None:
        jobs.append(sc)
    if not jobs:
        raise CrateError(
            f"{run.results}: no finished stage (every stage writes <study>/metrics/<stage>.json, one per shard, "
            "when it ends): run the workflow first, or point --results at a run's results folder"
        )
    for job in jobs:
        job.traces = [t for t in job.traces if run.where(t).is_file()]
        job.start, job.end = _times(run, job)
    return jobs


LOG_LINE = re.compile(r"^socsim: (?P<job>.+) (?P<what>started|finished) (?P<at>\S+)")


def _times(run: Run, job: Job) -> tuple[str | None, str | None]:
    """When a job started and ended: the lines its stage writes to its log (socsim.cli), else the time its
    last output was written (a DVC run keeps no log)."""
    start = end = None
    for trace in job.traces:
        if trace.endswith(".log"):
            text = run.where(trace).read_text(encoding="utf-8", errors="replace")
            for line in text.splitlines():
                m = LOG_LINE.match(line)
                if m and m["job"] == job.label:
                    start, end = (m["at"], end) if m["what"] == "started" else (start, m["at"])
    if end is None:
        written = [run.where(o).stat().st_mtime for o in job.outputs if run.where(o).exists()]
        end = _iso(max(written)) if written else None
    return start, end


def _provenance(run: Run, outputs: Sequence[str]) -> tuple[dict[str, Any], str]:
    """A job's provenance as its outputs record it (and where): a Parquet file's metadata, else a report's
    provenance.json."""
    for rel in outputs:
        path = run.where(rel)
        try:
            if rel.endswith(".parquet") and path.is_file():
                return read_provenance(path), f"{rel} (its metadata)"
        except UnreadableError:
            continue
        if path.is_dir() and (path / "provenance.json").is_file():
            return _read_json(path / "provenance.json"), f"{rel}/provenance.json"
    return {}, "provenance"


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _flat(values: Iterable[str | list[str]]) -> list[str]:
    out: list[str] = []
    for v in values:
        out += [v] if isinstance(v, str) else v
    return list(dict.fromkeys(out))


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


# -- what socsim recorded, as PropertyValues ------------------------------------------------------------------


def identity_text(identity: Mapping[str, Any]) -> str:
    """An identity in words: `model_id@sha (runtime)`."""
    sha = str(identity.get("model_sha") or "")
    return f"{identity.get('model_id')}" + (f"@{sha[:12]}" if sha else "") + f" ({identity.get('runtime')})"


def engine(model: ModelRecord) -> str | None:
    """What computed a model's answers: the run's own server (engine and version), else the engine an external
    server names itself as at the probe (`engine`: owned_by and /version), else the identity's runtime (the
    embedded model's llama-cpp-python; an external server's own name)."""
    server = model.server or {}
    if server.get("engine"):
        return " ".join(str(server[k]) for k in ("engine", "version") if server.get(k))
    named = model.engine or {}
    if named.get("name"):
        return " ".join(str(named[k]) for k in ("name", "version") if named.get(k))
    identity = model.identity
    return str(identity["runtime"]) if identity.get("runtime") else None


def default_sampling(provenance: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """A model's default sampling from the params a job read: llm.sampling, then the registry entry's own."""
    params = provenance.get("params") or {}
    base = {k.rsplit(".", 1)[1]: v for k, v in params.items() if k.startswith("llm.sampling.")}
    entry = (params.get("models") or {}).get(name) or {}
    merged = {**base, **(entry.get("sampling") or {})}
    return merged or None


def model_fields(name: str, model: ModelRecord, job: Job) -> list[tuple[str, Any, str]]:
    """(name, value, where it was read) of one model's PropertyValues in one job."""
    key = f"{job.metrics_file}: models.{name}"
    out: list[tuple[str, Any, str]] = []
    for k, v in sorted(model.identity.items()):
        out.append((k, v, f"{key}.identity.{k}"))
    out.append(("engine", engine(model), f"{key}.server (engine, version), else {key}.identity.runtime"))
    for k, v in sorted((model.server or {}).items()):
        out.append((f"server.{k}", v, f"{key}.server.{k}"))
    if model.sampling is not None:  # as the stage applied it, where its metrics record it
        out.append(("sampling", model.sampling, f"{key}.sampling"))
    else:
        where = f"{job.provenance_file}: params llm.sampling, then models.{name}.sampling (the model's default)"
        out.append(("sampling", default_sampling(job.provenance, name), where))
    out += [(k, model.accounting.get(k), f"{key}.{k}") for k in ACCOUNTING]
    if model.canary:  # the constraint canaries its server answered (socsim.llm.canary)
        out.append(("canary", model.canary, f"{key}.canary"))
    if model.replayed_from:
        out.append(("replayed_from", model.replayed_from, f"{key}.replayed_from"))
    return [(n, v, w) for n, v, w in out if v is not None]


def job_fields(job: Job) -> list[tuple[str, Any, str]]:
    """(name, value, where) of a job's own PropertyValues: its provenance, its totals of model calls."""
    prov = job.provenance
    out = [
        (k, prov.get(k), f"{job.provenance_file}: {k}")
        for k in ("stage", "params_hash", "seed", "socsim_version", "git_commit")
    ]
    if job.shard is not None:
        out.append(("shard", job.shard, f"{job.metrics_file} (its name)"))
    if "models" in job.metrics:  # a stage that calls models: its totals
        out += [(k, job.metrics.get(k), f"{job.metrics_file}: {k}") for k in ("requests", "calls", "cache_hits")]
    return [(n, v, w) for n, v, w in out if v is not None]


@dataclass
class Answered:
    """One model registry name and one identity that answered under it, summed over the run's jobs."""

    name: str
    identity: dict[str, Any]
    fields: dict[str, Any] = field(default_factory=dict)  # engine, server.*, sampling: each value seen
    totals: dict[str, int] = field(default_factory=dict)
    jobs: list[str] = field(default_factory=list)


def answered(jobs: Sequence[Job]) -> list[Answered]:
    """Every (registry name, identity) that answered in the run, with the jobs it answered in and its totals."""
    found: dict[tuple[str, str], Answered] = {}
    for job in jobs:
        for name, model in sorted(records(job.metrics).items()):
            identity = dict(model.identity)
            a = found.setdefault((name, canonical_json(identity)), Answered(name, identity))
            a.jobs.append(job.label)
            for n, v, _ in model_fields(name, model, job):
                if n in ACCOUNTING:
                    a.totals[n] = a.totals.get(n, 0) + int(v)
                elif n not in identity:
                    seen = a.fields.setdefault(n, [])
                    if v not in seen:
                        seen.append(v)
    return sorted(found.values(), key=lambda a: (a.name, canonical_json(a.identity)))


# -- the crate ------------------------------------------------------------------------------------------------


def _ref(ids: str | Iterable[str]) -> Any:
    """References: one as an object, several as a list (RO-Crate 1.1 writes no singleton array)."""
    refs = [{"@id": ids}] if isinstance(ids, str) else [{"@id": i} for i in ids]
    return refs[0] if len(refs) == 1 else refs


def _value(v: Any) -> Any:
    """A PropertyValue's value: text, a number or a boolean (anything else as canonical JSON)."""
    return v if isinstance(v, str | int | float | bool) else canonical_json(v)


def _format(path: str) -> str:
    name = Path(path).name
    if name == MAIN_WORKFLOW:
        return "text/x-python"
    return FORMATS.get(Path(path).suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


class Crate:
    """The graph being built, and the folder its files are copied (or linked) into."""

    def __init__(self, run: Run, folder: Path, link: bool = False) -> None:
        self.run, self.folder, self.link = run, folder, link
        self.entities: dict[str, dict[str, Any]] = {}
        self.parts: list[str] = []  # the root's hasPart
        self.missing: list[str] = []  # files a job names that are not on disk
        self.bytes = 0

    def add(self, entity: dict[str, Any]) -> str:
        """An entity (its empty lists left out), unless one of its @id is there already."""
        if entity["@id"] not in self.entities:
            for key in [k for k, v in entity.items() if v == []]:
                del entity[key]
            self.entities[entity["@id"]] = entity
        return str(entity["@id"])

    def generated(self, rel: str, text: str, **props: Any) -> str:
        """A file the crate itself holds (its README), written into it."""
        (self.folder / rel).write_text(text, encoding="utf-8")
        data = text.encode("utf-8")
        entity = {"@id": quote(rel), "@type": "File", "name": rel, "encodingFormat": _format(rel)}
        sha = hashlib.sha256(data).hexdigest()
        return self._part({**entity, "contentSize": str(len(data)), "sha256": sha, **props})

    def data(self, rel: str, **props: Any) -> str | None:
        """A file or folder of the project as a data entity (copied, with sha256 and size); None: not there."""
        path = self.run.where(rel)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p, path))
            parts = [self.data(f"{rel.rstrip('/')}/{p.relative_to(path).as_posix()}") for p in files]
            entity = {"@id": quote(rel.rstrip("/") + "/"), "@type": "Dataset", "name": rel.rstrip("/") + "/"}
            return self._part({**entity, "hasPart": _ref([p for p in parts if p]), **props})
        if not path.is_file():
            if rel not in self.missing:
                self.missing.append(rel)
            return None
        if quote(rel) not in self.entities:
            sha, size = self._copy(path, self.folder / rel)
            entity = {"@id": quote(rel), "@type": "File", "name": rel, "encodingFormat": _format(rel)}
            self._part({**entity, "contentSize": str(size), "sha256": sha, **props})
        elif props:
            self.entities[quote(rel)].update(props)
        return quote(rel)

    def _part(self, entity: dict[str, Any]) -> str:
        eid = self.add(entity)
        if eid not in self.parts:
            self.parts.append(eid)
        return eid

    def _copy(self, src: Path, dst: Path) -> tuple[str, int]:
        dst.parent.mkdir(parents=True, exist_ok=True)
        linked = False
        if self.link:
            try:
                os.link(src, dst)
                linked = True
            except OSError:  # another filesystem: a copy
                pass
        digest, size = hashlib.sha256(), 0
        with open(src, "rb") as f, open(os.devnull, "wb") if linked else open(dst, "wb") as out:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
        if not linked:
            shutil.copystat(src, dst)
        self.bytes += size
        return digest.hexdigest(), size

    def properties(self, owner: str, fields: Sequence[tuple[str, Any, str]]) -> list[str]:
        """PropertyValues of `owner` (an action or a group): its name, its value, `propertyID` the same for one
        kind of value everywhere (`socsim:cache_hits`), and where socsim recorded it (`description`)."""
        out = []
        for name, value, where in fields:
            out.append(
                self.add(
                    {
                        "@id": f"{owner}/{quote(name, safe='.-_')}",
                        "@type": "PropertyValue",
                        "name": name,
                        "propertyID": f"socsim:{name}",
                        "value": _value(value),
                        "description": f"read from {where}",
                    }
                )
            )
        return out

    def model_group(
        self, owner: str, name: str, identity: Mapping[str, Any], fields: Sequence[tuple[str, Any, str]]
    ) -> str:
        """One model registry name and the identity that answered under it: a PropertyValue whose value is the
        identity in words and whose valueReference holds each field."""
        gid = f"{owner}/model/{quote(name, safe='.-_')}"
        if gid in self.entities:  # the same name answered under another identity: its own group
            gid += "/" + hashlib.sha256(canonical_json(dict(identity)).encode()).hexdigest()[:8]
        return self.add(
            {
                "@id": gid,
                "@type": "PropertyValue",
                "name": f"model {name}",
                "propertyID": "socsim:model",
                "value": identity_text(identity),
                "description": f"the registry name {name!r} and the identity of the model that answered under it",
                "valueReference": _ref(self.properties(gid, fields)),
            }
        )

    def graph(self) -> dict[str, Any]:
        return {"@context": CONTEXT, "@graph": list(self.entities.values())}


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def _tools(crate: Crate, jobs: Sequence[Job]) -> tuple[list[str], list[str]]:
    """One tool (`socsim <study> <stage>`) and one step per rule that ran, in pipeline order."""
    tools, steps = [], []
    for position, rule in enumerate(dict.fromkeys(j.rule for j in jobs)):
        job = next(j for j in jobs if j.rule == rule)
        tool = {
            "@id": f"#tool/{rule}",
            "@type": "SoftwareApplication",
            "name": job.name,
            "description": job.summary,
            "softwareVersion": str(job.provenance.get("socsim_version") or socsim.__version__),
        }
        tools.append(crate.add(tool))
        step = {"@id": f"#step/{rule}", "@type": "HowToStep", "name": rule, "position": position}
        steps.append(crate.add({**step, "workExample": _ref(tool["@id"])}))
    return tools, steps


def _workflow(crate: Crate, jobs: Sequence[Job]) -> str:
    """The Snakefile as the main workflow (the tools it runs its parts, one step per rule), and the files that
    define the workflow beside it (the rule files it includes, schemas, profiles, requirements)."""
    for rel, what in WORKFLOW_FILES.items():
        crate.data(rel, description=what)
    for f in sorted((crate.run.project / "workflow" / "rules").glob("*.smk")):  # (hasPart of the workflow: tools)
        crate.data(
            f"workflow/rules/{f.name}",
            **{"@type": ["File", "SoftwareSourceCode"]},
            version=socsim.__version__,
            description="included by the Snakefile",
        )
    tools, steps = _tools(crate, jobs)
    crate.add(
        {
            "@id": SNAKEMAKE_LANGUAGE,
            "@type": "ComputerLanguage",
            "name": "Snakemake",
            "identifier": {"@id": "https://snakemake.readthedocs.io"},
            "url": {"@id": "https://snakemake.readthedocs.io"},
        }
    )
    crate.add(
        {
            "@id": "#param/configfile",
            "@type": "FormalParameter",
            "name": "configfile",
            "additionalType": "File",
            "description": "the params file the workflow reads (Snakemake's configfile, DVC's params file)",
        }
    )
    main = crate.data(
        MAIN_WORKFLOW,
        **{"@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"]},
        description="socsim's Snakemake workflow: every study's stages, then the scorecard (workflow/rules)",
        version=socsim.__version__,
        programmingLanguage=_ref(SNAKEMAKE_LANGUAGE),
        input=_ref(["#param/configfile"]),
        hasPart=_ref(tools),
        step=_ref(steps),
    )
    if main is None:
        raise CrateError(f"{crate.run.project}: no {MAIN_WORKFLOW} (the project of a run is its results' parent)")
    return main


def _job_action(crate: Crate, job: Job, params: str | None) -> tuple[str, str]:
    """One job's CreateAction (its tool, its files, its provenance) and its step's ControlAction."""
    aid = f"#job/{job.slug}"
    objects = [f for f in (crate.data(p) for p in job.inputs) if f]
    if params and job.rule != workflow.SCORECARD_RULE:  # every stage reads params.yaml (`--params`)
        objects.append(params)
    results = [f for f in (crate.data(p) for p in job.outputs) if f]
    groups = [
        crate.model_group(aid, name, model.identity, model_fields(name, model, job))
        for name, model in sorted(records(job.metrics).items())
    ]
    action = {
        "@id": aid,
        "@type": "CreateAction",
        "name": f"socsim: {job.label}",
        "description": job.command,
        "instrument": _ref(f"#tool/{job.rule}"),
        "object": _ref(objects),
        "result": _ref(results),
        "additionalProperty": _ref([*crate.properties(aid, job_fields(job)), *groups]),
    }
    crate.add(
        {**action, **({"startTime": job.start} if job.start else {}), **({"endTime": job.end} if job.end else {})}
    )
    for trace in job.traces:
        crate.data(trace, about=_ref(aid))
    return aid, crate.add(
        {
            "@id": f"#control/{job.slug}",
            "@type": "ControlAction",
            "name": f"orchestrate {job.label}",
            "instrument": _ref(f"#step/{job.rule}"),
            "object": _ref(aid),
        }
    )


def run_fields(jobs: Sequence[Job], exported_from: str | None) -> list[tuple[str, Any, str]]:
    """The run's own PropertyValues: what its jobs recorded, each distinct value once."""
    out: list[tuple[str, Any, str]] = []
    for key in ("socsim_version", "git_commit", "seed"):
        seen = list(dict.fromkeys(canonical_json(j.provenance[key]) for j in jobs if j.provenance.get(key) is not None))
        if seen:
            values = [json.loads(v) for v in seen]
            out.append((key, values[0] if len(values) == 1 else values, f"the provenance of every job: {key}"))
    if exported_from:
        out.append(
            ("workflow_files_commit", exported_from, "git: the commit of the project the workflow files are from")
        )
    for k in ("requests", "calls", "cache_hits"):
        out.append(
            (
                k,
                sum(int(j.metrics.get(k) or 0) for j in jobs if "models" in j.metrics),
                f"every job's metrics: {k}, summed",
            )
        )
    out.append(("jobs", len(jobs), "the jobs that finished"))
    return out


def _run_action(crate: Crate, jobs: Sequence[Job], main: str, params: str | None, controls: list[str]) -> str:
    """The workflow run's CreateAction (what the run read from outside, everything it wrote, what answered)
    and the engine's OrganizeAction."""
    written = {o for j in jobs for o in j.outputs}
    outside = [i for j in jobs for i in j.inputs if i not in written and not i.startswith(f"{RESULTS}/")]
    objects = [f for f in (crate.data(p) for p in dict.fromkeys(outside)) if f]
    results = [f for f in (crate.data(p) for p in dict.fromkeys(o for j in jobs for o in j.outputs)) if f]
    groups = []
    for a in answered(jobs):
        fields = [
            (k, v, f"the metrics of its jobs: models.{a.name}.identity.{k}")
            for k, v in sorted(a.identity.items())
            if v is not None
        ]
        fields += [
            (k, v[0] if len(v) == 1 else v, f"the metrics of its jobs: models.{a.name} (each value seen)")
            for k, v in a.fields.items()
        ]
        fields += [(k, v, f"the metrics of its jobs: models.{a.name}.{k}, summed") for k, v in a.totals.items()]
        fields.append(("jobs", a.jobs, "the jobs it answered in"))
        groups.append(crate.model_group("#run", a.name, a.identity, fields))
    starts, ends = [j.start for j in jobs if j.start], [j.end for j in jobs if j.end]
    crate.add(
        {
            "@id": "#run",
            "@type": "CreateAction",
            "name": f"socsim run of {', '.join(dict.fromkeys(j.study for j in jobs))}",
            "description": "the run of the Snakefile on params.yaml (`snakemake`, or the same commands by `dvc "
            "repro`); its jobs are the engine's OrganizeAction's",
            "instrument": _ref(main),
            "object": _ref([*([params] if params else []), *objects]),
            "result": _ref(results),
            "additionalProperty": _ref(
                [*crate.properties("#run", run_fields(jobs, project_commit(crate.run.project))), *groups]
            ),
            **({"startTime": min(starts, key=_instant)} if starts else {}),
            **({"endTime": max(ends, key=_instant)} if ends else {}),
        }
    )
    crate.add(_engine())
    crate.add(
        {
            "@id": "#engine-run",
            "@type": "OrganizeAction",
            "name": "the workflow engine's run",
            "instrument": _ref("#engine"),
            "object": _ref(controls),
            "result": _ref("#run"),
            **({"startTime": min(starts, key=_instant)} if starts else {}),
        }
    )
    return "#run"


def _engine() -> dict[str, Any]:
    try:
        version = metadata.version("snakemake")
    except metadata.PackageNotFoundError:
        version = None
    return {
        "@id": "#engine",
        "@type": "SoftwareApplication",
        "name": "Snakemake",
        "url": {"@id": "https://snakemake.github.io"},
        "description": "the workflow engine (its version where the crate was exported; a run through DVC runs "
        "the same commands)",
        **({"softwareVersion": version} if version else {}),
    }


def _instant(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def license_entity(license: str | None) -> dict[str, Any]:
    """The crate's license (RO-Crate requires one): an SPDX identifier or a URL, as given; none given, an entity
    that says so (what the run's data may be used for is its authors' to say)."""
    if not license:
        return {
            "@id": "#license",
            "@type": "CreativeWork",
            "name": "terms of use not stated",
            "description": "The crate was exported without a license (socsim rocrate --license): ask the run's "
            "authors. socsim itself is MIT-licensed; the data under data/ keep their sources' terms.",
        }
    url = license if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", license) else f"https://spdx.org/licenses/{license}"
    return {"@id": url, "@type": "CreativeWork", "name": license, "identifier": license}


def project_commit(project: Path) -> str | None:
    """The git commit of the project the workflow files were copied from ("+ changes" where they differ from
    it); None outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", MAIN_WORKFLOW, *WORKFLOW_FILES],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + (" + changes" if status.stdout.strip() else "")


def build(run: Run, folder: Path, link: bool = False, license: str | None = None) -> tuple[Crate, list[Job]]:
    """The crate of a run in `folder` (its files copied there): its graph and the jobs it describes."""
    jobs = discover(run)
    crate = Crate(run, folder, link)
    crate.add(
        {
            "@id": METADATA,
            "@type": "CreativeWork",
            "about": _ref("./"),
            "conformsTo": _ref([RO_CRATE, WORKFLOW_RO_CRATE]),
        }
    )
    root: dict[str, Any] = {"@id": "./", "@type": "Dataset"}
    crate.add(root)
    for pid, (name, version) in PROFILES.items():
        crate.add({"@id": pid, "@type": "CreativeWork", "name": name, "version": version})
    main = _workflow(crate, jobs)
    params = crate.data(PARAMS, exampleOfWork=_ref("#param/configfile"))
    actions = [_job_action(crate, job, params) for job in jobs]
    controls = [c for _, c in actions]
    _run_action(crate, jobs, main, params, controls)
    crate.generated("README.md", readme(jobs), about=_ref("./"))
    root.update(
        {
            "name": title(jobs),
            "description": "A finished socsim run (Snakemake workflow) as a Workflow Run RO-Crate: the workflow, "
            "params.yaml, the data it read, every artifact its jobs wrote (each file with its sha256), one action "
            "per job, and socsim's provenance on each action as PropertyValues: per model the identity that "
            "answered, the engine, the sampling, calls and cache hits. The workflow files are those of the "
            "project at export (workflow_files_commit beside the run's git_commit).",
            "datePublished": datetime.now(UTC).isoformat(timespec="seconds"),
            "conformsTo": _ref(list(PROFILES)),
            "license": _ref(crate.add(license_entity(license))),
            "mainEntity": _ref(main),
            "hasPart": _ref(crate.parts),  # every data entity (those in folders also under their folder)
            "mentions": _ref(["#run", "#engine-run", *(a for a, _ in actions), *controls]),
        }
    )
    return crate, jobs


def export(results: str | Path, out: str | Path, link: bool = False, license: str | None = None) -> str:
    """Write the crate of the run in `results` to the folder `out` (replaced whole if it holds an earlier
    crate; refused if it holds anything else); returns what it holds, in words."""
    run, out = Run(Path(results)), Path(out)
    if any(p.resolve().is_relative_to(out.resolve()) for p in (run.results, run.project)):
        raise CrateError(f"--out {out}: the crate's folder may not hold the run's results or project")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / METADATA).is_file())):
        raise CrateError(f"--out {out}: not an RO-Crate folder; give an empty or new folder")
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        crate, jobs = build(run, tmp, link, license)
        (tmp / METADATA).write_text(json.dumps(crate.graph(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary(crate, jobs, out)


def title(jobs: Sequence[Job]) -> str:
    return f"socsim run: {len(jobs)} jobs of {', '.join(dict.fromkeys(j.study for j in jobs))}"


def readme(jobs: Sequence[Job]) -> str:
    """The crate's README.md: what it is, what answered, how to check it."""
    models = [
        f"- `{a.name}`: {identity_text(a.identity)}; engine {', '.join(map(str, a.fields.get('engine', ['?'])))}; "
        f"{a.totals.get('calls', 0)} calls, {a.totals.get('cache_hits', 0)} cache hits, in {len(a.jobs)} jobs"
        for a in answered(jobs)
    ]
    lines = [
        f"# {title(jobs)}",
        "",
        "A Workflow Run RO-Crate (https://w3id.org/ro/wfrun/workflow/0.5; each job as the Provenance Run Crate's",
        "steps) of a finished socsim run, written by `socsim rocrate`. `ro-crate-metadata.json` describes every",
        "file here (sha256, size), one action per job (its inputs, outputs, times, command), and on each action",
        "what socsim recorded, as PropertyValues (`additionalProperty`): per model registry name the identity",
        "that answered, the engine, the sampling, calls and cache hits; the params hash, seed and commit.",
        "",
        "## The models that answered",
        "",
        *(models or ["- none: no stage called a model"]),
        "",
        "## Checking it",
        "",
        "```bash",
        "# every file against its sha256",
        r"""jq -r '."@graph"[] | select(.sha256) | "\(.sha256)  \(.name)"' ro-crate-metadata.json |""",
        "  sha256sum -c --quiet",
        "# the metadata against the profiles (fetches the RO-Crate 1.1 JSON-LD context)",
        "rocrate-validator validate -p provenance-run-crate-0.5 .",
        "```",
        "",
        "The workflow files are the project's when the crate was written (`workflow_files_commit` on the run's",
        "action); each job's `git_commit` is the socsim that ran it.",
    ]
    return "\n".join(lines) + "\n"


def summary(crate: Crate, jobs: Sequence[Job], out: Path) -> str:
    files = sum(1 for e in crate.entities.values() if "sha256" in e)
    lines = [f"RO-Crate of {len(jobs)} jobs -> {out}/{METADATA}: {files} files, {crate.bytes / 1e6:.1f} MB"]
    for a in answered(jobs):
        t = a.totals
        lines.append(
            f"  {a.name}: {identity_text(a.identity)}, {t.get('calls', 0)} calls, {t.get('cache_hits', 0)} cache hits"
        )
    if crate.missing:
        lines.append(
            f"  not on disk (left out): {', '.join(crate.missing[:5])}" + (" ..." if len(crate.missing) > 5 else "")
        )
    return "\n".join(lines)
