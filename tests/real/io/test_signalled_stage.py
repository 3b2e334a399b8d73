"""A stage signalled in the middle of its model calls (the real embedded model, in a `socsim` subprocess):
no partial artifact, the finished calls in the call cache (closed cleanly), and the rerun pays only the rest."""

from __future__ import annotations

import signal
import subprocess

import pytest

from socsim.llm.cache import CallCache
from support.faults import signal_after_cached_calls
from support.metrics import read_metrics
from support.project import ROOT, socsim_cmd, write_params


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_stage_leaves_no_partial_artifact_and_the_finished_calls(tmp_path, sig, code):
    n = 6
    params = write_params(tmp_path / "params.yaml", facilitation={"personas": {"source": "llm", "n": n}})
    out, metrics, cache = tmp_path / "personas.parquet", tmp_path / "metrics.json", tmp_path / "cache" / "llm.sqlite"
    cmd = socsim_cmd(
        "facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics)
    )
    proc = signal_after_cached_calls(cmd, cache, 3, sig)
    name = signal.Signals(sig).name
    assert proc.returncode == code, proc.stderr
    assert f"socsim: interrupted ({name}); finished calls are in the cache {cache}; re-run to resume" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() and not metrics.exists()
    assert [p.name for p in tmp_path.rglob(".*.tmp")] == []
    assert not cache.with_name("llm.sqlite-wal").exists()  # closed cleanly (a SIGKILL leaves the WAL)
    reopened = CallCache(cache)
    done = len(reopened)
    reopened.close()
    assert 3 <= done < n

    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    m = read_metrics(metrics)
    assert m["cache_hits"] >= done and m["calls"] == n - m["cache_hits"]  # finished calls are not paid again
    assert m["rows"] == n
