"""Where the revised study's report notes a flag: every place a flag's `where` names (socsim.io.report.Flagged),
declared once, as facilitation.analysis.places does for the paper-era study. The writer (report.report) records
each scope's toxicity flags on these places, and the reader (plots, through Report.flags_on) asks for the same
ones, so a place cannot be spelt one way where a flag is written and another where it is read.
"""

from __future__ import annotations

TOXICITY_OVER_TURNS = "plot_toxicity_over_turns"  # both panels of toxicity_over_turns
MODEL_EFFECTS = "plot_model_effects"  # the model_effects panels of the claims judged on toxicity
TOXICITY_FIGURES = (TOXICITY_OVER_TURNS, MODEL_EFFECTS)


def claims_by_model(scope: str) -> str:
    """One scope's rows of the per-model claims table."""
    return f"claims_by_model ({scope})"


def mixedlm_by_model(scope: str) -> str:
    """One scope's rows of the per-model mixed-model table."""
    return f"mixedlm_by_model ({scope})"


def toxicity(scope: str) -> tuple[str, ...]:
    """Every place a scope's toxicity flags concern: the toxicity figures and that scope's table rows."""
    return (*TOXICITY_FIGURES, claims_by_model(scope), mixedlm_by_model(scope))
