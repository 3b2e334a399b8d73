"""The rehearsal stays runnable: `benchmarks/rehearsal.py run` on params.rehearsal.yaml (the papers' designs on the
planted control, docs/rehearsal.md) at a tiny fraction, end to end in a clone (plan, Snakemake, DVC commit,
RO-Crate): every study, both controls answering every LLM stage, the scorecard; then its report. The rehearsal
itself (paper scale) runs by hand; its numbers are in docs/rehearsal.md."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from socsim.config import read_yaml
from support.project import ROOT, tool_env

# The same cells (conditions, topics, bias levels, framings, memories, worlds, modes, ablations), each at its
# smallest count (opinion dynamics: fewer topics, one world), in one shard per stage (a job per shard costs
# seconds of start-up).
TINY = {
    "facilitation": {
        "shard_by": [],
        "discussions_per_cell": 1,
        "user_turns": 1,
        "comment_max_tokens": 16,
        "ablations": {"discussions": 1},
        "annotation": {"annotators": 2},
    },
    "coherence": {"shard_by": [], "agents_per_cell": 1, "turns_per_agent": 1, "utterance_max_tokens": 16},
    "opinion_dynamics": {
        "shard_by": [],
        # Three topics (the per-topic tests' minimum) and the closed world: a trajectory figure per model, topic,
        # memory and world costs seconds whatever the size (docs/rehearsal.md), 120 of them at the paper's cells.
        "topics": ["flat_earth", "global_warming", "sky_color"],
        "world": ["closed"],
        "n_agents": 5,  # (a uniform start over the five levels needs a multiple of 5)
        "steps": 1,
        "max_tokens": 16,
        "memory_max_tokens": 1000,
        "controls": {"reports": 1},
        "outside_info": {"sample": 1},
    },
    "debate": {"shard_by": [], "data": {"source": "planted", "groups_per_topic": 1}, "max_tokens": 16},
}


@pytest.mark.slow
def test_the_rehearsal_runs_end_to_end_at_a_tiny_fraction(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    project = tmp_path / "project"
    script = [sys.executable, str(ROOT / "benchmarks" / "rehearsal.py")]
    run = [*script, "run", "--project", str(project), "--also", str(tmp_path / "tiny.yaml"), "--cores", "2"]
    proc = subprocess.run(run, cwd=ROOT, env=tool_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for step in ("plan", "snakemake", "dvc-commit", "rocrate"):
        assert f"{step}: exit 0," in proc.stdout, (step, (project / f"{step.split('-')[0]}.log").read_text()[-3000:])

    rehearsal = read_yaml(ROOT / "params.rehearsal.yaml")
    controls = {"planted", "planted-null"}
    for study in ("facilitation", "coherence", "opinion_dynamics", "debate"):
        models = rehearsal[study].get("models") or rehearsal[study]["agent_models"]
        assert set(models) == controls, study  # every model of the rehearsal is a control
        answered: set[str] = set()
        for path in (project / "results" / study / "metrics").rglob("*.json"):
            per = json.loads(path.read_text()).get("models") or {}
            answered |= {name for name, m in per.items() if m["calls"] + m["cache_hits"] > 0}
        assert answered == controls, (study, answered)  # both answered, and nothing else did

    out = subprocess.run(
        [*script, "report", "--project", str(project), "--json", str(tmp_path / "r.json")],
        cwd=ROOT,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads((tmp_path / "r.json").read_text())
    stages = data["llm_stages"]
    named = ("facilitation annotate", "coherence judge", "opinion_dynamics classify", "debate annotate")
    assert all(stages[s]["calls"] > 0 for s in named), {s: stages.get(s) for s in named}
    assert all(r["cpu_s"] > 0 and r["peak_rss_mib"] > 0 for r in stages.values())
    assert {"coherence analyse", "debate analyse", "facilitation figures"} <= {j["job"] for j in data["jobs"]}
    card = data["scorecard"]
    assert card["null_findings"] > 0 and 0 <= card["null_hold"] and card["planted_powered"] > 0
    assert re.search(r"^planted: \d+ of \d+ powered planted findings hold; null twin: \d+ of \d+", out.stdout, re.M)
