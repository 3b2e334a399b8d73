"""The repository and copies of it: ROOT, a params file over the defaults, the tools' environment, commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = str(Path(sys.executable).parent)  # the venv's tools (snakemake, dvc, socsim)


def tool_env() -> dict:
    """The environment of a tool run by a test: the venv's tools first, git identity, no DVC analytics."""
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
        DVC_NO_ANALYTICS="1",
    )
    return env


def sh(
    args: list[str], cwd: Path, check: bool = True, timeout: float = 2400, env: dict | None = None
) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env or tool_env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def copy_project(dest: Path) -> Path:
    """A fresh git repository at `dest` holding the project's tracked and untracked-but-not-ignored files."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    (dest / "dvc.lock").unlink(missing_ok=True)
    git_commit_all(dest, "init")
    return dest


def git_commit_all(folder: Path, message: str = "init") -> str:
    """`folder` made a git repository holding all its files in one commit; returns the commit's hash."""
    sh(["git", "init", "-q"], folder)
    sh(["git", "add", "-A"], folder)
    sh(["git", "commit", "-qm", message], folder)
    return sh(["git", "rev-parse", "HEAD"], folder).stdout.strip()


def write_params(path: Path, **sections) -> Path:
    """A params file: the repository's defaults, overridden section by section, cache under tmp.

    Each study names the default language model alone (as tests/params.tiny.yaml does): the default params
    add the two planted controls, which have their own tests (tests/long/planted, tests/long)."""
    from socsim.config import deep_merge

    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    base["llm"]["cache_path"] = str(path.parent / "cache" / "llm.sqlite")
    for section in base.values():
        for key in ("models", "agent_models"):
            if isinstance(section, dict) and isinstance(section.get(key), list):
                section[key] = section[key][:1]
    params = deep_merge(base, sections)
    path.write_text(yaml.safe_dump(params))
    return path


def socsim_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "socsim.cli", *args]


def run_socsim(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(socsim_cmd(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kw)
