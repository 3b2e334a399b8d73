"""params.yaml validation: defaults, and messages that name the key and what was expected."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from socsim import cli, config
from support.project import sh

ROOT = config.schema_path().parents[2]


def empty_entry():
    return config.validate({})["models"]["smollm2-135m"]


def test_default_params_validate_and_fill_defaults():
    params = config.load(ROOT / "params.yaml")
    defaults = config.validate({})["models"]
    assert params["models"] == {
        "smollm2-135m": empty_entry(),
        "planted": defaults["planted"],
        "planted-null": defaults["planted-null"],
    }
    assert (params["models"]["planted"]["serve"]["model"], params["models"]["planted-null"]["serve"]["model"]) == (
        "planted",
        "null",  # the string: a bare YAML null would start the planted variant's twin as no variant at all
    )
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


def test_a_bad_key_names_the_files_merged_and_the_one_that_set_it(tmp_path, capsys):
    """`--params a.yaml --params b.yaml`: the message names both files, and each bad key the file (or the --set)
    it came from; a key's own file, not the last file holding its section."""
    base = tmp_path / "params.yaml"
    base.write_text((ROOT / "params.yaml").read_text())
    over = tmp_path / "over.yaml"
    over.write_text("llm:\n  concurrency: -4\n  timeout: 5\ncoherence:\n  agents_per_cel: 3\n")
    with pytest.raises(config.ParamsError) as info:
        config.load([base, over], ["facilitation.personas.n=0"])
    msg = str(info.value)
    assert msg.startswith(f"{base}, {over} (merged in this order): invalid params:\n"), msg
    assert f"llm.concurrency: expected integer, >= 1, <= 1024, got -4 (set in {over})" in msg
    assert "coherence.agents_per_cel: unknown key (allowed here: " in msg and f"(set in {over})\n" in msg
    assert "personas.n: expected integer, >= 1, <= 10000, got 0 (set in --set facilitation.personas.n=0)" in msg
    with pytest.raises(config.ParamsError, match=rf"^{base}: invalid params:\n  seed: .* \(set in {base}\)$"):
        base.write_text("seed: x\n")
        config.load([base])
    # the CLI says the same
    base.write_text((ROOT / "params.yaml").read_text())
    assert cli.main(["params", "validate", str(base), str(over)]) == 2
    err = capsys.readouterr().err
    assert f"socsim: error: {base}, {over} (merged in this order): invalid params:" in err
    assert f"got -4 (set in {over})" in err


def dry_run(project, *args):
    """`snakemake -n` of the repository's workflow on the params files of `project` (its working folder)."""
    return sh(
        ["snakemake", "-n", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(project), *args],
        project,
        check=False,
        timeout=120,
    )


def test_snakemake_names_the_override_file_a_bad_key_came_from(tmp_path):
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    (tmp_path / "over.yaml").write_text("llm:\n  concurrency: -4\n")
    proc = dry_run(tmp_path, "--configfile", "over.yaml")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "params.yaml, over.yaml (merged in this order): invalid params:" in out, out
    assert "llm.concurrency: expected integer, >= 1, <= 1024, got -4 (set in over.yaml)" in out, out
    assert "params.yaml is invalid" not in out


YAML_SYNTAX_ERROR = "seed: 1\nllm:\n  concurrency: [1, 2\n  timeout: 3\n"
WHERE = "line 4, column 10: expected ',' or ']', but got ':' (while parsing a flow sequence at line 3, column 16)"


def test_a_yaml_syntax_error_names_the_file_and_the_line(tmp_path):
    bad = tmp_path / "over.yaml"
    bad.write_text(YAML_SYNTAX_ERROR)
    with pytest.raises(config.ParamsError) as info:
        config.load([ROOT / "params.yaml", bad])
    assert str(info.value) == f"params file {bad} is not valid YAML: {WHERE}"
    # and through Snakemake, for params.yaml (an override file Snakemake reads before any of the workflow's code)
    (tmp_path / "params.yaml").write_text(YAML_SYNTAX_ERROR)
    proc = dry_run(tmp_path)
    assert proc.returncode != 0
    assert f"params file params.yaml is not valid YAML: {WHERE}" in proc.stdout + proc.stderr, proc.stderr


def test_the_parameter_page_is_the_schema():
    """docs/parameters.md is what `socsim params table` writes from the schema: every key, its type, default and
    meaning (regenerate it with `socsim params table > docs/parameters.md`)."""
    from socsim import config as cfg

    page = (Path(__file__).resolve().parents[3] / "docs" / "parameters.md").read_text(encoding="utf-8")
    assert page == cfg.parameter_table(cfg.load_schema()), "run `socsim params table > docs/parameters.md`"
    keys = [r[0] for r in cfg.parameter_rows(cfg.load_schema())]
    assert "facilitation.analysis.human_reference" in keys and "models.<name>.backend" in keys
    assert len(keys) == len(set(keys)) and all(f"| `{k}` |" in page for k in keys)
