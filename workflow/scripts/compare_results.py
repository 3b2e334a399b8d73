"""Compare two results/ folders artifact by artifact: `python workflow/scripts/compare_results.py OLD NEW`.

For refactors that must keep behaviour. A Parquet artifact is compared as a table (its rows and
columns; shard files `<artifact>/*.parquet` are read together as one table, in key order, so a
sharded run compares with an unsharded one; a folder with other files, such as analysis/, holds
tables, each compared alone), and its provenance is compared apart, without the
git commit (also in provenance.json). Every other file (CSV, Markdown, LaTeX, JSON, PNG) is compared byte
for byte, except
metrics/, logs/ and benchmarks/ (timings). Prints one line per artifact; exits 1 on a difference.
"""

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from socsim.io.parquet import read_provenance, read_tables

SKIP = ("metrics", "logs", "benchmarks")


def artifacts(root: Path) -> dict[str, list[Path]]:
    """Artifact name (relative path, shard folders as '<folder>.parquet') -> its files."""
    out: dict[str, list[Path]] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or len(rel.parts) < 2 or rel.parts[1] in SKIP or p.name.startswith("."):
            continue
        shard_folder = len(rel.parts) == 3 and all(q.suffix == ".parquet" for q in p.parent.iterdir() if q.is_file())
        if p.suffix == ".parquet" and shard_folder:  # <study>/<artifact>/<shard>.parquet
            out.setdefault(str(rel.parent) + ".parquet", []).append(p)
        else:
            out[str(rel)] = [p]
    return out


def keys_of(path: Path) -> list[str]:
    cols = pq.read_schema(path).names
    for keys in (["discussion_id", "turn", "annotator_id"], ["conversation_id", "turn"], ["judge_model", "example"]):
        if all(k in cols for k in keys):
            return keys
    return []


def provenance(paths: list[Path]) -> list[dict]:
    drop = ("git_commit", "shard", "params", "params_hash")
    return sorted(
        json.dumps({k: v for k, v in read_provenance(p).items() if k not in drop}, sort_keys=True) for p in paths
    )


def main(old: Path, new: Path) -> int:
    a, b = artifacts(old), artifacts(new)
    bad = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print(f"ONLY IN {'NEW' if name in b else 'OLD'}  {name}")
            bad += 1
            continue
        if name.endswith(".parquet"):
            ta = read_tables(a[name], None, keys_of(a[name][0])).replace_schema_metadata(None)
            tb = read_tables(b[name], None, keys_of(b[name][0])).replace_schema_metadata(None)
            common = [c for c in ta.column_names if c in tb.column_names]
            same = ta.select(common).equals(tb.select(common))
            extra = sorted(set(ta.column_names) ^ set(tb.column_names))
            prov = len(set(provenance(a[name])) & set(provenance(b[name]))) > 0
            print(
                f"{'same' if same else 'DIFFERENT':9}  {name}  ({ta.num_rows} rows"
                f"{', columns only in one: ' + ', '.join(extra) if extra else ''}"
                f"{', provenance (model, seed, stage) differs' if not prov else ''})"
            )
        elif name.endswith("provenance.json"):  # the git commit differs by design
            load = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "git_commit"}  # noqa: E731
            same = load(a[name][0]) == load(b[name][0])
            print(f"{'same' if same else 'DIFFERENT':9}  {name}  (without git_commit)")
        else:
            same = a[name][0].read_bytes() == b[name][0].read_bytes()
            print(f"{'same' if same else 'DIFFERENT':9}  {name}")
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
