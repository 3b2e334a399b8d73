"""Servers the run starts, for real (llama-cpp-python's server on the shipped GGUF): one off loopback needs the
run's key and stops after its last lease; an engine that exits at once stops the consumer with its log."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from socsim import serving
from support.llm import serve_spec as spec


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
