# socsim: `snakemake --cores all` reproduces every study on the params in params.yaml.
# Paper-scale settings: `snakemake --cores all --configfile params.paper.yaml` (see README).
# The rules are generated from the study registry (src/socsim/studies.py) in workflow/rules/common.smk.

import os

from snakemake.exceptions import WorkflowError

from socsim import config as _params

if os.path.exists("params.yaml"):  # a YAML error named with its file and line (Snakemake's own names neither)
    try:
        _params.read_yaml("params.yaml")
    except _params.ParamsError as exc:
        raise WorkflowError(str(exc))


configfile: "params.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
