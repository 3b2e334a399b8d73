"""The coherence study's report (socsim.io.report.Report): the measured tables with their notes and
flags, Table 4 and the summary (`base`); its claims' findings, vs_paper rows and flags added by
socsim.io.claims.assemble, then each input's flags on the tables resting on it, then every figure's plot
table, whose panel notes take their flags from the report (`analyse`, the study's one analysis
signature)."""

from __future__ import annotations

import pandas as pd

from socsim.coherence.analysis import places
from socsim.coherence.analysis.claims import CLAIMS
from socsim.coherence.analysis.evidence import Evidence, gather
from socsim.coherence.analysis.flags import TABLE_INPUTS, flags_of, unparsed_note
from socsim.coherence.analysis.plots import plots
from socsim.io.claims import assemble
from socsim.io.report import AnalysisInputs, Report, Table
from socsim.io.tables import tex_escape
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


DEGENERATE = "degenerate input"
INCONCLUSIVE = "inconclusive"


def _cell(result: str, detail: str) -> str:
    """The text a Table 4 cell stands for: the verdict, or n/a with its reason."""
    return f"n/a: {detail}" if result == "n/a" and detail else result


def table4(tests: pd.DataFrame) -> Table:
    """Table 4: pass / fail per agent model and test. A cell that is neither says why: the values
    (Parquet, CSV) hold the whole text ("inconclusive (...)", "degenerate input: ..." or "n/a: ..."),
    Markdown and LaTeX a short mark with a numbered note below the table."""
    tests = tests.assign(
        cell=[_cell(r, d if isinstance(d, str) else "") for r, d in zip(tests["result"], tests["detail"])]
    )
    wide = tests.pivot(index="model", columns="test", values="cell").reindex(columns=range(1, 7))
    df = wide.reset_index().rename(columns={t: f"test{t}" for t in range(1, 7)})
    df.columns.name = None
    notes: list[str] = []

    def mark(cell: object, kind: str) -> str:
        if cell == "pass":
            return "✓" if kind == "md" else r"\checkmark"
        if cell == "fail":
            return "✗" if kind == "md" else r"$\times$"
        text = cell if isinstance(cell, str) else "n/a: not computed"
        if text not in notes:
            notes.append(text)
        short = next((s for s in (DEGENERATE, INCONCLUSIVE) if text.startswith(s)), "n/a")
        return f"{short} [{notes.index(text) + 1}]"

    md = ["| Model | " + " | ".join(f"Test {t}" for t in range(1, 7)) + " |", "|---" * 7 + "|"]
    tex = [
        r"\begin{tabular}{l" + "c" * 6 + "}",
        r"\hline",
        "Model & " + " & ".join(f"Test {t}" for t in range(1, 7)) + r" \\",
        r"\hline",
    ]
    for model, r in wide.iterrows():
        md.append(f"| {model} | " + " | ".join(mark(r[t], "md") for t in range(1, 7)) + " |")
        tex.append(str(model).replace("_", r"\_") + " & " + " & ".join(mark(r[t], "tex") for t in range(1, 7)) + r" \\")
    tex += [r"\hline", r"\end{tabular}"]
    note_lines = [f"[{i}] {n}" for i, n in enumerate(notes, 1)]
    md_text = "\n".join(md) + "\n\n" + "".join(f"{n}  \n" for n in note_lines)
    rules = sorted({r for r in tests.loc[tests["test"] == 6, "rule"] if r}) if "rule" in tests.columns else []
    rule_line = f"Test 6 rule: {'; '.join(rules)}." if rules else ""
    md_text += f"\n{rule_line}\n" if rule_line else ""
    md_text += (
        "\nPass rules: see socsim.coherence.analysis (module docstring) and docs/coherence.md. A pass needs a "
        "rejection in the claimed direction (Tests 2 and 4: no difference found with power >= 0.8); "
        "a fail a rejection the other way; anything else is inconclusive. Units: agents (Tests 1, 5) and "
        "topics (Test 4) by permutation, the paper's conversation-level p beside them.\n"
    )
    tex_text = "\n".join(tex) + "\n" + "".join(f"% {n}\n" for n in note_lines)
    tex_text += f"% {rule_line}\n" if rule_line else ""
    if notes:
        tex_text += r"\par\footnotesize " + r" \\ ".join(tex_escape(n) for n in note_lines) + "\n"
    return Table(df, "Table 4: the six tests per agent model", markdown=md_text, latex=tex_text)


# The tables whose notes say how many conversations had no usable final judgment.
NOTED = ("six_tests", "suppression", "conversations", "final_judgments")


def base(ev: Evidence) -> Report:
    """The report before its claims: every measured table (its title, the notes on conversations
    without a usable final judgment, the flags of its inputs), Table 4 and the summary."""
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
    rep.tables["table4_tests"] = table4(ev.tables["six_tests"])
    return rep


def flag_inputs(rep: Report, ev: Evidence) -> None:
    """Each model's input flags on the tables (and figures, and vs_paper rows) resting on them. Added
    after the claims' flags: a flag's places list the tests it concerns first, then the tables."""
    for model, f in ev.flags.items():
        for name, inputs in TABLE_INPUTS.items():
            for flag in flags_of(f, inputs):
                rep.flag(flag, *places.table(name, model))


def analyse(inputs: AnalysisInputs) -> Report:
    """The whole analysis as a report (socsim.io.report): tables agents, profiles, pairs, judgments,
    utterances (optional: Self-BLEU) and calibration (optional: the judge's calibration check); the
    params' coherence section; the paper's numbers (data/coherence/paper.yaml). Every table, Table 4,
    the findings, every flag with where it applies, vs_paper rows with their own flags, verdicts and
    design differences, the figures' plot tables and the stage's metrics."""
    ev = gather(inputs)
    rep = assemble(base(ev), CLAIMS, ev)
    flag_inputs(rep, ev)
    rep.plots = plots(ev.tables, rep)  # after every flag is recorded: the panels' notes show them
    rep.design = list(dict.fromkeys(d for r in rep.vs_paper for d in (r.design or [])))
    s = rep.summary
    rep.metrics = {
        "conversations": s["conversations"],
        "removed_by_self_bleu": s["removed_by_self_bleu"],
        "tests_passed": s["tests_passed"],
        "degeneracy_flags": len(rep.flags),
    }
    return rep
