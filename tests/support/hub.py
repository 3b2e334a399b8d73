"""A Hugging Face Hub cache laid out by hand, as huggingface_hub lays it out: what the Hub loaders read offline."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def hub_file(
    cache: Path, repo_id: str, filename: str, commit: str, content: bytes | str | Path = b"GGUF", kind: str = "models"
) -> Path:
    """One file of the `kind` ("models", "datasets") repository `repo_id` at `commit` in the Hub cache `cache`:
    its blob (`content`'s bytes, or a link to the file `content` names), the snapshot's relative link to it,
    and refs/main pointing at `commit`. Returns the snapshot's path."""
    repo = cache / f"{kind}--{repo_id.replace('/', '--')}"
    blob = repo / "blobs" / hashlib.sha256(f"{commit}/{filename}".encode()).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        blob.write_bytes(content)
    else:
        os.symlink(content, blob)
    snap = repo / "snapshots" / commit / filename
    snap.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(blob, snap.parent), snap)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snap
