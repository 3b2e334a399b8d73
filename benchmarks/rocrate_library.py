"""socsim's RO-Crate writer beside ro-crate-py (rocrate, pinned) on the same graph (docs/reproducibility.md).

It reads a crate `socsim rocrate` wrote (its ro-crate-metadata.json), rebuilds the same entities with ro-crate-py's
model (`ROCrate`, `add_file` / `add_dataset` without a source, so that nothing is copied, `ContextEntity` for the
rest), writes its metadata, and prints: the time of each writer on that graph (socsim's: `json.dumps` of the graph it
built; ro-crate-py's: building its entities and writing), the entities ro-crate-py adds, drops or changes, and
whether its file writer would copy the run's files (socsim hard-links them with `--link`).

    python benchmarks/rocrate_library.py results/rocrate [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from rocrate.model.contextentity import ContextEntity
from rocrate.rocrate import ROCrate

METADATA = "ro-crate-metadata.json"
ROOT_IDS = ("./", METADATA)


def _types(e: dict[str, Any]) -> set[str]:
    t = e.get("@type", [])
    return set(t if isinstance(t, list) else [t])


def rebuild(graph: list[dict[str, Any]]) -> ROCrate:
    """The same graph as ro-crate-py entities: data entities without a source (ro-crate-py copies a file it is
    given), every other entity a ContextEntity; the root's properties onto ro-crate-py's own root."""
    crate = ROCrate()
    by_id = {e["@id"]: e for e in graph}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "No source for ...": a file described, not copied
        for e in graph:
            props = {k: v for k, v in e.items() if k != "@id"}
            if e["@id"] in ROOT_IDS:
                continue
            if "File" in _types(e):
                crate.add_file(source=None, dest_path=e["@id"], properties=props)
            elif "Dataset" in _types(e):
                crate.add_dataset(source=None, dest_path=e["@id"], properties=props)
            else:
                crate.add(ContextEntity(crate, e["@id"], properties=props))
        for k, v in by_id["./"].items():
            if k not in ("@id", "@type"):
                crate.root_dataset[k] = v
    return crate


def compare(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Entities ro-crate-py's graph adds, drops, or holds with other properties than socsim's."""
    a, b = {e["@id"]: e for e in ours}, {e["@id"]: e for e in theirs}
    changed = [i for i in a.keys() & b.keys() if a[i] != b[i]]
    return {"added": sorted(b.keys() - a.keys()), "dropped": sorted(a.keys() - b.keys()), "changed": sorted(changed)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("crate", type=Path, help="a crate socsim rocrate wrote (its folder)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    doc = json.loads((a.crate / METADATA).read_text())
    graph = doc["@graph"]
    files = sum("File" in _types(e) for e in graph)
    print(f"crate {a.crate}: {len(graph)} entities, {files} files")
    ours, theirs = [], []
    out: list[dict[str, Any]] = []
    written: dict[str, Any] = {}
    for _ in range(a.repeat):
        t = time.perf_counter()
        json.dumps(doc, indent=1, ensure_ascii=False)
        ours.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            crate = rebuild(graph)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                crate.metadata.write(tmp)
            theirs.append(time.perf_counter() - t)
            written = json.loads((Path(tmp) / METADATA).read_text())
            out = written["@graph"]
    print(
        f"socsim (json.dumps of its graph): {min(ours) * 1000:.1f} ms; ro-crate-py (build + write): "
        f"{min(theirs) * 1000:.1f} ms (best of {a.repeat})"
    )
    print(f"context: socsim {doc['@context']!r}; ro-crate-py {written['@context']!r}")
    diff = compare(graph, out)
    for kind, ids in diff.items():
        print(f"{kind}: {len(ids)}" + (f" (e.g. {', '.join(ids[:4])})" if ids else ""))
    for i in diff["changed"][:4]:
        mine, its = next(e for e in graph if e["@id"] == i), next(e for e in out if e["@id"] == i)
        keys = sorted(k for k in mine.keys() | its.keys() if mine.get(k) != its.get(k))
        print(f"  {i}: {', '.join(f'{k}: {mine.get(k)!r} -> {its.get(k)!r}' for k in keys)[:300]}")
    # what its file writer does with a file it is given a source for (socsim: a hard link with --link)
    import inspect

    from rocrate.model.file import File

    copies = "shutil.copy" in inspect.getsource(File._copy_file) or "copy" in inspect.getsource(File._copy_file)
    print(f"ro-crate-py's File.write copies the file it is given: {copies} (no hard link; sha256 not computed)")


if __name__ == "__main__":
    main()
