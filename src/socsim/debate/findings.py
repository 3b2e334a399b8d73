"""Paper 003's findings (socsim.io.findings): what the DEBATE study's claims speak to, declared once."""

from __future__ import annotations

from socsim.io.findings import PaperFinding

V = "arXiv 2025"  # the one version of paper 003 (../shared/papers/README.md)
FINDINGS = (
    PaperFinding(
        "deb.mode_order_s_sem",
        "Mode 1 > Mode 2 > Mode 3 in semantic similarity",
        V,
        "Sect. 5; Tables 3 and 9",
        "holds (S_sem falls from Mode 1 to Mode 3 on both topic sets)",
    ),
    PaperFinding(
        "deb.llm_longer",
        "LLM utterances are longer than the humans' (signed difference < 0)",
        V,
        "Sect. 5; Tables 3 and 9",
        "holds (every mode's signed length difference is negative)",
    ),
    PaperFinding(
        "deb.private_profile_ablation",
        "Sect. 5: in Modes 2 and 3 removing the private profile lowers S_sem and raises Delta_stance",
        V,
        "Sect. 5; Tables 4 and 10",
        "holds",
    ),
    PaperFinding(
        "deb.humans_no_change",
        "Fig. 2: the humans' group mean and SD do not change",
        V,
        "Sect. 6; Fig. 2",
        "holds: no change in the humans' tweets or opinions (every p > .05)",
        no_difference=True,
    ),
    PaperFinding(
        "deb.humans_group_change",
        "Fig. 2: the humans' group mean or SD changes, in the paper's direction",
        V,
        "Sect. 6; Fig. 2",
        "not claimed by the published paper (its p are all above .05): judged only on a paper.yaml that says so",
    ),
    PaperFinding(
        "deb.twins_converge",
        "Sect. 6: the twins' groups converge more than the humans' in their tweets",
        V,
        "Sect. 6; Fig. 2b, 2d",
        "holds: t -2.27 (twins' change), -2.28 (twins against humans)",
    ),
    PaperFinding(
        "deb.twins_drift_up",
        "Sect. 6: the twins' public tweet stance drifts upwards, more than the humans'",
        V,
        "Sect. 6; Fig. 2a",
        "holds: t 2.23 (twins' change), 2.66 (twins against humans)",
    ),
    PaperFinding(
        "deb.twins_follow_partner",
        "Sect. 6 / Fig. 3: the twins follow their round-1 partner more than the humans do",
        V,
        "Sect. 6; Fig. 3b, 3e",
        "holds: partner r 0.50 against 0.38 (tweets), 0.53 against 0.41 (opinions)",
    ),
)
