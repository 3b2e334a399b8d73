# socsim: `snakemake --cores all` reproduces every study on the params in params.yaml.
# Paper-scale settings: `snakemake --cores all --configfile params.paper.yaml` (see README).

configfile: "params.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/facilitation.smk"
include: "workflow/rules/coherence.smk"


rule all:
    default_target: True
    input:
        FACILITATION_TARGETS,
        COHERENCE_TARGETS,
