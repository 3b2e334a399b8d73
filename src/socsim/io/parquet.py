"""Parquet artifacts: explicit schemas, deterministic order, atomic writes, provenance metadata."""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PROVENANCE_KEY = b"socsim.provenance"


class SchemaError(ValueError):
    """A Parquet file does not have the columns a stage expects."""


class UnreadableError(ValueError):
    """A file that is not a whole Parquet file: truncated, corrupt, or not Parquet at all."""


def _arrow_failure(exc: BaseException) -> bool:
    """Arrow could not read a file's contents (its OSError carries no errno), not: no such file, no permission."""
    return not isinstance(exc, OSError) or exc.errno is None


def unreadable(path: Path, exc: BaseException, made_by: str | None = None) -> UnreadableError:
    """The error for an artifact Arrow cannot read: which file, that it is truncated or corrupt, how to make it
    again (`made_by`: the rule, and DVC stage, that writes it)."""
    rule = f" (rule {made_by}; `--forcerun {made_by}` re-runs it whatever is there)" if made_by else ""
    return UnreadableError(
        f"{path} is unreadable: a truncated or corrupt Parquet file ({' '.join(str(exc).split())}).\n"
        f"Rebuild it: delete it (`rm {path}`) and run again: `snakemake --cores all` makes it again{rule}, "
        f"and so does `dvc repro`; or `dvc checkout {path}` restores the version DVC recorded."
    )


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over the target: a reader,
    or a run that stops midway (an error, Ctrl-C, a scheduler's SIGTERM), sees the old file or the
    new one, never part of one, and no temporary file is left behind.

    The file gets the mode open() would give it (0666 less the umask), not tempfile's 0600: in a
    results folder shared by a group, its members can read the artifacts."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Named before it exists, so that an interrupt arriving anywhere below can remove it.
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except FileExistsError:
        raise  # another writer's temporary file by that name (64 random bits): not ours to remove
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def strict_json_value(value: Any) -> Any:
    """The value with every NaN or infinite float replaced by None and numpy scalars made plain,
    so that it serialises as strict JSON (RFC 8259 has no NaN nor Infinity)."""
    if isinstance(value, dict):
        return {str(k): strict_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json_value(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path: str | Path, value: Any) -> None:
    """Strict JSON (NaN and infinities written as null), sorted keys, atomic write."""
    text = json.dumps(strict_json_value(value), indent=2, sort_keys=True, allow_nan=False)
    atomic_write_bytes(path, (text + "\n").encode("utf-8"))


def write_table(
    path: str | Path,
    rows: Sequence[dict[str, Any]],
    schema: pa.Schema,
    sort_by: Sequence[str],
    provenance: dict[str, Any],
) -> pa.Table:
    """Write rows with the given schema, sorted by `sort_by`, with provenance in the file metadata."""
    table = pa.Table.from_pylist(list(rows), schema=schema)
    if len(table) and sort_by:
        table = table.sort_by([(c, "ascending") for c in sort_by])
    meta = dict(schema.metadata or {})
    meta[PROVENANCE_KEY] = json.dumps(
        strict_json_value(provenance), sort_keys=True, ensure_ascii=False, allow_nan=False
    ).encode("utf-8")
    table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", write_statistics=True, use_dictionary=True)
    atomic_write_bytes(path, sink.getvalue().to_pybytes())
    return table


def read_table(path: str | Path, schema: pa.Schema | None = None, made_by: str | None = None) -> pa.Table:
    """Read a Parquet artifact; with `schema`, check it has every column with the right type. A file Arrow cannot
    read is an UnreadableError that says how to rebuild it (`made_by`: the rule that writes it)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input not found: {path}")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        if not _arrow_failure(exc):
            raise
        raise unreadable(path, exc, made_by) from None
    if schema is not None:
        problems = []
        for field in schema:
            if field.name not in table.column_names:
                problems.append(f"missing column {field.name!r} ({field.type})")
            elif not table.schema.field(field.name).type.equals(field.type):
                problems.append(
                    f"column {field.name!r} is {table.schema.field(field.name).type}, expected {field.type}"
                )
        if problems:
            raise SchemaError(f"{path}: " + "; ".join(problems))
        table = table.select(schema.names)
    return table


def read_column(path: str | Path, column: str) -> list[Any]:
    """One column of a Parquet artifact, that column alone read."""
    try:
        return list(pq.read_table(path, columns=[column]).column(column).to_pylist())
    except (pa.ArrowInvalid, OSError) as exc:
        if not Path(path).is_file():
            raise FileNotFoundError(f"input not found: {path}") from exc
        read_table(path)  # an unreadable file: its error says how to rebuild it
        raise


def read_tables(
    paths: Sequence[str | Path],
    schema: pa.Schema | None = None,
    sort_by: Sequence[str] = (),
    made_by: str | None = None,
) -> pa.Table:
    """Shard files of one artifact as one table, rows in `sort_by` order: the same table whether the
    artifact was written as one shard or many."""
    tables = [read_table(p, schema, made_by) for p in sorted(map(str, paths))]
    if len(tables) == 1:
        return tables[0]
    table = pa.concat_tables([t.replace_schema_metadata(None) for t in tables])
    return sort_rows(table, sort_by) if len(table) and sort_by else table


LARGE = 1 << 30  # bytes of a table above which sorting goes by parts (Arrow's `string` offsets end at 2 GiB)


def sort_rows(table: pa.Table, sort_by: Sequence[str]) -> pa.Table:
    """A table's rows in `sort_by` order. Arrow's take concatenates a string column's chunks into one array,
    whose 32-bit offsets overflow past 2 GiB of text (a paper-scale stage's utterances, a plan's filler
    answers): a large table is taken part by part with its strings widened, each part narrowed back, so
    that the result keeps its schema, in chunks. A small one is sorted at once, as always."""
    keys = [(c, "ascending") for c in sort_by]
    if table.nbytes < LARGE:
        return table.sort_by(keys)
    order = pc.sort_indices(table, sort_keys=keys)
    wide = pa.schema(
        [
            f.with_type(pa.large_string())
            if pa.types.is_string(f.type)
            else f.with_type(pa.large_binary())
            if pa.types.is_binary(f.type)
            else f
            for f in table.schema
        ]
    )
    big = table.cast(wide)
    # parts of at most LARGE / 2 bytes of text each, in the sorted order (sorting can gather the long texts)
    import numpy as np

    size = np.zeros(len(table), dtype=np.int64)
    for f in wide:
        if f.type in (pa.large_string(), pa.large_binary()):
            size += pc.fill_null(pc.binary_length(big.column(f.name)), 0).to_numpy()
    part = np.cumsum(size[order.to_numpy()]) // (LARGE // 2)
    cuts = [0, *(np.flatnonzero(np.diff(part)) + 1).tolist(), len(table)]
    return pa.concat_tables(
        [big.take(order[a:b]).cast(table.schema) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    )


def read_provenance(path: str | Path) -> dict[str, Any]:
    try:
        meta = pq.read_schema(path).metadata or {}
    except (pa.ArrowException, OSError) as exc:
        if not _arrow_failure(exc):
            raise
        raise unreadable(Path(path), exc) from None
    raw = meta.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}
