# Facilitation strategies in synthetic discussions (paper 000).
# materials -> setups -> simulate -> annotate -> analyse -> figures


FACILITATION_TARGETS = study_targets("facilitation")


rule facilitation_personas:
    input:
        **stage_inputs("facilitation", "personas"),
    output:
        **stage_outputs("facilitation", "personas"),
    params:
        values=stage_params("facilitation", "personas"),
    threads: llm_threads()
    resources:
        llm_clients=1,
    shell:
        stage_shell("facilitation", "personas")


rule facilitation_topics:
    input:
        **stage_inputs("facilitation", "topics"),
    output:
        **stage_outputs("facilitation", "topics"),
    params:
        values=stage_params("facilitation", "topics"),
    threads: llm_threads()
    resources:
        llm_clients=1,
    shell:
        stage_shell("facilitation", "topics")


rule facilitation_setups:
    input:
        **stage_inputs("facilitation", "setups"),
    output:
        **stage_outputs("facilitation", "setups"),
    params:
        values=stage_params("facilitation", "setups"),
    shell:
        stage_shell("facilitation", "setups")


rule facilitation_simulate:
    input:
        **stage_inputs("facilitation", "simulate"),
    output:
        **stage_outputs("facilitation", "simulate"),
    params:
        values=stage_params("facilitation", "simulate"),
    threads: llm_threads()
    resources:
        llm_clients=1,
    shell:
        stage_shell("facilitation", "simulate")


rule facilitation_annotate:
    input:
        **stage_inputs("facilitation", "annotate"),
    output:
        **stage_outputs("facilitation", "annotate"),
    params:
        values=stage_params("facilitation", "annotate"),
    threads: llm_threads()
    resources:
        llm_clients=1,
    shell:
        stage_shell("facilitation", "annotate")


rule facilitation_analyse:
    input:
        **stage_inputs("facilitation", "analyse"),
    output:
        **stage_outputs("facilitation", "analyse"),
    params:
        values=stage_params("facilitation", "analyse"),
    shell:
        stage_shell("facilitation", "analyse")


rule facilitation_figures:
    input:
        **stage_inputs("facilitation", "figures"),
    output:
        **stage_outputs("facilitation", "figures"),
    params:
        values=stage_params("facilitation", "figures"),
    shell:
        stage_shell("facilitation", "figures")
