"""Model files from the Hugging Face Hub: `models.<name>.gguf: hf://<owner>/<repo>[@<revision>]/<file>.gguf`.

The file is fetched once with huggingface_hub into its cache (HF_HUB_CACHE / HF_HOME decide where)
and loaded from there afterwards; with HF_HUB_OFFLINE=1 only the cache is read. The token comes
from the HF_TOKEN environment variable only (never from a stored login, never written anywhere).
The repository, file and the commit the revision resolved to are recorded in provenance.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from socsim.llm.errors import LLMConfigError

SCHEME = "hf://"
_HF_URL = re.compile(r"^hf://(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)(?:@(?P<revision>[^/]+))?/(?P<file>.+\.gguf)$")


@dataclass(frozen=True)
class HubFile:
    repo_id: str
    filename: str
    revision: str | None  # as asked for: a commit, branch or tag; None = the default branch

    @property
    def url(self) -> str:
        rev = f"@{self.revision}" if self.revision else ""
        return f"{SCHEME}{self.repo_id}{rev}/{self.filename}"


def is_hub_path(model_path: str | os.PathLike[str] | None) -> TypeGuard[str]:
    return isinstance(model_path, str) and model_path.startswith(SCHEME)


def parse(model_path: str) -> HubFile:
    m = _HF_URL.match(model_path)
    if not m:
        raise LLMConfigError(f"gguf: {model_path!r} is not hf://<owner>/<repo>[@<revision>]/<file>.gguf")
    return HubFile(f"{m['owner']}/{m['name']}", m["file"], m["revision"])


def resolve(model_path: str, local_only: bool = False) -> tuple[Path, dict[str, str | None]]:
    """The local path of a Hub GGUF (downloaded once into the Hub cache; `local_only`: from the cache
    or not at all) and its provenance record."""
    from huggingface_hub import hf_hub_download

    ref = parse(model_path)
    try:
        local = Path(
            hf_hub_download(
                ref.repo_id,
                ref.filename,
                revision=ref.revision,
                token=os.environ.get("HF_TOKEN") or False,
                local_files_only=local_only,
            )
        )
    except Exception as exc:  # noqa: BLE001 - Hub, HTTP-client and file errors alike: name the URL
        raise LLMConfigError(
            f"gguf: cannot fetch {ref.url} from the Hugging Face Hub or find it in the "
            f"local Hub cache: {type(exc).__name__}: {exc}"
        ) from None
    # The cache stores files under snapshots/<commit>/<file>: the commit the revision resolved to.
    commit = local.parent
    for _ in Path(ref.filename).parts[1:]:
        commit = commit.parent
    return local, {
        "source": ref.url,
        "repo_id": ref.repo_id,
        "filename": ref.filename,
        "revision": ref.revision,
        "commit": commit.name,
    }
