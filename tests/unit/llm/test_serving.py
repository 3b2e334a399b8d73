"""Servers the run starts (socsim.serving): each engine's command line and science flags, a clear error
for an engine that is not installed, the run key kept out of every record; and, with real
llama-cpp-python servers, a server off loopback that refuses requests without the run's key, an engine
that exits at once, and a supervisor that stops its engine (and itself) after its last lease."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from socsim import config, models, serving, studies, workflow
from socsim.config import ParamsError
from socsim.llm import LLMError


def spec(engine: str, **serve) -> models.ModelSpec:
    p = config.validate(
        {
            "models": {
                "m": {
                    "backend": "openai",
                    "model_id": "meta-llama/Llama-3.1-8B-Instruct",
                    "n_ctx": 8192,
                    "serve": {"engine": engine, **serve},
                }
            }
        }
    )
    return models.resolve(p, "m")


def test_a_serve_entry_is_validated_and_filled():
    s = spec("vllm").serve
    assert s is not None
    assert s["host"] == "127.0.0.1" and s["port"] is None and s["prefix_caching"] and s["deterministic"]
    assert s["ready_timeout"] == 900 and s["args"] == [] and s["gpus"] == 0
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


def test_engine_commands_carry_the_science_flags_and_the_registry_id():
    argv, env, flags = serving.command(spec("vllm", gpus=2), "127.0.0.1", 8001)
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
    assert argv[argv.index("--served-model-name") + 1] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "--enable-prefix-caching" in argv and argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--max-model-len") + 1] == "8192"
    assert env == {"VLLM_BATCH_INVARIANT": "1"} and flags["deterministic"] == "VLLM_BATCH_INVARIANT=1"

    argv, env, flags = serving.command(spec("sglang", deterministic=False, prefix_caching=False), "127.0.0.1", 9)
    assert "--enable-deterministic-inference" not in argv and "--disable-radix-cache" in argv
    assert flags == {"prefix_caching": False, "deterministic": "off"}
    argv, _, flags = serving.command(spec("sglang"), "127.0.0.1", 9)
    assert "--enable-deterministic-inference" in argv and flags["deterministic"] == "--enable-deterministic-inference"

    argv, env, flags = serving.command(spec("tgi", args=["--max-input-tokens", "4000"]), "127.0.0.1", 3)
    assert argv[:3] == ["text-generation-launcher", "--model-id", "meta-llama/Llama-3.1-8B-Instruct"]
    assert argv[-2:] == ["--max-input-tokens", "4000"] and argv[argv.index("--shard-uds-path") + 1].endswith("-3")
    assert flags["deterministic"] == "not available" and env["PREFIX_CACHING"] == "1"

    argv, _, _ = serving.command(spec("llama_cpp"), "127.0.0.1", 5)
    assert argv[argv.index("--model_alias") + 1] == "meta-llama/Llama-3.1-8B-Instruct"
    assert argv[argv.index("--model") + 1].endswith(".gguf")  # the shipped GGUF


def test_the_run_key_goes_to_the_environment_and_never_into_a_record(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(serving.KEY_ENV, "k-123-secret")
    argv, env, _ = serving.command(spec("vllm"), "0.0.0.0", 8001)
    assert env["VLLM_API_KEY"] == "k-123-secret" and "k-123-secret" not in argv
    argv, env, _ = serving.command(spec("llama_cpp"), "0.0.0.0", 8001)
    assert env["API_KEY"] == "k-123-secret" and "k-123-secret" not in argv
    argv, _, _ = serving.command(spec("sglang"), "0.0.0.0", 8001)  # SGLang takes it as an argument only
    assert (
        "k-123-secret" in argv
        and "k-123-secret" not in serving.redact(argv)
        and serving.REDACTED in serving.redact(argv)
    )
    _, env, _ = serving.command(spec("vllm"), "127.0.0.1", 8001)  # loopback: no key
    assert "VLLM_API_KEY" not in env
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


def test_an_engine_that_is_not_installed_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOCSIM_SERVE_LAUNCHER", "local")
    for name, words in (("vllm", "pip install vllm"), ("sglang", "sglang[all]"), ("tgi", "text-generation-inference")):
        with pytest.raises(serving.ServeError, match="not installed") as info:
            serving.acquire(spec(name))
        assert words in str(info.value)
    assert not (tmp_path / ".socsim").exists()  # nothing was started
    # Before a local run's first job (Snakemake's onstart), with the entry's name.
    p = config.validate({"models": {"m": {"backend": "openai", "model_id": "x", "serve": {"engine": "vllm"}}}})
    with pytest.raises(LLMError, match="m: vllm server of .x., started by the run: the vllm engine is not installed"):
        models.preflight(p, ["m"])
    models.preflight(p, ["m"], local=False)  # on a cluster the engine is on the GPU node, not here


# -- real llama-cpp-python servers ------------------------------------------------------------------


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not serving._pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


def _get(url: str, key: str | None = None) -> int:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_a_server_off_loopback_needs_the_key_and_stops_after_its_last_lease(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOCSIM_SERVE_LAUNCHER", "local")
    monkeypatch.setenv(serving.KEY_ENV, "run-key-for-this-test")
    s = spec("llama_cpp", host="0.0.0.0", linger=0.5)
    first = serving.acquire(s)
    second = serving.acquire(s)  # a second consumer joins the running server
    state = json.loads((tmp_path / ".socsim/serve/m/server.json").read_text())
    assert first.url == second.url == state["url"] and state["status"] == "ready"
    assert first.api_key_env == serving.KEY_ENV
    assert _get(first.url + "/v1/models") == 401 and _get(first.url + "/v1/models", "run-key-for-this-test") == 200
    assert "run-key-for-this-test" not in json.dumps(state)  # the command is recorded without it
    first.release()
    time.sleep(2)
    assert _get(first.url + "/v1/models", "run-key-for-this-test") == 200  # one consumer still holds it
    second.release()
    engine_pid, supervisor = state["engine_pid"], int(state["supervisor"].rsplit(".", 1)[1])
    assert _gone(engine_pid) and _gone(supervisor), "the server outlived its last lease"
    final = json.loads((tmp_path / ".socsim/serve/m/server.json").read_text())
    assert final["status"] == "stopped" and "no consumer" in final["reason"]


@pytest.mark.slow
def test_an_engine_that_exits_at_once_stops_the_consumer_with_its_log(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOCSIM_SERVE_LAUNCHER", "local")
    start = time.monotonic()
    with pytest.raises(serving.ServeError) as info:
        serving.acquire(spec("llama_cpp", model=str(tmp_path / "missing.gguf")))
    assert time.monotonic() - start < 60
    text = str(info.value)
    assert "models.m: its llama_cpp server failed: the engine exited with status" in text
    assert "missing.gguf" in text  # the tail of its log says why


def test_servers_side_by_side_get_gpus_no_other_live_server_holds(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    base = tmp_path / "serve"

    def supervised(name: str, pid: int) -> None:
        (base / name).mkdir(parents=True, exist_ok=True)
        (base / name / "server.json").write_text(json.dumps({"supervisor": f"{serving.socket.gethostname()}.{pid}"}))

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
