"""The coherence study's report (socsim.io.report.Report): the measured tables with their notes and
flags, Table 4, the summary and every figure's plot table (`base`); its claims' findings, vs_paper
rows and flags added by socsim.io.claims.assemble (`analyse`, the study's one analysis signature)."""

from __future__ import annotations

from socsim.coherence import compare
from socsim.coherence.analysis.claims import CLAIMS
from socsim.coherence.analysis.evidence import Evidence, gather
from socsim.coherence.analysis.flags import TABLE_INPUTS, flags_of, unparsed_note
from socsim.coherence.analysis.plots import plots
from socsim.io.claims import assemble
from socsim.io.report import AnalysisInputs, Report, Table
from socsim.stats import degeneracy as dg

TITLE = "Coherence (paper 001): our run beside the paper's Tables 3 and 4"

TITLES = {
    "bootstrap_by_gap": "Fig. 4: final agreement by preference gap (bootstrap means)",
    "bootstrap_by_gap_b2": "Final agreement by preference gap, both agents B = 2 (bootstrap means)",
    "bootstrap_by_pref_pair": "Fig. 6: final agreement by preference pair (bootstrap means)",
    "bootstrap_by_pref_pair_contentiousness": "Fig. 7a: agreement by preference pair and contentiousness",
    "bootstrap_by_pref_pair_contentiousness_b2": "Fig. 7b: agreement by preference pair and contentiousness, B = 2",
    "bootstrap_by_open_sum": "Fig. 8a: agreement by O1 + O2 (bootstrap means)",
    "bootstrap_by_open_pair_1_5": "(1-5) pairs: agreement by openness pairing (bootstrap means)",
    "openness_vs_baseline": "Fig. 8b: (1-5) pairs, each openness pairing minus (0, 0)",
    "suppression": "Table 3 / Fig. 5: observed vs expected agreement per gap, with the suppression test",
    "six_tests": "The six tests of section 4.3 per agent model (Table 4 in full)",
    "self_bleu": "Self-BLEU per agent (within its agent model)",
    "conversations": "Conversations used (after the Self-BLEU filter)",
    "anchors": "Fig. 6 / Finding 3: pairs anchored at 5 minus pairs anchored at 1, per gap",
    "contentiousness_vs_neutral": "Fig. 7: each preference pair at C = 2 and 3 against its neutral (C = 1) interval",
    "self_bleu_histogram": "Fig. 9a: agents per Self-BLEU range (bins of a third of the filter's threshold)",
    "final_judgments": "Final judgments per agent model: parsed, unparsed, empty window, not judged",
}


# The figure that draws each table (for the flags' `where`).
FIGURE_OF = {
    "bootstrap_by_gap": "fig4_agreement_by_gap",
    "bootstrap_by_pref_pair": "fig6_anchors",
    "bootstrap_by_pref_pair_contentiousness": "fig7_contentiousness",
    "bootstrap_by_pref_pair_contentiousness_b2": "fig7_contentiousness",
    "bootstrap_by_open_sum": "fig8_openness",
    "openness_vs_baseline": "fig8_openness",
    "suppression": "fig5_suppression",
}

# The tables whose notes say how many conversations had no usable final judgment.
NOTED = ("six_tests", "suppression", "conversations", "final_judgments")


def base(ev: Evidence) -> Report:
    """The report before its claims: every measured table (its title, the notes on conversations
    without a usable final judgment, the flags of its inputs), Table 4, the summary and the plots."""
    rep = Report(TITLE, summary=ev.summary)
    finals = ev.tables["final_judgments"]
    notes = [n for n in (unparsed_note(r) for _, r in finals.iterrows()) if n]
    for name, df in ev.tables.items():
        if name in TABLE_INPUTS:
            table_flags = dg.collect(*(flags_of(f, TABLE_INPUTS[name]) for f in ev.flags.values()))
        elif name == "six_tests":
            table_flags = dg.collect(*(fl for per in ev.test_flags.values() for fl in per.values()))
        else:
            table_flags = []
        rep.tables[name] = Table(df, TITLES.get(name, name), notes=notes if name in NOTED else [], flags=table_flags)
    rep.tables["table4_tests"] = compare.table4(ev.tables["six_tests"])
    rep.plots = plots(ev.tables)
    return rep


def flag_inputs(rep: Report, ev: Evidence) -> None:
    """Each model's input flags on the tables (and figures, and vs_paper rows) resting on them. Added
    after the claims' flags: a flag's places list the tests it concerns first, then the tables."""
    for model, f in ev.flags.items():
        for name, inputs in TABLE_INPUTS.items():
            where = [f"{name} ({model})"] + ([f"{FIGURE_OF[name]} ({model})"] if name in FIGURE_OF else [])
            if name == "suppression":
                where.append(f"vs_paper: Table 3 and suppression rows ({model})")
            for flag in flags_of(f, inputs):
                rep.flag(flag, *where)


def analyse(inputs: AnalysisInputs) -> Report:
    """The whole analysis as a report (socsim.io.report): tables agents, profiles, pairs, judgments,
    utterances (optional: Self-BLEU) and calibration (optional: the judge's calibration check); the
    params' coherence section; the paper's numbers (data/coherence/paper.yaml). Every table, Table 4,
    the findings, every flag with where it applies, vs_paper rows with their own flags, verdicts and
    design differences, the figures' plot tables and the stage's metrics."""
    ev = gather(inputs)
    rep = assemble(base(ev), CLAIMS, ev)
    flag_inputs(rep, ev)
    rep.design = list(dict.fromkeys(d for r in rep.vs_paper for d in (r.design or [])))
    s = rep.summary
    rep.metrics = {
        "conversations": s["conversations"],
        "removed_by_self_bleu": s["removed_by_self_bleu"],
        "tests_passed": s["tests_passed"],
        "degeneracy_flags": len(rep.flags),
    }
    return rep
