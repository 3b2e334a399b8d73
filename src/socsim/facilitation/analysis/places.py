"""Where the facilitation analysis notes a flag: every place a flag's `where` names (socsim.io.report.Flagged,
summary.json's degeneracy_flags), declared once. The writers (report.base_report, the claims) record flags
on these places, and the reader (plots, through Report.flags_on, the one way flags reach a panel) asks for
the same ones, so a place cannot be spelt one way where a flag is written and another where it is read.

A table's place is its name in the report (report.tables); a test level's part of it, `<table> (<level>)`.
"""

from __future__ import annotations

TABLE2 = "table2_ols"  # Table 2
PAIRWISE = "pairwise_ttests"  # the pairwise t-tests of every level
ANOVA = "anova.json"  # the ANOVA of every level
FIG3 = "fig3"  # every panel of Fig. 3 (one per level)
FIG6 = "fig6"  # Fig. 6's panel
VS_PAPER_TABLE2 = "vs_paper: Table 2, Findings 1-2"  # the vs_paper rows resting on Table 2's fit
VS_PAPER_RATINGS = "vs_paper: Table 2, Findings 1-2, Fig. 6"  # the vs_paper rows resting on the ratings


def pairwise(level: str) -> str:
    """One level's rows of the pairwise t-tests."""
    return f"{PAIRWISE} ({level})"


def fig3(level: str) -> str:
    """One level's panel of Fig. 3."""
    return f"{FIG3} ({level})"


# -- where the writers put each kind of flag ------------------------------------------------------------

# The flags of the main study's toxicity ratings: the input of Table 2, the tests and Figs. 3 and 6.
RATINGS = (TABLE2, PAIRWISE, FIG3, FIG6, VS_PAPER_RATINGS)
# The flags of Table 2's fit.
TABLE2_FIT = (TABLE2, VS_PAPER_TABLE2)


def anova(level: str) -> tuple[str, ...]:
    """A level's ANOVA flags: anova.json, that level's pairwise tests and its Fig. 3 panel."""
    return (ANOVA, pairwise(level), fig3(level))


# -- what each panel shows (the reader) -----------------------------------------------------------------


def fig3_panel(level: str) -> tuple[str, ...]:
    """The places whose flags a Fig. 3 panel notes: the figure's and its level's."""
    return (FIG3, fig3(level))


FIG6_PANEL = (FIG6,)  # the places whose flags Fig. 6's panel notes
