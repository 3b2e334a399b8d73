"""The study contract holds for every registered stage of every study: help text, declared params
(a view that refuses undeclared keys), artifacts, shards, per-shard caches, no import circle."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from dataclasses import replace

import pyarrow as pa
import pytest
import yaml

from socsim import cli, config, studies
from socsim.context import StageContext
from socsim.io.parquet import read_tables, write_table
from socsim.stages import ALL, ParamsView, shard_table
from support.project import ROOT

STAGES = studies.all_stages()
IDS = [st.rule_name for _, st in STAGES]


@pytest.fixture(scope="module")
def params():
    return config.load([ROOT / "params.yaml"])


@pytest.mark.parametrize("study,st", STAGES, ids=IDS)
def test_help_names_inputs_outputs_and_params(study, st, capsys):
    with pytest.raises(SystemExit):
        cli.main([study.name, st.name, "--help"])
    text = capsys.readouterr().out
    for name in (*st.inputs, *study.output_names(st)):
        assert f"--{name.replace('_', '-')}" in text, name
    keys = text.split("params keys read:")[1]
    for key in st.declared:
        assert f"  {key}\n" in keys + "\n", key
    assert ("--shard" in text) == bool(st.shards)


@pytest.mark.parametrize("study,st", STAGES, ids=IDS)
def test_declared_keys_exist_and_undeclared_keys_are_refused(study, st, params):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    for key in st.declared:
        config.get_dotted(raw, key)  # DVC reads every declared key from params.yaml itself
    view = ParamsView(params, st.declared, st.rule_name)
    undeclared = sorted(
        k
        for k in (
            "seed",
            "llm.n_ctx",
            f"{study.name}.alpha",
            f"{study.name}.models",
            "facilitation.user_turns",
            "coherence.turns_per_agent",
        )
        if not any(k == d or k.startswith(d + ".") for d in st.declared)
    )
    assert undeclared
    for key in undeclared:
        node, *rest = key.split(".")
        parts = key.split(".")  # the error names the first level that no declared key lies under
        refused = next(
            ".".join(parts[:i])
            for i in range(1, len(parts) + 1)
            if not any(d.startswith(".".join(parts[:i]) + ".") for d in st.declared)
        )
        with pytest.raises(config.ParamsError, match=rf"stage {st.rule_name} read params key '{refused}'"):
            value = view[node]
            for part in rest:
                value = value[part]
    for key in st.declared:  # every declared key reads back its value
        node = view
        for part in key.split("."):
            node = node[part]
        assert node == config.get_dotted(params, key) or isinstance(node, ParamsView)


def test_a_stage_that_reads_an_undeclared_key_fails_naming_it(tmp_path, params):
    """The real personas stage, declared without its own section: it stops at the first read."""
    study = studies.study("facilitation")
    st = replace(study.stage("personas"), params=("seed",))
    paths = {k: tmp_path / "x" for k in ("personas", "metrics")}
    paths.update({k: ROOT / study.artifacts[k].path for k in st.inputs})
    ctx = StageContext(study, st, params, paths)
    with pytest.raises(config.ParamsError, match="stage facilitation.personas read params key 'facilitation'"):
        st.run(ctx)
    assert not (tmp_path / "x").exists()


def test_contract_imports_no_study():
    """The contract, the registry and the generators import no study until asked for the studies."""
    code = (
        "import sys, socsim.stages, socsim.studies, socsim.workflow, socsim.dvc, socsim.cli; "
        "print(sorted(m for m in sys.modules if m.startswith(('socsim.facilitation', 'socsim.coherence'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
    stages_src = (ROOT / "src/socsim/stages.py").read_text()
    assert "facilitation" not in stages_src.split('"""', 2)[2] and "coherence" not in stages_src.split('"""', 2)[2]


def test_shards_come_from_params(params):
    fac, coh = studies.study("facilitation"), studies.study("coherence")
    sim, conv = fac.stage("simulate"), coh.stage("converse")
    # default: one per model (SmolLM2 and the two controls)
    assert sim.shard_ids(params) == conv.shard_ids(params) == ["planted", "planted-null", "smollm2-135m"]
    one_model = {"facilitation": {"models": ["smollm2-135m"]}, "coherence": {"agent_models": ["smollm2-135m"]}}
    params = config.validate(config.deep_merge(params, one_model))
    params = config.validate(
        config.deep_merge(
            params,
            {"facilitation": {"shard_by": ["condition", "model"]}, "coherence": {"shard_by": ["model", "topic"]}},
        )
    )
    assert "main.smollm2-135m" in sim.shard_ids(params) and "tt_random.smollm2-135m" in sim.shard_ids(params)
    assert conv.shard_ids(params) == [f"smollm2-135m.{t}" for t in sorted(params["coherence"]["topics"])]
    one = config.validate(
        config.deep_merge(params, {"facilitation": {"shard_by": []}, "coherence": {"shard_by": ["model"]}})
    )
    assert sim.shard_ids(one) == [ALL] and conv.shard_ids(one) == ["smollm2-135m"]
    # consumers of a sharded artifact take every shard file, producers one shard
    paths = fac.paths(fac.stage("analyse"), params)
    assert paths["comments"] == [f"results/facilitation/comments/{s}.parquet" for s in sim.shard_ids(params)]
    assert (
        fac.paths(fac.stage("annotate"), params, "main.x")["comments"] == "results/facilitation/comments/main.x.parquet"
    )
    with pytest.raises(config.ParamsError, match="not allowed in a file name"):
        shard_table([{"model": "a/b"}], ["model"])


def test_shards_read_back_as_the_unsharded_table(tmp_path):
    """Split in any way, the shard files of an artifact read back as the table written whole."""
    schema = pa.schema([("discussion_id", pa.string()), ("turn", pa.int64()), ("text", pa.string())])
    rows = [{"discussion_id": f"d{d}", "turn": t, "text": f"{d}-{t}"} for d in range(7) for t in range(5)]
    whole = write_table(tmp_path / "whole.parquet", rows, schema, ["discussion_id", "turn"], {})
    rng = random.Random(3)
    shuffled = rng.sample(rows, len(rows))
    parts = [shuffled[i::3] for i in range(3)]
    paths = [tmp_path / f"s{i}.parquet" for i in range(3)]
    for p, part in zip(paths, parts):
        write_table(p, part, schema, ["discussion_id", "turn"], {"shard": str(p)})
    merged = read_tables(list(reversed(paths)), schema, ["discussion_id", "turn"])
    assert merged.replace_schema_metadata(None).equals(whole.replace_schema_metadata(None))


def test_each_shard_has_its_own_call_cache(tmp_path, params):
    study = studies.study("coherence")
    st = study.stage("judge")
    p = config.validate(
        config.deep_merge(
            params,
            {
                "llm": {"cache_path": str(tmp_path / "{study}" / "{stage}" / "{shard}.sqlite")},
                "coherence": {"shard_by": ["model", "topic"], "judge_models": {"smollm2-135m": "j1"}},
                "models": {"j1": {}, "j2": {}},
            },
        )
    )
    ctx = StageContext(study, st, p, {}, "smollm2-135m.taxes")
    try:
        a = ctx.model_clients(["j1", "smollm2-135m"], "coherence.judge_models")
        with pytest.raises(config.ParamsError, match="'j2', which its declaration does not name"):
            ctx.model_client("j2", "coherence.judge_models")
        assert a["j1"].cache is a["smollm2-135m"].cache  # one open file per shard
        assert a["j1"].cache.path == tmp_path / "coherence" / "judge" / "smollm2-135m.taxes.sqlite"
        assert ctx.shard_values == {"model": "smollm2-135m", "topic": "taxes"}
    finally:
        ctx.close()


def test_a_stale_shard_list_stops_the_consumer(capsys, monkeypatch):
    """dvc.yaml exported before a shard key changed lists other shard files than params give: the
    consumer refuses instead of analysing part of the data."""
    monkeypatch.chdir(ROOT)
    rc = cli.main(["coherence", "analyse", "--judgments", "results/coherence/judgments/smollm2-135m.taxes.parquet"])
    err = capsys.readouterr().err
    assert rc == 2 and re.search(r"missing: [^)]*results/coherence/judgments/smollm2-135m\.parquet", err)
    assert "not a shard: results/coherence/judgments/smollm2-135m.taxes.parquet" in err
    assert "socsim dvc export" in err


def test_the_revision_switches_the_stages(params):
    """Stage.when with a tuple: the paper-era analysis runs on generated or paper-era data, the revision's
    three stages on the revision only; two writers of one artifact never share a value."""
    fac = studies.study("facilitation")
    rev = config.validate(config.deep_merge(params, {"facilitation": {"data": {"source": "syndisco_revision"}}}))
    assert [st.name for st in fac.active(rev)] == ["import_revision", "analyse_revision", "figures_revision"]
    paper_era = config.validate(config.deep_merge(params, {"facilitation": {"data": {"source": "syndisco_release"}}}))
    assert [st.name for st in fac.active(paper_era)] == ["import", "humans", "analyse", "figures"]
    assert fac.producer("setups", rev).name == "import_revision"
    with pytest.raises(ValueError, match="runs when facilitation.data.source is 'generated' or 'syndisco_release'"):
        cli.run_stage(
            cli.build_parser().parse_args(
                ["facilitation", "analyse", "--set", "facilitation.data.source=syndisco_revision"]
            )
        )


def test_the_data_source_switches_the_stages_that_write_the_data(params, capsys):
    """Stage.when: the stages that make the facilitation data, or the one that imports the paper's own,
    never both; the rules, dvc.yaml's stages, targets and the analysis' inputs follow."""
    from socsim import workflow
    from socsim.stages import Artifact, Stage, Study

    fac = studies.study("facilitation")
    release = config.validate(config.deep_merge(params, {"facilitation": {"data": {"source": "syndisco_release"}}}))
    made = ["personas", "topics", "setups", "simulate", "annotate"]
    assert [st.name for st in fac.active(params)] == [*made, "humans", "analyse", "figures"]
    assert [st.name for st in fac.active(release)] == ["import", "humans", "analyse", "figures"]
    assert fac.producer("comments", params).name == "simulate" and fac.producer("comments", release).name == "import"
    # an unsharded stage writes a sharded artifact as its one shard; the analysis reads that shard
    assert fac.paths(fac.stage("import"), release)["comments"] == "results/facilitation/comments/all.parquet"
    assert fac.paths(fac.stage("analyse"), release)["annotations"] == ["results/facilitation/annotations/all.parquet"]
    rules = {r["name"] for r in workflow.rules(release)}
    assert "facilitation_import" in rules and not rules & {f"facilitation_{s}" for s in made}
    assert "facilitation_import" not in {r["name"] for r in workflow.rules(params)}
    assert "facilitation_import" in workflow.dvc_stages(release) and "facilitation_simulate" not in workflow.dvc_stages(
        release
    )
    targets = workflow.study_targets(release)["facilitation"]
    assert "results/facilitation/comments/all.parquet" in targets and not any("personas" in t for t in targets)
    # the CLI refuses a stage that is not part of a run on these params, saying why
    with pytest.raises(ValueError, match="runs when facilitation.data.source is 'generated', and it is 'syndisco_rel"):
        cli.run_stage(
            cli.build_parser().parse_args(
                ["facilitation", "simulate", "--set", "facilitation.data.source=syndisco_release"]
            )
        )
    # two writers of one artifact must switch on one key
    art = {"x": Artifact("x.parquet")}
    a, b = Stage("a", "", lambda c: None, outputs=("x",)), Stage("b", "", lambda c: None, outputs=("x",))
    with pytest.raises(ValueError, match="both write 'x'"):
        Study("s", art, [a, b])
    with pytest.raises(ValueError, match="both write 'x'"):
        Study("s", art, [replace(a, when=("k", 1)), replace(b, when=("j", 2))])
    Study("s", art, [replace(a, when=("k", 1)), replace(b, when=("k", 2))])
