"""A workflow job's progress on the console (socsim.progress.Bar): its stderr goes to its log, and the console
it is given (common.smk: SOCSIM_CONSOLE_FD=3 ... 3>&2 > log 2>&1) gets one line when a bar starts, with the
log's path once, one every CONSOLE_EVERY seconds (done / total, rate, time left) and one when it ends."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

SCRIPT = """
import time
from socsim import progress
progress.CONSOLE_EVERY = 0.2
bar = progress.progress_bar(10, "coherence converse [shard m]", unit="call")
for _ in range(10):
    time.sleep(0.05)
    bar.update(1)
bar.close()
bar = progress.progress_bar(3, "coherence judge", unit="call")
bar.update(3)
bar.close()
bar = progress.progress_bar(4, "failing", unit="call")
bar.update(1)
bar.close()  # as gather_with_progress's finally closes it on an error
"""


def test_a_job_prints_its_progress_on_the_console_and_the_bar_in_its_log(tmp_path):
    log = tmp_path / "job.log"
    # exactly the shell line of every rule (workflow/rules/common.smk), the console being this test's pipe
    from socsim.workflow import shell_line

    shell = shell_line().format(log=log, params=SimpleNamespace(command=f'"{sys.executable}" -c "$SCRIPT"'))
    proc = subprocess.run(
        ["bash", "-c", shell],
        env={"SCRIPT": SCRIPT, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    lines = proc.stderr.splitlines()
    assert lines[0] == (
        f"coherence converse [shard m]: 0/10 calls (0 %) (progress here every 0 s; the full log: {log})"
    ), lines
    assert any("/10 calls" in line and "/s, ~" in line and "left" in line for line in lines[1:-5]), lines
    assert lines[-5].startswith("coherence converse [shard m]: 10/10 calls (100 %), ") and lines[-5].endswith("done")
    assert lines[-4] == "coherence judge: 0/3 calls (0 %)"  # the log's path said once per job
    assert lines[-3].startswith("coherence judge: 3/3 calls (100 %)") and lines[-3].endswith("done")
    assert lines[-1].startswith("failing: 1/4 calls (25 %), ") and lines[-1].endswith("/s, stopped"), lines
    assert "10/10" in log.read_text() and "left" not in log.read_text()  # the tqdm bar went to the log


def test_outside_a_workflow_job_nothing_is_printed_twice(capfd):
    from socsim import progress

    bar = progress.progress_bar(2, "x", unit="call")
    bar.update(2)
    bar.close()
    out, err = capfd.readouterr()
    assert out == "" and "2/2" in err and "(100 %)" not in err
