"""Model files from the Hugging Face Hub: `models.<name>.gguf: hf://<owner>/<repo>[@<revision>]/<file>.gguf`.

The file is fetched once with huggingface_hub into its cache (HF_HUB_CACHE / HF_HOME decide where)
and loaded from there afterwards; with HF_HUB_OFFLINE=1 only the cache is read. The token comes
from the HF_TOKEN environment variable only (never from a stored login, never written anywhere).
The repository, file and the commit the revision resolved to are recorded in provenance.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
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


def _download(ref: HubFile, local_only: bool) -> Path:
    from huggingface_hub import hf_hub_download

    return Path(
        hf_hub_download(
            ref.repo_id,
            ref.filename,
            revision=ref.revision,
            token=_token(),
            local_files_only=local_only,
        )
    )


def _token() -> str | bool:
    return os.environ.get("HF_TOKEN") or False  # never a stored login


def resolve(model_path: str, local_only: bool = False) -> tuple[Path, dict[str, str | None]]:
    """The local path of a Hub GGUF (downloaded once into the Hub cache; `local_only`: from the cache
    or not at all) and its provenance record."""
    ref = parse(model_path)
    try:
        local = _download(ref, local_only)
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


# -- before a run: every Hub file it needs, at once ----------------------------------------------------


def offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE): only the cache may be read. huggingface_hub reads the
    variable once, when it is imported; the environment is read here too, as the run's jobs (new
    processes) will read it."""
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return constants.is_offline_mode() or flag.strip().upper() in {"1", "ON", "YES", "TRUE"}


def cache_dir() -> str:
    """The Hub cache huggingface_hub reads and writes (HF_HUB_CACHE, else HF_HOME/hub)."""
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def unreachable(timeout: float = 5.0) -> str | None:
    """Why the Hub cannot be reached (one request, `timeout` seconds, no retries), or None when it answers."""
    from huggingface_hub import constants, get_session

    try:
        response = get_session().head(constants.ENDPOINT, timeout=timeout, follow_redirects=False)
    except Exception as exc:  # noqa: BLE001 - DNS, connection, proxy, TLS, timeout: all say the same
        return f"{type(exc).__name__}: {_first_line(exc)}"
    if response.status_code >= 500:
        return f"it answers HTTP {response.status_code}"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _why(exc: BaseException, ref: HubFile) -> str:
    """What a Hub error means for one file, in words."""
    from huggingface_hub import errors

    if isinstance(exc, errors.GatedRepoError):  # before RepositoryNotFoundError, its base class
        return (
            f"the repository {ref.repo_id} is gated: accept its conditions on the Hub and set HF_TOKEN "
            "to a token of an account that has access"
        )
    if isinstance(exc, errors.RepositoryNotFoundError):
        token = "" if _token() else "; if it is private or gated, set HF_TOKEN"
        return f"repository {ref.repo_id} not found on the Hub{token}"
    if isinstance(exc, errors.RevisionNotFoundError):
        return f"revision {ref.revision!r} not found in the repository {ref.repo_id}"
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return f"file {ref.filename} not found in the repository {ref.repo_id} at revision {ref.revision or 'main'}"
    if isinstance(exc, errors.HfHubHTTPError) and exc.response is not None and exc.response.status_code in (401, 403):
        return f"the Hub refuses access (HTTP {exc.response.status_code}): check HF_TOKEN"
    cause = exc.__cause__ if isinstance(exc, errors.LocalEntryNotFoundError) and exc.__cause__ else exc
    why = f"{type(cause).__name__}: {_first_line(cause)}"
    return f"not in the local Hub cache ({cache_dir()}) and the Hub cannot give it: {why}"


def prefetch(model_paths: Iterable[str], download: bool = True, timeout: float = 5.0) -> dict[str, str]:
    """Make every hf:// file in `model_paths` available in the local Hub cache, each distinct file once,
    and say which cannot be had: {path: why}. Fast where it fails: a file in the cache counts as had
    without any request; with HF_HUB_OFFLINE only the cache counts; otherwise the Hub is asked once
    whether it answers (`timeout` seconds, no retries) and, when it does, once per missing file whether
    the file is there (repository, revision, file, gate), before anything is downloaded. `download`:
    fetch the missing files when none fails (False: only check, e.g. when the run stops anyway)."""
    problems: dict[str, str] = {}
    missing: dict[str, HubFile] = {}
    for path in dict.fromkeys(model_paths):
        try:
            ref = parse(path)
        except LLMConfigError as exc:
            problems[path] = str(exc)
            continue
        try:
            _download(ref, local_only=True)
        except Exception as exc:  # noqa: BLE001 - not in the cache (LocalEntryNotFoundError) or not a valid name
            from huggingface_hub.errors import LocalEntryNotFoundError

            if not isinstance(exc, LocalEntryNotFoundError):
                problems[path] = f"{type(exc).__name__}: {_first_line(exc)}"
                continue
            missing[path] = ref
    if not missing:
        return problems
    if offline():
        why = f"not in the local Hub cache ({cache_dir()}) and HF_HUB_OFFLINE is set: only the cache is read"
        return problems | dict.fromkeys(missing, why)
    down = unreachable(timeout)
    if down:
        from huggingface_hub import constants

        why = f"not in the local Hub cache ({cache_dir()}) and the Hub ({constants.ENDPOINT}) cannot be reached: {down}"
        return problems | dict.fromkeys(missing, why)

    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    for path, ref in missing.items():
        try:
            get_hf_file_metadata(
                hf_hub_url(ref.repo_id, ref.filename, revision=ref.revision),
                token=_token(),
                timeout=max(timeout, 10.0),
                retry_on_errors=False,
            )
        except Exception as exc:  # noqa: BLE001 - classified in words
            problems[path] = _why(exc, ref)
    if problems or not download:
        return problems
    for path, ref in missing.items():
        try:
            _download(ref, local_only=False)
        except Exception as exc:  # noqa: BLE001 - classified in words
            problems[path] = _why(exc, ref)
    return problems
