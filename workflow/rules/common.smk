# Shared by every study: params validation, and one rule per registered stage, generated from the
# study contract (socsim.stages, registry socsim.studies). All logic lives in the socsim package.

import sys

from snakemake.exceptions import WorkflowError

from socsim import config as socsim_config
from socsim import workflow as socsim_smk
from socsim import studies as socsim_studies
from socsim import serving as socsim_serving

# params.yaml, then any --configfile override, exactly as Snakemake merged them.
PARAMS_FILES = tuple(
    dict.fromkeys(
        ["params.yaml"] + [os.path.relpath(f) for f in getattr(workflow, "overwrite_configfiles", None) or []]
    )
)

try:  # a bad key is named with the file that set it
    _sources = socsim_config.sources(PARAMS_FILES, missing_ok=True)
    _validated = socsim_config.validate(config, socsim_config.load_schema(workflow.basedir + "/params.yaml"), _sources)
    socsim_studies.check_models(_validated)  # every model a stage names resolves in the registry
    if _validated != socsim_config.load(PARAMS_FILES):  # `--config KEY=VALUE`: the jobs read the params files only
        raise socsim_config.ParamsError(
            "--config changes params that no job would see (socsim's commands read params.yaml and the "
            "--configfile files); write the values into an override file and pass it with --configfile"
        )
except (socsim_config.ParamsError, ValueError) as exc:
    raise WorkflowError(str(socsim_config.in_files(PARAMS_FILES, exc)))
config.clear()
config.update(_validated)
socsim_serving.run_environment(config)  # the run's API key for servers it starts off loopback (environment only)


def _total_cores():
    """--cores of a local run; None on a cluster run without it (the profile's cpus_per_task places jobs)."""
    try:
        return workflow.cores
    except WorkflowError:
        return None


# An embedded model uses every core, so its jobs run one at a time; jobs that talk to a server need
# one core each and `llm_clients` (a global resource, see the profiles) bounds them instead.
LLM_THREADS = _total_cores() or 1


def _outputs(spec):
    """Snakemake output objects from the package's plain description (folders, report captions)."""
    out = {}
    for name, o in spec.items():
        path = directory(o["path"]) if o["dir"] else o["path"]
        if o["caption"]:
            path = report(path, caption=o["caption"], category=o["category"], subcategory=o["subcategory"],
                          patterns=[o["pattern"]] if o["dir"] else [])
        out[name] = path
    return out


SHELL_LINE = socsim_smk.shell_line()  # the log takes stdout and stderr, the console lines of progress

for _rule in socsim_smk.rules(config, PARAMS_FILES, LLM_THREADS):

    rule:
        name:
            _rule["name"]
        message:
            _rule["message"]
        input:
            **_rule["input"],
        output:
            **_outputs(_rule["output"]),
        params:
            values=_rule["params"],
            command=_rule["command"],
        log:
            _rule["log"],
        benchmark:
            _rule["benchmark"]
        threads: _rule["threads"]
        resources:
            llm_clients=_rule["llm_clients"],
            **_rule["resources"],
        shell:
            SHELL_LINE


ALL_TARGETS = socsim_smk.targets(config)


onstart:
    # Before the first job: the external model servers the jobs to run need must answer and serve their
    # model ids (a run without them stops here, in seconds, listing them); the engines of the models the
    # run serves itself must be installed. Then this process owns those servers: each starts with the
    # first job that calls its model and stops after the last (socsim.serving; README "Servers").
    try:
        _jobs = list(workflow.dag.needrun_jobs())
        socsim_smk.preflight(config, [job.rule.name for job in _jobs], local=workflow.local_exec)
        socsim_smk.serve(
            config,
            [(job.rule.name, [str(o) for o in job.output]) for job in _jobs],
            executor="local" if workflow.local_exec else workflow.executor_plugin.name,
        )
    except Exception as exc:
        raise WorkflowError(str(exc))


# After the run, also after a failure, Ctrl-C or SIGTERM: every server the run started stops now.
onsuccess:
    socsim_serving.stop_run()


onerror:
    socsim_serving.stop_run()
    _failed = socsim_serving.failures()  # a server that did not start or died: why, and its log, on the console
    if _failed:
        print(_failed, file=sys.stderr)


# One target rule per study: `snakemake --cores all coherence` runs that study alone.
for _study, _targets in socsim_smk.study_targets(config).items():

    rule:
        name:
            _study
        message:
            f"{_study}: every stage of the study"
        input:
            _targets,
