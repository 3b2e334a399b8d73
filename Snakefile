# socsim: `snakemake --cores all` reproduces every study on the params in params.yaml.
# Paper-scale settings: `snakemake --cores all --configfile params.paper.yaml` (see README).
# The rules are generated from the study registry (src/socsim/studies.py) in workflow/rules/common.smk.

configfile: "params.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
