"""The control run (params.control.yaml: every study on the planted model and its null twin, the scorecard at the
end), run once for every test of this folder by `snakemake --cores 2` in a copy of the project."""

from __future__ import annotations

import subprocess

import pytest

from support.project import copy_project, tool_env


@pytest.fixture(scope="session")
def control_run(tmp_path_factory):
    project = copy_project(tmp_path_factory.mktemp("control") / "project")
    cmd = ["snakemake", "--cores", "2", "--configfile", "params.control.yaml"]
    proc = subprocess.run(cmd, cwd=project, env=tool_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (project / "console.txt").write_text(proc.stderr)
    return project
