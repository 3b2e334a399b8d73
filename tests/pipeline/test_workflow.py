"""Snakemake and DVC on real runs, in temporary copies of the project, on the tiny test config
(tests/params.tiny.yaml: every stage of every study, small designs, fine shards). The tiny run on the
embedded model, recorded once per session (support.recorded): artifacts, logs, the plan beside the run,
prefix reuse, the report. Its replay (no model call) byte for byte, then DVC taking over, params and code
changes re-running what they touch at no model cost, one shard against many. The global resource that
bounds LLM jobs, on a real server. (The DAGs of every shipped params
file are checked without running them in test_dag.py.)"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import zipfile
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
import yaml

from socsim import config, studies, workflow
from socsim.io.parquet import read_provenance, read_table
from socsim.limits import stage_uses
from socsim.llm.cache import CallCache
from support.llm import served
from support.project import ROOT, copy_project, sh
from support.recorded import artifacts, differing, tiny_project


@pytest.fixture
def project(tmp_path) -> Path:
    return copy_project(tmp_path / "proj")


def snapshot(folder: Path) -> dict[str, bytes]:
    """The files of a folder (not Snakemake's hidden `.snakemake_timestamp` marker)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")}


def ran(out: str) -> set[str]:
    """The DVC stages a run ran (shards of a foreach stage by the stage's name)."""
    return set(re.findall(r"Running stage '(\w+)(?:@[^']*)?'", out))


def model_calls(project: Path, study: str, stages: tuple[str, ...]) -> list[dict]:
    """The metrics of every shard of these LLM stages."""
    out = []
    for stage in stages:
        for m in (project / f"results/{study}/metrics").glob(f"{stage}*"):
            out += [yaml.safe_load(f.read_text()) for f in ([m] if m.is_file() else sorted(m.glob("*.json")))]
    return out


def merge_shard_caches(caches: Path) -> None:
    """Each sharded stage's shard caches copied into one cache file, `all.sqlite` (the one shard's)."""
    for stage in sorted(p for p in caches.glob("*/*") if p.is_dir()):
        shards = sorted(p for p in stage.glob("*.sqlite") if p.name != "all.sqlite")
        if not shards:
            continue
        CallCache(stage / "all.sqlite").close()  # a stamped, empty cache
        conn = sqlite3.connect(stage / "all.sqlite", isolation_level=None)
        for shard in shards:
            conn.execute("ATTACH DATABASE ? AS shard", (str(shard),))
            conn.execute("INSERT OR IGNORE INTO calls SELECT key, completion, model FROM shard.calls")
            conn.execute("DETACH DATABASE shard")
        conn.close()


def check_plan_against_the_run(project: Path) -> None:
    """Planned beside actual: calls that need no answer exactly as planned, the others at most as planned;
    prompt tokens within 15 % of the plan where the calls are exact (the GGUF's own tokenizer); where they
    depend on answers, at most the plan's (built on answers of full length) but for a real answer's
    re-tokenization inside a later prompt (5 %); completion tokens never above their bound; each stage's
    metrics hold its planned numbers."""
    table = sh(["socsim", "plan", "--compare", "plan.json"], project).stdout
    assert "calls planned / actual" in table
    rows = json.loads((project / "plan.json").read_text())["stages"]
    assert rows
    for r in rows:
        shards = r["shards"]
        actual = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        for shard in shards:
            where = r["stage"] if shard == "all" else f"{r['stage']}/{shard}"
            metrics = json.loads((project / f"results/{r['study']}/metrics/{where}.json").read_text())
            assert metrics["planned"][r["model"]] == shards[shard]
            mine = metrics["models"][r["model"]]
            actual = {k: actual[k] + mine[k] for k in actual}
        what = (r["study"], r["stage"], r["model"], r["calls"], actual)
        if r["calls_exact"]:
            assert actual["requests"] == r["calls"], what
            assert abs(actual["prompt_tokens"] - r["prompt_tokens"]) <= 0.15 * r["prompt_tokens"], what
        else:
            assert actual["requests"] <= r["calls"] and actual["prompt_tokens"] <= 1.05 * r["prompt_tokens"], what
        assert actual["completion_tokens"] <= r["completion_tokens_max"], what


# The stages that judge many texts against one set of instructions, per study, and the share of their
# prompt tokens the embedded model's prefix cache must serve (issue 22: >= 50 %).
REUSING = {
    "facilitation": ("annotate",),
    "coherence": ("judge",),
    "opinion_dynamics": ("classify", "outside_info"),
    "debate": ("annotate", "annotate_human"),
}


def check_prefix_reuse(project: Path) -> None:
    """Every annotate, judge and classify stage of a fresh run re-used >= 50 % of its prompt tokens
    from the prefix cache (its shards together), by the counts in its metrics."""
    uses = stage_uses(project / "results")
    for study, stages in REUSING.items():
        for stage in stages:
            mine = [u for u in uses if u.study == study and u.stage.split("/")[0] == stage and u.calls]
            submitted = sum(u.prompt_tokens for u in mine)
            assert mine and all(u.prompt_tokens_evaluated is not None for u in mine), (study, stage)
            reuse = 1 - sum(u.evaluated for u in mine) / submitted
            assert reuse >= 0.5, (study, stage, round(reuse, 3))


@pytest.mark.slow
def test_the_tiny_run_on_the_embedded_model(tiny_run):
    """The recorded tiny run (support.recorded), run for real by Snakemake on the embedded model: every artifact
    of every stage, one log and one benchmark per job, a call cache per shard, the plan beside the run, the
    prefix cache's reuse, the report."""
    project = tiny_run.project
    params = config.load([project / "params.yaml"])
    # Each LLM job's progress on the console (its bar in its log): a line when it starts, the first naming its
    # log, and one when it ends.
    console = tiny_run.console
    assert re.search(
        r"^coherence\.converse shard (\S+): conversations: 0/\d+ convs \(0 %\) \(progress here every 30 s; the full "
        r"log: results/coherence/logs/converse/\1\.log\)$",
        console,
        re.M,
    ), console[-3000:]
    done = r"^debate\.annotate_human: annotate \(smollm2-135m\): (\d+)/\1 texts \(100 %\), [\d.]+/s, done$"
    assert re.search(done, console, re.M), console[-3000:]
    check_plan_against_the_run(project)
    check_prefix_reuse(project)
    for path in workflow.targets(params):
        assert (project / path).exists(), path
    for study, st in studies.all_stages(params):
        for shard in st.shard_ids(params) if st.shards else [None]:
            where = f"{st.name}/{shard}" if shard else st.name
            assert (project / f"results/{study.name}/logs/{where}.log").is_file(), (study.name, where)
            assert (project / f"results/{study.name}/benchmarks/{where}.tsv").is_file(), (study.name, where)
            if st.uses_llm and shard:
                assert (project / f".socsim-cache/{study.name}/{st.name}/{shard}.sqlite").is_file()
    personas = project / "results/facilitation/personas.parquet"
    assert read_table(personas).num_rows == 30
    prov = read_provenance(personas)
    assert prov["stage"] == "facilitation.personas" and prov["seed"] == 20250101 and prov["params_hash"]
    comments = project / "results/facilitation/comments/main.smollm2-135m.parquet"
    prov = read_provenance(comments)
    assert prov["model"]["smollm2-135m"]["backend"] == "embedded"
    assert prov["shard"] == {"id": "main.smollm2-135m", "condition": "main", "model": "smollm2-135m"}
    coherence = project / "results/coherence"
    assert (coherence / "analysis/table4_tests.md").read_text().count("|") > 10
    assert len(list((coherence / "figures").glob("fig*.png"))) == 5
    figures = sorted(p.name for p in (project / "results/facilitation/figures").iterdir() if p.name[0] != ".")
    assert len(figures) == 8 and {p.rsplit(".", 1)[1] for p in figures} == {"png", "pdf"}
    od = project / "results/opinion_dynamics"
    assert (od / "analysis/vs_paper.md").read_text().count("Table 1") >= 2
    assert (od / "analysis/table1.tex").is_file() and (od / "events/smollm2-135m.fire.parquet").is_file()
    assert any(p.name.startswith("trajectories_") for p in (od / "figures").glob("*.png"))
    db = project / "results/debate"
    ingest = yaml.safe_load((db / "metrics/ingest.json").read_text())
    assert ingest["complete"] == 6 and len(ingest["dropped"]) == 1  # the fixture's incomplete session
    assert (db / "analysis/table3.md").is_file() and (db / "figures/fig2_group_level.png").is_file()
    assert (db / "comparison/utterance_metrics.csv").is_file() and (db / "simulated/smollm2-135m.3.parquet").is_file()
    analysis_dir = project / "results/facilitation/analysis"
    for name in (
        "table2_ols.csv",
        "table2_ols.md",
        "table2_ols.tex",
        "anova.json",
        "pairwise_ttests.csv",
        "interventions.csv",
        "diversity.csv",
        "nontroll_toxicity.csv",
        "agreement.json",
    ):
        assert (analysis_dir / name).stat().st_size > 0, name
    assert "nothing to be done" in sh(["snakemake", "--cores", "2"], project).stderr.lower()

    # The report holds every figure and table of every study.
    sh(["snakemake", "--cores", "1", "--report", "report.zip"], project)
    names = zipfile.ZipFile(project / "report.zip").namelist()
    for study in studies.all_studies():
        for kind, ext in (("figures", ".png"), ("analysis", ".csv")):
            made = {p.name for p in (project / "results" / study.name / kind).glob("*" + ext)}
            assert made and all(any(n.endswith("/" + m) for n in names) for m in made), (study.name, kind)


@pytest.mark.slow
def test_a_replay_of_the_tiny_run_then_dvc(tiny_run, tmp_path):
    """The recorded tiny run replayed by Snakemake in a fresh copy (SOCSIM_REPLAY: no model call) writes its
    artifacts byte for byte; then DVC takes over, and code and params changes re-run what they touch."""
    project = tiny_project(tmp_path / "proj")
    env = tiny_run.replay_env()

    # 1. The replay: every artifact the recorded run's, every LLM call answered by the recording.
    sh(["snakemake", "--cores", "2"], project, env=env)
    assert differing(artifacts(project / "results"), artifacts(tiny_run.project / "results")) == []
    params = config.load([project / "params.yaml"])
    for study, st in studies.all_stages(params):
        for metrics in model_calls(project, study.name, (st.name,)) if st.uses_llm else []:
            assert all(m["replayed_from"] == str(tiny_run.caches) for m in metrics["models"].values()), st.rule_name

    # 2. DVC takes over what Snakemake produced (`make run`'s commit): up to date, nothing re-run.
    sh(["socsim", "dvc", "commit"], project, env=env)
    out = sh(["dvc", "repro"], project, env=env).stdout
    assert "Data and pipelines are up to date" in out and not ran(out)

    # 3. A code change re-runs what it touches (Snakemake and DVC), and the call cache makes the re-run free.
    code = project / "src/socsim/coherence/figures.py"
    code.write_text(code.read_text() + "\n# a code change\n")
    dry = sh(["snakemake", "-n", "--cores", "1"], project).stdout
    assert "coherence converse:" in dry and "coherence figures:" in dry
    assert not re.search(r"^Job \d+: (facilitation|opinion_dynamics|debate) ", dry, re.M)
    out = sh(["dvc", "repro"], project, env=env).stdout
    # (and the scorecard, which reads the rewritten coherence report)
    assert ran(out) == {st.rule_name for st in studies.study("coherence").stages} | {"scorecard"}
    for metrics in model_calls(project, "coherence", ("elicit", "converse", "judge", "calibrate")):
        assert metrics["calls"] == 0 and metrics["cache_hits"] > 0  # no model call paid again

    # 4. A params change re-runs only the stages that read the key (and what depends on them).
    (project / "data" / "human.csv").write_text(
        "discussion_id,text\nh1,I think the bus is late again\nh1,The bus is never on time here\n"
        "h2,Taxes should be lower\nh2,Lower taxes mean fewer services\nh2,Services matter more than taxes\n"
    )
    analysis_dir = project / "results/facilitation/analysis"
    human = ["-S", "facilitation.analysis.human_reference=data/human.csv"]
    out = sh(["dvc", "exp", "run", *human], project, env=env).stdout
    # (the check: cheap; the humans stage reads the key; the scorecard reads the facilitation report, which changed)
    want = {"params_check", "facilitation_humans", "facilitation_analyse", "facilitation_figures", "scorecard"}
    assert ran(out) == want, out
    div = pd.read_csv(analysis_dir / "diversity.csv")
    assert set(div.loc[div.source == "human", "discussion_id"]) == {"human.h1", "human.h2"}
    metrics = sh(["dvc", "metrics", "show", "--json"], project).stdout
    assert "results/facilitation/metrics/analyse.json" in metrics and "ols_nobs" in metrics
    assert "metrics/simulate" not in metrics  # calls and times are not what experiments are compared on
    # The experiments side by side: the params that differ (and only those), every study's findings by verdict
    # (DVC reads an experiment's metrics from its cache: `!` before, for every metric of every experiment).
    table = sh(["socsim", "dvc", "compare"], project).stdout.splitlines()
    assert table[0].startswith("| experiment | facilitation.analysis.human_reference | coherence (holds/no/"), table
    exp = [line for line in table if line.startswith("|   ")]
    assert len(exp) == 1 and "data/human.csv" in exp[0] and "not recorded" not in exp[0], table
    # A value the schema refuses: DVC's first stage stops the experiment before any output is removed, and sets
    # the key back to what dvc.lock records (DVC wrote it into params.yaml before running anything).
    before = {p: p.read_bytes() for p in (project / "results/coherence").rglob("*") if p.is_file()}
    bad = sh(
        ["dvc", "exp", "run", "coherence_figures", "-S", "coherence.agents_per_cell=-1"], project, env=env, check=False
    )
    assert bad.returncode != 0 and "coherence.agents_per_cell: -1 -> " in bad.stdout + bad.stderr, bad.stdout
    assert (
        config.load([project / "params.yaml"])["coherence"]["agents_per_cell"] == params["coherence"]["agents_per_cell"]
    )
    assert {p: p.read_bytes() for p in (project / "results/coherence").rglob("*") if p.is_file()} == before
    assert "Data and pipelines are up to date" in sh(["dvc", "status"], project).stdout
    # Snakemake sees the same params change (rerun trigger: params) and nothing else.
    dry = sh(["snakemake", "-n", "--cores", "1"], project).stdout
    assert "facilitation analyse:" in dry and "facilitation simulate:" not in dry

    # 5. One shard instead of many, on the same model answers (the shards' call caches merged into the one
    # shard's: no model call): every study's analysis the same, byte for byte. (Whether the embedded model
    # answers a request alike in another order is the model's property, tested in tests/unit/llm.)
    sharded = {s.name: snapshot(project / "results" / s.name / "analysis") for s in studies.all_studies()}
    merge_shard_caches(project / ".socsim-cache")
    (project / "one.yaml").write_text("".join(f"{s.name}: {{shard_by: []}}\n" for s in studies.all_studies()))
    sh(["snakemake", "--cores", "2", "--configfile", "one.yaml"], project, env=env)
    assert (project / "results/facilitation/comments/all.parquet").is_file()
    assert (project / "results/coherence/judgments/all.parquet").is_file()
    assert (project / "results/opinion_dynamics/ratings/all.parquet").is_file()
    assert (project / "results/debate/simulated/all.parquet").is_file()
    for study, st in studies.all_stages(params):
        if st.uses_llm and st.shards:
            metrics = yaml.safe_load((project / f"results/{study.name}/metrics/{st.name}/all.json").read_text())
            assert metrics["calls"] == 0 and metrics["cache_hits"] > 0, st.rule_name
    for study_name, files in sharded.items():
        assert snapshot(project / "results" / study_name / "analysis") == files, study_name

    # 6. DVC records params.yaml's values: it refuses the outputs of a run on an override file; merged into
    # params.yaml, the same outputs are recorded as they were made.
    # (one.yaml's shard layout changed no output's values, as step 5 shows; an analysis key does.)
    (project / "time.yaml").write_text("facilitation:\n  analysis:\n    time: position\n")
    sh(["snakemake", "--cores", "2", "--configfile", "one.yaml", "time.yaml"], project, env=env)
    refused = sh(["socsim", "dvc", "commit"], project, env=env, check=False)
    assert refused.returncode == 2 and "socsim params apply" in refused.stderr, refused.stderr
    assert "facilitation_analyse: results/facilitation/analysis/provenance.json" in refused.stderr, refused.stderr
    assert "facilitation.analysis" in refused.stderr and "coherence" not in refused.stderr
    sh(["socsim", "params", "apply", "one.yaml", "time.yaml"], project)
    sh(["socsim", "dvc", "export"], project)
    sh(["socsim", "dvc", "commit"], project, env=env)
    assert "Data and pipelines are up to date" in sh(["dvc", "status"], project).stdout

    # 7. LLM-generated personas: everything downstream of personas would re-run, topics would not (DVC's dry
    # run from the one-shard run's outputs, committed); the personas stage itself runs on the model (not
    # replayed: these calls are new).
    new = yaml.safe_load((project / "params.yaml").read_text())
    new["facilitation"]["personas"].update(source="llm", n=4)
    (project / "params.yaml").write_text(yaml.safe_dump(new, sort_keys=False))
    # (from personas down: DVC's params check, upstream of every stage, also sees the change, and would force all)
    dry = ["dvc", "repro", "--dry", "--downstream", "--force-downstream", "facilitation_personas"]
    would = ran(sh(dry, project, env=env).stdout)
    assert "facilitation_personas" in would and "facilitation_topics" not in would, would
    assert not any(name.startswith(("coherence_", "opinion_dynamics_", "debate_")) for name in would)
    assert {"facilitation_setups", "facilitation_simulate"} <= would
    out = sh(["dvc", "repro", "--single-item", "facilitation_personas"], project).stdout
    assert ran(out) == {"facilitation_personas"}, out
    table = read_table(project / "results/facilitation/personas.parquet")
    assert table.num_rows == 4 and set(table.column("source").to_pylist()) == {"llm"}
    prov = read_provenance(project / "results/facilitation/personas.parquet")
    assert prov["model"]["smollm2-135m"]["backend"] == "embedded"  # registry name -> the identity that answered
    m = yaml.safe_load((project / "results/facilitation/metrics/personas.json").read_text())
    assert m["calls"] + m["cache_hits"] == 4 and "replayed_from" not in m["models"]["smollm2-135m"]


def test_snakemake_rejects_bad_params_naming_the_key(tmp_path):
    """Validation stops the workflow before any job (a dry run suffices: it parses and validates)."""
    (tmp_path / "bad.yaml").write_text("models:\n  m:\n    backend: gpt5\nfacilitation:\n  personas:\n    nn: 3\n")
    proc = sh(["snakemake", "--dry-run", "--cores", "1", "--configfile", str(tmp_path / "bad.yaml")], ROOT, check=False)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert 'models.m.backend: expected one of "embedded", "tgi", "openai", got "gpt5"' in text
    assert "facilitation.personas.nn: unknown key" in text


def job_interval(log: Path) -> tuple[datetime, datetime]:
    """A stage's start and end from the times socsim writes into its log."""
    text = log.read_text()
    start = re.search(r"started (\S+)", text).group(1)
    end = re.search(r"finished (\S+)", text).group(1)
    return datetime.fromisoformat(start), datetime.fromisoformat(end)


@pytest.mark.slow
def test_llm_clients_bounds_the_jobs_that_talk_to_servers(project, llama_server):
    """Two LLM shards ready at once on two cores: with llm_clients=1 they never overlap, with 2 they do."""
    od = {"steps": 1, "controls": {"enabled": False}}  # short jobs: only their overlap matters
    server = {"llm": {"concurrency": 1}, "models": {"smollm2-135m": served([llama_server.url])}, "opinion_dynamics": od}
    (project / "server.yaml").write_text(yaml.safe_dump(server))
    shards = ("smollm2-135m.fire", "smollm2-135m.sky_color")
    targets = [f"results/opinion_dynamics/events/{s}.parquet" for s in shards]
    logs = [project / f"results/opinion_dynamics/logs/simulate/{s}.log" for s in shards]
    for clients, overlap in ((1, False), (2, True)):
        shutil.rmtree(project / ".socsim-cache/opinion_dynamics/simulate", ignore_errors=True)  # real calls
        # (the targets first: --configfile and --forcerun take every word after them)
        sh(
            [
                "snakemake",
                *targets,
                "--cores",
                "2",
                "--resources",
                f"llm_clients={clients}",
                "--configfile",
                "tests/params.tiny.yaml",
                "server.yaml",
                "--forcerun",
                "opinion_dynamics_simulate",
            ],
            project,
        )
        (a0, a1), (b0, b1) = (job_interval(log) for log in logs)
        assert (a0 < b1 and b0 < a1) == overlap, (clients, a0, a1, b0, b1)
