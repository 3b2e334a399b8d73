"""Stages on the real embedded model: determinism, resume after SIGKILL, provenance, no truncated files."""

from __future__ import annotations

import subprocess

import pyarrow.parquet as pq
import pytest

from socsim.facilitation import schemas
from socsim.io.parquet import read_provenance, read_table
from support.faults import kill_after_cached_calls
from support.metrics import read_metrics
from support.project import ROOT, run_socsim, socsim_cmd, write_params

pytestmark = pytest.mark.slow


def personas_stage(tmp_path, params, name="personas"):
    out, metrics = tmp_path / f"{name}.parquet", tmp_path / f"{name}.json"
    proc = run_socsim(
        "facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics)
    )
    assert proc.returncode == 0, proc.stderr
    return out, read_metrics(metrics)


def test_file_personas_and_topics_with_provenance(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    out, metrics = personas_stage(tmp_path, params)
    table = read_table(out, schemas.PERSONAS)
    assert table.num_rows == 30 and table.column("persona_id").to_pylist() == [f"p{i:03d}" for i in range(30)]
    roles = table.column("role").to_pylist()
    assert {"normal_user", "troll", "community_veteran"} == set(roles)
    assert len(set(table.column("username").to_pylist())) == 30
    prov = read_provenance(out)
    assert prov["stage"] == "facilitation.personas" and prov["seed"] == 20250101
    assert prov["params"]["facilitation.personas"]["source"] == "file" and len(prov["params_hash"]) == 64
    assert prov["socsim_version"] and "git_commit" in prov
    assert metrics["rows"] == 30 and metrics["calls"] == 0

    topics, tmetrics = tmp_path / "topics.parquet", tmp_path / "topics.json"
    proc = run_socsim(
        "facilitation", "topics", "--params", str(params), "--topics", str(topics), "--metrics", str(tmetrics)
    )
    assert proc.returncode == 0, proc.stderr
    assert read_table(topics, schemas.TOPICS).num_rows == 7


def test_llm_personas_byte_identical_across_runs_and_caches(tmp_path):
    sections = {"facilitation": {"personas": {"source": "llm", "n": 3}}}
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, m1 = personas_stage(tmp_path / "a", write_params(tmp_path / "a" / "params.yaml", **sections))
    second, m2 = personas_stage(tmp_path / "b", write_params(tmp_path / "b" / "params.yaml", **sections))
    assert m1["calls"] == m2["calls"] == 3  # two independent caches: both runs called the model
    assert first.read_bytes() == second.read_bytes()
    again, m3 = personas_stage(tmp_path / "a", tmp_path / "a" / "params.yaml", name="again")
    assert m3["calls"] == 0 and m3["cache_hits"] == 3  # a cached re-run costs no model call
    assert again.read_bytes() == first.read_bytes()
    table = pq.read_table(first)
    assert table.column("source").to_pylist() == ["llm"] * 3
    assert all(table.column("raw_answer").to_pylist())
    prov = read_provenance(first)
    model = prov["model"]["smollm2-135m"]  # registry name -> the identity that answered
    assert model["backend"] == "embedded" and model["model_id"].endswith(".gguf")
    assert len(model["model_sha"]) == 64


def test_sigkill_mid_stage_resumes_without_repeating_calls(tmp_path):
    n = 10
    params = write_params(tmp_path / "params.yaml", facilitation={"personas": {"source": "llm", "n": n}})
    out, metrics = tmp_path / "personas.parquet", tmp_path / "metrics.json"
    cmd = socsim_cmd(
        "facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics)
    )
    done = kill_after_cached_calls(cmd, tmp_path / "cache" / "llm.sqlite", 3)
    assert 3 <= done < n
    assert not out.exists() and not metrics.exists()  # nothing half-written
    assert list(tmp_path.glob(".*.tmp")) == []

    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    m = read_metrics(metrics)
    assert m["cache_hits"] == done and m["calls"] == n - done  # finished calls are not paid again
    assert read_table(out, schemas.PERSONAS).num_rows == n
