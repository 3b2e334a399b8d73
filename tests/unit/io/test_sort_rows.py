"""Shards read as one table in a stable order (socsim.io.parquet.read_tables, sort_rows): a large table goes part
by part (Arrow's string offsets end at 2 GiB); the result equals Arrow's own sort, schema and rows. The real
overflow, on 2.4 GB of text: tests/long/test_large_tables.py."""

from __future__ import annotations

import random

import pyarrow as pa

from socsim.io import parquet


def test_sorting_by_parts_equals_sorting_at_once(monkeypatch):
    rng = random.Random(5)
    n = 2000
    table = pa.table(
        {
            "shard": pa.array([rng.choice("abc") for _ in range(n)]),
            "turn": pa.array([rng.randint(0, 50) for _ in range(n)], pa.int64()),
            "text": pa.array(["w" * rng.randint(0, 40) for _ in range(n)], pa.string()),
            "blob": pa.array([bytes([rng.randint(0, 255)]) for _ in range(n)], pa.binary()),
        }
    )
    table = pa.concat_tables([table.slice(0, 700), table.slice(700)])  # two chunks, as shards are
    at_once = table.sort_by([("shard", "ascending"), ("turn", "ascending")])
    monkeypatch.setattr(parquet, "LARGE", 1000)  # every table "large": the parts path
    by_parts = parquet.sort_rows(table, ["shard", "turn"])
    assert by_parts.schema == table.schema and by_parts.num_rows == n
    assert by_parts.column("text").num_chunks > 1  # really taken in parts
    assert by_parts.equals(at_once)


def test_one_column_of_shards_is_read_alone(tmp_path):
    """What coherence's calibrate needs of every utterance, the agent models present (a plan of the paper params
    read all 13 GB of them into Python rows): one column, its values as they are."""
    for name, models in (("a", ["m2", "m1", "m2"]), ("b", ["m3"])):
        parquet.pq.write_table(
            pa.table({"model": models, "text": ["x" * 10] * len(models)}), tmp_path / f"{name}.parquet"
        )
    assert parquet.read_column(tmp_path / "a.parquet", "model") == ["m2", "m1", "m2"]
    (tmp_path / "c.parquet").write_bytes(b"PAR1 not parquet")
    import pytest

    with pytest.raises(parquet.UnreadableError, match="c.parquet"):
        parquet.read_column(tmp_path / "c.parquet", "model")
