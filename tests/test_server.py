"""The server path against real OpenAI-compatible HTTP servers on loopback
(`python -m llama_cpp.server` serving the embedded GGUF), including faults."""

from __future__ import annotations

import http.server
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import ROOT, LlamaServer, cache_rows, free_port, run_socsim, socsim_cmd, write_params
from socsim import config
from socsim.llm import Choice, EndpointUnavailableError, IntRange, LLMClient, LLMError, Request, Sampling, derive_seed

pytestmark = pytest.mark.slow


def server_client(tmp_path, endpoints, **llm):
    llm = {"backend": "openai", "dialect": "llama_cpp", "endpoints": endpoints,
           "cache_path": str(tmp_path / "cache.sqlite"), "retries": {"max_tries": 3, "backoff_base": 0.05}, **llm}
    return LLMClient.from_params(config.validate({"llm": llm}))


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
    assert identity["backend"] == "openai" and identity["model_id"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert all(r.parse_ok for r in out), [(r.text, r.parse_error) for r in out]
    assert {r.value for r in out[:6]} <= {"Yes", "No"} and all(1 <= r.value <= 5 for r in out[6:])
    m = c.accounting.as_metrics()
    assert set(m["endpoint_calls"]) == {llama_server.url, other}  # requests spread over the pool
    assert sum(m["endpoint_calls"].values()) == 12
    assert all(ep.max_active <= 2 for ep in c.backend._endpoints)  # bounded in flight per endpoint
    assert max(ep.max_active for ep in c.backend._endpoints) == 2


class FlakyProxy:
    """A loopback HTTP proxy that answers the first POSTs with the given error codes, then forwards."""

    def __init__(self, target: str, failures: list[int]):
        self.failures = list(failures)
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self, method):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
                with proxy.lock:
                    code = proxy.failures.pop(0) if (method == "POST" and proxy.failures) else None
                if code:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": "injected"}')
                    return
                req = urllib.request.Request(target + self.path, data=body, method=method,
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=60) as resp:
                    data = resp.read()
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
    params = write_params(tmp_path / "params.yaml", llm={"backend": "openai", "endpoints": [dead]},
                          facilitation={"personas": {"source": "llm", "n": 2}})
    out, metrics = tmp_path / "personas.parquet", tmp_path / "metrics.json"
    proc = run_socsim("facilitation", "personas", "--params", str(params), "--personas", str(out),
                      "--metrics", str(metrics))
    assert proc.returncode == 2
    assert f"LLM endpoint {dead} is unreachable" in proc.stderr
    assert not out.exists() and not metrics.exists()
    assert list(tmp_path.glob(".*.tmp")) == []


def test_server_killed_mid_stage_retries_then_fails_clearly(tmp_path):
    server = LlamaServer().start()
    try:
        params = write_params(tmp_path / "params.yaml",
                              llm={"backend": "openai", "dialect": "llama_cpp", "endpoints": [server.url],
                                   "concurrency": 1, "retries": {"max_tries": 3, "backoff_base": 0.05}},
                              facilitation={"personas": {"source": "llm", "n": 40}})
        out = tmp_path / "personas.parquet"
        proc = subprocess.Popen(socsim_cmd("facilitation", "personas", "--params", str(params), "--personas",
                                           str(out), "--metrics", str(tmp_path / "m.json")),
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cache = tmp_path / "cache" / "llm.sqlite"
        deadline = time.monotonic() + 300
        while cache_rows(cache) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, "stage finished before the server could be killed"
        server.stop()  # SIGKILL the server mid-stage
        _, stderr = proc.communicate(timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 2
    assert "failed after 3 tries" in stderr and server.url in stderr
    assert not out.exists()
    assert 2 <= cache_rows(cache) < 40  # the calls that finished are kept for the next run
