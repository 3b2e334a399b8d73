"""Artifacts: atomic writes, deterministic order, schema checks; the call cache across processes."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3

import pyarrow as pa
import pytest

from socsim import cli
from socsim.io.parquet import (
    SchemaError,
    UnreadableError,
    atomic_write_bytes,
    read_provenance,
    read_table,
    write_table,
)
from socsim.llm.cache import CallCache, request_key
from socsim.llm.types import Completion, Request

SCHEMA = pa.schema([pa.field("id", pa.string()), pa.field("x", pa.int64())])


def test_rows_sorted_and_provenance_kept(tmp_path):
    path = tmp_path / "t.parquet"
    write_table(path, [{"id": "b", "x": 2}, {"id": "a", "x": 1}], SCHEMA, ["id"], {"seed": 3})
    write_table(tmp_path / "u.parquet", [{"id": "a", "x": 1}, {"id": "b", "x": 2}], SCHEMA, ["id"], {"seed": 3})
    assert read_table(path, SCHEMA).column("id").to_pylist() == ["a", "b"]
    assert read_provenance(path) == {"seed": 3}
    assert path.read_bytes() == (tmp_path / "u.parquet").read_bytes()  # input order does not matter


def test_schema_mismatch_is_reported(tmp_path):
    path = tmp_path / "t.parquet"
    write_table(path, [{"id": "a", "x": 1}], SCHEMA, ["id"], {})
    wanted = pa.schema([pa.field("id", pa.string()), pa.field("y", pa.float64())])
    with pytest.raises(SchemaError, match="missing column 'y'"):
        read_table(path, wanted)
    with pytest.raises(ValueError):  # a row that does not fit the schema never reaches disk
        write_table(tmp_path / "bad.parquet", [{"id": "a", "x": "not an int"}], SCHEMA, ["id"], {})
    assert not (tmp_path / "bad.parquet").exists()


@pytest.mark.parametrize("cut", ["half", "tail", "empty", "footer"])
def test_a_truncated_parquet_names_the_file_and_how_to_rebuild_it(tmp_path, cut):
    """Cut short (Arrow's ArrowInvalid), or its footer overwritten (Arrow's OSError, "Couldn't deserialize
    thrift")."""
    path = tmp_path / "t.parquet"
    write_table(path, [{"id": f"r{i}", "x": i} for i in range(2000)], SCHEMA, ["id"], {"seed": 3})
    data = path.read_bytes()
    footer = data[:-200] + b"\xff" * 192 + data[-8:]  # the footer's length and magic bytes kept
    path.write_bytes({"half": data[: len(data) // 2], "tail": data[:-7], "empty": b"", "footer": footer}[cut])
    for read in (lambda: read_table(path, SCHEMA, made_by="study_stage"), lambda: read_provenance(path)):
        with pytest.raises(UnreadableError) as info:
            read()
        msg = str(info.value)
        assert msg.startswith(f"{path} is unreadable: a truncated or corrupt Parquet file ("), msg
        assert f"`rm {path}`) and run again: `snakemake --cores all` makes it again" in msg
        assert f"`dvc checkout {path}` restores the version DVC recorded" in msg
    assert "(rule study_stage; `--forcerun study_stage` re-runs it whatever is there)" in str(
        pytest.raises(UnreadableError, read_table, path, SCHEMA, made_by="study_stage").value
    )


def test_a_stage_on_a_truncated_input_names_it_and_the_rule_that_makes_it(tmp_path, capsys):
    """A real intermediate (the personas stage's output) cut short: the next stage stops with a message, not a
    traceback, writes nothing, and says which rule makes the file again."""
    out = {n: tmp_path / f"{n}.parquet" for n in ("personas", "topics", "setups")}
    for stage in ("personas", "topics"):
        argv = ["facilitation", stage, f"--{stage}", str(out[stage]), "--metrics", str(tmp_path / f"{stage}.json")]
        assert cli.main(argv) == 0
    data = out["personas"].read_bytes()
    out["personas"].write_bytes(data[: len(data) // 2])
    capsys.readouterr()
    argv = ["facilitation", "setups", "--personas", str(out["personas"]), "--topics", str(out["topics"])]
    assert cli.main([*argv, "--setups", str(out["setups"]), "--metrics", str(tmp_path / "setups.json")]) == 2
    err = capsys.readouterr().err
    assert f"socsim: error: {out['personas']} is unreadable: a truncated or corrupt Parquet file" in err, err
    assert "(rule facilitation_personas; `--forcerun facilitation_personas` re-runs it" in err
    assert "Traceback" not in err and not out["setups"].exists() and not (tmp_path / "setups.json").exists()


def test_atomic_write_leaves_old_file_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    atomic_write_bytes(path, b"old")

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def _writer(path, worker, n):
    cache = CallCache(path)
    for i in range(n):
        req = Request.chat([("user", f"{worker}-{i}")], seed=i)
        cache.put(request_key({"m": 1}, req), Completion(text=f"{worker}:{i}", completion_tokens=i), {"m": 1})
    cache.close()


def test_cache_shared_by_concurrent_processes(tmp_path):
    path = tmp_path / "cache.sqlite"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    cache = CallCache(path)
    assert len(cache) == 600
    got = cache.get(request_key({"m": 1}, Request.chat([("user", "2-7")], seed=7)))
    assert got.text == "2:7" and got.completion_tokens == 7
    assert cache.get(request_key({"m": 2}, Request.chat([("user", "2-7")], seed=7))) is None  # other model


def test_a_key_the_cache_lacks_is_answered_without_reading_the_file_and_one_another_process_stored_is_found(
    tmp_path, monkeypatch
):
    from socsim.llm import cache as cache_module

    path = tmp_path / "cache.sqlite"
    keys = [request_key({"m": 1}, Request.chat([("user", f"q{i}")], seed=i)) for i in range(3)]
    first = CallCache(path)
    first.put(keys[0], Completion(text="zero"), {"m": 1})
    first.flush()
    mine = CallCache(path)  # opens on a file that holds keys[0]
    statements: list[str] = []
    mine._conn.set_trace_callback(statements.append)
    assert mine.get(keys[0]).text == "zero" and len(statements) == 1  # a key the file holds: read from it
    statements.clear()
    assert mine.get(keys[1]) is None and statements == []  # one it lacks: no read of the file
    mine.put(keys[2], Completion(text="two"), {"m": 1})
    mine.flush()
    statements.clear()
    assert mine.get(keys[2]).text == "two" and statements  # stored here: read back from the file

    # Another process (connection) commits keys[1]: found at the first miss KNOWN_EVERY_S after the last read.
    first.put(keys[1], Completion(text="one"), {"m": 1})
    first.flush()
    monkeypatch.setattr(cache_module, "KNOWN_EVERY_S", 0.0)
    assert mine.get(keys[1]).text == "one"
    # A file with more keys than KNOWN_MAX is read at every lookup.
    monkeypatch.setattr(cache_module, "KNOWN_MAX", 1)
    many = CallCache(path)
    statements.clear()
    many._conn.set_trace_callback(statements.append)
    assert many.get(request_key({"m": 9}, Request.chat([("user", "none")], seed=1))) is None and statements
    for c in (first, mine, many):
        c.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):  # a closed cache says so, known key or not
        mine.get(request_key({"m": 9}, Request.chat([("user", "none")], seed=1)))
