"""`socsim plan`: what a run will ask of each model, before it runs.

The plan runs every stage that an LLM stage depends on, and the LLM stages themselves, exactly as the
workflow does (same params, same shards, same code), in a scratch folder, with each model replaced by a
planning backend. That backend answers at once: a constrained request with a valid answer drawn from
the request's seed, a free one with filler of its full `max_tokens`. So every prompt that can be built
before the run is built as the run builds it, and a prompt that depends on earlier answers is built on
answers of the largest allowed length (an upper bound); conversations never end early ("Goodbye."),
facilitators never stay silent, so calls that depend on answers are bounded from the design.

Prompt tokens are counted with the model's own tokenizer and chat template when it is at hand (an
embedded GGUF, read vocabulary-only), otherwise estimated (4 characters per token) and marked so.
A prompt that with its max_tokens does not fit the model's context (n_ctx) is an error before the run.

Expected times come from the metrics of an earlier run of the same stage and model (results/), or from
rates given on the command line; the plan says which. `compare()` puts a finished run's metrics beside
the plan and writes each stage's planned numbers into its metrics.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from socsim import config, studies
from socsim.context import StageContext
from socsim.io import DataUnavailableError
from socsim.io.model_record import records
from socsim.llm.client import LLMClient
from socsim.llm.counting import PlanBackend, Tally, TokenCounter
from socsim.models import ModelSpec, resolve, sampling
from socsim.progress import duration
from socsim.stages import ALL, Stage, Study


class PlanError(ValueError):
    """A plan that cannot run as planned (a prompt that with its max_tokens overflows its context)."""


# -- running the stages in plan mode --------------------------------------------------------------


@dataclass
class StagePlan:
    study: str
    stage: str
    model: str
    shards: dict[str, Tally]
    exact_calls: bool  # calls do not depend on answers (else: an upper bound)

    @property
    def total(self) -> Tally:
        t = Tally()
        for s in self.shards.values():
            t.add(s)
        return t


def _needed(study: Study, params: Mapping[str, Any]) -> list[Stage]:
    """The LLM stages of a study's run on `params` and every stage they depend on, in pipeline order."""
    stages = study.active(params)
    keep: set[str] = set()
    for st in reversed(stages):
        if st.uses_llm or any(a in s.inputs for s in stages if s.name in keep for a in st.outputs):
            keep.add(st.name)
    return [st for st in stages if st.name in keep]


def _answer_dependent(study: Study, st: Stage, params: Mapping[str, Any]) -> bool:
    """Whether a stage's number of calls can depend on model answers: it reads (directly or not) an
    artifact that an LLM stage wrote, or it plays episodes whose length depends on what is said."""
    seen: set[str] = set()
    todo = list(st.inputs)
    while todo:
        name = todo.pop()
        producer = study.producer(name, params)
        if producer is None or producer.name in seen:
            continue
        seen.add(producer.name)
        if producer.model_names(params):
            return True
        todo += list(producer.inputs)
    return False


SCRATCH_PREFIX = "socsim-plan-"


def _remove_stale_scratch() -> None:
    """Scratch folders of plans that were killed (kill -9, a lost session): their process is gone."""
    import shutil

    for folder in Path(tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        try:
            host, _, pid = (folder / ".pid").read_text().rpartition(" ")
            if host != socket.gethostname():
                continue  # a plan on another machine sharing this folder: its pid means nothing here
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, ValueError):
            continue  # not ours to judge (no pid yet, another user's)


@contextlib.contextmanager
def _scratch(root: Path) -> Iterator[Path]:
    """A scratch project: the repository's data/ and workflow/ linked, results/ fresh. Removed when the plan
    ends, also on Ctrl-C and SIGTERM; one left by a killed plan is removed by the next.

    A signal ends the plan on the spot (`_stop`): a plan writes nothing but its scratch until it has finished,
    so there is nothing to unwind. An exception raised from the handler could be lost: it lands wherever the
    main thread is, and where that is a C callback (llama.cpp's log callback while a model loads) ctypes prints
    it and goes on, so the plan ran to its end as if never signalled."""
    _remove_stale_scratch()
    handled = (signal.SIGTERM, signal.SIGINT)
    main_thread = threading.current_thread() is threading.main_thread()  # only the main thread sets handlers
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as tmp:
        console = os.dup(2)  # the process's stderr as it is now: llama.cpp points fd 2 at /dev/null as it loads
        stop = functools.partial(_stop, Path(tmp), console)
        previous = {s: signal.signal(s, stop) for s in handled} if main_thread else {}
        try:
            (Path(tmp) / ".pid").write_text(f"{socket.gethostname()} {os.getpid()}")
            for part in ("data", "workflow"):
                os.symlink(root / part, Path(tmp) / part)
            old = Path.cwd()
            os.chdir(tmp)
            try:
                yield Path(tmp)
            finally:
                os.chdir(old)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            os.close(console)


def _stop(scratch: Path, console: int, signum: int, _frame: object) -> None:
    """The plan's handler of SIGTERM and SIGINT: its scratch removed, the signal named on `console` (a file
    descriptor), the process ended with 128 + the signal's number (as the CLI ends an interrupted stage)."""
    shutil.rmtree(scratch, ignore_errors=True)
    os.write(console, f"\nsocsim: interrupted ({signal.Signals(signum).name}); the plan wrote nothing\n".encode())
    os._exit(128 + signum)


class _Progress:
    """The plan's progress on stderr: stage shards planned of all, the one being planned, and the calls
    counted so far (refreshed every few seconds while a large stage is planned: a paper-scale plan counts
    millions of calls)."""

    def __init__(self, total: int, tallies: list[Tally]):
        from tqdm import tqdm

        self.tallies = tallies
        self.current = ""
        self.bar = tqdm(total=total, desc="plan", unit="stage shard", file=sys.stderr, mininterval=1.0)
        self.done = threading.Event()
        self.ticker = threading.Thread(target=self._tick, daemon=True)
        self.ticker.start()

    def _postfix(self) -> str:
        return f"{self.current}; {sum(t.calls for t in list(self.tallies)):,} calls counted"

    def _tick(self) -> None:
        while not self.done.wait(3.0):
            self.bar.set_postfix_str(self._postfix())

    def start(self, label: str) -> None:
        self.current = label
        self.bar.set_postfix_str(self._postfix())

    def step(self) -> None:
        self.bar.update(1)

    def close(self) -> None:
        self.done.set()
        self.ticker.join()
        self.bar.set_postfix_str(f"{sum(t.calls for t in self.tallies):,} calls counted")
        self.bar.close()


def run(params: Mapping[str, Any], root: Path | None = None) -> tuple[list[StagePlan], dict[str, str], list[str]]:
    """Plan every study: per stage and model the tallies by shard; how tokens were counted per model;
    and the studies that could not be planned (with why)."""
    from socsim.progress import quiet

    root = (root or Path.cwd()).resolve()
    p = dict(params)
    p["llm"] = {**p["llm"], "cache_path": ""}  # no call cache in plan mode
    counters: dict[str, TokenCounter] = {}
    plans: list[StagePlan] = []
    skipped: list[str] = []
    total = sum(len(st.shard_ids(p)) if st.shards else 1 for study in studies.all_studies() for st in _needed(study, p))
    live: list[Tally] = []
    bar = _Progress(total, live)
    try:
        with _scratch(root), quiet():
            for study in studies.all_studies():
                try:
                    plans += _plan_study(study, p, counters, bar, live)
                except DataUnavailableError as exc:  # its data cannot be had here: reported, the others planned
                    skipped.append(f"{study.name}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    finally:
        bar.close()
    return plans, {n: c.how for n, c in counters.items()}, skipped


def _plan_client(
    params: Mapping[str, Any],
    counters: dict[str, TokenCounter],
    tallies: dict[tuple[str, str], Tally],
    shard: str,
    live: list[Tally],
    spec: ModelSpec,
) -> LLMClient:
    """A client of the planning backend, counting into the (model, shard) tally."""
    if spec.name not in counters:
        counters[spec.name] = TokenCounter(
            spec.gguf if spec.backend == "embedded" else None, spec.backend == "embedded"
        )
    if (spec.name, shard) not in tallies:
        live.append(tallies.setdefault((spec.name, shard), Tally()))
    tally = tallies[(spec.name, shard)]
    # made-up answers: never stopped by llm.parse_fail_fast
    backend = PlanBackend(spec.name, spec.n_ctx, counters[spec.name], tally)
    return LLMClient(backend, None, sampling(params, spec), None, spec.name)


def _plan_study(
    study: Study, params: dict[str, Any], counters: dict[str, TokenCounter], bar: _Progress, live: list[Tally]
) -> list[StagePlan]:
    out: list[StagePlan] = []
    for st in _needed(study, params):
        tallies: dict[tuple[str, str], Tally] = {}
        for shard in st.shard_ids(params) if st.shards else [ALL]:
            bar.start(f"{study.name} {st.name}" + (f" [{shard}]" if st.shards else ""))
            paths = study.paths(st, params, shard)
            resolved = {k: [Path(x) for x in v] if isinstance(v, list) else Path(v) for k, v in paths.items()}
            factory = functools.partial(_plan_client, params, counters, tallies, shard, live)
            ctx = StageContext(study, st, params, resolved, shard, clients=factory)
            try:
                st.run(ctx)
            finally:
                ctx.close()
            bar.step()
        if st.uses_llm:
            exact = not _answer_dependent(study, st, params) and not st.length_depends_on_answers
            by_model: dict[str, dict[str, Tally]] = {}
            for (model, shard), tally in sorted(tallies.items()):
                by_model.setdefault(model, {})[shard] = tally
            out += [StagePlan(study.name, st.name, m, shards, exact) for m, shards in by_model.items()]
    return out


def check_overflow(plans: Sequence[StagePlan], params: Mapping[str, Any]) -> None:
    problems = []
    for sp in plans:
        over = sp.total.overflows
        if over:
            n_ctx = resolve(params, sp.model).n_ctx
            worst = sorted(over, key=lambda x: -x[1])[:3]
            listing = "; ".join(f"{label}: {size} tokens" for label, size in worst)
            problems.append(
                f"{sp.study} {sp.stage} on {sp.model}: {len(over)} prompt(s) with their answers exceed n_ctx = "
                f"{n_ctx} (largest: {listing})"
            )
    if problems:
        raise PlanError(
            "prompts longer than their model's context (raise models.<name>.n_ctx and the server's context, "
            "or shorten the design):\n  " + "\n  ".join(problems)
        )


# -- rates and expected times ---------------------------------------------------------------------


def measured_rates(results: Path) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(study, stage, model) -> (prompt tokens, seconds) of an earlier run, from its metrics. Prompt tokens
    carry the time: the plan counts them closely, while its completion tokens are a bound."""
    out: dict[tuple[str, str, str], tuple[float, float]] = {}
    for path in sorted(results.glob("*/metrics/**/*.json")):
        study, stage = path.relative_to(results).parts[0], path.relative_to(results).parts[2].removesuffix(".json")
        try:
            metrics = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for model, m in records(metrics).items():
            wall = float(m.accounting.get("generation_wall_s") or 0.0)
            if not m.calls or not wall:
                continue
            tok, sec = out.get((study, stage, model), (0.0, 0.0))
            out[(study, stage, model)] = (tok + m.count("prompt_tokens"), sec + wall)
    return out


def expected_seconds(
    sp: StagePlan,
    measured: Mapping[tuple[str, str, str], tuple[float, float]],
    given: Mapping[str, tuple[float, float]],
) -> tuple[float | None, str]:
    """Expected time of one stage plan, and where its rate comes from."""
    t = sp.total
    if sp.model in given:
        prompt_rate, gen_rate = given[sp.model]
        return t.prompt_tokens / prompt_rate + t.completion_tokens / gen_rate, "given rates"
    if (sp.study, sp.stage, sp.model) in measured:
        tok, sec = measured[(sp.study, sp.stage, sp.model)]
        if tok > 0 and sec > 0:
            return t.prompt_tokens * sec / tok, "earlier run of this stage"
    same = [v for (_, _, m), v in measured.items() if m == sp.model]
    tok, sec = sum(v[0] for v in same), sum(v[1] for v in same)
    if tok > 0 and sec > 0:
        return t.prompt_tokens * sec / tok, "earlier run of this model"
    return None, "no rate (give --rate)"


# What socsim's own client delivers per job (one process, one core) to a server that answers at once, by requests
# in flight (benchmarks/orchestration.py, 2026-12-01, docs/benchmarks.md): the least time a stage's calls take on
# any engine. Shards that run side by side (one job each, a core each) divide it.
CLIENT_CALLS_PER_S = {1: 1_677.0, 64: 3_935.0, 256: 3_634.0}


def client_calls_per_s(in_flight: int) -> float:
    """The client's measured rate at the nearest measured level at or below `in_flight` requests in flight."""
    level = max((k for k in CLIENT_CALLS_PER_S if k <= max(1, in_flight)), default=1)
    return CLIENT_CALLS_PER_S[level]


PACE_WORDS = {
    frozenset({"engine"}): "the engine sets the pace",
    frozenset({"client"}): "socsim's client sets the pace",
    frozenset({"engine", "client"}): "the engine sets the pace of some stages, socsim's client of others",
}


def pace(expected_s: float | None, client_s: float) -> str | None:
    """Which sets a stage's pace: the engine (its expected time is the longer), the client, or None (no rate)."""
    if expected_s is None:
        return None
    return "client" if client_s > expected_s else "engine"


# -- output ---------------------------------------------------------------------------------------


def rows(
    plans: Sequence[StagePlan],
    params: Mapping[str, Any],
    how: Mapping[str, str],
    measured: Mapping[tuple[str, str, str], tuple[float, float]],
    given: Mapping[str, tuple[float, float]],
) -> list[dict[str, Any]]:
    out = []
    for sp in plans:
        t = sp.total
        spec = resolve(params, sp.model)
        seconds, source = expected_seconds(sp, measured, given)
        in_flight = (spec.concurrency or params["llm"]["concurrency"]) if spec.served else 1
        client_s = t.calls / client_calls_per_s(in_flight)
        out.append(
            {
                "study": sp.study,
                "stage": sp.stage,
                "model": sp.model,
                "where": spec.where(),
                "gpus": int((spec.serve or {}).get("gpus") or 0),  # a served model's GPUs (0: not served by the run)
                "calls": t.calls,
                "calls_exact": sp.exact_calls,
                "prompt_tokens": t.prompt_tokens,
                "completion_tokens_max": t.completion_tokens,
                "largest_prompt": t.largest_prompt,
                "largest_prompt_at": t.largest_label,
                "n_ctx": spec.n_ctx,
                "tokens_counted_by": how.get(sp.model, ""),
                "tokens_exact": how.get(sp.model, "").startswith("tokenizer"),
                "expected_s": round(seconds, 1) if seconds is not None else None,
                "rate_from": source,
                "client_s": round(client_s, 1),  # socsim's client alone, one job (CLIENT_CALLS_PER_S)
                "pace": pace(seconds, client_s),
                "shards": {
                    s: {
                        "calls": v.calls,
                        "prompt_tokens": v.prompt_tokens,
                        "completion_tokens_max": v.completion_tokens,
                    }
                    for s, v in sp.shards.items()
                },
            }
        )
    return out


def table(plan_rows: Sequence[Mapping[str, Any]]) -> str:
    """The plan as a Markdown table (one row per study, stage and model)."""
    head = "| study | stage | model | calls | prompt tokens | completion tokens (max) | largest prompt / n_ctx |"
    lines = [head + " expected |", "|" + "---|" * 8]
    for r in plan_rows:
        calls = f"{r['calls']:,}" + ("" if r["calls_exact"] else " (at most)")
        est = "" if r["tokens_exact"] else " ~"
        lines.append(
            f"| {r['study']} | {r['stage']} | {r['model']} | {calls} | {r['prompt_tokens']:,}{est} | "
            f"{r['completion_tokens_max']:,} | {r['largest_prompt']:,}{est} / {r['n_ctx']:,} | "
            f"{duration(r['expected_s'])} |"
        )
    return "\n".join(lines)


def summary(plan_rows: Sequence[Mapping[str, Any]]) -> str:
    """Per model: where it must be, calls and tokens in all, expected time and GPU-hours (a model the run
    serves on GPUs), how tokens were counted; then the run's total, and which models have no rate."""
    lines = []
    known_s, gpu_h, unrated = 0.0, 0.0, []
    for name in sorted({r["model"] for r in plan_rows}):
        mine = [r for r in plan_rows if r["model"] == name]
        calls = sum(r["calls"] for r in mine)
        prompt = sum(r["prompt_tokens"] for r in mine)
        completion = sum(r["completion_tokens_max"] for r in mine)
        secs = [r["expected_s"] for r in mine]
        rated = all(s is not None for s in secs)
        seconds = sum(s for s in secs if s is not None)
        gpus = int(mine[0].get("gpus") or 0)
        if rated:
            known_s += seconds
            gpu_h += seconds * gpus / 3600
        else:
            unrated.append(name)
        gpu = f" ({seconds * gpus / 3600:,.1f} GPU-hours on {gpus} GPU(s))" if rated and gpus else ""
        client = sum(r.get("client_s") or 0.0 for r in mine)
        paced = {str(r["pace"]) for r in mine if r.get("pace")}
        lines.append(
            f"- {name}: {mine[0]['where']}; {calls:,} calls, {prompt:,} prompt tokens, at most {completion:,} "
            f"completion tokens; expected {duration(seconds) if rated else '?'}{gpu}; tokens by "
            f"{mine[0]['tokens_counted_by']}"
            + (
                f"; socsim's client alone: {duration(client)} in one job (one core)"
                + (f", so {PACE_WORDS[frozenset(paced)]}" if rated and paced else "")
                if client
                else ""
            )
        )
    calls = sum(r["calls"] for r in plan_rows)
    total = (
        f"- all models: {calls:,} calls, {sum(r['prompt_tokens'] for r in plan_rows):,} prompt tokens; expected "
        + (f"{duration(known_s)} of model time one model after another" if len(unrated) < len(lines) else "time ?")
        + (f", {gpu_h:,.1f} GPU-hours" if gpu_h else "")
        + (
            f", not counting {len(unrated)} model(s) without a rate ({', '.join(unrated)}: give "
            "--rate NAME=PROMPT_TOKENS_PER_S,COMPLETION_TOKENS_PER_S, or run a small design once to measure them)"
            if unrated
            else ""
        )
    )
    return "\n".join([*lines, total])


def write_json(
    path: Path, plan_rows: Sequence[Mapping[str, Any]], skipped: Sequence[str], files: Sequence[str]
) -> None:
    from socsim.io.parquet import write_json as atomic_json

    atomic_json(path, {"params_files": list(files), "stages": list(plan_rows), "not_planned": list(skipped)})


# -- planned beside actual ------------------------------------------------------------------------


def compare(plan_path: Path, results: Path) -> tuple[str, list[dict[str, Any]]]:
    """A finished run's metrics beside the plan: per stage and model, planned and actual calls and tokens.
    Each stage's metrics file gets its planned numbers (`planned`) beside the actual ones."""
    from socsim.io.parquet import write_json as atomic_json

    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    out = []
    for r in plan["stages"]:
        actual = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        for shard, planned in r["shards"].items():
            path = results / r["study"] / "metrics" / (r["stage"] if shard == ALL else f"{r['stage']}/{shard}")
            path = path.with_suffix(".json") if shard == ALL else path.parent / f"{shard}.json"
            if not path.is_file():
                continue
            metrics = json.loads(path.read_text(encoding="utf-8"))
            m = records(metrics).get(r["model"])
            for k in actual:
                actual[k] += m.count(k) if m is not None else 0
            metrics.setdefault("planned", {})[r["model"]] = planned
            atomic_json(path, metrics)
        out.append(
            {
                "study": r["study"],
                "stage": r["stage"],
                "model": r["model"],
                "planned_calls": r["calls"],
                "calls_exact": r["calls_exact"],
                "actual_calls": actual["requests"],
                "planned_prompt_tokens": r["prompt_tokens"],
                "actual_prompt_tokens": actual["prompt_tokens"],
                "planned_completion_tokens_max": r["completion_tokens_max"],
                "actual_completion_tokens": actual["completion_tokens"],
            }
        )
    lines = [
        "| study | stage | model | calls planned / actual | prompt tokens planned / actual | completion max / actual |",
        "|" + "---|" * 6,
    ]
    for c in out:
        ratio = c["actual_prompt_tokens"] / c["planned_prompt_tokens"] if c["planned_prompt_tokens"] else 0.0
        lines.append(
            f"| {c['study']} | {c['stage']} | {c['model']} | {c['planned_calls']:,}"
            f"{'' if c['calls_exact'] else ' (max)'} / {c['actual_calls']:,} | {c['planned_prompt_tokens']:,} / "
            f"{c['actual_prompt_tokens']:,} ({ratio:.2f}) | {c['planned_completion_tokens_max']:,} / "
            f"{c['actual_completion_tokens']:,} |"
        )
    return "\n".join(lines), out


def parse_rates(items: Sequence[str]) -> dict[str, tuple[float, float]]:
    """--rate NAME=PROMPT_TOKENS_PER_S,COMPLETION_TOKENS_PER_S"""
    out = {}
    for item in items:
        name, sep, rates = item.partition("=")
        try:
            a, b = (float(x) for x in rates.split(","))
            if not sep or a <= 0 or b <= 0:
                raise ValueError
        except ValueError:
            raise config.ParamsError(
                f"--rate {item!r}: expected NAME=PROMPT_TOKENS_PER_S,COMPLETION_TOKENS_PER_S (both > 0)"
            ) from None
        out[name] = (a, b)
    return out


def plan_params(files: Sequence[str], overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The params a run of these files sees (Snakemake's --configfile merge), every model resolved."""
    params = config.load(list(files), overrides)
    studies.check_models(params)
    return params


def main_plan(
    files: Sequence[str], json_out: str | None, rates: Sequence[str], results: str, overrides: Sequence[str] = ()
) -> tuple[str, str | None]:
    """What `socsim plan` prints, and the overflow error (None: every prompt fits its context)."""
    params = plan_params(files, overrides)
    plans, how, skipped = run(params)
    plan_rows = rows(plans, params, how, measured_rates(Path(results)), parse_rates(rates))
    if json_out:
        write_json(Path(json_out), plan_rows, skipped, files)
    text = "\n\n".join(
        [
            f"Plan of {' + '.join(files)}",
            table(plan_rows),
            "Per model:\n" + summary(plan_rows),
            "(at most): calls that depend on answers (conversations ending early, inputs written by a model), "
            "counted on answers of full length. ~: tokens estimated without the model's tokenizer. "
            "Completion tokens: every answer at its max_tokens (an upper bound).",
        ]
        + (["Not planned: " + "; ".join(skipped)] if skipped else [])
    )
    try:
        check_overflow(plans, params)
    except PlanError as exc:
        return text, str(exc)
    return text, None
