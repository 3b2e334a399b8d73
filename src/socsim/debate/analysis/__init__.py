"""Analysis of the DEBATE study (paper 003): utterance metrics per setting (Tables 3, 4, 9, 10),
group- and individual-level opinion dynamics (Sect. 6, Figs. 2 and 3), Appendix H, vs_paper.

`analyse(inputs) -> Report` (report.py) returns the report (socsim.io.report): the tables, the findings
judged by the one verdict rule (socsim.stats.verdict), the degeneracy flags with the tables, rows and
figure panels they concern, the vs_paper rows and every figure's plot table. It runs on any Parquet
files of the documented schemas, so released simulations can be re-analysed.

Tables: Depth -> Table 3 (models x modes, original memory) and Table 4 (ablations of the first
model); Breadth -> Tables 9 and 10. Sect. 6 uses the Depth groups of Mode 3 (original memory), per agent
model (the first model's tables under their names, another's with "_<model>" added): tweet stance per
round and opinions, topic-level reverse coding (x -1) of truth-framed topics; the twins' round-1 tweet
and initial opinion are the humans'.

The package, along its seams: design (what the run was beside the paper), stats (the study's statistics:
Appendix H, Sect. 6's group- and individual-level analyses, Fig. 3's fitted lines), measures (what is
measured once, with its inputs' flags: the evidence), tests (the claims' statistical tests, each at its
unit), claims (one judge function per paper claim; CLAIMS), places (where a flag is noted: the one
spelling of every place the claims write a flag on and the plots read it from), plots (what each figure
draws, computed down to the last line: the figures only draw), report (analyse).
"""

from socsim.debate.analysis.claims import CLAIMS
from socsim.debate.analysis.design import METRIC_USES, RunDesign, variable_uses
from socsim.debate.analysis.measures import (
    INPUTS,
    TABLES,
    Evidence,
    InputFlags,
    evidence,
    members,
    on_topic_validity,
    paper_test,
    session_topics,
)
from socsim.debate.analysis.report import TITLE, analyse
from socsim.debate.analysis.tests import (
    EQUIVALENCE_ALPHA,
    MIN_BOOT_GROUPS,
    MIN_TOPICS,
    NO_CHANGE_DZ,
    PAPERS_COMPARISON,
    ablation_claim,
    group_claims,
    group_finding,
    llm_longer,
    mode_order,
    no_change,
    partner_claim,
    topic_effect,
)
from socsim.debate.metrics import PAPER_ENCODER
from socsim.debate.schemas import METRICS

__all__ = [
    "CLAIMS",
    "EQUIVALENCE_ALPHA",
    "INPUTS",
    "METRICS",
    "METRIC_USES",
    "MIN_BOOT_GROUPS",
    "MIN_TOPICS",
    "NO_CHANGE_DZ",
    "PAPERS_COMPARISON",
    "PAPER_ENCODER",
    "TABLES",
    "TITLE",
    "Evidence",
    "InputFlags",
    "RunDesign",
    "ablation_claim",
    "analyse",
    "evidence",
    "group_claims",
    "group_finding",
    "no_change",
    "llm_longer",
    "members",
    "mode_order",
    "on_topic_validity",
    "paper_test",
    "partner_claim",
    "session_topics",
    "topic_effect",
    "variable_uses",
]
