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
    resources:
        llm_clients=1,
    shell:
        stage_shell("facilitation", "topics")
