"""Paper 000's findings (socsim.io.findings), in its two versions: the paper-era text (the release at fde36171,
which `params.syndisco.yaml` pins, and every generated run) and the revised one (arXiv 2503.16505v4, the release
at 4ecc4bfc: `params.syndisco-revised.yaml`). Related findings of the two keep their own ids and name each other,
with what differs; the scorecard shows them side by side."""

from __future__ import annotations

from socsim.io.findings import PaperFinding

PAPER_ERA = "paper-era"
REVISED = "revised (v4)"
# The revised study's claims (socsim.facilitation.revision.claims, by name) -> their finding ids.
REVISED_IDS = {
    "strategies_lower_toxicity": "facr.toxicity_lowered",
    "toxicity_rises_with_turn": "facr.toxicity_rises_with_turn",
    "strategy_turn_interactions": "facr.slower_rise",
    "cannot_keep_silent": "facr.intervene_almost_always",
    "instructions_raise_interventions": "facr.instructions_raise_interventions",
    "trolls_raise_toxicity": "facr.trolls_raise_toxicity",
    "humans_toxicity": "facr.humans_toxicity_differs",
}
SOCSIM = "socsim's question"  # a finding socsim asks of the paper's data that the paper does not state
_TOX = (
    "the reference: No Moderator (paper-era) against No Facilitator (revised), the same condition renamed; the "
    "strategies: five against three; toxicity: LLM annotators' 1-5 against Perspective's 0-1"
)
_OVER_TIME = (
    "the revised version adds Minimal Instructions to the strategies and counts time in user turns (the "
    "paper-era in user comments); the reference renamed (No Moderator, No Facilitator)"
)
_INTERVENE = (
    "the test: the mean rate above 0.9 by a one-sample t, echoes not counted (paper-era), against the median "
    "rate above 0.9 by a sign test, echoes counted (revised)"
)
_TROLLS = (
    "the revised version drops the contrast with the basic prompt (the 'only'): an OLS slope per active troll "
    "over the main discussions, against a with/without-trolls t under each prompt"
)
FINDINGS = (
    PaperFinding(
        "fac.toxicity_lowered",
        "LLM facilitators lower toxicity",
        PAPER_ERA,
        "Finding 1; Table 2",
        "holds: every strategy's coefficient below No Moderator's (-0.43 to -0.23, p < .001)",
        "facr.toxicity_lowered",
        _TOX,
    ),
    PaperFinding(
        "fac.toxicity_differs",
        "toxicity differs across strategies",
        PAPER_ERA,
        "Finding 1",
        "holds: ANOVA p < .001 (ratings as units)",
        any_difference=True,
    ),
    PaperFinding(
        "fac.no_gain_beyond_simple",
        "more elaborate facilitation strategies fail to decrease toxicity beyond No Instructions",
        PAPER_ERA,
        "Finding 2; Fig. 3",
        "holds (no test given; socsim's: no difference, with power for 0.213)",
        no_difference=True,
    ),
    PaperFinding(
        "fac.elaborate_lower_over_time",
        "elaborate strategies reduce toxicity over time vs No Moderator",
        PAPER_ERA,
        "Finding 2; Table 2",
        "holds: strategy x time -0.011 (MG), -0.023 (RR), -0.023 (CC)",
        "facr.slower_rise",
        _OVER_TIME,
    ),
    PaperFinding(
        "fac.intervene_almost_always",
        "facilitators intervene at almost every opportunity",
        PAPER_ERA,
        "Finding 3; Fig. 4",
        "holds (stated; no rate given: socsim reads a rate of 0.9)",
        "facr.intervene_almost_always",
        _INTERVENE,
    ),
    PaperFinding(
        "fac.respond_lowest_diversity",
        "the paper's turn taking gives the lowest diversity of the turn-taking functions",
        PAPER_ERA,
        "Ablation; Fig. 5b",
        "holds (Fig. 5b; no test)",
    ),
    PaperFinding(
        "fac.qwen_highest_diversity",
        "Qwen has the highest diversity of the models",
        PAPER_ERA,
        "Ablation; Fig. 5a",
        "holds (Fig. 5a; no test)",
        across_models=True,
    ),
    PaperFinding(
        "fac.humans_diversity_not_matched",
        "none of the models closely matches the diversity of human discussions",
        PAPER_ERA,
        "Ablation; Fig. 5a",
        "holds (Fig. 5a; no test, no divergence printed)",
        against_humans=True,
    ),
    PaperFinding(
        "fac.humans_turn_taking_diverge",
        "every turn-taking function's diversity diverges from the humans'",
        PAPER_ERA,
        "Ablation; Fig. 5b",
        "holds (Fig. 5b: 'all distributions diverge from the human distribution'; no test)",
        against_humans=True,
    ),
    PaperFinding(
        "fac.humans_ablations_farther",
        "SDBs, roles and the instruction prompt bring the diversity closer to the humans'",
        PAPER_ERA,
        "Ablation; Fig. 5c",
        "holds (Fig. 5c; no test)",
        against_humans=True,
    ),
    PaperFinding(
        "fac.trolls_need_instruction_prompt",
        "trolls raise other users' toxicity only with the instruction prompt",
        PAPER_ERA,
        "Ablation; Fig. 6",
        "holds (Fig. 6; no test)",
        "facr.trolls_raise_toxicity",
        _TROLLS,
    ),
    PaperFinding(
        "facr.toxicity_lowered",
        "each facilitation strategy lowers toxicity against No Facilitator",
        REVISED,
        "toxicity table (strategy rows)",
        "holds: CC -0.040, MG -0.032, MI -0.030 (mixed model, each p < .01)",
        "fac.toxicity_lowered",
        _TOX,
    ),
    PaperFinding(
        "facr.toxicity_rises_with_turn",
        "toxicity rises with the turn without a facilitator",
        REVISED,
        "toxicity table (Discussion Turn)",
        "holds: +0.001 a turn (p < .05)",
    ),
    PaperFinding(
        "facr.slower_rise",
        "each strategy slows the rise of toxicity over the turn (strategy x turn < 0)",
        REVISED,
        "toxicity table (x Turn rows)",
        "partly: CC -0.002 (p < .01), MI -0.001 (p < .05), MG -0.001 (n.s.)",
        "fac.elaborate_lower_over_time",
        _OVER_TIME,
    ),
    PaperFinding(
        "facr.intervene_almost_always",
        "LLM facilitators intervene at almost every opportunity",
        REVISED,
        "Sect. 5.1",
        "holds (stated; no rate given: socsim reads a rate above 0.9)",
        "fac.intervene_almost_always",
        _INTERVENE,
    ),
    PaperFinding(
        "facr.instructions_raise_interventions",
        "specific instructions raise the facilitator's intervention rate (vs Minimal Instructions)",
        REVISED,
        "Sect. 5.1",
        "holds (stated)",
    ),
    PaperFinding(
        "facr.trolls_raise_toxicity",
        "trolls raise the other users' toxicity",
        REVISED,
        "Sect. 3; the troll figure",
        "holds (stated)",
        "fac.trolls_need_instruction_prompt",
        _TROLLS,
    ),
    PaperFinding(
        "facr.humans_toxicity_differs",
        "a model's discussions differ in toxicity from people's (Change My View comments, the same scorer)",
        SOCSIM,
        "not in the paper: the revised release scores 41,772 human comments (cmv_awry2.csv) and never compares them",
        "not claimed (socsim's own finding, on the paper's data)",
        any_difference=True,
    ),
)
