"""The preflight before a run's first job covers hf:// model files: every GGUF an embedded model or a
llama_cpp server the run starts loads is in the local Hub cache or fetched into it then, and one error
lists all that cannot be had, and why, without retries. The Hub here is the cache laid out by hand as
huggingface_hub lays it out, a loopback server speaking the Hub's file protocol, or a closed port."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import huggingface_hub.constants
import pytest
from huggingface_hub import try_to_load_from_cache

from socsim import config, preflight, studies, workflow
from socsim.llm import LLMError, hub
from support.hub import hub_file
from support.llm import params_with
from support.project import ROOT

SHA = "0123456789abcdef0123456789abcdef01234567"
OTHER_SHA = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty Hub cache of this test. huggingface_hub reads HF_HOME / HF_HUB_CACHE when it is imported:
    the environment (for anything started from here) and its constants (this process) both point here."""
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return home / "hub"


@pytest.fixture
def offline(cache, monkeypatch) -> Path:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return cache


def online_at(monkeypatch, endpoint: str) -> None:
    """huggingface_hub talks to `endpoint` (read at import time from HF_ENDPOINT: set here as it would be)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    monkeypatch.setattr(huggingface_hub.constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)


def embedded(gguf: str) -> dict:
    return {"backend": "embedded", "gguf": gguf}


def served_llama(model: str) -> dict:
    return {"backend": "openai", "model_id": "local/gguf", "serve": {"engine": "llama_cpp", "model": model}}


# -- offline: only the cache counts ----------------------------------------------------------------------


def test_an_offline_run_stops_before_its_first_job_naming_the_uncached_hub_model(offline):
    url = f"hf://org/alpha-GGUF@{SHA}/alpha.Q4.gguf"
    p = params_with(alpha=embedded(url))
    start = time.monotonic()
    with pytest.raises(LLMError) as info:
        preflight.check(p, ["alpha"])
    assert time.monotonic() - start < 5
    text = str(info.value)
    assert "this run needs 1 model file(s) from the Hugging Face Hub and 1 cannot be had" in text
    assert f"alpha: embedded GGUF {url}: not in the local Hub cache ({offline})" in text
    assert "HF_HUB_OFFLINE is set" in text
    assert "model server(s)" not in text  # no server part when every server is fine (here: none)


def test_every_hub_file_that_cannot_be_had_is_listed_in_one_error(offline):
    have = f"hf://org/have-GGUF@{SHA}/have.gguf"
    hub_file(offline, "org/have-GGUF", "have.gguf", SHA)
    one, two = "hf://org/one-GGUF/one.gguf", f"hf://org/two-GGUF@{OTHER_SHA}/sub/two.gguf"
    three = "hf://org/three-GGUF@v1/three.gguf"
    p = params_with(
        have=embedded(have),
        one=embedded(one),
        one_again={**embedded(one), "n_ctx": 2048},  # the same file under a second name
        two=embedded(two),
        server=served_llama(three),  # the GGUF a llama_cpp server the run starts loads
        plain=embedded(str(ROOT / "no-such.gguf")),  # a local path: not the preflight's (the job says)
    )
    with pytest.raises(LLMError) as info:
        preflight.check(p, ["have", "one", "one_again", "two", "server", "plain"], local=False)
    text = str(info.value)
    assert "this run needs 4 model file(s) from the Hugging Face Hub and 3 cannot be had" in text
    lines = [line for line in text.splitlines() if line.startswith("  - ")]
    assert [line.split(": ")[0] for line in lines] == ["  - one", "  - one_again", "  - server", "  - two"]
    assert f"one: embedded GGUF {one}: not in the local Hub cache" in text
    assert f"two: embedded GGUF {two}: not in the local Hub cache" in text
    assert f"server: GGUF of its llama_cpp server {three}: not in the local Hub cache" in text
    assert "have" not in text and "no-such" not in text


def test_a_file_in_the_hub_cache_passes_offline_by_commit_and_by_branch(offline):
    snap = hub_file(offline, "org/cached-GGUF", "dir/cached.gguf", SHA)
    # The layout is the one huggingface_hub reads: by the pinned commit and by main.
    assert try_to_load_from_cache("org/cached-GGUF", "dir/cached.gguf", revision=SHA) == str(snap)
    assert try_to_load_from_cache("org/cached-GGUF", "dir/cached.gguf") == str(snap)
    p = params_with(
        pinned=embedded(f"hf://org/cached-GGUF@{SHA}/dir/cached.gguf"),
        main=embedded("hf://org/cached-GGUF/dir/cached.gguf"),
        server=served_llama("hf://org/cached-GGUF@main/dir/cached.gguf"),
    )
    preflight.check(p, ["pinned", "main", "server"])
    # ... and the job finds it where the preflight did.
    path, record = hub.resolve(f"hf://org/cached-GGUF@{SHA}/dir/cached.gguf", local_only=True)
    assert path == snap and record["commit"] == SHA


def test_models_without_hub_files_do_not_touch_the_hub(cache, monkeypatch):
    def no_hub(*args, **kwargs):
        raise AssertionError("the preflight asked the Hub about a model without an hf:// file")

    monkeypatch.setattr(hub, "prefetch", no_hub)
    monkeypatch.setattr(hub, "_download", no_hub)
    monkeypatch.setattr(hub, "unreachable", no_hub)
    default = config.load(ROOT / "params.yaml")  # the shipped SmolLM2 GGUF (gguf: null)
    workflow.preflight(default, [st.rule_name for _, st in studies.all_stages()])
    p = params_with(local=embedded(str(ROOT / "model.gguf")), default=embedded(None))
    preflight.check(p, ["local", "default"])
    assert not cache.exists()


def test_the_laptop_params_name_their_hub_model_when_offline(offline):
    p = config.load([ROOT / "params.yaml", ROOT / "params.laptop.yaml"])
    gguf = p["models"]["qwen2.5-1.5b"]["gguf"]
    assert hub.is_hub_path(gguf)
    with pytest.raises(LLMError) as info:
        workflow.preflight(p, [st.rule_name for _, st in studies.all_stages()])
    assert f"qwen2.5-1.5b: embedded GGUF {gguf}: not in the local Hub cache ({offline})" in str(info.value)
    # Only the jobs that will run count: an analysis calls no model.
    workflow.preflight(p, ["opinion_dynamics_analyse"])


def test_the_laptop_run_stops_in_its_preflight_with_the_environment_read_at_import(tmp_path):
    """As Snakemake's onstart runs it: a new process whose huggingface_hub read HF_HUB_OFFLINE and HF_HOME
    when it was imported."""
    code = (
        "from socsim import config, studies, workflow\n"
        "p = config.load(['params.yaml', 'params.laptop.yaml'])\n"
        "workflow.preflight(p, [st.rule_name for _, st in studies.all_stages()])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "qwen2.5-1.5b: embedded GGUF hf://bartowski/Qwen2.5-1.5B-Instruct-GGUF@" in out.stderr
    assert f"not in the local Hub cache ({tmp_path / 'hf' / 'hub'}) and HF_HUB_OFFLINE is set" in out.stderr


def test_servers_and_hub_files_are_listed_in_one_error(offline, monkeypatch):
    monkeypatch.delenv("SOCSIM_TEST_NO_SUCH_KEY", raising=False)
    url = "hf://org/gone-GGUF/gone.gguf"
    hosted = {"backend": "openai", "model_id": "gpt-x", "endpoints": ["http://127.0.0.1:9"]}
    p = params_with(gone=embedded(url), hosted={**hosted, "api_key_env": "SOCSIM_TEST_NO_SUCH_KEY"})
    with pytest.raises(LLMError) as info:
        preflight.check(p, ["gone", "hosted"])
    text = str(info.value)
    assert "this run needs 1 model server(s) and 1 cannot be used:\n  - hosted: openai server" in text
    assert "SOCSIM_TEST_NO_SUCH_KEY" in text
    head = "this run needs 1 model file(s) from the Hugging Face Hub and 1 cannot be had:"
    assert f"{head}\n  - gone: embedded GGUF {url}: not in the local Hub cache" in text
    assert "start the external servers" in text and "HF_HUB_CACHE / HF_HOME" in text


# -- online: the Hub asked once, no retries --------------------------------------------------------------


def test_an_unreachable_hub_is_said_at_once_without_retries(cache, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nothing listens on: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    online_at(monkeypatch, f"http://127.0.0.1:{port}")
    hub_file(cache, "org/have-GGUF", "have.gguf", SHA)
    p = params_with(
        a=embedded("hf://org/a-GGUF/a.gguf"),
        b=embedded(f"hf://org/b-GGUF@{SHA}/b.gguf"),
        have=embedded("hf://org/have-GGUF/have.gguf"),  # cached under main: had without asking
    )
    start = time.monotonic()
    with pytest.raises(LLMError) as info:
        preflight.check(p, ["a", "b", "have"])
    assert time.monotonic() - start < 5  # not huggingface_hub's retries of each file
    text = str(info.value)
    why = f"not in the local Hub cache ({cache}) and the Hub (http://127.0.0.1:{port}) cannot be reached: ConnectError"
    assert f"a: embedded GGUF hf://org/a-GGUF/a.gguf: {why}" in text
    assert f"b: embedded GGUF hf://org/b-GGUF@{SHA}/b.gguf: {why}" in text
    assert "have" not in text


class FakeHub(http.server.ThreadingHTTPServer):
    """The Hub's file protocol on loopback: HEAD/GET /<repo>/resolve/<revision>/<file>, its errors by header."""

    FILES = {("org/ok-GGUF", "ok.gguf"): b"GGUF ok file", ("org/ok-GGUF", "also.gguf"): b"GGUF also"}
    ERRORS = {"org/missing-GGUF": (404, "RepoNotFound"), "org/gated-GGUF": (401, "GatedRepo")}

    def __init__(self):
        self.requests: list[tuple[str, str]] = []
        super().__init__(("127.0.0.1", 0), FakeHubHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class FakeHubHandler(http.server.BaseHTTPRequestHandler):
    server: FakeHub

    def log_message(self, *args):
        pass

    def answer(self, body: bool) -> None:
        self.server.requests.append((self.command, self.path))
        if self.path == "/":
            self.send_response(404)  # a mirror with nothing at its root still answers
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        owner, name, _, revision, filename = self.path.lstrip("/").split("/", 4)
        repo = f"{owner}/{name}"
        status, code = self.server.ERRORS.get(repo, (200, ""))
        content = self.server.FILES.get((repo, filename))
        if not code and revision not in ("main", SHA):
            status, code = 404, "RevisionNotFound"
        elif not code and content is None:
            status, code = 404, "EntryNotFound"
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_header("X-Repo-Commit", SHA)
        self.send_header("ETag", f'"{abs(hash(content)):x}"')
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if body:
            self.wfile.write(content)

    def do_HEAD(self):
        self.answer(body=False)

    def do_GET(self):
        self.answer(body=True)


@pytest.fixture
def fake_hub(cache, monkeypatch):
    server = FakeHub()
    online_at(monkeypatch, server.url)
    yield server
    server.shutdown()
    server.server_close()


def test_what_the_hub_says_of_each_file_is_listed_and_nothing_is_downloaded(fake_hub):
    urls = {
        "missing": "hf://org/missing-GGUF/m.gguf",
        "gated": "hf://org/gated-GGUF/g.gguf",
        "norev": "hf://org/ok-GGUF@v9/ok.gguf",
        "nofile": "hf://org/ok-GGUF/none.gguf",
        "ok": "hf://org/ok-GGUF/ok.gguf",
        "ok_again": "hf://org/ok-GGUF/ok.gguf",
    }
    p = params_with(**{name: embedded(url) for name, url in urls.items()})
    with pytest.raises(LLMError) as info:
        preflight.check(p, list(urls))
    text = str(info.value)
    assert "this run needs 5 model file(s) from the Hugging Face Hub and 4 cannot be had" in text
    assert f"missing: embedded GGUF {urls['missing']}: repository org/missing-GGUF not found on the Hub; if it" in text
    assert f"gated: embedded GGUF {urls['gated']}: the repository org/gated-GGUF is gated: accept its" in text
    assert f"norev: embedded GGUF {urls['norev']}: revision 'v9' not found in the repository org/ok-GGUF" in text
    assert f"nofile: embedded GGUF {urls['nofile']}: file none.gguf not found in the repository org/ok-GGUF" in text
    assert "  - ok" not in text
    # The Hub asked once whether it answers, then once per distinct missing file; nothing downloaded.
    assert fake_hub.requests.count(("HEAD", "/")) == 1
    assert fake_hub.requests.count(("HEAD", "/org/ok-GGUF/resolve/main/ok.gguf")) == 1
    assert not [r for r in fake_hub.requests if r[0] == "GET"]
    assert len(fake_hub.requests) == 6


def test_the_files_a_run_needs_are_downloaded_once_before_it_starts(fake_hub, cache, monkeypatch):
    p = params_with(
        ok=embedded("hf://org/ok-GGUF/ok.gguf"),
        ok_again={**embedded("hf://org/ok-GGUF/ok.gguf"), "n_ctx": 1024},
        server=served_llama(f"hf://org/ok-GGUF@{SHA}/also.gguf"),
    )
    preflight.check(p, ["ok", "ok_again", "server"], local=False)
    gets = sorted(r[1] for r in fake_hub.requests if r[0] == "GET")
    assert gets == sorted(["/org/ok-GGUF/resolve/main/ok.gguf", f"/org/ok-GGUF/resolve/{SHA}/also.gguf"])
    assert try_to_load_from_cache("org/ok-GGUF", "ok.gguf") == str(
        cache / "models--org--ok-GGUF/snapshots" / SHA / "ok.gguf"
    )
    assert Path(try_to_load_from_cache("org/ok-GGUF", "also.gguf", revision=SHA)).read_bytes() == b"GGUF also"
    # A second preflight (or the job) finds them in the cache, offline too.
    fake_hub.requests.clear()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    preflight.check(p, ["ok", "ok_again", "server"], local=False)
    assert fake_hub.requests == []
    # When the run stops anyway (a server it needs is missing), the preflight downloads nothing.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("SOCSIM_TEST_NO_SUCH_KEY", raising=False)
    hosted = {"backend": "openai", "model_id": "gpt-x", "api_key_env": "SOCSIM_TEST_NO_SUCH_KEY"}
    q = params_with(new=embedded("hf://org/ok-GGUF/ok.gguf"), hosted=hosted)
    shutil.rmtree(cache)
    with pytest.raises(LLMError, match="SOCSIM_TEST_NO_SUCH_KEY") as info:
        preflight.check(q, ["new", "hosted"])
    assert "Hugging Face Hub" not in str(info.value)  # the file is there: it is simply not fetched yet
    assert not [r for r in fake_hub.requests if r[0] == "GET"]
