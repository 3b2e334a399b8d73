"""Servers the run starts and stops, for real: Snakemake runs of the facilitation study whose stages call
two served registry models (llama-cpp-python's server on the shipped GGUF under two aliases, one of them
off loopback behind the run's key). A server killed in the middle of a stage stops the stage with a clear
message and the rerun resumes from the call cache; a run starts both servers, checks their identity,
records them in provenance and metrics, leaks the key nowhere, and leaves no process behind; a server
that never becomes healthy stops the run within its ready timeout, with the tail of its log."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from socsim import serving
from socsim.llm.local import free_port
from socsim.serving.leases import LAUNCH_KEYS
from support.metrics import cache_rows, read_metrics
from support.project import copy_project, sh, tool_env

pytestmark = pytest.mark.slow

TINY = "tests/params.tiny.yaml"
KEY = "k-" + secrets.token_hex(16)  # made here: the project copy holds this file
SHARD = "main.agent"  # the facilitation simulate shard (condition main, model agent)
SIM_CACHE = f".socsim-cache/facilitation/simulate/{SHARD}.sqlite"
SIM_METRICS = f"results/facilitation/metrics/simulate/{SHARD}.json"


def entry(alias: str, **serve) -> dict:
    return {
        "backend": "openai",
        "dialect": "llama_cpp",
        "model_id": alias,
        "n_ctx": 2048,
        "serve": {"engine": "llama_cpp", **serve},
    }


def prepare(dest: Path, **serve) -> Path:
    project = copy_project(dest)
    params = {
        "llm": {"retries": {"max_tries": 2, "backoff_base": 0.2, "backoff_max": 1.0}},
        "models": {"agent": entry("socsim/agent", **serve), "annotator": entry("socsim/annotator", host="0.0.0.0")},
        "facilitation": {"models": ["agent"], "annotation": {"model": "annotator"}},
    }
    (project / "serve.yaml").write_text(yaml.safe_dump(params))
    return project


def run_cmd() -> list[str]:
    return ["snakemake", "facilitation", "--cores", "2", "--configfile", TINY, "serve.yaml"]


def env() -> dict[str, str]:
    return {**tool_env(), serving.KEY_ENV: KEY}


def server_state(project: Path, name: str) -> dict:
    return json.loads((project / serving.STATE / name / "server.json").read_text())


def pids(state: dict) -> list[int]:
    return [state["engine_pid"], int(state["supervisor"].split("~")[0].rsplit(".", 1)[1])]


def alive(pid: int) -> bool:
    return serving._pid_alive(pid)


def provenance(path: Path) -> dict:
    import pyarrow.parquet as pq

    return json.loads(pq.read_schema(path).metadata[b"socsim.provenance"])


def test_a_run_serves_two_models_survives_a_killed_server_and_leaves_nothing(tmp_path):
    project = prepare(tmp_path / "p")

    # 1. The agent's server is SIGKILLed in the middle of the simulate stage: the stage stops, saying so.
    with open(tmp_path / "run1.log", "w+") as log:
        proc = subprocess.Popen(run_cmd(), cwd=project, env=env(), stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 600
            while cache_rows(project / SIM_CACHE) < 3 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert proc.poll() is None, "the simulate stage finished before its server could be killed"
            killed = server_state(project, "agent")
            os.kill(killed["engine_pid"], signal.SIGKILL)
            done_when_killed = cache_rows(project / SIM_CACHE)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode != 0
    job_log = (project / "results/facilitation/logs/simulate" / f"{SHARD}.log").read_text()
    assert "models.agent: its llama_cpp server died: the engine exited with status -9" in job_log, job_log[-3000:]
    assert "calls that finished are in the call cache" in job_log
    assert not any(alive(p) for p in pids(killed)), "a process of the killed server is left"

    # 2. The rerun starts a new server and resumes: the calls that finished are not made again.
    t0 = time.monotonic()
    out = sh(run_cmd(), project, env=env())  # raises with the output if the run fails
    took = time.monotonic() - t0
    m = read_metrics(project / SIM_METRICS)
    assert m["cache_hits"] >= done_when_killed and m["calls"] == m["requests"] - m["cache_hits"] and m["calls"] > 0

    # 3. Both served models answered under their ids, and every artifact says how their servers ran.
    states = {n: server_state(project, n) for n in ("agent", "annotator")}
    assert states["agent"]["url"] != killed["url"]  # a new server (on a free port)
    for name, st in states.items():
        assert st["status"] == "stopped" and st["engine"] == "llama_cpp", st
        assert not any(alive(p) for p in pids(st)), f"a process of {name}'s server outlived the run"
    comments = provenance(project / f"results/facilitation/comments/{SHARD}.parquet")
    annotations = provenance(project / f"results/facilitation/annotations/{SHARD}.parquet")
    assert comments["model"]["agent"]["model_id"] == "socsim/agent" and set(comments["servers"]) == {"agent"}
    assert annotations["model"]["annotator"]["model_id"] == "socsim/annotator"
    metrics = read_metrics(project / f"results/facilitation/metrics/annotate/{SHARD}.json")
    server = metrics["models"]["annotator"]["server"]  # in full: where and how it was started too
    assert server["engine"] == "llama_cpp" and server["version"] and server["url"] == states["annotator"]["url"]
    assert server["command"][1:3] == ["-m", "llama_cpp.server"] and "socsim/annotator" in server["command"]
    assert not server["url"].startswith("http://127.0.0.1")  # off loopback: it required the run's key
    assert metrics["calls"] > 0
    # the artifact: what computed its answers, not where (a local and a SLURM run write the same bytes)
    assert annotations["servers"]["annotator"] == {k: v for k, v in server.items() if k not in LAUNCH_KEYS}
    assert annotations["servers"]["annotator"]["engine"] == "llama_cpp" and "url" not in comments["servers"]["agent"]

    # 4. The run's key is in no file of the project: artifacts, logs, Snakemake's logs, the servers' state.
    for f in project.rglob("*"):
        if f.is_file() and ".git" not in f.parts:
            assert KEY.encode() not in f.read_bytes(), f"the run key leaked into {f.relative_to(project)}"
    assert KEY not in out.stdout + out.stderr
    print(f"\nserved run (two servers started and stopped): {took:.0f} s")


def test_a_server_that_never_answers_stops_the_run_within_its_ready_timeout(tmp_path):
    # The engine listens on another port than the one it was given: alive, never healthy.
    project = prepare(tmp_path / "p", args=["--port", str(free_port())], ready_timeout=8)
    start = time.monotonic()
    proc = sh(run_cmd(), project, check=False, timeout=300, env=env())
    took = time.monotonic() - start
    assert proc.returncode != 0 and took < 8 + 60, took
    logs = "\n".join(f.read_text() for f in (project / "results/facilitation/logs").rglob("*.log"))
    assert "not answering after 8 s (ready_timeout); its log:" in logs, logs[-3000:]
    assert "not answering after 8 s" in proc.stdout + proc.stderr  # on the console too (show-failed-logs)
    state = server_state(project, "agent")
    assert state["status"] == "failed" and not any(alive(p) for p in pids(state))
    assert not (project / "results/facilitation/comments").exists()


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "sigkill"])
def test_an_interrupted_run_leaves_no_server_behind(tmp_path, how):
    """Ctrl-C (SIGINT to the terminal's process group), SIGTERM to Snakemake (onerror stops the servers),
    and SIGKILL to Snakemake (no hook runs: each supervisor sees its owner gone)."""
    project = prepare(tmp_path / "p")
    with open(tmp_path / "run.log", "w+") as log:
        proc = subprocess.Popen(
            run_cmd(), cwd=project, env=env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 300
            state_file = project / serving.STATE / "agent" / "server.json"
            while time.monotonic() < deadline and proc.poll() is None:
                if state_file.exists() and server_state(project, "agent").get("status") == "ready":
                    break
                time.sleep(0.1)
            assert proc.poll() is None, "the run ended before its server was ready"
            state = server_state(project, "agent")
            if how == "ctrl-c":
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    deadline = time.monotonic() + 60  # SIGKILL: the supervisor's next look at its owner
    while time.monotonic() < deadline and any(alive(p) for p in pids(state)):
        time.sleep(0.2)
    assert not any(alive(p) for p in pids(state)), f"a process of the server outlived the run ({how})"
    final = server_state(project, "agent")
    assert final["status"] == "stopped", final
    # Snakemake lets running jobs finish on SIGTERM: the last consumer may be done before the run ends.
    reasons = ("the run asked it to stop", "the run has ended", "every job that calls it is done")
    assert final["reason"] in (*reasons, "signal 2", "signal 15"), final


def test_on_slurm_a_served_model_runs_as_its_own_job_and_ends_with_the_run(slurm_cluster, tmp_path):
    """The README's cluster command: the jobs that call the model are SLURM jobs, so its server is a SLURM
    job of its own (listening on the node's address behind the run's key) whose URL they read from
    server.json. One served model (personas, topics and the discussions), to keep the test short."""
    project = prepare(tmp_path / "p")
    target = f"results/facilitation/comments/{SHARD}.parquet"  # every job that calls the agent model
    cmd = ["snakemake", target, "--workflow-profile", "profiles/slurm", "--configfile", TINY]
    t0 = time.monotonic()
    out = sh([*cmd, "serve.yaml"], project, timeout=1200, env=env())
    took = time.monotonic() - t0
    st = server_state(project, "agent")
    assert st["launcher"] == "slurm" and st["slurm_job"] and st["status"] == "stopped", st
    assert st["url"] == f"http://{slurm_cluster.node}:{st['url'].rsplit(':', 1)[1]}"  # the node, not loopback
    assert st["reason"] in ("every job that calls it is done", "the run asked it to stop"), st
    assert "0.0.0.0" in st["command"]
    assert not (project / serving.STATE / "annotator").exists()  # no job of this run called it: never started
    deadline = time.monotonic() + 60  # the server job ends (the cluster reports it within seconds)
    while time.monotonic() < deadline:
        queue = subprocess.run(["squeue", "-h", "-o", "%j"], capture_output=True, text=True).stdout
        if "socsim-serve" not in queue:
            break
        time.sleep(1)
    assert "socsim-serve" not in queue, queue
    comments = provenance(project / f"results/facilitation/comments/{SHARD}.parquet")
    simulated = read_metrics(project / SIM_METRICS)
    assert simulated["models"]["agent"]["server"]["slurm_job"] == st["slurm_job"]
    assert "slurm_job" not in comments["servers"]["agent"] and "launcher" not in comments["servers"]["agent"]
    assert comments["model"]["agent"]["model_id"] == "socsim/agent"
    for f in project.rglob("*"):
        if f.is_file() and ".git" not in f.parts:
            assert KEY.encode() not in f.read_bytes(), f"the run key leaked into {f.relative_to(project)}"
    assert KEY not in out.stdout + out.stderr
    print(f"\nSLURM run with its server as a job: {took:.0f} s")
