"""The stage context: what a stage's run() receives (its declared params as a view, its resolved paths, its shard,
readers and writers of its artifacts, the LLM clients, its report and metrics), built by the CLI from a study's
declarations (socsim.stages)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from socsim.config import subset
from socsim.stages import ALL, ParamsView, Stage, Study

if TYPE_CHECKING:
    import pandas as pd

    from socsim.io.report import AnalysisInputs, Panel, Report
    from socsim.llm import LLMClient
    from socsim.models import ModelSpec


def process_usage() -> dict[str, float]:
    """This process's CPU seconds (user and system, its threads included) and peak resident memory so far: what an
    LLM stage cost the machine beside its model's time (docs/rehearsal.md; like wall_s, not a DVC metric)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": round(me.ru_utime + me.ru_stime, 3), "peak_rss_mib": round(me.ru_maxrss / 1024, 1)}


class StageContext:
    """What a stage's run() receives: its declared params (a view), its resolved paths, its shard,
    readers and writers of its artifacts, and the LLM clients (closed with the context)."""

    def __init__(
        self,
        study: Study,
        stage: Stage,
        params: dict[str, Any],
        paths: dict[str, Path | list[Path]],
        shard: str = ALL,
        clients: Callable[[ModelSpec], LLMClient] | None = None,
    ) -> None:
        self.study, self.stage, self.shard = study, stage, shard
        self._params = params
        self.params = ParamsView(params, stage.declared, f"{study.name}.{stage.name}")
        self.paths = paths
        self.values = subset(params, stage.declared)
        # shard `all` of a sharded stage holds every row (the CLI without --shard)
        self.shard_values: dict[str, Any] = (
            stage.shard_table(params).get(shard, {}) if shard == ALL else stage.shard_table(params)[shard]
        )
        from socsim.runtime import ModelRuntime

        # the model half: clients, their call cache, leases on the run's own servers, what answered
        self.models = ModelRuntime(
            params, self.label, lambda: stage.model_names(params), self._cache_path, factory=clients
        )

    @property
    def label(self) -> str:
        return f"{self.study.name}.{self.stage.name}"

    @property
    def seed(self) -> int:
        return cast(int, self.params["seed"])  # an integer by the params schema

    def path(self, name: str) -> Path:
        p = self.paths[name]
        if isinstance(p, list):
            raise TypeError(f"{name} is a list of shard files; use ctx.read({name!r})")
        return p

    # -- artifacts ------------------------------------------------------------------------
    def read(self, name: str, in_shard: bool = False) -> pa.Table:
        """A Parquet artifact as one table (shard files concatenated, in the artifact's key order);
        `in_shard`: only the rows of this stage's shard (matching its shard-key columns)."""
        from socsim.io.parquet import read_tables

        art = self.study.artifacts[name]
        p = self.paths[name]
        producer = self.study.producer(name, self._params)  # named in the error on a corrupt file
        made_by = producer.rule_name if producer is not None else None
        table = read_tables(p if isinstance(p, list) else [p], art.schema, art.keys, made_by)
        if in_shard and self.shard_values:
            import pyarrow.compute as pc

            mask = None
            for col, value in self.shard_values.items():
                m = pc.equal(table[col], value)
                mask = m if mask is None else pc.and_(mask, m)
            table = table.filter(mask)
        return table

    def yaml(self, name: str) -> dict[str, Any]:
        """A YAML input (study materials), read with errors that name the file."""
        from socsim.config import read_yaml

        return read_yaml(self.path(name), "materials file")

    def distinct(self, name: str, column: str) -> list[Any]:
        """The distinct values of one column of a Parquet artifact (all its shards), sorted: that column alone
        is read."""
        from socsim.io.parquet import read_column

        p = self.paths[name]
        return sorted({v for path in (p if isinstance(p, list) else [p]) for v in read_column(path, column)})

    def rows(self, name: str, in_shard: bool = False) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self.read(name, in_shard).to_pylist())  # pyarrow is untyped

    def write(self, name: str, rows: Sequence[dict[str, Any]], **provenance_extra: Any) -> None:
        from socsim.io.parquet import write_table

        art = self.study.artifacts[name]
        write_table(self.path(name), rows, art.schema, list(art.keys), self.provenance(**provenance_extra))

    # -- LLM clients ----------------------------------------------------------------------
    def _cache_path(self) -> str | None:
        from socsim import models

        return models.cache_path(self._params, self.study.name, self.stage.name, self.shard)

    def model_clients(
        self, names: Sequence[str], where: str, present: Iterable[Mapping[str, Any]] | None = None
    ) -> dict[str, LLMClient]:
        """One client per registry name (socsim.models), each with this shard's call cache; with
        `present`, only the models that rows of it name (a shard's own models)."""
        return self.models.clients(names, where, present)

    def model_client(self, name: str, where: str) -> LLMClient:
        """The client of one registry name (one per context; the stage's clients share its call cache)."""
        return self.models.client(name, where)

    def model_identity(self) -> dict[str, Any] | None:
        """Registry name -> the identity of the model that answered under it (None: no model was called)."""
        return self.models.identity()

    def provenance(self, **extra: Any) -> dict[str, Any]:
        from socsim.io.provenance import provenance

        prov = provenance(self.label, self.values, self._params["seed"], self.model_identity())
        servers = self.servers()
        if servers:  # what computed the answers; where and how the servers ran: the metrics (leases.LAUNCH_KEYS)
            from socsim.serving.leases import computed_by

            prov["servers"] = {name: computed_by(record) for name, record in servers.items()}
        if self.stage.shards:
            prov["shard"] = {"id": self.shard, **self.shard_values}
        return {**prov, **extra}

    def llm_metrics(self) -> dict[str, Any]:
        """Accounting of the stage's clients: totals, and each named model's own."""
        return self.models.metrics()

    # -- analysis ---------------------------------------------------------------------------
    def analysis_inputs(self, *tables: str, params: str | None = None, paper: str = "paper_file") -> AnalysisInputs:
        """What a study's `analyse` receives (socsim.io.report.AnalysisInputs): the named Parquet inputs
        (default: every Parquet input of the stage) as pandas tables with their provenance, the folder
        inputs by name, `params` (default the study's) section of the params (empty when the stage reads
        none of it), the paper's numbers (the `paper` input, if the stage reads it) and the seed (0 unless
        the stage declares `seed`)."""
        from socsim.io.parquet import read_provenance
        from socsim.io.report import AnalysisInputs
        from socsim.io.vs_paper import read_paper

        arts = self.study.artifacts
        names = tables or tuple(n for n in self.stage.inputs if arts[n].schema is not None)
        read: dict[str, Any] = {}
        prov: dict[str, Any] = {}
        for n in names:
            read[n] = self.read(n).to_pandas()
            p = self.paths[n]
            prov[n] = read_provenance(p[0] if isinstance(p, list) else p) if p else {}
        dirs = {n: self.path(n) for n in self.stage.inputs if arts[n].kind == "dir"}
        numbers = read_paper(self.path(paper)) if paper in self.stage.inputs else {}
        seed = self.seed if "seed" in self.stage.declared else 0  # an analysis that draws declares the seed
        section = params or self.study.name
        reads = any(d == section or d.startswith(section + ".") for d in self.stage.declared)
        return AnalysisInputs(read, self.params[section] if reads else {}, numbers, seed, prov, dirs)

    def write_report(self, rep: Report, out: str = "analysis") -> None:
        """A study's report written to its `out` folder (socsim.io.report.write), with the stage's
        provenance (and the report's own extra), its metrics (`rep.metrics`) and its printed
        lines. The folder's declared tables (Artifact.tables) must all be in it."""
        from socsim.io import report
        from socsim.io.parquet import write_json

        written = {*rep.tables, *(f"plot_{name}" for name in rep.plots)}
        missing = [t for t in self.study.artifacts[out].tables if t not in written]
        if missing:
            raise RuntimeError(f"{self.label}: the report has no table {', '.join(missing)} (declared in {out})")
        d = self.path(out)
        report.write(rep, d)
        write_json(d / "provenance.json", self.provenance(**rep.provenance))
        for line in rep.printed:
            print(line)
        self.write_metrics(
            **rep.metrics, **({"findings": report.findings_metrics(rep.findings)} if rep.findings else {})
        )

    def report_table(self, folder: str, name: str) -> pd.DataFrame:
        """A table of a report folder input; only the tables the folder declares (Artifact.tables)."""
        from socsim.io import report

        declared = self.study.artifacts[folder].tables
        if name not in declared:
            raise KeyError(f"{self.label}: {folder} declares no table {name!r} (it declares {', '.join(declared)})")
        return report.read(self.path(folder), name)

    def plots(self, folder: str = "analysis") -> dict[str, dict[str, Panel]]:
        """Every declared plot table of a report folder as its figure's panels: figure -> {panel: Panel}."""
        from socsim.io.figures import panels

        declared = [t for t in self.study.artifacts[folder].tables if t.startswith("plot_")]
        return {t.removeprefix("plot_"): panels(self.report_table(folder, t)) for t in declared}

    def write_metrics(self, **extra: Any) -> None:
        """The stage's metrics JSON (DVC metrics): `extra`, and for LLM stages the call accounting."""
        from socsim.io.parquet import write_json
        from socsim.progress import is_quiet

        metrics = {**self.llm_metrics(), **extra, "process": process_usage()} if self.stage.uses_llm else dict(extra)
        write_json(self.path("metrics"), metrics)
        if self.stage.uses_llm and not is_quiet():  # not in a plan
            for line in self.parse_summary():
                print(line, file=sys.stderr, flush=True)

    def parse_summary(self) -> list[str]:
        """One line per model that answered: how many of its constrained answers did not parse."""
        return self.models.parse_summary(self.stage.job(self.shard))

    def servers(self) -> dict[str, dict[str, Any]]:
        """Registry name -> how the run's own server of it was started (engine, version, command, URL),
        for the served models that answered (in full in the metrics; in provenance less LAUNCH_KEYS)."""
        return self.models.servers()

    def server_failures(self) -> str:
        """What happened to the run's own servers this stage called, where one failed or died ("": none)."""
        return self.models.failures()

    def close(self) -> None:
        self.models.close()
