"""The control run (params.control.yaml: every study on the planted model and its null twin, the scorecard at the
end), run once by `snakemake --cores 2` in a copy of the project for every test of this folder, whichever
pytest-xdist worker runs them: the first to need it makes it under a file lock, the others wait and read it.
(`--dist loadgroup` would put these tests on one worker, but does not group them under pytest 9: tried.)"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from filelock import FileLock

from support.project import copy_project, tool_env


@pytest.fixture(scope="session")
def control_run(tmp_path_factory):
    # the same folder for every worker of one pytest run: a worker's base is popen-gw<n> inside the run's own; without
    # workers the base is the run's own (its parent is every run's, where an earlier run's project would be reused)
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    project = shared / "control" / "project"
    with FileLock(str(shared / "control.lock")):
        done = project.parent / "done"
        if not done.exists():
            shutil.rmtree(project, ignore_errors=True)  # a run that failed on another worker
            copy_project(project)
            cmd = ["snakemake", "--cores", "2", "--configfile", "params.control.yaml"]
            proc = subprocess.run(cmd, cwd=project, env=tool_env(), capture_output=True, text=True, timeout=1200)
            (project / "console.txt").write_text(proc.stderr)
            assert proc.returncode == 0, proc.stderr[-3000:]
            done.write_text("ok")
    return project
