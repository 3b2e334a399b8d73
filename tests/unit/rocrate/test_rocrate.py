"""`socsim rocrate` (socsim.rocrate) on a small finished run made here: the facilitation study's stages, two
simulate and annotate shards (the embedded model; a served one with its server record and the sampling its
metrics recorded), the analysis, the figures, the scorecard, with the metrics, provenance and logs a run writes.
The crate is checked by the RO-Crate validator against the Provenance Run Crate 0.5 profile (Workflow Run Crate
0.5 and everything it extends) offline, by a structural check of its own (support.rocrate), and for socsim's
provenance inside, against the run's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from rocrate.rocrate import ROCrate

import socsim
from socsim import cli
from socsim import rocrate as rc
from socsim.io.parquet import write_json, write_table
from support import rocrate as check
from support.project import ROOT

FAC = "results/facilitation"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
EMBEDDED = {
    "backend": "embedded",
    "model_id": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "model_sha": "dde7ece0d85535471e772b30afcda98898a80604ca21d8bfcc8af7d00af5543b",
    "runtime": "llama-cpp-python 0.3.36 flash_attn",
}
SERVED = {
    "backend": "openai",
    "dialect": "openai",
    "model_id": "Qwen/Qwen2.5-0.5B-Instruct",
    "model_sha": "7ae557604adf67be50417f59c2c2f167def9a775",
    "runtime": "vllm",  # what the server says of itself; the engine and its version come from its record
    "structured_output": "strict, object root",
}
SERVER = {
    "engine": "vllm",
    "version": "0.32.0",
    "command": ["vllm", "serve", "Qwen/Qwen2.5-0.5B-Instruct", "--generation-config", "vllm"],
    "sampling_defaults": "none (--generation-config vllm)",
    "launcher": "local",
}
APPLIED = {"max_tokens": 12, "temperature": 0.2, "top_p": 0.95}  # what the served shard's metrics say it sent
# shard -> (registry name, identity, server, calls, cache hits, sampling in its metrics)
SHARDS: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None, int, int, dict[str, Any] | None]] = {
    "main.smollm2-135m": ("smollm2-135m", EMBEDDED, None, 6, 2, None),
    "main.qwen": ("qwen", SERVED, SERVER, 5, 0, APPLIED),
}
JOBS = 3 + 2 * len(SHARDS) + 3  # personas, topics, setups; simulate and annotate shards; analyse, figures, scorecard
PARAMS = {
    "llm.sampling.temperature": 0.7,
    "llm.sampling.top_p": 0.95,
    "models": {"smollm2-135m": {"backend": "embedded", "sampling": {}}, "qwen": {"backend": "openai", "sampling": {}}},
}


def _prov(stage: str, llm: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "stage": f"facilitation.{stage}",
        "params": PARAMS if llm else {"facilitation.x": 1},
        "params_hash": f"hash-{stage}",
        "seed": 20250101,
        "model": None,
        "socsim_version": socsim.__version__,
        "git_commit": COMMIT,
        **extra,
    }


def _parquet(path: Path, prov: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_table(path, [{"x": 1}], pa.schema([("x", pa.int64())]), ["x"], prov)


def _model_metrics(
    identity: dict[str, Any], server: dict | None, calls: int, hits: int, sampling: dict | None
) -> dict[str, Any]:
    m = {"identity": identity, "calls": calls, "requests": calls + hits, "cache_hits": hits, "retries": 0}
    m |= {"parse_failures": 0, "prompt_tokens": 100 * calls, "completion_tokens": 10 * calls}
    return m | ({"server": server} if server else {}) | ({"sampling": sampling} if sampling else {})


def _log(project: Path, rel: str, job: str, start: str, end: str) -> None:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"socsim: {job} started {start}", "progress ...", f"socsim: {job} finished {end} (3.2 s)"]
    path.write_text("\n".join(lines) + "\n")


def _llm_shards(project: Path) -> None:
    """The simulate and annotate shards: Parquet with provenance, metrics with what answered, logs."""
    for stage, out in (("simulate", "comments"), ("annotate", "annotations")):
        for shard, (name, identity, server, calls, hits, sampling) in SHARDS.items():
            prov = _prov(stage, True, model={name: identity}, shard={"id": shard, "condition": "main", "model": name})
            _parquet(project / FAC / out / f"{shard}.parquet", prov)
            models = {name: _model_metrics(identity, server, calls, hits, sampling)}
            totals = {"calls": calls, "requests": calls + hits, "cache_hits": hits}
            write_json(project / FAC / "metrics" / stage / f"{shard}.json", {**totals, "models": models})
            _log(
                project,
                f"{FAC}/logs/{stage}/{shard}.log",
                f"facilitation.{stage} shard {shard}",
                "2026-11-29T04:59:36.497+00:00",
                "2026-11-29T04:59:39.657+00:00",
            )
            (project / FAC / "benchmarks" / stage).mkdir(parents=True, exist_ok=True)
            (project / FAC / "benchmarks" / stage / f"{shard}.tsv").write_text("s\th:m:s\n3.2\t0:00:03\n")


def fake_run(project: Path) -> Path:
    """A project (the workflow files, params.yaml, the study's data) and its finished run's results."""
    for rel in ("Snakefile", "params.yaml", "envs/requirements.txt"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, project / rel)
    for rel in ("workflow/rules", "workflow/schemas", "workflow/report/facilitation", "profiles", "data/facilitation"):
        shutil.copytree(ROOT / rel, project / rel)
    no_llm = {"calls": 0, "requests": 0, "cache_hits": 0, "models": {}}
    for stage in ("personas", "topics", "setups"):
        _parquet(project / FAC / f"{stage}.parquet", _prov(stage))
        write_json(project / FAC / "metrics" / f"{stage}.json", no_llm if stage != "setups" else {"discussions": 2})
    _llm_shards(project)
    analysis = project / FAC / "analysis"
    analysis.mkdir(parents=True)
    (analysis / "findings.csv").write_text("claim,verdict\nc1,inconclusive\n")
    (analysis / ".snakemake_timestamp").write_text("")
    write_json(analysis / "provenance.json", _prov("analyse"))
    write_json(project / FAC / "metrics" / "analyse.json", {"findings": {"verdicts": {"inconclusive": 1}}})
    (project / FAC / "figures").mkdir()
    (project / FAC / "figures" / "fig3.png").write_bytes(b"\x89PNG not really")
    write_json(project / FAC / "metrics" / "figures.json", {"figures": ["fig3.png"]})
    (project / FAC / "stray.txt").write_text("no job wrote this")
    sc = project / "results" / "scorecard"
    sc.mkdir(parents=True)
    write_json(sc / "provenance.json", {"reports": [{"path": f"{FAC}/analysis", "git_commit": COMMIT}]})
    (sc / "scorecard.csv").write_text("claim\nc1\n")
    return project / "results"


@pytest.fixture(scope="module")
def crate(tmp_path_factory) -> Path:
    results = fake_run(tmp_path_factory.mktemp("run") / "proj")
    out = results.parent.parent / "crate"
    rc.export(results, out, license="CC-BY-4.0")
    return out


def graph(crate: Path) -> dict[str, dict[str, Any]]:
    return {e["@id"]: e for e in json.loads((crate / rc.METADATA).read_text())["@graph"]}


def refs(value: Any) -> list[str]:
    return [value["@id"]] if isinstance(value, dict) else [v["@id"] for v in value or []]


def properties(g: dict[str, dict[str, Any]], action: str) -> dict[str, Any]:
    """An action's PropertyValues: name -> value, and per model group `model <name>` -> {field: value}."""
    out: dict[str, Any] = {}
    for pid in refs(g[action].get("additionalProperty")):
        pv = g[pid]
        assert pv["@type"] == "PropertyValue"
        if "valueReference" in pv:
            out[pv["name"]] = {g[r]["name"]: g[r]["value"] for r in refs(pv["valueReference"])}
            out[pv["name"]]["(value)"] = pv["value"]
        else:
            out[pv["name"]] = pv["value"]
    return out


def test_the_crate_of_a_run_passes_the_workflow_run_crate_validator_offline(crate):
    issues, asked = check.validate(crate, "provenance-run-crate-0.5")
    assert issues == []
    assert asked == [check.CONTEXT_URL]  # nothing else was fetched: the check runs offline
    assert check.structure(crate) == []
    read = ROCrate(str(crate))  # ro-crate-py reads it back: the workflow, the run, every file
    assert read.mainEntity.id == "Snakefile" and "ComputationalWorkflow" in read.mainEntity.type
    assert read.get("#run")["instrument"].id == "Snakefile"
    files = {p.relative_to(crate).as_posix() for p in crate.rglob("*") if p.is_file()} - {rc.METADATA}
    assert {e.id for e in read.data_entities if "File" in ([e.type] if isinstance(e.type, str) else e.type)} == files


def test_the_checks_fail_a_crate_that_breaks_the_profile(crate, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(crate, broken)
    doc = json.loads((broken / rc.METADATA).read_text())
    g = {e["@id"]: e for e in doc["@graph"]}
    del g["./"]["license"]
    g["Snakefile"]["@type"] = ["File", "SoftwareSourceCode"]  # no longer a workflow
    g[f"{FAC}/stray-ref.txt"] = {"@id": f"{FAC}/stray-ref.txt", "@type": "File", "name": "x"}
    g["#run"]["agent"] = {"@id": "#nobody"}
    doc["@graph"] = list(g.values())
    (broken / rc.METADATA).write_text(json.dumps(doc))
    (broken / FAC / "setups.parquet").write_bytes(b"changed")
    issues, _ = check.validate(broken, "provenance-run-crate-0.5")
    assert any("license" in i for i in issues), issues
    assert any("ComputationalWorkflow" in i or "Main Workflow" in i for i in issues), issues
    problems = check.structure(broken)
    assert "the root has no license" in problems
    assert f"{FAC}/setups.parquet: sha256 or contentSize differ from the file" in problems
    assert f"{FAC}/stray-ref.txt: no such file in the crate" in problems
    assert "#run.agent -> #nobody: no such entity" in problems
    assert any(p.startswith("the main workflow is not") for p in problems)


def test_each_job_is_an_action_of_its_tool_with_its_files_and_times(crate):
    g = graph(crate)
    simulate = g["#job/facilitation_simulate/main.qwen"]
    assert simulate["@type"] == "CreateAction" and refs(simulate["instrument"]) == ["#tool/facilitation_simulate"]
    assert set(refs(simulate["object"])) == {f"{FAC}/setups.parquet", "data/facilitation/silence.yaml", "params.yaml"}
    assert set(refs(simulate["result"])) == {
        f"{FAC}/comments/main.qwen.parquet",
        f"{FAC}/metrics/simulate/main.qwen.json",
    }
    assert (simulate["startTime"], simulate["endTime"]) == (
        "2026-11-29T04:59:36.497+00:00",
        "2026-11-29T04:59:39.657+00:00",
    )
    assert "--shard main.qwen" in simulate["description"]
    assert refs(g[f"{FAC}/logs/simulate/main.qwen.log"]["about"]) == [simulate["@id"]]  # the engine's trace
    control = g["#control/facilitation_simulate/main.qwen"]
    assert refs(control["instrument"]) == ["#step/facilitation_simulate"] and refs(control["object"]) == [
        simulate["@id"]
    ]
    # The analysis reads every shard of the sharded artifacts; its folder is a Dataset of its files.
    analyse = g["#job/facilitation_analyse"]
    assert {f"{FAC}/comments/{s}.parquet" for s in SHARDS} <= set(refs(analyse["object"]))
    assert {f"{FAC}/annotations/{s}.parquet" for s in SHARDS} <= set(refs(analyse["object"]))
    folder = g[f"{FAC}/analysis/"]
    assert folder["@type"] == "Dataset" and f"{FAC}/analysis/" in refs(analyse["result"])
    assert set(refs(folder["hasPart"])) == {f"{FAC}/analysis/findings.csv", f"{FAC}/analysis/provenance.json"}
    assert refs(g["#job/scorecard"]["object"]) == [f"{FAC}/analysis/"]
    # The run: the workflow's CreateAction, everything written its result; the engine organised the steps.
    run = g["#run"]
    assert refs(run["instrument"]) == ["Snakefile"] and "params.yaml" in refs(run["object"])
    written = {
        r
        for a in g.values()
        if a["@id"].startswith("#job/") and a["@type"] == "CreateAction"
        for r in refs(a["result"])
    }
    assert set(refs(run["result"])) == written
    assert set(refs(g["#engine-run"]["object"])) == {i for i in g if i.startswith("#control/")}
    assert len([i for i in g if i.startswith("#control/")]) == JOBS
    assert set(refs(g["Snakefile"]["hasPart"])) == {i for i in g if i.startswith("#tool/")}
    # Only what the jobs wrote (no stray file, no hidden one), each with its sha256.
    assert not (crate / FAC / "stray.txt").exists() and not (crate / FAC / "analysis" / ".snakemake_timestamp").exists()
    assert g["./"]["license"] == {"@id": "https://spdx.org/licenses/CC-BY-4.0"}


def test_socsim_provenance_is_on_each_action_as_the_run_recorded_it(crate):
    g = graph(crate)
    for stage in ("simulate", "annotate"):
        for shard, (name, identity, server, calls, hits, sampling) in SHARDS.items():
            props = properties(g, f"#job/facilitation_{stage}/{shard}")
            model = props[f"model {name}"]
            assert {k: model[k] for k in identity} == identity  # the identity that answered, field by field
            assert (model["calls"], model["cache_hits"], model["requests"]) == (calls, hits, calls + hits)
            assert model["engine"] == ("vllm 0.32.0" if server else EMBEDDED["runtime"])
            if server:
                assert model["server.sampling_defaults"] == SERVER["sampling_defaults"]
                assert json.loads(model["server.command"]) == SERVER["command"]
            # as applied where the metrics record it, else the model's default from the params the stage read
            want = sampling or {"temperature": 0.7, "top_p": 0.95}
            assert json.loads(model["sampling"]) == want
            assert (props["calls"], props["cache_hits"], props["shard"]) == (calls, hits, shard)
            assert (props["params_hash"], props["git_commit"], props["seed"]) == (f"hash-{stage}", COMMIT, 20250101)
    # The run's action: each (name, identity) once, summed over its jobs, and the run's totals.
    run = properties(g, "#run")
    for shard, (name, identity, _, calls, hits, _) in SHARDS.items():
        model = run[f"model {name}"]
        assert (model["model_id"], model["calls"], model["cache_hits"]) == (identity["model_id"], 2 * calls, 2 * hits)
        assert json.loads(model["jobs"]) == [f"facilitation.{s} shard {shard}" for s in ("simulate", "annotate")]
    assert run["calls"] == 2 * sum(s[3] for s in SHARDS.values())
    assert run["cache_hits"] == 2 * sum(s[4] for s in SHARDS.values())
    assert (run["git_commit"], run["jobs"]) == (COMMIT, JOBS)
    assert properties(g, "#job/facilitation_figures") == {}  # a job that recorded no provenance says nothing


def test_the_command_writes_the_crate_and_refuses_other_folders(tmp_path, capsys):
    results = fake_run(tmp_path / "proj")
    out = tmp_path / "crate"
    assert cli.main(["rocrate", "--results", str(results), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"RO-Crate of {JOBS} jobs" in said
    embedded = "SmolLM2-135M-Instruct.Q4_1.gguf@dde7ece0d855 (llama-cpp-python 0.3.36 flash_attn)"
    assert f"smollm2-135m: {embedded}, 12 calls, 4 cache hits" in said
    assert graph(out)["./"]["license"] == {"@id": "#license"}  # none given: an entity saying so
    assert cli.main(["rocrate", "--results", str(results), "--out", str(out)]) == 0  # an earlier crate: replaced
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert cli.main(["rocrate", "--results", str(results), "--out", str(tmp_path / "other")]) == 2
    assert "not an RO-Crate folder" in capsys.readouterr().err
    assert cli.main(["rocrate", "--results", str(results), "--out", str(tmp_path)]) == 2  # it holds the run
    assert "may not hold the run's results or project" in capsys.readouterr().err
    (tmp_path / "empty" / "results").mkdir(parents=True)
    assert cli.main(["rocrate", "--results", str(tmp_path / "empty" / "results"), "--out", str(tmp_path / "c2")]) == 2
    assert "no finished stage" in capsys.readouterr().err
    assert not (tmp_path / "c2").exists()
