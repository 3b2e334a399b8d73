"""A real single-node SLURM cluster for tests, started by hand (no systemd), and helpers for Snakemake on it.

Facts this follows are in shared/specs/cluster.md: Debian's `slurmctld slurmd slurm-client munge`,
a private munged, slurm.conf settings that work in a container, the configuration readable at
/etc/slurm/slurm.conf (the executor's job-step plugin clears SLURM_CONF before its inner `srun`),
and teardown by pid (never by name).

Usage from a test module::

    ensure_packages()                  # installs the Debian packages as root, else skips (fails with CI=true)
    cluster = SlurmCluster(tmp_dir).start()
    ...                                # sbatch/squeue/snakemake --executor slurm now work
    cluster.stop()
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REQUIRED_PROGRAMS = ("slurmctld", "slurmd", "sbatch", "munged")
DEBIAN_PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
# First line of every slurm.conf this module writes: how it recognises a file of its own at SYSTEM_CONF.
MARKER = "# written by socsim tests/pipeline/slurm_cluster.py"
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
# Daemons live in /usr/sbin, which a non-root PATH often lacks.
_SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")


# --------------------------------------------------------------------------- packages


def in_ci() -> bool:
    """True when the environment says CI (`CI=true`): the SLURM tests must run there, never skip."""
    return os.environ.get("CI", "").strip().lower() == "true"


def unavailable(reason: str) -> None:
    """Skip the test outside CI, fail it in CI (where a skipped cluster test would hide a broken setup)."""
    if in_ci():
        pytest.fail(f"SLURM test cluster unavailable in CI: {reason}", pytrace=False)
    print(f"\nskipping SLURM tests: {reason}")
    pytest.skip(reason)


def find_program(name: str) -> str | None:
    """The path of `name` on PATH or in the sbin directories, or None."""
    search = os.pathsep.join([os.environ.get("PATH", os.defpath), *_SBIN_DIRS])
    return shutil.which(name, path=search)


def missing_programs() -> list[str]:
    return [p for p in REQUIRED_PROGRAMS if find_program(p) is None]


def ensure_packages() -> None:
    """Make sure slurmctld, slurmd, sbatch and munged exist, installing Debian's packages as root.

    Not root, or the install fails (no network): skip with the reason, or fail when CI=true.
    """
    missing = missing_programs()
    if not missing:
        return
    if os.geteuid() != 0:
        unavailable(
            f"{', '.join(missing)} not installed and not root, so cannot apt-get install {' '.join(DEBIAN_PACKAGES)}"
        )
    if shutil.which("apt-get") is None:
        unavailable(f"{', '.join(missing)} not installed and apt-get is not available")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    steps = (
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "--no-install-recommends", *DEBIAN_PACKAGES],
    )
    for cmd in steps:
        try:
            res = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            unavailable(f"`{' '.join(cmd)}` timed out after 600 s")
        if res.returncode != 0:
            tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-15:])
            unavailable(f"`{' '.join(cmd)}` failed with exit code {res.returncode}:\n{tail}")
    missing = missing_programs()
    if missing:
        unavailable(f"{', '.join(missing)} still missing after installing {' '.join(DEBIAN_PACKAGES)}")


# --------------------------------------------------------------------------- processes


def port_in_use(port: int) -> bool:
    """True when something listens on `port` (a TIME_WAIT left by a stopped daemon does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def process_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a daemonised munged is reaped by PID 1, maybe late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state letter follows the ")" that closes the command name.
    return stat[stat.rindex(")") + 2] not in "ZX"


def process_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def read_pid_file(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def foreign_system_conf() -> bool:
    """True when /etc/slurm/slurm.conf exists and is not one this module wrote (its first line is not MARKER);
    a symbolic link (even a dangling one) is never ours: writing would go through it."""
    if SYSTEM_CONF.is_symlink():
        return True
    try:
        with open(SYSTEM_CONF, errors="replace") as f:
            return f.readline().rstrip("\n") != MARKER
    except FileNotFoundError:
        return False


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"({path}: {exc})"


# --------------------------------------------------------------------------- the cluster


class SlurmCluster:
    """slurmctld + slurmd + a private munged on this host, all state under `base_dir`.

    Attributes: `workdir` (the private directory), `partition` (its one partition), `conf_path`
    (the slurm.conf the daemons read; the same text is at /etc/slurm/slurm.conf while running), `node`
    (the node name, `hostname -s`). After start()/stop(), `startup_seconds`/`shutdown_seconds`.
    """

    def __init__(self, base_dir: Path | str, partition: str = "cpu", cpus: int = 4, real_memory_mb: int = 64000):
        self.workdir = Path(base_dir).resolve()
        self.partition = partition
        self.cpus = cpus
        self.real_memory_mb = real_memory_mb
        self.node = socket.gethostname().split(".")[0]  # what `hostname -s` prints
        self.conf_path = self.workdir / "slurm.conf"
        self.state_dir = self.workdir / "state"  # StateSaveLocation
        self.spool_dir = self.workdir / "spool"  # SlurmdSpoolDir
        self.run_dir = self.workdir / "run"  # pid files
        self.log_dir = self.workdir / "log"
        self.munge_dir = self.workdir / "munge"  # key, seed, pid, log: 0700
        # The munge socket lives in its own 0755 directory under /tmp, made at start() and removed at stop():
        # munged refuses a socket whose ancestors are not all world-executable (pytest's tmp dirs are 0700),
        # and a Unix socket path must fit in 108 bytes.
        self.munge_socket_dir: Path | None = None
        self.munge_socket: Path | None = None
        self.munged_pid: int | None = None
        self.slurmctld: subprocess.Popen | None = None
        self.slurmd: subprocess.Popen | None = None
        self._wrote_system_conf = False
        self._made_system_conf_dir = False
        self._open_files: list = []
        self.startup_seconds: float | None = None
        self.shutdown_seconds: float | None = None

    # ------------------------------------------------------------------ configuration

    def slurm_conf_text(self) -> str:
        lines = [
            MARKER,
            "# A single-node test cluster; see tests/pipeline/slurm_cluster.py. Removed when the cluster stops.",
            "ClusterName=socsim-test",
            # The name must equal `hostname -s`; the address in brackets spares a name lookup.
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={SLURMCTLD_PORT}",
            f"SlurmdPort={SLURMD_PORT}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={self.state_dir}",
            f"SlurmdSpoolDir={self.spool_dir}",
            f"SlurmctldPidFile={self.run_dir / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.run_dir / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.log_dir / 'slurmctld.log'}",
            f"SlurmdLogFile={self.log_dir / 'slurmd.log'}",
            # No cgroups and nothing written under /sys: these work inside a container.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            # The executor polls squeue; finished jobs must stay visible there long enough (>= 3x init seconds).
            "MinJobAge=300",
            "ReturnToService=2",
            "MailProg=/bin/true",
            "MpiDefault=none",
            # The node may declare more CPUs/memory than the host has (profiles ask for mem_mb 8000 etc.).
            "SlurmdParameters=config_overrides",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.real_memory_mb} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
        ]
        return "\n".join(lines) + "\n"

    def env(self) -> dict[str, str]:
        """The environment for SLURM client commands (sinfo, squeue, sbatch) against this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf_path)}

    # ------------------------------------------------------------------ start

    def start(self, timeout: float = 30.0) -> SlurmCluster:
        """Start munged, slurmctld and slurmd; return once the node is `idle`. Stops what it started on error."""
        missing = missing_programs()
        if missing:
            raise RuntimeError(f"SLURM programs missing: {', '.join(missing)} (call ensure_packages() first)")
        if os.geteuid() != 0:
            # SlurmUser/SlurmdUser=root, and the configuration must be written to /etc/slurm.
            unavailable("the single-node SLURM test cluster runs its daemons as root; not root here")
        if foreign_system_conf():
            # A machine with a SLURM of its own: not ours to touch (skipped there; a failure under CI=true).
            unavailable(
                f"{SYSTEM_CONF} exists and was not written by this test fixture; refusing to overwrite "
                "it. Run the SLURM tests on a machine without a SLURM configuration, or move it aside."
            )
        taken = [p for p in (SLURMCTLD_PORT, SLURMD_PORT) if port_in_use(p)]
        if taken:
            raise RuntimeError(
                f"port(s) {', '.join(map(str, taken))} already in use: a SLURM daemon is running already "
                "(a previous test run that was not torn down, or a system slurm service). Stop it by its pid "
                f"(see `ss -ltnp 'sport = :{SLURMCTLD_PORT}'` and `ss -ltnp 'sport = :{SLURMD_PORT}'`) and retry."
            )
        t0 = time.monotonic()
        try:
            self._prepare_dirs()
            conf_text = self.slurm_conf_text()
            self.conf_path.write_text(conf_text)
            self._install_system_conf(conf_text)
            self._start_munged()
            self.slurmctld = self._popen("slurmctld", ["-D", "-i", "-f", str(self.conf_path)])
            self.slurmd = self._popen("slurmd", ["-D", "-f", str(self.conf_path)])
            self._wait_idle(timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _prepare_dirs(self) -> None:
        for d in (self.workdir, self.state_dir, self.spool_dir, self.run_dir, self.log_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.munge_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.munge_dir, 0o700)
        self.munge_socket_dir = Path(tempfile.mkdtemp(prefix="socsim-munge-", dir="/tmp"))
        os.chmod(self.munge_socket_dir, 0o755)
        self.munge_socket = self.munge_socket_dir / "munge.socket.2"
        key = self.munge_dir / "munge.key"
        if not key.exists():
            # 1024 random bytes, mode 0400, owned by the user that runs munged.
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(1024))

    def _install_system_conf(self, text: str) -> None:
        """Put the configuration at /etc/slurm/slurm.conf, where `srun` inside jobs finds it without SLURM_CONF.

        Only when no such file exists or it is one this module wrote (marker line); never over a real one.
        """
        if foreign_system_conf():
            raise RuntimeError(f"{SYSTEM_CONF} exists and was not written by this test fixture; not overwriting it")
        if not SYSTEM_CONF.exists() and not SYSTEM_CONF.parent.is_dir():
            SYSTEM_CONF.parent.mkdir(parents=True)
            self._made_system_conf_dir = True
        try:
            SYSTEM_CONF.write_text(text)
        except PermissionError as exc:
            raise RuntimeError(f"cannot write {SYSTEM_CONF} (needed by srun inside jobs): {exc}") from exc
        self._wrote_system_conf = True

    def _start_munged(self) -> None:
        pid_file = self.munge_dir / "munged.pid"
        log = open(self.log_dir / "munged.stderr", "ab")
        self._open_files.append(log)
        cmd = [
            find_program("munged"),
            f"--key-file={self.munge_dir / 'munge.key'}",
            f"--socket={self.munge_socket}",
            f"--pid-file={pid_file}",
            f"--log-file={self.log_dir / 'munged.log'}",
            f"--seed-file={self.munge_dir / 'munged.seed'}",
        ]
        # munged daemonises: the command returns once the daemon is up and has written its pid file.
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, timeout=30)
        if res.returncode != 0:
            raise RuntimeError(
                f"munged exited with {res.returncode}:\n{tail(self.log_dir / 'munged.stderr')}\n"
                f"{tail(self.log_dir / 'munged.log')}"
            )
        deadline = time.monotonic() + 10
        while True:
            self.munged_pid = read_pid_file(pid_file)
            if self.munged_pid is not None and self.munge_socket.exists():
                break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"munged did not write {pid_file} / {self.munge_socket}:\n{tail(self.log_dir / 'munged.log')}"
                )
            time.sleep(0.05)

    def _popen(self, program: str, args: list[str]) -> subprocess.Popen:
        # Never inherit pytest's stdin/stdout/stderr: a capturing test would block on the inherited pipe.
        out = open(self.log_dir / f"{program}.stderr", "ab")
        self._open_files.append(out)
        return subprocess.Popen(
            [find_program(program), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=self.env(),
        )

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for name, proc in (("slurmctld", self.slurmctld), ("slurmd", self.slurmd)):
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode} during start-up\n{self.log_tails()}")
            res = subprocess.run(
                ["sinfo", "-h", "-o", "%t", "-p", self.partition],
                env=self.env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=10,
            )
            state = res.stdout.strip()
            if res.returncode == 0 and state == "idle":
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"node {self.node} not idle after {timeout:.0f} s (sinfo state: {state!r})\n{self.log_tails()}"
        )

    def log_tails(self, lines: int = 25) -> str:
        parts = []
        for name in ("slurmctld.log", "slurmctld.stderr", "slurmd.log", "slurmd.stderr", "munged.log"):
            path = self.log_dir / name
            if path.exists():
                parts.append(f"--- {path} (last {lines} lines)\n{tail(path, lines)}")
        return "\n".join(parts)

    # ------------------------------------------------------------------ stop

    def pids(self) -> dict[str, int]:
        """The daemons' pids known to this object: {"slurmd": ..., "slurmctld": ..., "munged": ...}."""
        found = {}
        for name, proc in (("slurmd", self.slurmd), ("slurmctld", self.slurmctld)):
            if proc is not None:
                found[name] = proc.pid
        if self.munged_pid is not None:
            found["munged"] = self.munged_pid
        return found

    def stop(self, timeout: float = 15.0) -> None:
        """Stop slurmd, then slurmctld (it saves state), then munged, each by its own pid. Safe to call twice."""
        t0 = time.monotonic()
        if self.slurmctld is not None and self.slurmctld.poll() is None:
            # Cancel what is left so no slurmstepd outlives slurmd; best effort.
            subprocess.run(
                ["scancel", "--partition", self.partition],
                env=self.env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=15,
                check=False,
            )
            deadline = time.monotonic() + 10  # let the cancelled jobs end before slurmd goes
            while (
                time.monotonic() < deadline
                and subprocess.run(
                    ["squeue", "-h", "-p", self.partition],
                    env=self.env(),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=15,
                    check=False,
                ).stdout.strip()
            ):
                time.sleep(0.2)
        for name in ("slurmd", "slurmctld"):
            proc = getattr(self, name)
            if proc is not None:
                self._stop_child(name, proc, timeout)
                setattr(self, name, None)
        if self.munged_pid is not None:
            self._stop_daemon("munged", self.munged_pid, timeout)
            self.munged_pid = None
        for f in self._open_files:
            f.close()
        self._open_files.clear()
        if self._wrote_system_conf:
            # Remove it only if it is still ours.
            try:
                if SYSTEM_CONF.read_text(errors="replace").startswith(MARKER):
                    SYSTEM_CONF.unlink()
            except FileNotFoundError:
                pass
            self._wrote_system_conf = False
            if self._made_system_conf_dir:
                try:
                    SYSTEM_CONF.parent.rmdir()
                except OSError:
                    pass
                self._made_system_conf_dir = False
        if self.munge_socket_dir is not None:
            shutil.rmtree(self.munge_socket_dir, ignore_errors=True)
            self.munge_socket_dir = self.munge_socket = None
        self.shutdown_seconds = time.monotonic() - t0

    @staticmethod
    def _stop_child(name: str, proc: subprocess.Popen, timeout: float) -> None:
        """SIGTERM a daemon started with Popen (its pid cannot be reused before we wait for it), then reap it."""
        if proc.poll() is not None:
            return
        comm = process_name(proc.pid)
        if comm is not None and comm != name[:15]:
            return  # not the daemon we started (cannot happen for an unreaped child): leave it alone
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()  # last resort, still by this pid only
            proc.wait(timeout=10)

    @staticmethod
    def _stop_daemon(name: str, pid: int, timeout: float) -> None:
        """SIGTERM a daemon that is not our child (munged forks away), by its pid-file pid, after checking its name."""
        if not process_alive(pid):
            return
        comm = process_name(pid)
        if comm != name[:15]:
            return  # the pid now belongs to something else: leave it alone
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while process_alive(pid):
            if time.monotonic() > deadline:
                if process_name(pid) == name[:15]:
                    os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.05)


# --------------------------------------------------------------------------- Snakemake helpers


def snakemake_slurm_args() -> list[str]:
    """Executor flags that make Snakemake's SLURM plugin (2.8.0) work, and work fast, on this test cluster.

    Add `--executor slurm`, `--jobs N` and `--default-resources ...` yourself.
    """
    return [
        # Without slurmdbd `sacct` fails, and with the default (sacct) Snakemake waits forever.
        "--slurm-status-command",
        "squeue",
        # Default 40 s before the first status check; keep MinJobAge >= 3x this.
        "--slurm-init-seconds-before-status-checks",
        "8",
        "--latency-wait",
        "5",
        # By default the plugin deletes the logs of successful jobs; job_ids_in_logs() reads them.
        "--slurm-keep-successful-logs",
    ]


_JOB_LOG = re.compile(r"^(\d+)\.log$")


def job_ids_in_logs(workdir: Path | str) -> dict[str, list[int]]:
    """SLURM job ids from `.snakemake/slurm_logs/rule_<rule>/.../<jobid>.log` under a Snakemake workdir.

    Returns {rule name: sorted job ids}; rules with no log are absent.
    """
    root = Path(workdir) / ".snakemake" / "slurm_logs"
    found: dict[str, list[int]] = {}
    if not root.is_dir():
        return found
    for rule_dir in sorted(root.glob("rule_*")):
        if not rule_dir.is_dir():
            continue
        # Rules with wildcards get one more directory level, so look at every depth.
        ids = sorted(int(m.group(1)) for p in rule_dir.rglob("*.log") if (m := _JOB_LOG.match(p.name)))
        if ids:
            found[rule_dir.name.removeprefix("rule_")] = ids
    return found
