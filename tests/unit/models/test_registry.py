"""The model registry: names resolve to one model each, identity is verified against what a server
serves (real loopback servers: llama-cpp-python's under aliases, and a TGI-style /info server), old
params stop with the new shape, and a run without its servers stops before its first job."""

from __future__ import annotations

import asyncio
import time

import pytest
import yaml

from socsim import config, models, studies, workflow
from socsim.config import ParamsError
from socsim.llm import LLMError
from socsim.llm.errors import ModelIdentityError
from support.llm import ScriptedServer, params_with
from support.project import ROOT

PAPER = [ROOT / "params.yaml", ROOT / "params.paper.yaml"]


# -- resolution ----------------------------------------------------------------------------------


def test_a_name_resolves_to_its_entry_with_defaults():
    p = params_with(big={"backend": "openai", "model_id": "org/Big", "endpoints": ["http://h:1"], "n_ctx": 8192})
    spec = models.resolve(p, "big")
    assert (spec.backend, spec.model_id, spec.urls(), spec.n_ctx) == ("openai", "org/Big", ["http://h:1"], 8192)
    with pytest.raises(ParamsError, match=r"coherence.judge_model: model 'nope' is not in the models registry"):
        models.resolve(p, "nope", "coherence.judge_model")


def test_incomplete_entries_say_how_to_run_the_model():
    with pytest.raises(ParamsError, match="models.srv: a tgi server model needs model_id"):
        models.resolve(params_with(srv={"backend": "tgi"}), "srv")
    with pytest.raises(ParamsError) as info:
        models.resolve(params_with(hubonly={"model_id": "meta-llama/Llama-3.1-8B-Instruct"}), "hubonly")
    text = str(info.value)
    assert "runs a GGUF file" in text and "gguf: hf://" in text and "backend: openai" in text


def test_every_stage_name_is_checked_against_the_registry():
    p = config.validate({"coherence": {"judge_model": "missing-judge"}, "debate": {"agent_models": ["x"]}})
    with pytest.raises(ParamsError) as info:
        studies.check_models(p)
    text = str(info.value)
    assert "'missing-judge' is not in the models registry" in text and "coherence.judge" in text
    assert "'x' is not in the models registry" in text and "debate.simulate" in text


def test_old_shape_stops_with_the_new_shape_for_its_own_models():
    old = {
        "llm": {"backend": "tgi", "endpoints": ["http://gpu:8080"], "timeout": 60},
        "facilitation": {"models": [{"name": "llama", "model": "meta-llama/Llama-3.1-70B-Instruct"}]},
        "coherence": {"judge_model": {"name": "judge", "backend": "openai", "model": "org/Judge"}},
    }
    with pytest.raises(ParamsError) as info:
        config.validate(old)
    text = str(info.value)
    assert "shape before the model registry" in text and "llm.backend" in text
    shown = yaml.safe_load(text.split("For these params:")[1].split("\n\n")[1])
    assert shown["models"]["llama"] == {
        "backend": "tgi",
        "model_id": "meta-llama/Llama-3.1-70B-Instruct",
        "endpoints": ["http://gpu:8080"],
    }
    assert shown["models"]["judge"]["backend"] == "openai" and shown["models"]["judge"]["model_id"] == "org/Judge"
    assert shown["facilitation"] == {"models": ["llama"]} and shown["coherence"] == {"judge_model": "judge"}
    assert shown["llm"] == {"timeout": 60}
    config.validate(shown)  # what it shows is valid params


def test_shipped_configs_name_the_papers_models_on_servers():
    p = config.load(PAPER)
    specs = studies.check_models(p)
    assert all(s.served and s.model_id for s in specs.values())  # nothing silently falls back to SmolLM2
    # The open models are served by the run (vLLM with its science flags), gpt-4o-mini is OpenAI's.
    assert {n for n, s in specs.items() if s.serve} == set(specs) - {"gpt-4o-mini"}
    assert all(
        s.serve["engine"] == "vllm" and s.serve["prefix_caching"] and s.serve["deterministic"]
        for s in specs.values()
        if s.serve
    )
    assert specs["llama-3.1-70b"].serve["gpus"] == 4
    fac, od = p["facilitation"], p["opinion_dynamics"]
    assert fac["annotation"]["model"] == "llama-3.1-70b"  # the paper's annotator model
    assert od["classifier"]["model"] not in od["agent_models"]  # an independent classifier, as in the paper
    assert specs["gpt-4o-mini"].api_key_env == "OPENAI_API_KEY"
    laptop = studies.check_models(config.load([ROOT / "params.yaml", ROOT / "params.laptop.yaml"]))
    assert set(laptop) == {"qwen2.5-1.5b"} and laptop["qwen2.5-1.5b"].gguf.startswith("hf://")


# -- identity against a TGI-style server (a real HTTP server on loopback answering /info) -------------


def probe(params: dict, name: str) -> dict:
    client = models.named_client(params, name, cache_path="")
    return asyncio.run(client.probe())


def test_tgi_identity_is_compared_with_the_registry():
    with ScriptedServer("meta-llama/Llama-3.1-8B-Instruct") as tgi:
        good = {"backend": "tgi", "model_id": "meta-llama/Llama-3.1-8B-Instruct", "endpoints": [tgi.url]}
        ident = probe(params_with(llama=good), "llama")
        assert ident["model_id"] == "meta-llama/Llama-3.1-8B-Instruct" and ident["model_sha"] == "abc"
        with pytest.raises(ModelIdentityError) as info:
            probe(params_with(qwen={**good, "model_id": "Qwen/Qwen2.5-7B-Instruct"}), "qwen")
    text = str(info.value)
    assert "models.qwen" in text and tgi.url in text and "serves 'meta-llama/Llama-3.1-8B-Instruct'" in text


def test_preflight_lists_every_server_a_run_needs_in_seconds(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .engines/vllm here: the engine is asked of socsim's interpreter, without it
    p = config.load(PAPER)
    start = time.monotonic()
    with pytest.raises(LLMError) as info:
        workflow.preflight(p, [st.rule_name for _, st in studies.all_stages()])
    assert time.monotonic() - start < 30
    text = str(info.value)
    specs = studies.check_models(p)  # every model the paper params run: all on servers (test above)
    assert f"needs {len(specs)} model server(s) and {len(specs)} cannot be used" in text
    for name, spec in specs.items():  # the served ones: their engine is not installed here
        assert f"{name}: {spec.where()}: " in text
    assert text.count("the vllm engine is not installed here") == len(specs) - 1  # not gpt-4o-mini
    assert "make setup-gpu" in text
    assert "OPENAI_API_KEY" in text  # the hosted model: its key variable, before any connection
    # Only the stages that will run count: the opinion-dynamics analysis needs no server.
    workflow.preflight(p, ["opinion_dynamics_analyse", "facilitation_setups"])


# -- identity against real llama-cpp-python servers --------------------------------------------------


# -- the client, built once ------------------------------------------------------------------------


def test_a_client_outside_a_stage_fills_the_cache_template_and_carries_its_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with ScriptedServer("org/m") as srv:
        entry = {"backend": "openai", "model_id": "org/m", "endpoints": [srv.url]}
        params = config.validate({"llm": {"parse_fail_fast": 7}, "models": {"m": entry}})
        assert "{" in params["llm"]["cache_path"]  # the default: a template of study, stage and shard
        client = models.named_client(params, "m")
        client.close()
    made = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.sqlite")]
    assert made == [".socsim-cache/clients/m/all.sqlite"]  # never a folder named with braces
    assert (client.name, client.parse_fail_fast) == ("m", 7)  # set when it is built, not patched after
    with pytest.raises(ParamsError, match="only {study}, {stage} and {shard}"):
        models.cache_path({"llm": {"cache_path": "c/{model}.sqlite"}}, "s", "t", "all")
