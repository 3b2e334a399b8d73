"""hf:// model paths: parsing, and the real loading code offline against a cache laid out as the
Hugging Face Hub client lays it out (blobs/, snapshots/<commit>/, refs/<branch>)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from socsim.llm import hub
from socsim.llm.embedded import default_model_path
from socsim.llm.errors import LLMConfigError
from support.hub import hub_file
from support.project import ROOT

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "socsim-test/SmolLM2-135M-Instruct-GGUF"
FILE = "gguf/SmolLM2-135M-Instruct.Q4_1.gguf"


def test_parse_hub_paths():
    ref = hub.parse(f"hf://{REPO}/{FILE}")
    assert (ref.repo_id, ref.filename, ref.revision) == (REPO, FILE, None)
    ref = hub.parse(f"hf://{REPO}@v1.0/{FILE}")
    assert (ref.repo_id, ref.filename, ref.revision) == (REPO, FILE, "v1.0")
    assert ref.url == f"hf://{REPO}@v1.0/{FILE}"
    assert hub.is_hub_path("hf://a/b/c.gguf") and not hub.is_hub_path("/models/c.gguf") and not hub.is_hub_path(None)
    for bad in ("hf://just-a-name.gguf", "hf://owner/repo", "hf://owner/repo/file.bin"):
        with pytest.raises(LLMConfigError, match="is not hf://"):
            hub.parse(bad)


def hub_cache(root: Path) -> Path:
    """A Hub cache holding one repository at one commit, its blob a link to the shipped GGUF."""
    hub_file(root, REPO, FILE, COMMIT, default_model_path())
    return root


LOAD = """
import asyncio, json, sys
from socsim import config, models
from socsim.llm import Request
params = config.validate(
    {"models": {"hubbed": {"gguf": sys.argv[1], "n_ctx": 512}}, "llm": {"cache_path": sys.argv[2]}}
)
client = models.named_client(params, "hubbed")
resp = asyncio.run(client.generate(Request.chat([{"role": "user", "content": "Say hi."}], 1,
                                                client.sampling(max_tokens=4))))
print(json.dumps({"identity": client.identity(), "path": str(client.backend.model_path),
                  "tokens": resp.completion_tokens}))
"""


def load_offline(model_path: str, cache: Path, **env) -> subprocess.CompletedProcess:
    e = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run(
        [sys.executable, "-c", LOAD, model_path, str(cache.parent / "llm.sqlite")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=e,
    )


@pytest.mark.parametrize("revision", [None, "main", COMMIT])
def test_hub_model_loads_offline_from_the_hub_cache(tmp_path, revision):
    cache = hub_cache(tmp_path / "hub")
    rev = f"@{revision}" if revision else ""
    out = load_offline(f"hf://{REPO}{rev}/{FILE}", cache, HF_TOKEN="hf_secret_never_written")
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["tokens"] >= 1
    assert Path(result["path"]).resolve() == default_model_path().resolve()
    ident = result["identity"]
    assert ident["hub"] == {
        "source": f"hf://{REPO}{rev}/{FILE}",
        "repo_id": REPO,
        "filename": FILE,
        "revision": revision,
        "commit": COMMIT,
    }
    assert ident["model_id"] == Path(FILE).name
    assert "hf_secret_never_written" not in out.stdout + out.stderr


def test_hub_model_missing_from_cache_is_a_clear_error(tmp_path):
    cache = hub_cache(tmp_path / "hub")
    out = load_offline(f"hf://{REPO}/other.gguf", cache)
    assert out.returncode != 0
    assert f"cannot fetch hf://{REPO}/other.gguf" in out.stderr
