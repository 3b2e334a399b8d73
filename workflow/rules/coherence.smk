# Latent profiles and behavioural coherence of LLM agents (paper 001).
# agents -> elicit -> pair -> converse -> judge -> analyse -> figures


COHERENCE_TARGETS = study_targets("coherence")


rule coherence_agents:
    input:
        **stage_inputs("coherence", "agents"),
    output:
        **stage_outputs("coherence", "agents"),
    params:
        values=stage_params("coherence", "agents"),
    shell:
        stage_shell("coherence", "agents")


rule coherence_elicit:
    input:
        **stage_inputs("coherence", "elicit"),
    output:
        **stage_outputs("coherence", "elicit"),
    params:
        values=stage_params("coherence", "elicit"),
    threads: llm_threads()
    resources:
        llm_clients=1,
    shell:
        stage_shell("coherence", "elicit")


rule coherence_pair:
    input:
        **stage_inputs("coherence", "pair"),
    output:
        **stage_outputs("coherence", "pair"),
    params:
        values=stage_params("coherence", "pair"),
    shell:
        stage_shell("coherence", "pair")


rule coherence_converse:
    input:
        **stage_inputs("coherence", "converse"),
    output:
        **stage_outputs("coherence", "converse"),
    params:
        values=stage_params("coherence", "converse"),
    threads: llm_threads()
    resources:
        llm_clients=1,
    shell:
        stage_shell("coherence", "converse")


rule coherence_judge:
    input:
        **stage_inputs("coherence", "judge"),
    output:
        **stage_outputs("coherence", "judge"),
    params:
        values=stage_params("coherence", "judge"),
    threads: llm_threads()
    resources:
        llm_clients=1,
    shell:
        stage_shell("coherence", "judge")


rule coherence_analyse:
    input:
        **stage_inputs("coherence", "analyse"),
    output:
        **stage_outputs("coherence", "analyse"),
    params:
        values=stage_params("coherence", "analyse"),
    shell:
        stage_shell("coherence", "analyse")


rule coherence_figures:
    input:
        **stage_inputs("coherence", "figures"),
    output:
        **stage_outputs("coherence", "figures"),
    params:
        values=stage_params("coherence", "figures"),
    shell:
        stage_shell("coherence", "figures")
