"""`socsim <study> <stage>`: every pipeline stage as one command.

Also `socsim params validate` and `socsim dvc export|check`.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from socsim import config, stages
from socsim.io.parquet import SchemaError, write_json
from socsim.io.provenance import provenance
from socsim.llm.errors import LLMError


class StageContext:
    """What a stage's run() receives: validated params, its paths, and the LLM client."""

    def __init__(self, stage: stages.Stage, params: dict, paths: dict[str, Path]):
        self.stage = stage
        self.params = params
        self.paths = paths
        self.values = config.subset(params, stage.params)
        self.seed = params["seed"]
        self._client = None
        self._model_clients: dict = {}

    def path(self, name: str) -> Path:
        return self.paths[name]

    def client(self):
        if self._client is None:
            from socsim.llm import LLMClient

            self._client = LLMClient.from_params(self.params)
        return self._client

    def model_clients(self, models: list[dict], where: str) -> dict:
        """One LLM client per model entry (a name plus llm overrides), closed with the context."""
        from socsim.llm import LLMClient

        clients = {m["name"]: LLMClient.from_params(config.with_llm_overrides(self.params, m, where))
                   for m in models}
        self._model_clients.update(clients)
        return clients

    @staticmethod
    def llm_metrics(clients: dict) -> dict:
        """Accounting of several clients: totals, and each model's own."""
        per = {name: c.accounting.as_metrics() for name, c in clients.items()}
        totals = {k: sum(m[k] for m in per.values()) for k in ("requests", "calls", "cache_hits", "parse_failures",
                                                               "completion_tokens")}
        return {**totals, "models": per}

    def model_identity(self) -> dict | None:
        return self._client.identity() if self._client is not None else None

    def provenance(self) -> dict:
        return provenance(f"{self.stage.study}.{self.stage.name}", self.values, self.seed, self.model_identity())

    def write_metrics(self, **extra) -> None:
        if not self.stage.metrics:
            return
        from socsim.llm.accounting import Accounting

        metrics = dict(extra)
        if self.stage.uses_llm and "calls" not in extra:
            acc = self._client.accounting if self._client is not None else Accounting()
            metrics = {**acc.as_metrics(), **extra}
        write_json(self.path("metrics"), metrics)

    def close(self) -> None:
        for client in [self._client, *self._model_clients.values()]:
            if client is not None:
                client.close()


def _stage_help(stage: stages.Stage) -> str:
    lines = ["inputs:"]
    lines += [f"  --{k.replace('_', '-')} (default {v})" for k, v in stage.inputs.items()] or ["  (none)"]
    lines += ["outputs:"]
    lines += [f"  --{k.replace('_', '-')} (default {v})" for k, v in stage.all_outputs().items()]
    lines += ["params keys read:"] + [f"  {k}" for k in stage.params]
    if stage.uses_llm:
        lines += ["model calls go through the llm section (backend, cache, retries)."]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socsim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="study", required=True, metavar="<study>")
    for study, study_stages in stages.studies().items():
        sp = sub.add_parser(study, help=f"stages of the {study} study")
        ssub = sp.add_subparsers(dest="stage", required=True, metavar="<stage>")
        for st in study_stages:
            p = ssub.add_parser(st.name, help=st.summary, description=st.summary, epilog=_stage_help(st),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
            p.add_argument("--params", action="append", metavar="YAML",
                           help="params file(s); later ones override earlier ones (default params.yaml)")
            p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                           help="override one params key (value parsed as YAML)")
            for name, default in {**st.inputs, **st.all_outputs()}.items():
                p.add_argument("--" + name.replace("_", "-"), dest=name, default=default, metavar="PATH")
            p.set_defaults(_stage=st)

    ps = sub.add_parser("params", help="check params.yaml")
    pss = ps.add_subparsers(dest="action", required=True)
    pv = pss.add_parser("validate", help="validate params files against the schema and print the result")
    pv.add_argument("files", nargs="*", default=["params.yaml"])

    dv = sub.add_parser("dvc", help="dvc.yaml generated from the stage registry")
    dss = dv.add_subparsers(dest="action", required=True)
    de = dss.add_parser("export", help="write dvc.yaml")
    de.add_argument("--out", default="dvc.yaml")
    dss.add_parser("check", help="fail if dvc.yaml differs from the registry")
    return parser


def run_stage(args: argparse.Namespace) -> None:
    st: stages.Stage = args._stage
    params = config.load(args.params or [stages.PARAMS_FILE], args.set)
    paths = {name: Path(getattr(args, name)) for name in {**st.inputs, **st.all_outputs()}}
    for name in st.inputs:
        if not paths[name].exists():
            raise FileNotFoundError(f"input --{name.replace('_', '-')} not found: {paths[name]}")
    ctx = StageContext(st, params, paths)
    try:
        st.run(ctx)
    finally:
        ctx.close()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.study == "params":
            import yaml

            print(yaml.safe_dump(config.load(args.files), sort_keys=False), end="")
        elif args.study == "dvc":
            from socsim import dvc

            if args.action == "export":
                dvc.write(args.out)
            else:
                dvc.check("dvc.yaml")
        else:
            run_stage(args)
    except (config.ParamsError, LLMError, SchemaError, FileNotFoundError, ValueError) as exc:
        print(f"socsim: error: {textwrap.indent(str(exc), '  ').strip()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
