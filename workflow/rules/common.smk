# Shared by every study: params validation and the bridge to the stage registry.
# All logic lives in the socsim package; rules only name a stage.

from snakemake.exceptions import WorkflowError

from socsim import config as socsim_config
from socsim import stages as socsim_stages

try:
    _validated = socsim_config.validate(config, socsim_config.load_schema(workflow.basedir + "/params.yaml"))
except socsim_config.ParamsError as exc:
    raise WorkflowError(f"params.yaml is invalid:\n{exc}")
config.clear()
config.update(_validated)

# params.yaml, then any --configfile override, exactly as Snakemake merged them.
PARAMS_FILES = tuple(
    dict.fromkeys(
        ["params.yaml"] + [os.path.relpath(f) for f in getattr(workflow, "overwrite_configfiles", None) or []]
    )
)


def stage_inputs(study, name):
    return socsim_stages.get(study, name).inputs


def stage_outputs(study, name):
    stage = socsim_stages.get(study, name)
    return {k: directory(v) if k in stage.directories else v for k, v in stage.all_outputs().items()}


def stage_params(study, name):
    """The params values a stage reads: a change re-runs it (rerun trigger 'params')."""
    return socsim_config.canonical_json(socsim_config.subset(config, socsim_stages.get(study, name).params))


def stage_shell(study, name):
    return socsim_stages.get(study, name).command(params_files=PARAMS_FILES)


def llm_threads():
    """An embedded model uses every core: two such jobs at once would only slow each other down.
    Jobs that talk to a server need one core; `llm_clients` bounds them instead."""
    return workflow.cores if config["llm"]["backend"] == "embedded" else 1


def study_targets(study):
    return [p for st in socsim_stages.studies()[study] for p in st.all_outputs().values()]
