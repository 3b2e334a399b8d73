"""The server path against real OpenAI-compatible HTTP servers on loopback
(`python -m llama_cpp.server` serving the embedded GGUF), including faults."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import subprocess
import threading
import time
import urllib.request

import pytest

from socsim import config, models
from socsim.llm import Choice, EndpointUnavailableError, IntRange, LLMError, Request, Sampling, derive_seed
from socsim.llm.local import SERVED_MODEL_ID, LlamaServer, free_port
from support.llm import served
from support.metrics import cache_rows, read_metrics
from support.project import ROOT, run_socsim, socsim_cmd, write_params

pytestmark = pytest.mark.slow


def server_client(tmp_path, endpoints, model_id=SERVED_MODEL_ID, **llm):
    llm = {"cache_path": str(tmp_path / "cache.sqlite"), "retries": {"max_tries": 3, "backoff_base": 0.05}, **llm}
    params = config.validate({"llm": llm, "models": {"served": served(endpoints, model_id)}})
    return models.named_client(params, "served")


def ask(text, seed, constraint=None, max_tokens=6):
    return Request.chat([{"role": "user", "content": text}], seed, Sampling(0.8, 0.95, max_tokens), constraint)


def test_probe_constraints_and_pool(tmp_path, llama_server):
    # Two base URLs for the same server: a pool of two endpoints serving one model.
    other = llama_server.url.replace("127.0.0.1", "localhost")
    c = server_client(tmp_path, [llama_server.url, other], concurrency=2)
    reqs = [ask("Is fire hot? Yes or No.", derive_seed(1, i), Choice(("Yes", "No"))) for i in range(6)]
    reqs += [ask("Rate 1 to 5.", derive_seed(2, i), IntRange(1, 5)) for i in range(6)]
    out = c.run(reqs)
    identity = c.identity()
    assert identity["backend"] == "openai" and identity["model_id"] == SERVED_MODEL_ID
    assert all(r.parse_ok for r in out), [(r.text, r.parse_error) for r in out]
    assert {r.value for r in out[:6]} <= {"Yes", "No"} and all(1 <= r.value <= 5 for r in out[6:])
    m = c.accounting.as_metrics()
    assert set(m["endpoint_calls"]) == {llama_server.url, other}  # requests spread over the pool
    assert sum(m["endpoint_calls"].values()) == 12
    assert all(ep.max_active <= 2 for ep in c.backend._endpoints)  # bounded in flight per endpoint
    assert max(ep.max_active for ep in c.backend._endpoints) == 2


class FlakyProxy:
    """A loopback HTTP proxy that answers the first POSTs with the given error codes, then forwards."""

    def __init__(self, target: str, failures: list[int], delay: float = 0.0, cached_tokens: int | None = None):
        self.failures = list(failures)
        self.cached_tokens = cached_tokens  # reported as usage.prompt_tokens_details.cached_tokens
        self.delay = delay  # seconds added to every POST (a slow endpoint)
        self.auth: list[str | None] = []  # the Authorization header of every request
        self.bodies: list[dict] = []  # every POST's JSON body
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self, method):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
                proxy.auth.append(self.headers.get("Authorization"))
                if body:
                    proxy.bodies.append(json.loads(body))
                if method == "POST" and proxy.delay:
                    time.sleep(proxy.delay)
                with proxy.lock:
                    code = proxy.failures.pop(0) if (method == "POST" and proxy.failures) else None
                if code:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": "injected"}')
                    return
                req = urllib.request.Request(
                    target + self.path, data=body, method=method, headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(req, timeout=60) as resp:
                    data = resp.read()
                    if method == "POST" and proxy.cached_tokens is not None:
                        out = json.loads(data)
                        out["usage"]["prompt_tokens_details"] = {"cached_tokens": proxy.cached_tokens}
                        data = json.dumps(out).encode()
                    self.send_response(resp.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_retries_on_429_and_5xx_then_succeeds(tmp_path, llama_server):
    with FlakyProxy(llama_server.url, [503, 429, 500]) as proxy:
        c = server_client(tmp_path, [proxy.url], retries={"max_tries": 5, "backoff_base": 0.01})
        [r] = c.run([ask("Yes or No?", 3, Choice(("Yes", "No")))])
    assert r.parse_ok
    assert c.accounting.retries == 3 and c.accounting.calls == 1


def test_cached_prompt_tokens_reported_by_a_server_are_counted(tmp_path, llama_server):
    reqs = [ask(f"Name a colour, number {i}.", derive_seed(4, i)) for i in range(3)]
    with FlakyProxy(llama_server.url, [], cached_tokens=5) as proxy:
        c = server_client(tmp_path, [proxy.url])
        c.run(reqs)
    m = c.accounting.as_metrics()
    assert m["calls"] == 3 and m["prompt_tokens"] > 15
    assert m["prompt_tokens_evaluated"] == m["prompt_tokens"] - 3 * 5 and m["prompt_tokens_reused"] == 15
    assert m["prefix_reuse"] == round(15 / m["prompt_tokens"], 4)
    assert m["time_s"] is None  # a server's calls overlap: no split of the wall time
    # A server that does not say: unknown, not zero.
    plain = server_client(tmp_path / "plain", [llama_server.url])
    plain.run(reqs)
    m = plain.accounting.as_metrics()
    assert m["prompt_tokens_evaluated"] is None and m["prefix_reuse"] is None


def test_strict_roles_send_alternating_turns_without_a_system_message(tmp_path, llama_server):
    opener = Request.chat(
        [("system", "You are Ann."), ("assistant", "I like tea."), ("user", "Why?"), ("user", "Say more.")],
        5,
        Sampling(0.8, 0.95, 4),
    )
    with FlakyProxy(llama_server.url, []) as proxy:
        params = config.validate(
            {
                "llm": {"cache_path": str(tmp_path / "c.sqlite")},
                "models": {"served": {**served([proxy.url]), "strict_roles": True}},
            }
        )
        c = models.named_client(params, "served")
        c.run([opener])
    assert proxy.bodies[-1]["messages"] == [
        {"role": "user", "content": "You are Ann."},
        {"role": "assistant", "content": "I like tea."},
        {"role": "user", "content": "Why?\n\nSay more."},
    ]
    assert c.identity()["strict_roles"] is True  # another cache key than the same model without it


def test_client_errors_are_not_retried(tmp_path, llama_server):
    with FlakyProxy(llama_server.url, [400]) as proxy:
        c = server_client(tmp_path, [proxy.url])
        with pytest.raises(LLMError, match=r"failed: HTTP 400") as info:
            c.run([ask("Yes or No?", 1, Choice(("Yes", "No")))])
    assert proxy.url in str(info.value)
    assert c.accounting.retries == 0


def test_retry_budget_exhausted_is_a_clear_error(tmp_path, llama_server):
    with FlakyProxy(llama_server.url, [503] * 10) as proxy:
        c = server_client(tmp_path, [proxy.url], retries={"max_tries": 3, "backoff_base": 0.01})
        with pytest.raises(EndpointUnavailableError, match="failed after 3 tries") as info:
            c.run([ask("Yes or No?", 3)])
    assert proxy.url in str(info.value) and "HTTP 503" in str(info.value)


def test_server_down_at_start_stops_stage_and_writes_nothing(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    params = write_params(
        tmp_path / "params.yaml",
        models={"smollm2-135m": served([dead])},
        facilitation={"personas": {"source": "llm", "n": 2}},
    )
    out, metrics = tmp_path / "personas.parquet", tmp_path / "metrics.json"
    proc = run_socsim(
        "facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics)
    )
    assert proc.returncode == 2
    assert f"LLM endpoint {dead} is unreachable" in proc.stderr
    assert not out.exists() and not metrics.exists()
    assert list(tmp_path.glob(".*.tmp")) == []


def personas_until_cached(params, out, metrics, cache, rows: int) -> subprocess.Popen:
    """Start the LLM personas stage and return once `rows` of its calls are in its cache (still running)."""
    proc = subprocess.Popen(
        socsim_cmd(
            "facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics)
        ),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while cache_rows(cache) < rows and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, "the stage finished before a server could be killed"
    return proc


def test_server_killed_mid_stage_retries_then_fails_clearly(tmp_path):
    server = LlamaServer().start()
    try:
        params = write_params(
            tmp_path / "params.yaml",
            llm={"concurrency": 1, "retries": {"max_tries": 3, "backoff_base": 0.05}},
            models={"smollm2-135m": served([server.url])},
            facilitation={"personas": {"source": "llm", "n": 40}},
        )
        out, cache = tmp_path / "personas.parquet", tmp_path / "cache" / "llm.sqlite"
        proc = personas_until_cached(params, out, tmp_path / "m.json", cache, 2)
        server.stop()  # SIGKILL the server mid-stage
        _, stderr = proc.communicate(timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 2
    assert "failed after 3 tries" in stderr and server.url in stderr
    assert not out.exists()
    assert 2 <= cache_rows(cache) < 40  # the calls that finished are kept for the next run


def personas_params(tmp_path, endpoints, n, **model):
    return write_params(
        tmp_path / "params.yaml",
        llm={"concurrency": 1, "retries": {"max_tries": 3, "backoff_base": 0.05}},
        models={"smollm2-135m": served(endpoints, **model)},
        facilitation={"personas": {"source": "llm", "n": n, "max_tokens": 96}},
    )


def test_pool_of_two_survives_one_killed_mid_stage(tmp_path):
    a, b = LlamaServer().start(), LlamaServer().start()
    try:
        n = 16
        params = personas_params(tmp_path, [a.url, b.url], n)
        out, metrics = tmp_path / "personas.parquet", tmp_path / "m.json"
        proc = personas_until_cached(params, out, metrics, tmp_path / "cache" / "llm.sqlite", 4)
        a.stop()  # SIGKILL one of the two mid-stage
        _, stderr = proc.communicate(timeout=300)
    finally:
        a.stop()
        b.stop()
    assert proc.returncode == 0, stderr
    assert f"LLM endpoint {a.url} taken out of the pool" in stderr
    m = read_metrics(metrics)["models"]["smollm2-135m"]  # the stage's one model: its own accounting
    ea, eb = m["endpoints"][a.url], m["endpoints"][b.url]
    assert ea["removed"] and not eb["removed"]
    assert ea["calls"] >= 1 and eb["calls"] > ea["calls"]  # both served; b took a's share after it died
    assert ea["failures"] >= 3 and ea["retries"] >= 1 and eb["failures"] == 0  # requests and health checks
    assert ea["calls"] + eb["calls"] == m["calls"] == n and m["retries"] == ea["retries"]
    assert m["endpoint_calls"] == {a.url: ea["calls"], b.url: eb["calls"]}
    assert len(pq_rows(out)) == n


def pq_rows(path):
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def test_stage_fails_only_when_every_endpoint_is_gone(tmp_path):
    a, b = LlamaServer().start(), LlamaServer().start()
    try:
        c = server_client(tmp_path, [a.url, b.url], retries={"max_tries": 3, "backoff_base": 0.01})

        async def go():
            async with c:
                first = await c.generate_all([ask("Yes or No?", i) for i in range(2)])
                a.stop()
                b.stop()  # both die after the stage started
                return first, await c.generate_all([ask("Yes or No?", i) for i in range(2, 6)])

        with pytest.raises(EndpointUnavailableError, match="every LLM endpoint failed after 3 tries") as info:
            asyncio.run(go())
    finally:
        a.stop()
        b.stop()
    msg = str(info.value)
    assert f"{a.url} (" in msg and f"{b.url} (" in msg and "ClientConnectorError" in msg
    stats = c.backend.endpoint_stats()
    assert stats[a.url]["removed"] and stats[b.url]["removed"]
    assert stats[a.url]["failures"] >= 3 and stats[b.url]["failures"] >= 3
    assert c.accounting.calls == 2 and cache_rows(tmp_path / "cache.sqlite") == 2


def test_endpoint_down_at_start_is_left_out_while_another_answers(tmp_path, llama_server):
    dead = f"http://127.0.0.1:{free_port()}"
    c = server_client(tmp_path, [dead, llama_server.url])
    out = c.run([ask("Yes or No?", i, Choice(("Yes", "No"))) for i in range(3)])
    assert all(r.parse_ok for r in out)
    stats = c.backend.endpoint_stats()
    assert stats[dead] == {"calls": 0, "failures": 0, "retries": 0, "removed": True}
    assert stats[llama_server.url]["calls"] == 3


KEY = "sk-socsim-test-5f1c9a2e7b"  # a made-up key that must appear in no file


@pytest.fixture(scope="module")
def keyed_server():
    server = LlamaServer(api_key=KEY).start()
    yield server
    server.stop()


def test_server_with_api_key(tmp_path, keyed_server, monkeypatch):
    # Right key, from the variable params name: the stage runs; the key is in no artifact, log or cache.
    params = personas_params(tmp_path, [keyed_server.url], 3, api_key_env="SOCSIM_TEST_KEY")
    env = {**os.environ, "SOCSIM_TEST_KEY": KEY}
    out, metrics = tmp_path / "personas.parquet", tmp_path / "m.json"
    args = ("facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics))
    ok = run_socsim(*args, env=env)
    assert ok.returncode == 0, ok.stderr
    assert len(pq_rows(out)) == 3 and read_metrics(metrics)["calls"] == 3

    # Missing variable, wrong key: a clear error naming the variable, never the key.
    missing = run_socsim(*args, env={k: v for k, v in env.items() if k != "SOCSIM_TEST_KEY"})
    assert missing.returncode == 2
    assert "environment variable SOCSIM_TEST_KEY" in missing.stderr and "not set" in missing.stderr
    wrong = run_socsim(*args, env={**env, "SOCSIM_TEST_KEY": "sk-wrong-" + KEY[::-1]})
    assert wrong.returncode == 2
    assert "refused the API key from the environment variable SOCSIM_TEST_KEY (HTTP 401)" in wrong.stderr
    no_key = run_socsim(*args[:3], str(personas_params(tmp_path, [keyed_server.url], 3)), *args[4:], env=env)
    assert no_key.returncode == 2 and "requires an API key" in no_key.stderr and "api_key_env" in no_key.stderr
    assert "Traceback" not in missing.stderr + wrong.stderr + no_key.stderr

    texts = [ok.stdout, ok.stderr, missing.stderr, wrong.stderr, no_key.stderr]
    files = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert any(f.suffix == ".sqlite" for f in files)  # the cache is among the files searched
    for blob in [t.encode() for t in texts] + [f.read_bytes() for f in files]:
        assert KEY.encode() not in blob and KEY[::-1].encode() not in blob


def test_api_key_per_endpoint(tmp_path, keyed_server, llama_server, monkeypatch):
    monkeypatch.setenv("SOCSIM_TEST_KEY", KEY)
    c = server_client(tmp_path, [{"url": keyed_server.url, "api_key_env": "SOCSIM_TEST_KEY"}, llama_server.url])
    out = c.run([ask("Yes or No?", i, Choice(("Yes", "No"))) for i in range(4)])
    assert all(r.parse_ok for r in out)
    stats = c.backend.endpoint_stats()
    assert stats[keyed_server.url]["calls"] >= 1 and stats[llama_server.url]["calls"] >= 1
    assert KEY not in json.dumps(c.identity()) and KEY not in json.dumps(c.accounting.as_metrics())


def test_pool_sends_more_to_the_faster_endpoint(tmp_path, llama_server):
    # Least busy first, decided when a slot frees: a slow endpoint gets fewer requests, not half.
    with FlakyProxy(llama_server.url, [], delay=1.5) as slow:
        c = server_client(tmp_path, [slow.url, llama_server.url], concurrency=1)
        out = c.run([ask("Yes or No?", i, max_tokens=2) for i in range(10)])
    assert len(out) == 10 and all(r.completion_tokens >= 1 for r in out)
    stats = c.backend.endpoint_stats()
    assert stats[slow.url]["calls"] >= 1 and stats[llama_server.url]["calls"] >= 7, stats
    assert all(ep.max_active <= 1 for ep in c.backend._endpoints)


def test_no_hugging_face_token_goes_to_a_server(tmp_path, llama_server, monkeypatch):
    # huggingface_hub sends the user's HF token when given no key; socsim's servers must never see it.
    monkeypatch.setenv("HF_TOKEN", "hf_socsim_test_token_not_for_servers")
    with FlakyProxy(llama_server.url, []) as proxy:
        c = server_client(tmp_path, [proxy.url])
        c.run([ask("Yes or No?", 1, max_tokens=2)])
    assert proxy.auth and not any("hf_socsim_test_token" in (a or "") for a in proxy.auth)
