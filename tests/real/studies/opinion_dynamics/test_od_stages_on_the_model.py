"""Opinion dynamics' stages on the real embedded model: a tiny run from materials to figures, the same bytes
again from the call cache, and a simulation killed mid-run resumed without repeating finished calls."""

from __future__ import annotations

import pandas as pd
import pytest

from support.faults import kill_after_cached_calls
from support.metrics import cache_rows, read_metrics
from support.project import run_socsim, socsim_cmd, write_params

# -- the stages on the real embedded model -----------------------------------------------------


TINY = {
    "topics": ["fire"],
    "confirmation_bias": ["none"],
    "n_agents": 5,
    "steps": 3,
    "max_tokens": 12,
    "controls": {"enabled": True, "independent": True, "reports": 1},
    "shard_by": ["model", "topic"],
}


def _stages(params, out, *names, **kw):
    results = {}
    for stage in names:
        proc = run_socsim(
            "opinion_dynamics", stage, "--params", str(params), *kw.get(stage, ()), *_paths(out, stage), timeout=900
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[stage] = proc
    return results


def _paths(out, stage):
    from socsim import studies

    study = studies.study("opinion_dynamics")
    st = study.stage(stage)
    args = []
    for name in (*st.inputs, *study.output_names(st)):
        art = study.artifact(st, name)
        if art.path.startswith("data/"):
            continue
        path = art.path.replace("results/opinion_dynamics", str(out)).replace("{shard}", "all")
        args += [f"--{name.replace('_', '-')}", path]
    return args


@pytest.mark.slow
def test_stages_on_the_embedded_model_deterministic_and_resumable(tmp_path):
    params = write_params(tmp_path / "params.yaml", opinion_dynamics=TINY)
    out = tmp_path / "res"
    _stages(
        params,
        out,
        "materials",
        "setups",
        "simulate",
        "classify",
        "outside_info",
        "validate",
        "trajectories",
        "baseline",
        "analyse",
        "figures",
    )
    events = pd.read_parquet(out / "events/all.parquet")
    assert len(events) == 2 * 3 + 2 * (5 + 1)  # two framings: 3 steps; controls: 5 agents + 1 bare, 1 report
    ratings = pd.read_parquet(out / "ratings/all.parquet")
    assert len(ratings) == len(events) and ratings.classifier_model.eq("smollm2-135m").all()
    traj = pd.read_parquet(out / "trajectories.parquet")
    assert set(traj.source) <= {"initial", "classified", "carried", "parse_failed", "none"}
    analysis_dir = out / "analysis"
    for name in ("per_sim.csv", "table1.md", "table2.tex", "tests.csv", "baseline.csv", "vs_paper.md", "summary.json"):
        assert (analysis_dir / name).stat().st_size > 0, name
    vs = pd.read_csv(analysis_dir / "vs_paper.csv")
    assert vs.quantity.str.contains("Table 1").any() and (vs.paper.notna()).any()
    assert len(list((out / "figures").glob("*.png"))) >= 4
    metrics = read_metrics(out / "metrics/simulate/all.json")
    assert metrics["calls"] == 2 * 3 * 2 + 2 * (5 + 1) and metrics["steps"] == len(events)
    assert read_metrics(out / "metrics/validate.json")["validated"] == 0
    # the outside-information judge: every tweet and report of the closed world (6 + 6 <= sample 10 each)
    judged = pd.read_parquet(out / "outside_info.parquet")
    assert len(judged) == 12 and set(judged.world) == {"closed"} and judged.judge_model.eq("smollm2-135m").all()
    oi = pd.read_csv(analysis_dir / "outside_info.csv").set_index("world")
    assert oi.loc["closed", "all_judged"] == judged.parse_ok.sum() and oi.loc["open", "status"].startswith("did not")
    assert (analysis_dir / "per_topic.md").stat().st_size > 0
    assert len(list((out / "figures").glob("final_by_topic_*.png"))) == 1
    # determinism: a second run from the cache writes byte-identical artifacts
    files = ("events/all.parquet", "ratings/all.parquet", "trajectories.parquet")
    before = {f: (out / f).read_bytes() for f in files}
    cache = tmp_path / "cache" / "llm.sqlite"
    calls = cache_rows(cache)
    (out / "events/all.parquet").unlink()
    _stages(params, out, "simulate", "classify", "trajectories")
    after = {f: (out / f).read_bytes() for f in files}
    assert after == before and cache_rows(cache) == calls
    assert read_metrics(out / "metrics/simulate/all.json")["calls"] == 0
    # resume after SIGKILL: a fresh cache, killed mid-simulate, resumed without repeating finished calls
    (tmp_path / "p2").mkdir()
    params2 = write_params(tmp_path / "p2" / "params.yaml", opinion_dynamics=TINY)
    cache2 = tmp_path / "p2" / "cache" / "llm.sqlite"
    out2 = tmp_path / "res2"
    _stages(params2, out2, "materials", "setups")
    done = kill_after_cached_calls(
        socsim_cmd("opinion_dynamics", "simulate", "--params", str(params2), *_paths(out2, "simulate")), cache2, 5
    )
    assert 5 <= done < 24 and not (out2 / "events/all.parquet").exists()
    _stages(params2, out2, "simulate")
    m = read_metrics(out2 / "metrics/simulate/all.json")
    assert m["cache_hits"] == done and m["calls"] == 24 - done
    assert pd.read_parquet(out2 / "events/all.parquet").equals(events)  # the same simulation after the resume
