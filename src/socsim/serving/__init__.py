"""Servers the run starts and stops: a registry entry with `serve:` (socsim.models) is started before the
first stage that calls it and stopped after the last.

Snakemake's service jobs do not fit this workflow (README, "Servers the run starts"): a service's
consumers become one group that starts all of them at once, so a consumer that needs another consumer's
output (simulate -> annotate on one model) fails after --latency-wait, and the group holds every shard's
resources at once. So the life of a server is kept here, small and on files:

- A consumer (a stage that calls a served model) takes a **lease**: under a file lock in the server's
  folder (`.socsim/serve/<name>/`, on the shared filesystem of a cluster) it starts the server's
  **supervisor** if none is alive, writes a lease file that it keeps fresh, and waits until the server
  answers (then the client's identity check runs as for any server). It drops the lease when it ends.
- The supervisor (`python -m socsim.serving supervise <folder>`) runs the engine in its own process group,
  writes `server.json` (status, URL, engine, version, command), and stops the engine (SIGTERM to the
  group, SIGKILL after a grace) when no consumer holds a lease and none is to come: in a Snakemake run
  when the outputs of every job that calls the model exist or the run has ended (its owner process is
  gone, or the run's onsuccess/onerror asked every server to stop); outside Snakemake `linger` seconds
  after the last lease. It also stops on SIGTERM/SIGINT/SIGHUP, and records an engine that dies.
- The engine runs from an environment of its own (vLLM, SGLang and TGI pin what socsim cannot share): a
  Python engine as `<interpreter> -m <its server module>`, the interpreter being `serve.python`, else
  `.engines/<engine>/bin/python` in the project folder where it exists, else socsim's own; whether it is
  installed and its version are asked of that interpreter.
- Where it runs: as a local process (listening on `host`, loopback by default), or, when the consumer is
  itself a SLURM job, as its own SLURM job (sbatch) listening on the node's address; consumers read its
  URL from `server.json`. A server that is not on loopback requires the run's API key (SOCSIM_RUN_KEY,
  made by the Snakefile for each run, passed through the environment only; commands are recorded with
  the key redacted).
"""

from __future__ import annotations

from socsim.serving.engines import (
    BLACKWELL as BLACKWELL,
)
from socsim.serving.engines import (
    ENGINES as ENGINES,
)
from socsim.serving.engines import (
    ENGINES_DIR as ENGINES_DIR,
)
from socsim.serving.engines import (
    PREFIX_METRICS as PREFIX_METRICS,
)
from socsim.serving.engines import (
    PROBE_TIMEOUT_S as PROBE_TIMEOUT_S,
)
from socsim.serving.engines import (
    SGLANG_RADIX_DETERMINISTIC as SGLANG_RADIX_DETERMINISTIC,
)
from socsim.serving.engines import (
    VLLM_CPU_NOT_DETERMINISTIC as VLLM_CPU_NOT_DETERMINISTIC,
)
from socsim.serving.engines import (
    VLLM_NO_CHUNKS as VLLM_NO_CHUNKS,
)
from socsim.serving.engines import (
    VLLM_STRUCTURED as VLLM_STRUCTURED,
)
from socsim.serving.engines import (
    Engine as Engine,
)
from socsim.serving.engines import (
    _ask as _ask,
)
from socsim.serving.engines import (
    _gpu_majors as _gpu_majors,
)
from socsim.serving.engines import (
    _probe as _probe,
)
from socsim.serving.engines import (
    command as command,
)
from socsim.serving.engines import (
    engine as engine,
)
from socsim.serving.engines import (
    interpreter as interpreter,
)
from socsim.serving.engines import (
    needs_key as needs_key,
)
from socsim.serving.engines import (
    prefix_counters as prefix_counters,
)
from socsim.serving.engines import (
    redact as redact,
)
from socsim.serving.leases import (
    LAUNCHER_ENV as LAUNCHER_ENV,
)
from socsim.serving.leases import (
    Lease as Lease,
)
from socsim.serving.leases import (
    LeasedBackend as LeasedBackend,
)
from socsim.serving.leases import (
    _record as _record,
)
from socsim.serving.leases import (
    acquire as acquire,
)
from socsim.serving.leases import (
    launcher as launcher,
)
from socsim.serving.leases import (
    served_client as served_client,
)
from socsim.serving.leases import (
    standalone as standalone,
)
from socsim.serving.leases import (
    tail as tail,
)
from socsim.serving.run import (
    failures as failures,
)
from socsim.serving.run import (
    run_environment as run_environment,
)
from socsim.serving.run import (
    start_run as start_run,
)
from socsim.serving.run import (
    stop_run as stop_run,
)
from socsim.serving.state import (
    HEARTBEAT_S as HEARTBEAT_S,
)
from socsim.serving.state import (
    KEY_ENV as KEY_ENV,
)
from socsim.serving.state import (
    LOOPBACK as LOOPBACK,
)
from socsim.serving.state import (
    REDACTED as REDACTED,
)
from socsim.serving.state import (
    STALE_S as STALE_S,
)
from socsim.serving.state import (
    STATE as STATE,
)
from socsim.serving.state import (
    STOP_GRACE_S as STOP_GRACE_S,
)
from socsim.serving.state import (
    ServeError as ServeError,
)
from socsim.serving.state import (
    _pid_alive as _pid_alive,
)
from socsim.serving.state import (
    folder as folder,
)
from socsim.serving.supervisor import (
    assign_gpus as assign_gpus,
)
from socsim.serving.supervisor import (
    main as main,
)
from socsim.serving.supervisor import (
    supervise as supervise,
)
from socsim.serving.supervisor import (
    visible_gpus as visible_gpus,
)
