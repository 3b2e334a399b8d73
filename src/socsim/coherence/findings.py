"""Paper 001's findings (socsim.io.findings): what the coherence study's claims speak to, declared once."""

from __future__ import annotations

from socsim.io.findings import PaperFinding

V = "arXiv 2025"  # the one version of paper 001 (../shared/papers/README.md)
TEST_IDS = {1: "coh.test1", 2: "coh.test2", 3: "coh.test3", 4: "coh.test4", 5: "coh.test5", 6: "coh.test6"}
FINDINGS = (
    PaperFinding(
        "coh.disagreement_suppressed",
        "disagreement suppressed: observed mean agreement above the expected one at every gap 1-4",
        V,
        "Sect. 4.1, Finding 2; Table 3",
        "holds: observed mean 3.6 against 1.8 expected at gap 4 (linear shift)",
    ),
    PaperFinding(
        "coh.test1",
        "Test 1: increasing preference gap decreases agreement",
        V,
        "Sect. 4.3; Table 4",
        "every model passes",
    ),
    PaperFinding(
        "coh.test2",
        "Test 2: agreement amplifies, disagreement dampens",
        V,
        "Sect. 4.3; Table 4",
        "no model passes",
        no_difference=True,
    ),
    PaperFinding(
        "coh.test3",
        "Test 3: shared sentiment, divergent speech destinations",
        V,
        "Sect. 4.3; Table 4",
        "no model passes",
    ),
    PaperFinding(
        "coh.test4",
        "Test 4: topic contentiousness trumps preference",
        V,
        "Sect. 4.3; Table 4",
        "Qwen-14B and Gemma pass; the other models fail",
        no_difference=True,
    ),
    PaperFinding(
        "coh.test5", "Test 5: increasing openness, increasing agreement", V, "Sect. 4.3; Table 4", "every model passes"
    ),
    PaperFinding(
        "coh.test6",
        "Test 6: high preference gap and low openness, too strong agreement",
        V,
        "Sect. 4.3; Table 4",
        "Llama-8B and Olmo pass; the other models fail",
    ),
    PaperFinding(
        "coh.negative_anchor_agrees_less",
        "Finding 3: (1-1) pairs agree less than (5-5) pairs",
        V,
        "Sect. 4.1, Finding 3; Fig. 6",
        "holds: (5-5) minus (1-1) mean agreement 0.62 at gap 0",
    ),
)
