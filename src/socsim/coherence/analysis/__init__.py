"""Statistics of the coherence study (paper 001, sections 3.3 and 4). Runs on any Parquet files of
the documented schemas (agents, profiles, pairs, judgments; utterances optional for Self-BLEU,
the judge's calibration answers optional for its calibration check). `analyse(inputs)` returns the
whole analysis as a socsim.io.report.Report (tables, findings, flags, vs_paper rows, plot tables).

The package, along its seams: `measures` (the conversation table, the Self-BLEU filter, bootstrap
groupings, observed vs expected agreement), `descriptive` (the paper's numbers outside Tables 3 and 4:
anchors, contentiousness against neutral, the Self-BLEU histogram, final judgments), `flags` (degeneracy
of the inputs and which tables and tests rest on which), `units` (each test's unit where conversations are
not independent: agent and topic permutations, Test 2's further conditions), `tests` (the six tests, the
suppression test's and Finding 3's verdicts), `evidence` (the measures, computed once), `claims` (one
judge per paper claim, `CLAIMS`: each gives its own verdicts and builds its vs_paper rows), `vs_paper`
(those rows, ours beside the paper's), `places` (where a flag is noted, declared once for its writers and
the panels that read it), `plots` (what each figure draws, its notes' flags from the report) and `report`
(the base report, Table 4 and `analyse`).

Every verdict follows the one rule (socsim.stats.verdict, alpha = coherence.alpha, .01 by default, the paper's
"p < .01"): a directional test is one-sided in the claimed direction at alpha (its p is computed one-sided: the
permutation p of Tests 1 and 5, the U tests of Tests 3 and 6 and Finding 3, the suppression t), and it passes only
when it rejects in the claimed direction with at least the minimum n (MIN_CORRELATION
conversations and agents for a correlation, MIN_GROUP per compared group); it fails only when it rejects
in the opposite direction (or, for a "no difference" test, when it finds a difference); otherwise it is
"inconclusive (...)" with the n and what it needs. A test whose passing means "no difference found"
(Tests 2 and 4) passes only when its power at the observed n is at least 0.8.

The unit of each test is what its observations nest in (issue 34; socsim.coherence.analysis.units): the pairing
reuses agents and nests conversations in topics, so Tests 1 and 5 are judged with the agent as unit and
Test 4 with the topic as unit. The paper's p, with the conversation as unit, stays beside them
(`p_paper`, `beside`) without a verdict of its own. The six tests of section 4.3:

1. Pearson r between preference gap and final agreement: pass if r < 0 and the one-sided permutation p of
   the slope's dyadic-robust t, preferences permuted across the agents of each topic, is < alpha
   (units.agent_permutation).
2. Kolmogorov-Smirnov between the scores at gap 4 and the inverted (6 - s) scores at gap 0: the
   agents are coherent if the two are the same distribution, so it passes only if p >= alpha AND the
   KS test had power >= 0.8 at the observed n to find the paper's suppression (simulated,
   socsim.stats.power.ks_power: gap 0 drawn from the paper's Table 3, gap 4 from the mixture of
   that and its inverse with the paper's observed gap-4 mean 3.6) AND to find no gap effect (gap 4
   drawn from the observed gap-0 distribution: on scores symmetric about 3 the two are the same, so
   such noise cannot pass) AND the means are equivalent within TEST2_MARGIN (units.test2_conditions).
   A t test's power (socsim.stats.verdict.power_t) would overstate the KS test's on 5-point scores
   (0.99 against about 0.3 at n = 10 per gap), so it is not used.
3. (1-1) pairs against each mixed pair (2-5, 3-5, 4-5), one-sided Mann-Whitney U ((1-1) greater),
   Bonferroni over the three: pass if every corrected p < alpha.
4. Contentiousness should not matter once preferences are fixed: the statistic is the smallest
   Bonferroni-corrected two-sided Mann-Whitney U p over every preference pair and pair of
   contentiousness levels, its p from permuting the contentiousness labels over the topics (every
   assignment; units.topic_permutation). It fails if p < alpha; it passes if p >= alpha AND the
   topic-level test had power >= 0.8 to find a contentiousness effect of CONTENTIOUSNESS_D SD
   (simulated: each (pair, topic) cell from its own scores, the levels moved on a latent normal
   scale); with too few topics to reach alpha it is inconclusive and says so.
5. Pearson r between O1 + O2 and final agreement: pass if r > 0 and the one-sided permutation p (openness
   permuted across the agents of each topic, as Test 1) is < alpha.
6. Among (1-5) preference pairs, the lowest openness pairing (lowest O1 + O2, e.g. (0, 0)) should
   agree less than the other openness pairings. The paper's text does not say whether every or any
   Bonferroni-corrected comparison must be significant, so no rule is the paper's.
   `coherence.test6_rule`:
   - `strict` (default, our reading of the text): one one-sided Mann-Whitney U (lowest smaller)
     against each other pairing, Bonferroni over them; pass only if every corrected comparison is
     significant. Section 4.3: "whether the agreement score distribution for the lowest Openness
     pairing ... is smaller than the agreement scores for other pairings ... we compute each
     comparison separately, then perform a Bonferroni correction on a Mann-Whitney U test", and
     Finding #6: "all other pairings should yield higher agreement than this baseline". Pairings
     with fewer than MIN_GROUP conversations are left out (counted in the detail). Coherent agents
     whose agreement rises smoothly with openness rarely pass it, because neighbouring pairings
     ((0, 0) against (0, 1)) barely differ.
   - `pooled` (ours, not a reading of the text): one one-sided Mann-Whitney U of the lowest
     pairing's scores against the scores of all other (1-5) pairings together: pass if p < alpha.
   The reading "any Bonferroni-corrected comparison significant" stands beside either (`beside`),
   without a verdict of its own. The detail column counts the significant Bonferroni comparisons and
   the pairings whose mean lies above the lowest one's (the paper: 6 of 28); the `rule` column of
   Test 6 and vs_paper's Test 6 rows say which rule ran, a design difference from the paper either way.

For the one-sided tests (the U tests of 3 and 6, the permutation p of 1 and 5) a comparison whose estimate
(U / (n1 n2) - 1/2, or r) lies against the claim is judged on the one-sided p in that direction, so "fail" means
significant the other way.
Tests 3, 4 and 6 also report `significant` of `comparisons` (Bonferroni-corrected p < alpha; for Test
4 the paper's conversation-level comparisons).

Disagreement suppression (Table 3, section 4.1, "observed mean above the expected one at every gap
1-4"): per gap, observed minus expected mean, where the expected mean is a linear function of the
gap-0 mean (6 w + (1 - 2 w) mean_0 for shift weight w), tested one-sided by a t over the
conversations at that gap and at gap 0 (so the expected mean's own uncertainty counts) whose p is
simulated under no suppression (`suppression_null_p`), with at least MIN_SUPPRESSION conversations a
side; the claim holds when it holds at every gap 1-4 (socsim.stats.verdict.all_of). Finding 3's
directional claim, (1-1) pairs agree less than (5-5) pairs, is a one-sided Mann-Whitney U
(`finding3_verdict`, on socsim.coherence.analysis.descriptive.anchors).

A test says "degenerate input: <why>" (socsim.stats.degeneracy) instead of a verdict when its
inputs carry no information (this comes first, even when no conversation is left): one preference
value for >= 90% of a model's parsed preferences (Tests 1-4, 6, Table 3), one openness value for
>= 90% (Tests 5, 6), one final judge score for >= 90% of the conversations, a judge that misjudges
its held-out calibration examples, or final judgments that did not parse for >= UNPARSED_SHARE of
the judged conversations (every test, Table 3), or constant gaps, openness sums or scores. Fewer
unparsed final judgments are counted (`final_judgments`) and noted under the tables. Too few
conversations is not degeneracy: it is "inconclusive (n = ..., needs ...)". A model without a single
usable conversation has every test "n/a" with the reason (no judged conversation, all removed by the
Self-BLEU filter), and so has a test whose groups are absent by design (one topic: no second
contentiousness level).
"""

from socsim.coherence.analysis.claims import CLAIMS
from socsim.coherence.analysis.evidence import Evidence, gather
from socsim.coherence.analysis.measures import (
    DEFAULT_STEEPNESS,
    SCORES,
    conversation_table,
    expected_distributions,
    filter_repetitive,
    finish_table,
    paper_suppression,
    self_bleu_table,
    shift_weight,
    suppression,
    suppression_t,
    suppression_test,
)
from socsim.coherence.analysis.report import analyse
from socsim.coherence.analysis.tests import (
    MIN_CORRELATION,
    MIN_GROUP,
    TEST6_ANY_LABEL,
    TEST6_RULE_LABELS,
    TEST_NAMES,
    correlation_test,
    six_tests,
    spec_of_test,
    test2,
    test3,
    test4,
    test6,
    with_verdicts,
)

__all__ = [
    "CLAIMS",
    "DEFAULT_STEEPNESS",
    "MIN_CORRELATION",
    "MIN_GROUP",
    "SCORES",
    "TEST6_ANY_LABEL",
    "TEST6_RULE_LABELS",
    "TEST_NAMES",
    "Evidence",
    "analyse",
    "conversation_table",
    "correlation_test",
    "expected_distributions",
    "filter_repetitive",
    "finish_table",
    "gather",
    "paper_suppression",
    "self_bleu_table",
    "shift_weight",
    "six_tests",
    "spec_of_test",
    "suppression",
    "suppression_t",
    "suppression_test",
    "test2",
    "test3",
    "test4",
    "test6",
    "with_verdicts",
]
