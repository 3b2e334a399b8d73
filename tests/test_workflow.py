"""Snakemake and DVC: one DAG (dvc.yaml generated from the registry, proven equal to the rules),
and real `snakemake` / `dvc repro` / `dvc exp run` runs on the default params in a temporary copy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from socsim import dvc, stages
from socsim.io.parquet import read_provenance, read_table

BIN = str(Path(sys.executable).parent)


def tool_env() -> dict:
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
               DVC_NO_ANALYTICS="1")
    return env


def sh(args: list[str], cwd: Path, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=tool_env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def project(tmp_path) -> Path:
    """A fresh git repository holding the project's tracked and untracked-but-not-ignored files."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    dest = tmp_path / "proj"
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    (dest / "dvc.lock").unlink(missing_ok=True)
    sh(["git", "init", "-q"], dest)
    sh(["git", "add", "-A"], dest)
    sh(["git", "commit", "-qm", "init"], dest)
    return dest


def test_dvc_yaml_is_generated_from_the_registry():
    dvc.check(ROOT / "dvc.yaml")  # raises if someone edited dvc.yaml or a stage without re-exporting


def test_rules_name_their_own_stage():
    """Each Snakemake rule takes input, output, params and shell from the stage of the same name."""
    for study, study_stages in stages.studies().items():
        text = (ROOT / "workflow" / "rules" / f"{study}.smk").read_text()
        rules = re.findall(r"^rule (\w+):", text, flags=re.M)
        assert sorted(rules) == sorted(s.rule_name for s in study_stages)
        for st in study_stages:
            body = text.split(f"rule {st.rule_name}:")[1].split("\nrule ")[0]
            for helper in ("stage_inputs", "stage_outputs", "stage_params", "stage_shell"):
                assert f'{helper}("{st.study}", "{st.name}")' in body, (st.rule_name, helper)


@pytest.mark.slow
def test_snakemake_and_dvc_agree(project):
    dry = sh(["snakemake", "--dry-run", "--forceall", "--printshellcmds", "--cores", "1"], project).stdout
    smk: dict[str, dict] = {}
    current = None
    for line in dry.splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):$", line):
            current = smk.setdefault(m.group(1), {"outs": set(), "deps": set(), "cmds": set()})
        elif current is not None and (m := re.match(r"^    (input|output): (.*)$", line)):
            current["deps" if m.group(1) == "input" else "outs"].update(m.group(2).split(", "))
        elif current is not None and line.startswith("Shell command: "):
            current["cmds"].add(line.removeprefix("Shell command: ").strip())
    smk.pop("all")
    dvc_stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    assert set(smk) == set(dvc_stages)
    for name, st in dvc_stages.items():
        outs = set(st["outs"]) | {next(iter(m)) for m in st.get("metrics", [])}
        assert smk[name]["outs"] == outs, name
        assert smk[name]["deps"] == set(st.get("deps", [])), name
        assert smk[name]["cmds"] == {st["cmd"]}, name


@pytest.mark.slow
def test_pipeline_snakemake_then_dvc(project):
    # 1. Snakemake on the default params.
    sh(["snakemake", "--cores", "2"], project)
    personas = project / "results/facilitation/personas.parquet"
    topics = project / "results/facilitation/topics.parquet"
    assert read_table(personas).num_rows == 30 and read_table(topics).num_rows == 7
    prov = read_provenance(personas)
    assert prov["stage"] == "facilitation.personas" and prov["seed"] == 20250101 and prov["params_hash"]
    assert "nothing to be done" in sh(["snakemake", "--cores", "2"], project).stderr.lower()

    # 2. DVC takes over what Snakemake produced: up to date, nothing re-run.
    sh(["dvc", "commit", "--force", "--quiet"], project)
    out = sh(["dvc", "repro"], project).stdout
    assert "Data and pipelines are up to date" in out and "Running stage" not in out
    before = personas.read_bytes()

    # 3. A params change re-runs only the stages that read the key.
    out = sh(["dvc", "exp", "run", "-S", "facilitation.topics.n=3"], project).stdout
    assert "Running stage 'facilitation_topics'" in out and "Running stage 'facilitation_personas'" not in out
    assert read_table(topics).num_rows == 3 and personas.read_bytes() == before

    # 4. LLM-generated personas through DVC, on the embedded model; metrics visible to DVC.
    out = sh(["dvc", "exp", "run", "-S", "facilitation.personas.source=llm", "-S", "facilitation.personas.n=2"],
             project).stdout
    assert "Running stage 'facilitation_personas'" in out and "Running stage 'facilitation_topics'" not in out
    table = read_table(personas)
    assert table.num_rows == 2 and set(table.column("source").to_pylist()) == {"llm"}
    assert read_provenance(personas)["model"]["backend"] == "embedded"
    metrics = sh(["dvc", "metrics", "show", "--json"], project).stdout
    assert '"calls": 2' in metrics.replace(" ", "").replace('"calls":2', '"calls": 2')

    # 5. Snakemake notices the params change too (rerun trigger: params).
    dry = sh(["snakemake", "-n", "--cores", "1"], project).stdout
    assert "rule facilitation_personas:" in dry


@pytest.mark.slow
def test_snakemake_rejects_bad_params_naming_the_key(project):
    (project / "bad.yaml").write_text("llm:\n  backend: gpt5\nfacilitation:\n  personas:\n    nn: 3\n")
    proc = sh(["snakemake", "--cores", "1", "--configfile", "bad.yaml"], project, check=False)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert 'llm.backend: expected one of "embedded", "tgi", "openai", got "gpt5"' in text
    assert "facilitation.personas.nn: unknown key" in text
    assert not (project / "results").exists()
