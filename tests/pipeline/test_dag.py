"""The generated workflow, checked without running it (fast lane): params.yaml is the schema's defaults,
every shipped params file validates and builds its Snakemake DAG (a dry run) and its DVC stages, and the
two DAGs list the same commands, dependencies and outputs; rules, targets, messages, resources and
captions all come from the stage declarations."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from socsim import config, dvc, studies, workflow
from socsim.stages import LLM_RESOURCES
from support.project import ROOT, sh

# Every params file the repository ships: the default, the override files beside it, the test configs.
SHIPPED = [
    "params.yaml",
    "params.paper.yaml",
    "params.laptop.yaml",
    "params.syndisco.yaml",
    "params.syndisco-revised.yaml",
    "params.control.yaml",
    "params.rehearsal.yaml",
    "tests/params.tiny.yaml",
]


def flatten(d: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def test_params_yaml_is_exactly_the_schema_defaults():
    """One source of defaults: every key of params.yaml holds the schema's default, and params.yaml
    lists every key the schema defaults (what a user reads in either file is what runs)."""
    shipped = flatten(yaml.safe_load((ROOT / "params.yaml").read_text()))
    defaults = flatten(config.validate({}))
    differ = {
        k: (shipped.get(k, "<absent>"), defaults.get(k, "<absent>"))
        for k in shipped.keys() | defaults.keys()
        if shipped.get(k, "<absent>") != defaults.get(k, "<absent>")
    }
    assert not differ, "params.yaml vs schema default:\n" + "\n".join(
        f"  {k}: {a!r} vs {b!r}" for k, (a, b) in sorted(differ.items())
    )


def test_every_shipped_params_file_is_listed():
    """A new params file in the repository is dry-run here too (this list is the one to extend)."""
    found = {str(p.relative_to(ROOT)) for pattern in ("params*.yaml", "tests/params*.yaml") for p in ROOT.glob(pattern)}
    assert found == set(SHIPPED)


def snakemake_plan(configfile: str, *targets: str) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """What Snakemake plans for every target (nothing runs): the jobs of a dry run as (rule message, shell
    command), and every output file with the rule that writes it (`--summary`)."""
    args = ["--forceall", "--cores", "1"] + (["--configfile", configfile] if configfile != "params.yaml" else [])
    dry = sh(["snakemake", "--dry-run", "--printshellcmds", *args, *targets], ROOT).stdout
    jobs: list[list[str]] = []  # [message, shell command]; a target rule runs no command
    for line in dry.splitlines():
        if m := re.match(r"^Job \d+: (.*)$|^(?:local)?rule (\w+):$", line):  # a message, or a rule without one
            jobs.append([m.group(1) or m.group(2), ""])
        elif jobs and line.startswith("Shell command: "):
            shell = line.removeprefix("Shell command: ")  # workflow.shell_line(): env, the command, redirections
            m = re.fullmatch(r"SOCSIM_CONSOLE_FD=3 SOCSIM_LOG=\S+\.log (.*) 3>&2 > \S+\.log 2>&1", shell)
            jobs[-1][1] = m[1] if m else shell  # a target rule's "None"
    summary = sh(["snakemake", "--summary", *args, *targets], ROOT).stdout.splitlines()
    outputs = {line.split("\t")[0]: line.split("\t")[2] for line in summary[1:] if "\t" in line}
    return [(m.strip(), c.strip()) for m, c in jobs if c not in ("", "None")], outputs


def expand_foreach(stages: dict) -> dict[str, dict]:
    """DVC stages with foreach expanded: 'name@item' -> the stage, `${item}` substituted."""
    out = {}
    for name, st in stages.items():
        if "foreach" in st:
            for item in st["foreach"]:
                out[f"{name}@{item}"] = yaml.safe_load(yaml.safe_dump(st["do"]).replace("${item}", item))
        else:
            out[name] = st
    return out


@pytest.mark.parametrize("configfile", SHIPPED)
def test_shipped_params_build_one_dag_in_snakemake_and_dvc(configfile):
    """The params validate; Snakemake's dry run and the DVC stages of the same params agree job for job:
    the same command lines (every input and output path is an argument), each output written by the same
    rule, and each job announced by its stage's summary."""
    files = ["params.yaml"] + ([configfile] if configfile != "params.yaml" else [])
    params = config.load([ROOT / f for f in files])
    jobs, outputs = snakemake_plan(configfile)
    stages = expand_foreach(workflow.dvc_stages(params))
    extra = f" --params {configfile}" if configfile != "params.yaml" else ""
    assert sorted(c for _, c in jobs) == sorted(
        st["cmd"].replace(" --params params.yaml", " --params params.yaml" + extra) for st in stages.values()
    )
    assert len(jobs) == len(stages) > 0
    dvc_outputs = {}
    for name, st in stages.items():
        rule = name.split("@")[0]
        if rule == workflow.SCORECARD_RULE:  # the house's one stage after every study's analysis
            assert any(m.startswith("scorecard: ") for m, c in jobs if c == st["cmd"])
            assert set(workflow.scorecard_inputs(params)) <= set(st["deps"])
            dvc_outputs.update(dict.fromkeys(st["outs"], rule))
            continue
        study = next(s for s in studies.all_studies() if rule.startswith(s.name + "_"))
        stage = study.stage(rule.removeprefix(study.name + "_"))
        assert st["desc"] == stage.summary
        message = next(m for m, c in jobs if c.startswith(f"socsim {study.name} {stage.name} "))
        assert message.startswith(f"{study.name} {stage.name}: {stage.summary}")
        for out in [*st["outs"], *st.get("metrics", [])]:  # metrics files: {path: options}
            dvc_outputs[out if isinstance(out, str) else next(iter(out))] = rule
        assert ("metrics" in st) == workflow.reports(study, stage)  # only the findings are DVC metrics
        for dep in st["deps"]:
            assert (ROOT / dep).exists() or dep in outputs, (name, dep)  # a file of the repository or an output
    assert dvc_outputs == outputs


def test_dvc_yaml_is_generated_from_the_registry():
    dvc.check(ROOT / "dvc.yaml")  # raises if someone edited dvc.yaml or a stage without re-exporting


def test_rules_are_generated_from_the_declarations():
    """No hand-written rules: common.smk makes one rule per registered stage and one target rule per study;
    message, resources, code inputs and captions come from the declaration."""
    assert sorted(p.name for p in (ROOT / "workflow" / "rules").glob("*.smk")) == ["common.smk"]
    smk = (ROOT / "workflow/rules/common.smk").read_text()
    assert "rule all:" in (ROOT / "Snakefile").read_text() and "\nrule " not in smk
    params = config.load([ROOT / "params.yaml"])
    specs = {r["name"]: r for r in workflow.rules(params)}
    assert set(specs) == {st.rule_name for _, st in studies.all_stages(params)} | {workflow.SCORECARD_RULE}
    for study, st in studies.all_stages(params):
        r = specs[st.rule_name]
        assert r["llm_clients"] == int(st.uses_llm) and r["log"].endswith(".log") and r["benchmark"].endswith(".tsv")
        assert r["message"].startswith(f"{study.name} {st.name}: ") and st.summary.replace("{", "{{") in r["message"]
        assert ("{wildcards.shard}" in r["message"]) == bool(st.shards)
        assert r["resources"] == (st.resources or (dict(LLM_RESOURCES) if st.uses_llm else {}))
        cmd = r["command"](SimpleNamespace(shard="s1"))
        assert ("--shard s1 " in cmd) == bool(st.shards) and "{shard}" not in cmd
        assert ("{shard}" in r["log"]) == bool(st.shards)
        # every stage depends on its study's code and the shared code; only LLM stages on llm/ and sim/
        code = r["input"]["code"]
        assert f"src/socsim/{study.name}/stages.py" in code and "src/socsim/io/parquet.py" in code
        assert ("src/socsim/llm/client.py" in code) == st.uses_llm
        assert not any(
            f"src/socsim/{other.name}/" in c for other in studies.all_studies() if other is not study for c in code
        )
    targets = workflow.study_targets(params)
    assert set(targets) == {s.name for s in studies.all_studies()}
    # the default target: every study's, then the scorecard of their findings
    assert [t for ts in targets.values() for t in ts] + [workflow.SCORECARD] == workflow.targets(params)


def test_a_caption_is_generated_when_a_study_ships_none(tmp_path):
    study = studies.study("coherence")
    shipped = workflow.caption(study, "figures", ROOT)
    assert shipped == "../report/coherence/figures.rst" and (ROOT / "workflow/report/coherence/figures.rst").is_file()
    generated = Path(workflow.caption(study, "figures", tmp_path))  # a copy without the study's captions
    assert generated.is_absolute() and generated.is_relative_to(tmp_path)
    text = generated.read_text()
    assert "``coherence figures``" in text and study.stage("figures").summary in text


def test_one_target_rule_per_study_runs_that_study_alone():
    """`snakemake coherence` plans the coherence stages and nothing of the other studies."""
    jobs, outputs = snakemake_plan("params.yaml", "coherence")
    assert {m.split(":")[0] for m, _ in jobs} == {f"coherence {st.name}" for st in studies.study("coherence").stages}
    assert set(outputs.values()) == {st.rule_name for st in studies.study("coherence").stages}


def test_a_plain_snakemake_reads_the_default_profile():
    """Snakemake looks for profiles/default beside the Snakefile: a plain `snakemake` (the README's) uses
    its settings, such as the llm_clients bound, without a --workflow-profile."""
    out = sh(["snakemake", "--dry-run", "--forceall"], ROOT)
    assert "Using workflow specific profile profiles/default" in out.stdout + out.stderr
    profile = yaml.safe_load((ROOT / "profiles/default/config.yaml").read_text())
    assert profile["resources"]["llm_clients"] >= 1 and profile["cores"] == "all"


def test_slurm_profile_names_no_stage():
    """Cluster resources come from the rules (the declarations), so the profile keeps no list of stages
    that a new LLM stage could miss; it keeps the cluster-wide settings."""
    profile = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())
    assert "set-resources" not in profile
    assert profile["slurm-status-command"] == "squeue" and profile["resources"]["llm_clients"] >= 1
    assert "slurm_account" not in profile["default-resources"]
    assert LLM_RESOURCES["runtime"] > profile["default-resources"]["runtime"]


def test_snakemake_config_overrides_are_refused_as_no_job_would_see_them():
    """`--config seed=5` changes Snakemake's config but not the params files the jobs read: refused, naming the way."""
    proc = subprocess.run(
        ["snakemake", "--dry-run", "--cores", "1", "--config", "seed=5"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode != 0 and "write the values into an override file" in proc.stdout + proc.stderr
