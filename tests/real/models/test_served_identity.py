"""The registry against real servers (llama-cpp-python's server on the shipped GGUF under two aliases): a
served model's identity must equal the registry's, a stage on the wrong model writes nothing and records what
answered; a paper run without its servers stops before its first job (Snakemake)."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from socsim import config, models, studies
from socsim.llm.errors import ModelIdentityError
from socsim.llm.local import SERVED_MODEL_ID, LlamaServer
from support.llm import params_with, served
from support.project import ROOT, copy_project, run_socsim, sh, write_params

PAPER = [ROOT / "params.yaml", ROOT / "params.paper.yaml"]


def probe(params: dict, name: str) -> dict:
    client = models.named_client(params, name, cache_path="")
    return asyncio.run(client.probe())


@pytest.fixture(scope="module")
def other_server():
    """A second loopback server of the shipped GGUF that calls its model something else."""
    server = LlamaServer(alias="mistralai/Mistral-7B-Instruct-v0.3").start()
    yield server
    server.stop()


@pytest.mark.slow
def test_served_identity_must_equal_the_registry(llama_server, other_server):
    ok = params_with(smol=served([llama_server.url]))
    assert probe(ok, "smol")["model_id"] == SERVED_MODEL_ID
    # The right server under the wrong id (a wrong alias in the registry).
    wrong = params_with(llama=served([llama_server.url], model_id="meta-llama/Llama-3.1-8B-Instruct"))
    with pytest.raises(ModelIdentityError) as info:
        probe(wrong, "llama")
    assert "models.llama" in str(info.value) and llama_server.url in str(info.value)
    assert f"serves {SERVED_MODEL_ID!r}, not the registry's model_id 'meta-llama/Llama-3.1-8B-Instruct'" in str(
        info.value
    )
    # A pool in which one endpoint serves another model: the stage stops, naming that endpoint.
    mixed = params_with(smol=served([llama_server.url, other_server.url]))
    with pytest.raises(ModelIdentityError) as info:
        probe(mixed, "smol")
    assert other_server.url in str(info.value) and "Mistral-7B-Instruct-v0.3" in str(info.value)


@pytest.mark.slow
def test_a_stage_on_the_wrong_model_writes_nothing_and_records_what_answered(tmp_path, llama_server, other_server):
    sections = {"facilitation": {"personas": {"source": "llm", "n": 2, "max_tokens": 64}}}
    params = write_params(tmp_path / "params.yaml", models={"smollm2-135m": served([other_server.url])}, **sections)
    out, metrics = tmp_path / "personas.parquet", tmp_path / "m.json"
    args = ("facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics))
    bad = run_socsim(*args)
    assert bad.returncode == 2 and "models.smollm2-135m" in bad.stderr and other_server.url in bad.stderr
    assert not out.exists() and not metrics.exists()
    write_params(params, models={"smollm2-135m": served([llama_server.url])}, **sections)
    ok = run_socsim(*args)
    assert ok.returncode == 0, ok.stderr
    from socsim.io.parquet import read_provenance

    ident = read_provenance(out)["model"]["smollm2-135m"]
    assert ident["model_id"] == SERVED_MODEL_ID and ident["backend"] == "openai"  # what answered, by name
    assert json.loads(metrics.read_text())["models"]["smollm2-135m"]["identity"] == ident


@pytest.mark.slow
def test_a_paper_run_without_servers_stops_before_its_first_job(tmp_path):
    project = copy_project(tmp_path)
    env_key = os.environ.pop("OPENAI_API_KEY", None)
    try:
        start = time.monotonic()
        proc = sh(["snakemake", "--cores", "2", "--configfile", "params.paper.yaml"], project, check=False)
        took = time.monotonic() - start
    finally:
        if env_key is not None:
            os.environ["OPENAI_API_KEY"] = env_key
    assert proc.returncode != 0 and took < 60
    text = proc.stdout + proc.stderr
    needs = f"needs {len(studies.check_models(config.load(PAPER)))} model server(s)"
    assert needs in text and "vllm engine is not installed" in text and "OPENAI_API_KEY" in text
    assert not (project / "results").exists()  # no job ran
