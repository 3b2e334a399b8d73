"""Snakemake and DVC: one DAG (dvc.yaml generated from the registry, proven equal to the rules),
and real `snakemake` / `dvc repro` / `dvc exp run` runs on the default params in a temporary copy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
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


def sh(args: list[str], cwd: Path, check: bool = True, timeout: float = 2400) -> subprocess.CompletedProcess:
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


def ran(out: str) -> set[str]:
    return set(re.findall(r"Running stage '(\w+)'", out))


@pytest.mark.slow
def test_pipeline_default_params_snakemake_then_dvc(project):
    # 1. Snakemake on the default params: every artifact of every stage.
    sh(["snakemake", "--cores", "2"], project)
    for st in stages.all_stages():
        for path in st.all_outputs().values():
            assert (project / path).exists(), path
    personas = project / "results/facilitation/personas.parquet"
    assert read_table(personas).num_rows == 30
    prov = read_provenance(personas)
    assert prov["stage"] == "facilitation.personas" and prov["seed"] == 20250101 and prov["params_hash"]
    comments = project / "results/facilitation/comments.parquet"
    assert read_provenance(comments)["model"]["smollm2-135m"]["backend"] == "embedded"
    coherence = project / "results/coherence"
    assert (coherence / "analysis/table4_tests.md").read_text().count("|") > 10
    assert len(list((coherence / "figures").glob("fig*.png"))) == 5
    figures = sorted(p.name for p in (project / "results/facilitation/figures").iterdir() if p.name[0] != ".")
    assert len(figures) == 8 and {p.rsplit(".", 1)[1] for p in figures} == {"png", "pdf"}
    analysis_dir = project / "results/facilitation/analysis"
    for name in ("table2_ols.csv", "table2_ols.md", "table2_ols.tex", "anova.json", "pairwise_ttests.csv",
                 "interventions.csv", "diversity.csv", "nontroll_toxicity.csv", "agreement.json"):
        assert (analysis_dir / name).stat().st_size > 0, name
    assert "nothing to be done" in sh(["snakemake", "--cores", "2"], project).stderr.lower()

    # 2. DVC takes over what Snakemake produced: up to date, nothing re-run.
    sh(["dvc", "commit", "--force", "--quiet"], project)
    out = sh(["dvc", "repro"], project).stdout
    assert "Data and pipelines are up to date" in out and not ran(out)

    # 3. A params change re-runs only the stages that read the key (and what depends on them).
    (project / "data" / "human.csv").write_text(
        "discussion_id,text\nh1,I think the bus is late again\nh1,The bus is never on time here\n"
        "h2,Taxes should be lower\nh2,Lower taxes mean fewer services\nh2,Services matter more than taxes\n")
    out = sh(["dvc", "exp", "run", "-S", "facilitation.analysis.human_reference=data/human.csv"], project).stdout
    assert ran(out) == {"facilitation_analyse", "facilitation_figures"}, out
    div = pd.read_csv(analysis_dir / "diversity.csv")
    assert set(div.loc[div.source == "human", "discussion_id"]) == {"human.h1", "human.h2"}
    metrics = sh(["dvc", "metrics", "show", "--json"], project).stdout
    assert "results/facilitation/metrics/analyse.json" in metrics and "ols_adj_r2" in metrics

    # 4. Snakemake sees the same params change (rerun trigger: params) and nothing else.
    dry = sh(["snakemake", "-n", "--cores", "1"], project).stdout
    assert "rule facilitation_analyse:" in dry and "rule facilitation_simulate:" not in dry


@pytest.mark.slow
def test_tiny_study_through_dvc_and_exp_run(project):
    from socsim.config import deep_merge

    params = yaml.safe_load((project / "params.yaml").read_text())
    tiny = {"facilitation": {"strategies": ["No Moderator", "No Instructions"], "users_per_discussion": 3,
                             "user_turns": 2, "comment_max_tokens": 12, "ablations": {"discussions": 0},
                             "annotation": {"annotators": 2, "max_tokens": 20}},
            "coherence": {"topics": ["favorite_beverage"], "bias_levels": [0, 2], "agents_per_cell": 2,
                          "pairing": {"max_pairs_per_topic": 3}, "turns_per_agent": 2, "utterance_max_tokens": 16,
                          "bootstrap": {"repeats": 100}}}
    (project / "params.yaml").write_text(yaml.safe_dump(deep_merge(params, tiny), sort_keys=False))
    sh(["git", "commit", "-qam", "tiny"], project)
    out = sh(["dvc", "repro"], project).stdout
    assert ran(out) == {st.rule_name for st in stages.all_stages()}
    assert "Data and pipelines are up to date" in sh(["dvc", "repro"], project).stdout

    # LLM-generated personas: everything downstream of personas re-runs, topics does not.
    out = sh(["dvc", "exp", "run", "-S", "facilitation.personas.source=llm", "-S", "facilitation.personas.n=4"],
             project).stdout
    assert "facilitation_personas" in ran(out) and "facilitation_topics" not in ran(out)
    assert not any(name.startswith("coherence_") for name in ran(out))  # another study: untouched
    assert {"facilitation_setups", "facilitation_simulate"} <= ran(out)
    table = read_table(project / "results/facilitation/personas.parquet")
    assert table.num_rows == 4 and set(table.column("source").to_pylist()) == {"llm"}
    assert read_provenance(project / "results/facilitation/personas.parquet")["model"]["backend"] == "embedded"
    m = yaml.safe_load((project / "results/facilitation/metrics/personas.json").read_text())
    assert m["calls"] + m["cache_hits"] == 4


@pytest.mark.slow
def test_snakemake_rejects_bad_params_naming_the_key(project):
    (project / "bad.yaml").write_text("llm:\n  backend: gpt5\nfacilitation:\n  personas:\n    nn: 3\n")
    proc = sh(["snakemake", "--cores", "1", "--configfile", "bad.yaml"], project, check=False)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert 'llm.backend: expected one of "embedded", "tgi", "openai", got "gpt5"' in text
    assert "facilitation.personas.nn: unknown key" in text
    assert not (project / "results").exists()
