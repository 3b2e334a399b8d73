"""The facilitation study's analysis (paper 000), a package along its seams:

- `measures`: what is measured (rating rows and their time, diversity, interventions, non-troll
  toxicity, the reply rate, annotator agreement, the ratings' flags);
- `tests`: the study's statistical tests (Table 2's OLS, the ANOVA and pairwise t-tests at three
  levels, the claims' tests over discussions);
- `claims`: one judge function per paper claim (`CLAIMS`, in the report's order);
- `places`: where a flag is noted (tables, vs_paper rows, figure panels), declared once for the claims
  and report that record flags and the plots that read them;
- `plots`: what each figure draws (its panels, notes worded here);
- `report`: the base report and `analyse(inputs) -> Report`, which assembles the claims.

Runs on any Parquet files of the documented schemas (setups, comments, annotations), so released
data can be re-analysed without simulating.
"""

from socsim.facilitation.analysis.claims import CLAIMS, Evidence
from socsim.facilitation.analysis.measures import (
    LEVELS,
    MAIN,
    UNIT_WORDS,
    UNITS,
    ablation_baseline,
    agreement,
    check_ratings,
    comment_means,
    human_note,
    interventions,
    observed_reply_rate,
    parse_failures,
    rated_and_seeds,
    rated_comments,
    seed_note,
    toxicity_flags,
    troll_groups,
)
from socsim.facilitation.analysis.report import NoUsableRatings, analyse, design, report
from socsim.facilitation.analysis.tests import (
    NESTED,
    PSEUDO,
    anova_and_pairwise,
    group_tests,
    no_gain_over,
    ols_tables,
    strategy_contrasts,
    toxicity_ols,
)

__all__ = [
    "CLAIMS",
    "LEVELS",
    "MAIN",
    "NESTED",
    "PSEUDO",
    "UNITS",
    "UNIT_WORDS",
    "Evidence",
    "NoUsableRatings",
    "ablation_baseline",
    "agreement",
    "analyse",
    "anova_and_pairwise",
    "check_ratings",
    "comment_means",
    "design",
    "group_tests",
    "human_note",
    "interventions",
    "no_gain_over",
    "observed_reply_rate",
    "ols_tables",
    "parse_failures",
    "rated_and_seeds",
    "rated_comments",
    "report",
    "seed_note",
    "strategy_contrasts",
    "toxicity_flags",
    "toxicity_ols",
    "troll_groups",
]
