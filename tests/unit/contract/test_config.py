"""params.yaml validation: defaults, and messages that name the key and what was expected."""

import subprocess
import sys

import pytest
import yaml

from socsim import config

ROOT = config.schema_path().parents[2]


def empty_entry():
    return config.validate({})["models"]["smollm2-135m"]


def test_default_params_validate_and_fill_defaults():
    params = config.load(ROOT / "params.yaml")
    assert params["models"] == {"smollm2-135m": empty_entry()}
    empty = config.validate({})
    assert empty["llm"]["retries"]["max_tries"] == 5
    assert empty["facilitation"]["personas"]["source"] == "file"
    assert empty["seed"] == 20250101


@pytest.mark.parametrize(
    "params,expected",
    [
        (
            {"models": {"m": {"backend": "gpt"}}},
            'models.m.backend: expected one of "embedded", "tgi", "openai", got "gpt"',
        ),
        ({"models": {"m": {"n_ctx": 10}}}, "models.m.n_ctx: expected integer, >= 256"),
        ({"models": {"m": {"modelid": "x"}}}, "models.m.modelid: unknown key"),
        ({"llm": {"concurrency": 0}}, "llm.concurrency: expected integer, >= 1"),
        ({"llm": {"concurrency": "many"}}, "llm.concurrency: expected integer"),
        ({"llm": {"sampling": {"top_p": 1.5}}}, "llm.sampling.top_p: expected number"),
        (
            {"models": {"m": {"endpoints": ["localhost:8080"]}}},
            "models.m.endpoints.0: expected string, matching ^https?://",
        ),
        ({"llm": {"temprature": 0.1}}, "llm.temprature: unknown key"),
        ({"facilitation": {"personas": {"n": -1}}}, "facilitation.personas.n: expected integer, >= 1"),
        ({"seeed": 1}, "seeed: unknown key"),
        (
            {"facilitation": {"personas": {"roles": {"troll": 0, "normal_user": 0, "community_veteran": 0}}}},
            "facilitation.personas.roles",
        ),
    ],
)
def test_bad_params_name_the_key(params, expected):
    with pytest.raises(config.ParamsError) as info:
        config.validate(params)
    assert expected in str(info.value)


def test_override_files_merge(tmp_path):
    base = tmp_path / "params.yaml"
    base.write_text(yaml.safe_dump({"seed": 1, "llm": {"timeout": 5}, "models": {"a": {"backend": "tgi"}}}))
    over = tmp_path / "paper.yaml"
    over.write_text(yaml.safe_dump({"llm": {"timeout": 9}, "models": {"a": {"model_id": "x"}, "b": {}}}))
    params = config.load([base, over], overrides=["facilitation.personas.n=3"])
    assert params["llm"]["timeout"] == 9
    assert params["models"]["a"]["backend"] == "tgi" and params["models"]["a"]["model_id"] == "x"
    assert params["models"]["b"]["backend"] == "embedded" and params["models"]["b"]["n_ctx"] == 4096
    assert params["facilitation"]["personas"]["n"] == 3
    with pytest.raises(config.ParamsError, match="params file not found"):
        config.load(tmp_path / "missing.yaml")


def test_cli_reports_bad_params_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("llm:\n  timeout: 10\n  concurrency: -4\n")
    out = tmp_path / "personas.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "socsim.cli", "facilitation", "personas", "--params", str(bad), "--personas", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert "llm.concurrency: expected integer, >= 1, <= 1024, got -4" in proc.stderr
    assert not out.exists()


def test_stage_help_names_inputs_outputs_and_params():
    proc = subprocess.run(
        [sys.executable, "-m", "socsim.cli", "facilitation", "personas", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0
    for needle in (
        "data/facilitation/personas.jsonl",
        "results/facilitation/personas.parquet",
        "results/facilitation/metrics/personas.json",
        "facilitation.personas",
        "seed",
    ):
        assert needle in proc.stdout
