"""Where the coherence analysis notes a flag: every place a flag's `where` names (socsim.io.report.Flagged,
summary.json's degeneracy_flags), declared once. The writers (report.flag_inputs, the claims) record flags
on these places, and the reader (plots, through Report.flags_on, the one way flags reach a panel) asks for
the same ones, so a place cannot be spelt one way where a flag is written and another where it is read.

A model's input flags sit on every table resting on those inputs (flags.TABLE_INPUTS), `<table> (<model>)`;
a table a figure draws (`DRAWS`) also names that figure, `<figure> (<model>)`, and each panel notes the
flags on the place of the table it draws. A test's flags sit on its rows of six_tests and Table 4 and on
its vs_paper rows.
"""

from __future__ import annotations

from socsim.coherence.schemas import FIGURES

FIG4, FIG5, FIG6, FIG7, FIG8 = FIGURES

# The tables each figure's panels draw (Fig. 5's three panels a model all draw `suppression`).
DRAWS: dict[str, tuple[str, ...]] = {
    FIG4: ("bootstrap_by_gap",),
    FIG5: ("suppression",),
    FIG6: ("bootstrap_by_pref_pair",),
    FIG7: ("bootstrap_by_pref_pair_contentiousness", "bootstrap_by_pref_pair_contentiousness_b2"),
    FIG8: ("bootstrap_by_open_sum", "openness_vs_baseline"),
}
DRAWN_BY = {table: figure for figure, tables in DRAWS.items() for table in tables}


def of_model(name: str, model: str) -> str:
    """One model's part of a table or a figure: `<name> (<model>)` (what a panel of that table asks for)."""
    return f"{name} ({model})"


def table(name: str, model: str) -> list[str]:
    """Where a model's input flags on a table go: the table, the figure drawing it, and for `suppression`
    (Table 3) its vs_paper rows."""
    where = [of_model(name, model)]
    if name in DRAWN_BY:
        where.append(of_model(DRAWN_BY[name], model))
    if name == "suppression":
        where.append(f"vs_paper: Table 3 and suppression rows ({model})")
    return where


def test(number: int, model: str) -> list[str]:
    """Where the flags of one test's inputs go: its rows of six_tests and Table 4, and its vs_paper row."""
    return [f"six_tests, table4_tests: Test {number} ({model})", f"vs_paper: Table 4 Test {number} ({model})"]
