"""`socsim rocrate` on the recorded tiny run (support.recorded: `snakemake --cores 2` on the tiny config): the crate
of every study's jobs passes the Workflow Run Crate validator offline (Provenance Run Crate 0.5 and all it extends),
holds every file it describes with its sha256, and carries on each job's action what that job's metrics recorded
of the models that answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import rocrate as check
from support.project import sh

pytestmark = pytest.mark.slow  # the recorded tiny run (support.recorded)


def _action(results: Path, metrics: Path) -> str:
    """The crate's action of the job that wrote a metrics file: results/<study>/metrics/<stage>[/<shard>].json."""
    rel = metrics.relative_to(results).with_suffix("").parts  # (study, "metrics", stage[, shard])
    return f"#job/{rel[0]}_{rel[2]}" + (f"/{rel[3]}" if len(rel) == 4 else "")


def test_the_recorded_run_exports_a_crate_the_validator_passes(tiny_run, tmp_path):
    out = tmp_path / "crate"
    said = sh(["socsim", "rocrate", "--out", str(out)], tiny_run.project).stdout
    assert said.startswith("RO-Crate of ")
    issues, asked = check.validate(out, "provenance-run-crate-0.5")
    assert issues == [] and asked == [check.CONTEXT_URL]
    assert check.structure(out) == []
    g = {e["@id"]: e for e in json.loads((out / "ro-crate-metadata.json").read_text())["@graph"]}

    def props(pid: str) -> dict:
        refs = g[pid].get("valueReference") or g[pid].get("additionalProperty") or []
        return {g[r["@id"]]["name"]: g[r["@id"]] for r in (refs if isinstance(refs, list) else [refs])}

    # Each job's action: the identity, calls and cache hits its metrics recorded, per model that answered.
    results, answered, calls = tiny_run.project / "results", 0, 0
    for metrics in sorted(results.glob("*/metrics/**/*.json")):
        recorded = json.loads(metrics.read_text())
        action = props(_action(results, metrics))
        for name, model in (recorded.get("models") or {}).items():
            group = props(action[f"model {name}"]["@id"])
            for key in ("model_id", "model_sha", "runtime"):
                if model["identity"].get(key) is not None:
                    assert group[key]["value"] == model["identity"][key], (metrics, name, key)
            assert (group["calls"]["value"], group["cache_hits"]["value"]) == (model["calls"], model["cache_hits"])
            answered += 1
        calls += int(recorded.get("calls") or 0) if "models" in recorded else 0
    assert answered > 0
    run = props("#run")
    assert run["calls"]["value"] == calls

    # benchmarks/rocrate_library.py's tiny run: ro-crate-py rebuilds this crate's graph (docs/reproducibility.md)
    import sys

    from support.project import ROOT

    bench = sh(
        [sys.executable, str(ROOT / "benchmarks" / "rocrate_library.py"), str(out), "--repeat", "1"], ROOT
    ).stdout
    assert f"{len(g)} entities" in bench and "added: 0" in bench and "dropped: 0" in bench, bench
    assert "ro-crate-py 'https://w3id.org/ro/crate/1.2/context'" in bench, bench  # what it writes, beside ours (1.1)


def test_the_readmes_scorecard_command_reads_a_run_with_its_crate_once(tiny_run, tmp_path):
    """`make run` ends with `socsim rocrate --out results/rocrate --link`: a link of every report of the run inside
    results. The README's `socsim scorecard results` reads each report once (the crate's links are the same reports,
    not a second run), and a crate given by itself is read as a run."""
    import shutil

    import pandas as pd

    results, crate = tiny_run.project / "results", tiny_run.project / "results" / "rocrate"
    before = sh(["socsim", "scorecard", "results", "--out", str(tmp_path / "before")], tiny_run.project)
    try:
        sh(["socsim", "rocrate", "--out", "results/rocrate", "--link"], tiny_run.project)
        assert (crate / "ro-crate-metadata.json").is_file() and list(crate.rglob("findings.parquet"))
        after = sh(["socsim", "scorecard", "results", "--out", str(tmp_path / "after")], tiny_run.project)
        alone = sh(["socsim", "scorecard", str(crate), "--out", str(tmp_path / "alone")], tiny_run.project)
    finally:
        shutil.rmtree(crate, ignore_errors=True)
    assert before.returncode == after.returncode == alone.returncode == 0
    tables = {k: pd.read_parquet(tmp_path / k / "scorecard.parquet") for k in ("before", "after", "alone")}
    keep = ["study", "claim", "model", "verdict"]
    assert len(tables["before"]) > 0
    assert tables["after"][keep].equals(tables["before"][keep])
    assert tables["alone"][keep].equals(tables["before"][keep])
    assert not list(results.rglob("ro-crate-metadata.json"))
