"""A paper-scale artifact's shards read as one table: more than 2 GiB of text in a string column (a plan of
params.paper.yaml stopped on "offset overflow while concatenating arrays" after 12 minutes)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from socsim.io import parquet


@pytest.mark.slow
def test_shards_with_more_than_2_gib_of_text_are_read_in_order(tmp_path):
    n = 1_200_000
    text = pa.array(["x" * 1000] * n, pa.string())  # 1.2 GB a shard
    for name in ("b", "a"):
        shard = pa.table({"shard": pa.array([name] * n), "turn": pa.array(range(n, 0, -1), pa.int64()), "text": text})
        parquet.pq.write_table(shard, tmp_path / f"{name}.parquet")
    with pytest.raises(pa.ArrowInvalid, match="offset overflow"):  # what Arrow alone does
        pa.concat_tables(
            [parquet.read_table(tmp_path / "a.parquet"), parquet.read_table(tmp_path / "b.parquet")]
        ).sort_by([("shard", "ascending"), ("turn", "ascending")])
    table = parquet.read_tables([tmp_path / "b.parquet", tmp_path / "a.parquet"], sort_by=["shard", "turn"])
    assert table.num_rows == 2 * n and table.schema.field("text").type == pa.string()
    assert table.column("shard")[0].as_py() == "a" and table.column("shard")[n].as_py() == "b"
    assert table.column("turn")[0].as_py() == 1 and table.column("turn")[n - 1].as_py() == n
