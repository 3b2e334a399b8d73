"""Paper 002's findings (socsim.io.findings): what the opinion-dynamics study's claims speak to, declared once."""

from __future__ import annotations

from socsim.io.findings import PaperFinding

V = "NAACL 2024"  # the one version of paper 002 (../shared/papers/README.md)
FINDINGS = (
    PaperFinding(
        "od.truth_false_negative",
        "B follows the truth: B < 0 under false framing, and below B under true framing",
        V,
        "Sect. 4; Table 1",
        "holds: B -1.42 under false framing (no bias, cumulative memory)",
    ),
    PaperFinding(
        "od.truth_true_higher",
        "B follows the truth: B higher under true framing",
        V,
        "Sect. 4; Table 1",
        "holds: B higher under true framing in every bias cell",
    ),
    PaperFinding(
        "od.d_rises_with_bias",
        "D rises with confirmation bias (none < weak < strong)",
        V,
        "Sect. 4; Tables 1-2",
        "holds: ANOVA F of D by bias 25.43 (cumulative), 17.81 (reflective)",
    ),
    PaperFinding(
        "od.outside_info_open_world",
        "outside information is more common in the open world",
        V,
        "Sect. 2.4",
        "holds: 15 % of messages in the open world, none in the closed one",
    ),
)
