"""Facilitation on the real embedded model: simulate and annotate a tiny run twice (the same bytes), and a
discussion killed mid-run resumes from its call cache."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from socsim.facilitation import schemas
from socsim.io.parquet import read_table
from support.faults import kill_after_cached_calls
from support.metrics import read_metrics
from support.project import ROOT, run_socsim, socsim_cmd, write_params

# -- real model: a discussion, and resume after SIGKILL ---------------------------------------------


TINY = {
    "facilitation": {
        "strategies": ["No Moderator", "No Instructions"],
        "users_per_discussion": 3,
        "user_turns": 3,
        "comment_max_tokens": 16,
        "ablations": {"discussions": 0},
        "annotation": {"annotators": 2, "max_tokens": 20},
    }
}


def _chain_until_setups(tmp_path, params):
    paths = {}
    for stage, out in (("personas", "personas"), ("topics", "topics"), ("setups", "setups")):
        paths[out] = tmp_path / f"{out}.parquet"
        extra = []
        if stage == "setups":
            extra = ["--personas", str(paths["personas"]), "--topics", str(paths["topics"])]
        proc = run_socsim(
            "facilitation",
            stage,
            "--params",
            str(params),
            f"--{out}",
            str(paths[out]),
            "--metrics",
            str(tmp_path / f"{stage}.json"),
            *extra,
        )
        assert proc.returncode == 0, proc.stderr
    return paths


@pytest.mark.slow
def test_simulate_annotate_on_the_real_model_is_deterministic(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    outs = []
    for sub in ("a", "b"):
        d = tmp_path / sub
        params = write_params(d / "params.yaml", **TINY)
        paths = _chain_until_setups(d, params)
        comments, annotations = d / "comments.parquet", d / "annotations.parquet"
        proc = run_socsim(
            "facilitation",
            "simulate",
            "--params",
            str(params),
            "--setups",
            str(paths["setups"]),
            "--comments",
            str(comments),
            "--metrics",
            str(d / "sim.json"),
        )
        assert proc.returncode == 0, proc.stderr
        proc = run_socsim(
            "facilitation",
            "annotate",
            "--params",
            str(params),
            "--setups",
            str(paths["setups"]),
            "--comments",
            str(comments),
            "--annotations",
            str(annotations),
            "--metrics",
            str(d / "ann.json"),
        )
        assert proc.returncode == 0, proc.stderr
        outs.append((comments, annotations))
    (ca, aa), (cb, ab) = outs
    assert ca.read_bytes() == cb.read_bytes() and aa.read_bytes() == ab.read_bytes()  # independent caches
    comments = read_table(ca, schemas.COMMENTS).to_pandas()
    setups = read_table(tmp_path / "a" / "setups.parquet", schemas.SETUPS).to_pandas()
    assert len(setups) == 2
    for _, s in setups.iterrows():
        c = comments[comments.discussion_id == s.discussion_id]
        users = c[~c.is_facilitator]
        assert len(users) == 1 + 3 and users.iloc[0]["is_seed"] and users.iloc[0]["text"] == s.topic
        assert set(users.speaker_name) <= {p["username"] for p in s.participants}
        fac = c[c.is_facilitator]
        assert len(fac) == (0 if s.strategy == "No Moderator" else 3)
        assert (c.turn.to_numpy() == np.arange(len(c))).all()
    ann = read_table(aa, schemas.ANNOTATIONS).to_pandas()
    rated = comments[~comments.is_silent & ~comments.is_seed]
    assert len(ann) == 2 * len(rated)
    assert not ann.duplicated(["discussion_id", "turn", "annotator_id"]).any()
    ok = ann[ann.parse_ok]
    assert ok.toxicity.between(1, 5).all() and ok.argument_quality.between(1, 5).all()
    m = read_metrics(tmp_path / "a" / "sim.json")
    assert m["calls"] == 3 + 3 + 3 and m["comments"] + m["silent_turns"] == len(comments)


@pytest.mark.slow
def test_discussion_killed_mid_run_resumes_from_cache(tmp_path):
    params = write_params(
        tmp_path / "params.yaml", **{**TINY, "facilitation": {**TINY["facilitation"], "user_turns": 6}}
    )
    paths = _chain_until_setups(tmp_path, params)
    comments, metrics = tmp_path / "comments.parquet", tmp_path / "sim.json"
    cmd = socsim_cmd(
        "facilitation",
        "simulate",
        "--params",
        str(params),
        "--setups",
        str(paths["setups"]),
        "--comments",
        str(comments),
        "--metrics",
        str(metrics),
    )
    done = kill_after_cached_calls(cmd, tmp_path / "cache" / "llm.sqlite", 4)
    total = 6 + 6 + 6  # two discussions: 6 user turns each, 6 facilitator turns in one
    assert 4 <= done < total and not comments.exists()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    m = read_metrics(metrics)
    assert m["cache_hits"] == done and m["calls"] == total - done
    assert len(read_table(comments, schemas.COMMENTS)) == 2 + total
