"""The coherence paper's claims, each one judge (socsim.io.claims): given the run's `Evidence` (its
measures), it gives its own verdicts by the one rule (socsim.stats.verdict, through
socsim.coherence.analysis.tests) and returns its findings (one per agent model), its vs_paper rows
(socsim.coherence.analysis.vs_paper) and the flags it raises, in the order the report shows them
(`CLAIMS`).

- disagreement suppressed (Table 3, sect. 4.1): observed above expected agreement at every gap 1-4,
  under the linear and the sigmoid shift; with Table 3's distributions and the means and ratios of
  sect. 4.1 beside the paper's;
- the six tests of sect. 4.3 (Table 4), one claim each;
- Finding 3 (Fig. 6): (1-1) pairs agree less than (5-5) pairs; with Fig. 6's anchor differences;
- Fig. 7a: preference pairs outside the neutral topics' interval, and Fig. 9a: the share of
  conversations the Self-BLEU filter removed (the paper's numbers beside ours, no verdict).
"""

from __future__ import annotations

import functools

import pandas as pd

from socsim.coherence.analysis import places
from socsim.coherence.analysis import vs_paper as vp
from socsim.coherence.analysis.evidence import Evidence
from socsim.coherence.analysis.flags import TABLE_INPUTS, flags_of
from socsim.coherence.analysis.tests import (
    MIN_SUPPRESSION,
    TEST_NAMES,
    finding3_verdict,
    rule_of_test,
    spec_of_test,
    suppression_verdicts,
    verdict_of,
)
from socsim.coherence.findings import TEST_IDS
from socsim.io.claims import Claim, Judgement
from socsim.io.findings import Scope
from socsim.io.report import Finding, Flagged
from socsim.stats import verdict as vd


def _int(v: object) -> int | None:
    return None if v is None or pd.isna(v) else int(v)  # type: ignore[call-overload]


def suppressed(ev: Evidence) -> Judgement:
    """ "Disagreement suppressed" under either shift per model, with Table 3 and sect. 4.1's numbers."""
    j = Judgement()
    supp = ev.tables["suppression"]
    for model in ev.models:
        flags = flags_of(ev.flags[model], TABLE_INPUTS["suppression"])
        panels: dict[str, dict[int, vd.Verdict]] = {}
        for label in ("linear", "sigmoid"):
            part = supp[(supp["model"] == model) & (supp["panel"] == f"{label} shift")]
            panels[label] = suppression_verdicts(part, ev.alpha, flags)
            diffs = part.loc[part["gap"] > 0, "difference"].dropna()
            j.findings.append(
                Finding(
                    f"disagreement suppressed: observed mean above the expected one at every gap 1-4, "
                    f"{label} shift ({model})",
                    "smallest observed - expected mean over gaps 1-4",
                    float(diffs.min()) if len(diffs) else None,
                    "per gap: one-sided t of observed vs expected mean (the gap-0 mean's error included), "
                    f"p simulated under no suppression, >= {MIN_SUPPRESSION} conversations a side; every gap "
                    "must hold",
                    "conversations",
                    int(part["n"].sum()) if len(part) else 0,
                    vd.all_of(panels[label][g] for g in (1, 2, 3, 4)),
                    id="coh.disagreement_suppressed",
                    scope=Scope.model(model),
                    part=f"{label} shift",
                )
            )
        m = vp.model_rows(ev, model)
        j.rows += vp.table3_rows(ev, m) + vp.suppression_rows(ev, m, panels)
    return j


def six_test(ev: Evidence, test: int) -> Judgement:
    """Test `test` of sect. 4.3 per model: its finding, its Table 4 row, and its inputs' flags (on the
    test's rows of six_tests, Table 4 and vs_paper)."""
    j = Judgement()
    tests = ev.tables["six_tests"]
    rule = ev.summary["test6_rule"]
    statistic, test_name = spec_of_test(test, rule)
    for model in ev.models:
        r = tests[(tests["model"] == model) & (tests["test"] == test)].iloc[0]
        value = r["statistic"] if pd.notna(r["statistic"]) else r["p"]
        found = ev.test_flags[model][test]
        verdict = verdict_of(ev.tests[model][test], found, rule_of_test(test, ev.alpha))
        j.findings.append(
            Finding(
                f"Test {test}: {TEST_NAMES[test]} ({model})",
                statistic,
                None if pd.isna(value) else float(value),
                test_name,
                str(r["unit"]),
                _int(r["n"]),
                verdict,
                id=TEST_IDS[test],
                scope=Scope.model(model),
            )
        )
        j.rows.append(vp.table4_row(ev, vp.model_rows(ev, model), test, verdict))
        j.flags += [Flagged(f, places.test(test, model)) for f in found]
    return j


def finding3(ev: Evidence) -> Judgement:
    """Finding 3's directional claim, (1-1) pairs agree less than (5-5) pairs, with Fig. 6's anchors."""
    j = Judgement()
    anchors = ev.tables["anchors"]
    for model in ev.models:
        row = anchors[(anchors["model"] == model) & (anchors["gap"] == 0)].iloc[0]
        value = row["mean_at_1"] - row["mean_at_5"]
        verdict = finding3_verdict(row, ev.alpha, flags_of(ev.flags[model], TABLE_INPUTS["anchors"]))
        j.findings.append(
            Finding(
                f"Finding 3: (1-1) pairs agree less than (5-5) pairs ({model})",
                "mean agreement (1-1) minus (5-5)",
                None if pd.isna(value) else float(value),
                "one-sided Mann-Whitney U, (1-1) below (5-5)",
                "conversations",
                min(int(row["n_at_1"]), int(row["n_at_5"])),
                verdict,
                id="coh.negative_anchor_agrees_less",
                scope=Scope.model(model),
            )
        )
        j.rows += vp.anchor_rows(ev, vp.model_rows(ev, model), verdict)
    return j


def outside_neutral(ev: Evidence) -> Judgement:
    """Fig. 7a: preference pairs at C = 3 outside the neutral interval, ours beside the paper's."""
    return Judgement(rows=[vp.contentiousness_row(ev, vp.model_rows(ev, m)) for m in ev.models])


def removed_by_self_bleu(ev: Evidence) -> Judgement:
    """Fig. 9a: the share of conversations the Self-BLEU filter removed, ours beside the paper's."""
    return Judgement(rows=[vp.self_bleu_row(ev, vp.model_rows(ev, m)) for m in ev.models])


CLAIMS: list[Claim[Evidence]] = [
    Claim("disagreement_suppressed", suppressed, "Table 3, sect. 4.1"),
    *(Claim(f"test{t}", functools.partial(six_test, test=t), f"Table 4, sect. 4.3, Test {t}") for t in TEST_NAMES),
    Claim("finding3", finding3, "Fig. 6, Finding 3"),
    Claim("outside_neutral", outside_neutral, "Fig. 7a"),
    Claim("removed_by_self_bleu", removed_by_self_bleu, "Fig. 9a"),
]
