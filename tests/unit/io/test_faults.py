"""Shared runs that survive faults: a call cache that is not one stops the stage at once with a
message naming the file, artifacts get the group's umask, and Ctrl-C or a scheduler's SIGTERM
mid-stage leaves no partial artifact and every finished call in the cache."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from socsim import cli
from socsim.io.parquet import atomic_write_bytes
from socsim.llm.cache import APPLICATION_ID, SCHEMA_VERSION, CallCache, request_key
from socsim.llm.errors import CacheFileError, LLMError
from socsim.llm.types import Completion, Request
from support.project import ROOT, run_socsim, write_params

MODEL = {"backend": "test"}


def _key(i: int) -> str:
    return request_key(MODEL, Request.chat([("user", f"question {i}")], seed=i))


def real_cache(path, n=300):
    """A cache written by CallCache, with enough rows to span many pages."""
    cache = CallCache(path)
    for i in range(n):
        cache.put(_key(i), Completion(text=f"answer {i} " * 40, prompt_tokens=5, completion_tokens=i), MODEL)
    cache.close()
    return path


def unstamp(path):
    """The cache as socsim wrote it before it stamped a version: the same table, both pragmas 0."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 0")
    conn.execute("PRAGMA user_version = 0")
    conn.commit()
    conn.close()


def make_fault(kind: str, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "truncated":
        data = real_cache(path).read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "random_bytes":
        path.write_bytes(os.urandom(8192))
    elif kind == "text":
        path.write_text("key,completion,model\n" * 200)
    elif kind == "other_program":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE foo (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO foo (name) VALUES ('kept')")
        conn.commit()
        conn.close()
    elif kind == "future_version":
        real_cache(path, n=3)
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        conn.commit()
        conn.close()
    return path


FAULTS = {  # kind -> what the message says besides the file's name
    "truncated": "damaged",
    "random_bytes": "not an SQLite database",
    "text": "not an SQLite database",
    "other_program": "another program's SQLite database, not a socsim call cache (tables: foo;",
    "future_version": f"schema version {SCHEMA_VERSION + 1} and this socsim reads version {SCHEMA_VERSION} only",
}


@pytest.mark.parametrize("kind", FAULTS)
def test_a_file_that_is_not_a_cache_stops_at_open_and_is_left_as_it_was(tmp_path, kind):
    path = make_fault(kind, tmp_path / "llm.sqlite")
    before = path.read_bytes()
    with pytest.raises(CacheFileError) as err:
        CallCache(path)
    assert isinstance(err.value, LLMError)  # the CLI's error path: a message, exit code 2
    message = str(err.value)
    assert str(path) in message and FAULTS[kind] in message and "llm.cache_path" in message
    assert path.read_bytes() == before  # neither stamped nor switched to WAL: not socsim's to change


def _personas_via_cli(tmp_path, capsys):
    """The personas stage on the LLM through socsim.cli.main, its cache at tmp/cache/llm.sqlite:
    a faulty cache stops it before the model loads."""
    params = write_params(tmp_path / "params.yaml", facilitation={"personas": {"source": "llm", "n": 2}})
    out, metrics = tmp_path / "personas.parquet", tmp_path / "metrics.json"
    code = cli.main(
        ["facilitation", "personas", "--params", str(params), "--personas", str(out), "--metrics", str(metrics)]
    )
    assert not out.exists() and not metrics.exists()
    return code, capsys.readouterr().err


@pytest.mark.parametrize("kind", FAULTS)
def test_the_cli_names_the_bad_cache_file(tmp_path, capsys, kind):
    cache = make_fault(kind, tmp_path / "cache" / "llm.sqlite")
    code, err = _personas_via_cli(tmp_path, capsys)
    assert code == 2
    # the stage's start line (with its time), then the error
    assert err.splitlines()[0].startswith("socsim: facilitation.personas started ")
    assert err.splitlines()[1].startswith(f"socsim: error: the call cache {cache} ") and FAULTS[kind] in err
    assert "Traceback" not in err


def test_a_truncated_cache_in_a_real_run_gives_one_line_not_a_traceback(tmp_path):
    params = write_params(tmp_path / "params.yaml", facilitation={"personas": {"source": "llm", "n": 2}})
    cache = make_fault("truncated", tmp_path / "cache" / "llm.sqlite")
    proc = run_socsim(
        "facilitation",
        "personas",
        "--params",
        str(params),
        "--personas",
        str(tmp_path / "personas.parquet"),
        "--metrics",
        str(tmp_path / "metrics.json"),
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[1].startswith(
        f"socsim: error: the call cache {cache} is not an SQLite database, or a damaged one"
    )
    assert "to start a fresh cache" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("start", ["missing", "empty"])
def test_a_missing_or_empty_file_is_a_fresh_stamped_cache(tmp_path, start):
    path = tmp_path / "llm.sqlite"
    if start == "empty":
        path.write_bytes(b"")
    cache = CallCache(path)
    assert len(cache) == 0
    cache.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()


def test_an_unstamped_version_1_cache_is_adopted_and_its_calls_still_hit(tmp_path):
    path = real_cache(tmp_path / "llm.sqlite")
    unstamp(path)
    cache = CallCache(path)
    assert len(cache) == 300
    got = cache.get(_key(7))
    assert got == Completion(text="answer 7 " * 40, prompt_tokens=5, completion_tokens=7)
    cache.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # stamped on adoption
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()
    assert len(CallCache(path)) == 300  # and opens as a current cache from then on


def test_an_interrupt_while_writing_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    atomic_write_bytes(path, b"old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


UMASK_SCRIPT = """
import os, sys
from pathlib import Path
os.umask(int(sys.argv[1], 8))
import matplotlib.pyplot as plt
from socsim.io import figures
from socsim.io.parquet import atomic_write_bytes
from socsim.llm.cache import CallCache
from socsim.llm.types import Completion
out = Path(sys.argv[2])
atomic_write_bytes(out / "a.json", b"{}")
atomic_write_bytes(out / "a.json", b"{ }")  # replacing a file gives the new one the same mode
fig, ax = plt.subplots()
ax.plot([0, 1], [1, 0])
figures.save(fig, out / "figures", "f")
cache = CallCache(out / "llm.sqlite")
cache.put("k", Completion(text="x"), {})
print(*[f"{p.name}:{p.stat().st_mode & 0o777:o}" for p in sorted(out.glob("llm.sqlite*"))])  # -wal, -shm while open
cache.close()
"""


@pytest.mark.parametrize("umask, mode", [(0o002, 0o664), (0o027, 0o640)], ids=["umask-002", "umask-027"])
def test_artifacts_and_caches_get_the_mode_the_umask_gives(tmp_path, umask, mode):
    proc = subprocess.run(
        [sys.executable, "-c", UMASK_SCRIPT, oct(umask)[2:], str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    files = [
        tmp_path / "a.json",
        tmp_path / "figures" / "f.png",
        tmp_path / "figures" / "f.pdf",
        tmp_path / "llm.sqlite",
    ]
    assert {str(p): oct(p.stat().st_mode & 0o777) for p in files} == {str(p): oct(mode) for p in files}
    assert proc.stdout.split() == [f"{name}:{mode:o}" for name in ("llm.sqlite", "llm.sqlite-shm", "llm.sqlite-wal")]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.json", "f.pdf", "f.png", "llm.sqlite"]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError, None])
def test_a_stage_interrupted_while_writing_a_folder_leaves_no_half_folder(tmp_path, capsys, stop):
    """A folder output (figures) half written when the stage is interrupted is removed, as Snakemake
    removes a failed job's outputs; a stage that stops on an error of its own keeps what it wrote (a
    diagnostic), and one that stops before writing leaves the folder alone."""
    from dataclasses import replace

    from socsim import studies

    study = studies.study("facilitation")
    figures, analysis = tmp_path / "figures", tmp_path / "analysis"
    analysis.mkdir()
    figures.mkdir()
    (figures / "old.png").write_bytes(b"an earlier run's figure")
    os.utime(figures / "old.png", (1, 1))
    os.utime(figures, (1, 1))

    def run(ctx):
        if stop is None:  # stops before writing anything
            raise ValueError("bad params")
        atomic_write_bytes(ctx.path("figures") / "fig1.png", b"new")
        raise stop("stopped mid-stage")

    stage = replace(study.stage("figures"), run=run)
    args = cli.build_parser().parse_args(
        [
            "facilitation",
            "figures",
            "--analysis",
            str(analysis),
            "--figures",
            str(figures),
            "--metrics",
            str(tmp_path / "m.json"),
        ]
    )
    args._stage = stage
    if stop is RuntimeError:
        with pytest.raises(RuntimeError):
            cli.run_stage(args)
    else:
        assert cli.run_args(args) == (130 if stop is KeyboardInterrupt else 2)
    if stop is KeyboardInterrupt:
        assert not figures.exists()
    else:
        assert (figures / "old.png").read_bytes() == b"an earlier run's figure"
        assert (figures / "fig1.png").exists() == (stop is RuntimeError)
    assert not (tmp_path / "m.json").exists()
