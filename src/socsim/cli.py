"""`socsim <study> <stage>`: every pipeline stage as one command.

Also `socsim params validate` and `socsim dvc export|check`.
"""

from __future__ import annotations

import argparse
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

from socsim import config, context, progress, stages, studies
from socsim.io.lock import LockedError
from socsim.io.parquet import SchemaError
from socsim.llm.errors import LLMError


def _stage_help(study: stages.Study, stage: stages.Stage) -> str:
    paths = study.paths(stage, None)

    def opt(k: str) -> str:
        return f"  --{k.replace('_', '-')} (default {paths[k]})"

    lines = ["inputs:", *([opt(k) for k in stage.inputs] or ["  (none)"])]
    lines += ["outputs:", *[opt(k) for k in study.output_names(stage)]]
    if stage.shards:
        lines += [
            "shards: one job per --shard id, computed from params (a sharded input of an unsharded stage "
            "takes every shard's file)"
        ]
    lines += ["params keys read:"] + [f"  {k}" for k in stage.declared]
    if stage.uses_llm:
        lines += ["model calls go through the llm section (backend, per-shard call cache, retries)."]
    return "\n".join(lines)


def _add_params_and_dvc(sub: Any) -> None:
    """`socsim params ...` and `socsim dvc ...`."""
    ps = sub.add_parser("params", help="check params.yaml")
    pss = ps.add_subparsers(dest="action", required=True)
    pv = pss.add_parser("validate", help="validate params files against the schema and print the result")
    pv.add_argument("files", nargs="*", default=["params.yaml"])
    pc = pss.add_parser(
        "check",
        help="DVC's first stage: validate params.yaml; a refused value stops the run before any output is removed",
    )
    pc.add_argument("--params", default=stages.PARAMS_FILE)
    pc.add_argument("--out", required=True, help="the check's output (the same bytes every time)")
    pa = pss.add_parser(
        "apply",
        help="merge override files into params.yaml (comments kept), as Snakemake's --configfile merges them: "
        "the way to run an override file with DVC",
    )
    pa.add_argument("files", nargs="+", metavar="OVERRIDE")
    pa.add_argument("--params", default=stages.PARAMS_FILE)
    pss.add_parser("table", help="every key of params.yaml from the schema, as Markdown (docs/parameters.md)")

    dv = sub.add_parser("dvc", help="dvc.yaml generated from the stage registry")
    dss = dv.add_subparsers(dest="action", required=True)
    de = dss.add_parser("export", help="write dvc.yaml")
    de.add_argument("--out", default="dvc.yaml")
    dss.add_parser("check", help="fail if dvc.yaml differs from the registry")
    dx = dss.add_parser(
        "compare",
        help="the experiments (`dvc exp show`) side by side: the params that differ, the findings by verdict",
    )
    dx.add_argument("--claims", action="store_true", help="also each finding's verdict")
    dss.add_parser(
        "commit",
        help="`dvc commit` of what Snakemake made, refused for outputs not made from params.yaml (an override)",
    )


def _add_rocrate(sub: Any, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`socsim rocrate` (a finished run as a Workflow Run RO-Crate: socsim.rocrate) added to `sub`; `parser`
    returned."""
    rc = sub.add_parser(
        "rocrate",
        help="a finished run as a Workflow Run RO-Crate: its files with their sha256, one action per job, "
        "the models that answered",
        description="Write a finished run as a Workflow Run RO-Crate (docs/reproducibility.md): the workflow, "
        "params.yaml, the data it read and every artifact its jobs wrote, copied beside ro-crate-metadata.json with "
        "their sha256; one action per job; per model the identity that answered, the engine, the sampling, calls and "
        "cache hits, as each stage's metrics record them.",
    )
    rc.add_argument("--results", default="results", help="the run's results folder (default: results)")
    rc.add_argument("--out", required=True, help="the crate's folder (new, empty, or an earlier crate: replaced)")
    rc.add_argument(
        "--link", action="store_true", help="hard-link the run's files into the crate instead of copying them"
    )
    rc.add_argument(
        "--license",
        metavar="SPDX_OR_URL",
        help="the terms the crate's data are released under (RO-Crate requires one; default: an entity saying none "
        "was stated)",
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="socsim", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="study", required=True, metavar="<study>")
    for study in studies.all_studies():
        sp = sub.add_parser(study.name, help=f"stages of the {study.name} study")
        ssub = sp.add_subparsers(dest="stage", required=True, metavar="<stage>")
        for st in study.stages:
            p = ssub.add_parser(
                st.name,
                help=st.summary,
                description=st.summary,
                epilog=_stage_help(study, st),
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
            p.add_argument(
                "--params",
                action="append",
                metavar="YAML",
                help="params file(s); later ones override earlier ones (default params.yaml)",
            )
            p.add_argument(
                "--set",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="override one params key (value parsed as YAML)",
            )
            if st.shards:
                p.add_argument(
                    "--shard",
                    metavar="ID",
                    help="the shard to run (ids from params; default: every shard's "
                    "rows in one run, written as shard 'all')",
                )
            for name in (*st.inputs, *study.output_names(st)):
                p.add_argument(
                    "--" + name.replace("_", "-"), dest=name, nargs="+", metavar="PATH", help="default: see below"
                )
            p.set_defaults(_study=study, _stage=st)

    _add_params_and_dvc(sub)

    pl = sub.add_parser(
        "plan",
        help="calls, tokens, largest prompt and expected time per study, stage and model, before a run",
        description="Run every stage up to the LLM stages against counting backends: per study, stage and model "
        "the calls, prompt and completion tokens, the largest prompt against the model's context and the expected "
        "time. A prompt that overflows its context is an error (exit 2).",
    )
    pl.add_argument(
        "--params", action="append", metavar="FILE", help="params files, merged in order (default: params.yaml)"
    )
    pl.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one params key")
    pl.add_argument("--json", metavar="PATH", help="write the plan as JSON (per shard too)")
    pl.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="MODEL=P,G",
        help="prompt and completion tokens per second of a model (default: from earlier runs' metrics)",
    )
    pl.add_argument("--results", default="results", help="where earlier runs' metrics are (rates)")
    sc = sub.add_parser(
        "scorecard",
        help="every paper finding beside every model: a table and a figure from finished runs or report folders",
        description="The scorecard (docs/scorecard.md) of any set of finished reports: a run's results folder, a "
        "study's analysis folder, a released data set's analysis. Each source is [LABEL=]PATH (default label: what "
        "its data are, e.g. generated, syndisco_revision); two reports of one study, model and source are refused.",
    )
    sc.add_argument("sources", nargs="+", metavar="[LABEL=]PATH")
    sc.add_argument("--out", default="results/scorecard", help="the scorecard's folder (default: results/scorecard)")
    sc.add_argument("--no-figure", action="store_true", help="the tables only")
    pl.add_argument(
        "--compare",
        metavar="PLAN_JSON",
        help="instead of planning: put a finished run's metrics beside this plan (and write `planned` into them)",
    )
    return _add_rocrate(sub, parser)


def _check_shards(name: str, given: list[str], expected: list[str]) -> None:
    """Shard files given in the artifact's own folder must be exactly the shards params give: a dvc.yaml
    exported before a shard key changed would otherwise analyse part of the data without a word."""
    folder = {str(Path(p).parent) for p in expected}
    if {str(Path(p).parent) for p in given} != folder:
        return  # files from elsewhere (a released data set, a test): taken as given
    missing, extra = sorted(set(expected) - set(given)), sorted(set(given) - set(expected))
    if missing or extra:
        raise ValueError(
            f"--{name.replace('_', '-')}: the shard files differ from the shards of these params "
            f"(missing: {', '.join(missing) or 'none'}; not a shard: {', '.join(extra) or 'none'}); "
            "after changing a shard key, run `socsim dvc export` (dvc.yaml lists the shards)"
        )


def run_stage(args: argparse.Namespace) -> None:
    study: stages.Study = args._study
    st: stages.Stage = args._stage
    params = config.load(args.params or [stages.PARAMS_FILE], args.set)
    if not st.active(params):
        assert st.when is not None  # a stage without `when` is always active
        key, values = st.when[0], stages.when_values(st)
        shown = " or ".join(map(repr, values))
        raise ValueError(
            f"{study.name} {st.name} is not part of a run on these params: it runs when {key} is {shown}, "
            f"and it is {config.get_dotted(params, key)!r}"
        )
    shard = stages.ALL
    if st.shards and args.shard is not None:
        shard = args.shard
        known = st.shard_ids(params)
        if shard not in known:
            raise ValueError(f"{study.name} {st.name}: no shard {shard!r} on these params (shards: {', '.join(known)})")
    defaults = study.paths(st, params, shard)
    paths: dict[str, Path | list[Path]] = {}
    for name, default in defaults.items():
        given = getattr(args, name)
        value = given if given is not None else ([default] if isinstance(default, str) else default)
        paths[name] = [Path(v) for v in value] if isinstance(default, list) else Path(value[0])
        if isinstance(default, str) and len(value) != 1:
            raise ValueError(f"--{name.replace('_', '-')} takes one path, got {len(value)}")
        if isinstance(default, list) and given is not None:
            _check_shards(name, given, default)
    for name in st.inputs:
        path_or_shards = paths[name]
        for p in path_or_shards if isinstance(path_or_shards, list) else [path_or_shards]:
            if not p.exists():
                raise FileNotFoundError(f"input --{name.replace('_', '-')} not found: {p}")
    with stages.job_lock(st, paths, shard):  # one run of a shard at a time; a second stops here
        _run_job(study, st, params, paths, shard)


def _run_job(
    study: stages.Study, st: stages.Stage, params: dict[str, Any], paths: dict[str, Path | list[Path]], shard: str
) -> None:
    ctx = context.StageContext(study, st, params, paths, shard)
    # Start and end times in the stage's log (Snakemake sends stderr there): when jobs of a cluster run
    # overlapped, and how long each waited, can be read off the logs.
    name = st.job(shard)
    progress.JOB[0] = name  # the job named on each of its console lines of progress
    started = time.time()
    print(f"socsim: {name} started {_stamp(started)}", file=sys.stderr, flush=True)
    try:
        st.run(ctx)
        print(
            f"socsim: {name} finished {_stamp(time.time())} ({time.time() - started:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    except KeyboardInterrupt:
        _remove_partial_folders(study, st, paths, started)
        raise StageInterrupted(ctx._cache_path() if st.uses_llm else None) from None
    except LLMError as exc:
        died = ctx.server_failures()  # calls failed because the run's own server went away: say how
        if not died:
            raise
        raise type(exc)(
            f"{exc}\n{died}\nRun again to go on: the calls that finished are in the call cache and are not repeated."
        ) from None
    finally:
        ctx.close()


def _remove_partial_folders(
    study: stages.Study, st: stages.Stage, paths: Mapping[str, Path | list[Path]], started: float
) -> None:
    """A stage interrupted (Ctrl-C, SIGTERM) while writing a folder output (tables, figures) leaves it
    half new, half old: remove a folder it wrote into, as Snakemake removes a failed job's outputs (one
    it did not touch is left as it was). A stage that stops on an error of its own keeps what it wrote
    (e.g. the agreement table that says why every rating failed). File outputs need nothing: they are
    written atomically, so each is the old one or the new one, whole."""
    import shutil

    for name in study.output_names(st):
        folder = paths[name]
        if study.artifact(st, name).kind != "dir" or not isinstance(folder, Path) or not folder.is_dir():
            continue
        if any(f.stat().st_mtime >= started - 0.05 for f in [folder, *folder.rglob("*")]):  # clock granularity
            shutil.rmtree(folder, ignore_errors=True)


def _stamp(t: float) -> str:
    """A local ISO 8601 time with milliseconds and the UTC offset."""
    return datetime.fromtimestamp(t).astimezone().isoformat(timespec="milliseconds")


_signal: int = signal.SIGINT  # the signal that stopped the stage


class StageInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a stage: an output not written yet is not there at all (atomic
    writes), and the calls that finished are in the stage's call cache, so a re-run resumes."""

    def __init__(self, cache: str | None):
        super().__init__()
        self.cache = cache


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """A scheduler's SIGTERM (a cancelled or timed-out job) stops the stage as Ctrl-C does. Python's
    default kills the process on the spot, without running `finally` blocks: temporary files stay,
    caches stay open. Inside asyncio.run the SIGINT handler is the runner's, which cancels the main
    task so that pending calls unwind cleanly; elsewhere it raises KeyboardInterrupt."""
    global _signal
    _signal = signum
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored (a background job of a non-interactive shell)
        raise KeyboardInterrupt


def run_stage_on_signals(args: argparse.Namespace) -> None:
    """run_stage with SIGTERM handled as Ctrl-C (the previous handler restored after, for callers
    in-process such as the tests)."""
    global _signal
    _signal = signal.SIGINT
    if threading.current_thread() is not threading.main_thread():  # only the main thread sets handlers
        return run_stage(args)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        run_stage(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    return run_args(build_parser().parse_args(argv))


def run_args(args: argparse.Namespace) -> int:
    """Run parsed arguments; the exit code (2: an error with its message, 130/143: interrupted)."""
    try:
        if args.study == "params" and args.action == "check":
            from socsim import dvc

            dvc.params_check(args.params, args.out)
        elif args.study == "params" and args.action == "apply":
            from socsim import dvc

            changed = dvc.apply(args.files, args.params)
            print("\n".join([f"{args.params}: {len(changed)} key(s) changed", *changed]))
            if changed:
                print("then: `socsim dvc export` (the shards may change), `dvc repro` or `snakemake --cores all`")
        elif args.study == "params" and args.action == "table":
            print(config.parameter_table(config.load_schema()), end="")
        elif args.study == "params":
            import yaml

            params = config.load(args.files)
            studies.check_models(params)  # every model a stage names resolves
            print(yaml.safe_dump(params, sort_keys=False), end="")
        elif args.study == "plan":
            from socsim import plan

            if args.compare:
                print(plan.compare(Path(args.compare), Path(args.results))[0])
                return 0
            text, overflow = plan.main_plan(
                args.params or [stages.PARAMS_FILE], args.json, args.rate, args.results, args.set
            )
            print(text)
            if overflow:
                raise plan.PlanError(overflow)
        elif args.study == "scorecard":
            from socsim import scorecard

            text = scorecard.main(args.sources, args.out, figure=not args.no_figure)
            print(text)
            progress.say(text)
        elif args.study == "rocrate":
            from socsim import rocrate

            print(rocrate.export(args.results, args.out, link=args.link, license=args.license))
        elif args.study == "dvc":
            from socsim import dvc

            if args.action == "export":
                dvc.write(args.out)
            elif args.action == "commit":
                dvc.commit()
            elif args.action == "compare":
                print(dvc.show_experiments(args.claims))
            else:
                dvc.check("dvc.yaml")
        else:
            run_stage_on_signals(args)
    except (config.ParamsError, LLMError, SchemaError, LockedError, FileNotFoundError, ValueError) as exc:
        print(f"socsim: error: {textwrap.indent(str(exc), '  ').strip()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        cache = exc.cache if isinstance(exc, StageInterrupted) else None
        kept = f"; finished calls are in the cache {cache}" if cache else ""
        print(f"socsim: interrupted ({signal.Signals(_signal).name}){kept}; re-run to resume", file=sys.stderr)
        return 128 + _signal
    return 0


if __name__ == "__main__":
    sys.exit(main())
