"""What each coherence figure draws (Figs. 4-8), panel by panel (socsim.io.report.Panel): the rows
of the analysis tables it plots, its note (the flags the report records on the table it draws, per
model, through Report.flags_on, the one way flags reach a panel; then its n: "n = 4 conversations: 2 at
gap 0, 2 at gap 4") and, where it has nothing to draw, why (the model's reason for having no data).
socsim.coherence.figures draws them. Built after the report's flags are recorded
(socsim.coherence.analysis.report.analyse).

Several agent models: Figs. 4 and 8 draw them in one panel, Figs. 5 (three panels a model), 6 (one)
and 7 (two) one row of panels per model, each panel named as its title's model part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import pandas as pd

from socsim.coherence.analysis import places
from socsim.coherence.schemas import FIGURES
from socsim.io.report import Panel, Report

SUPPRESSION_PANELS = ("linear shift", "sigmoid shift", "B = 2, linear shift")
NO_MODEL = "(no model)"
FlagsOn = Callable[..., list[str]]  # Report.flags_on: the flags recorded on any of the places given


def _n_text(n: int, what: str = "conversations") -> str:
    """ "n = 4 conversations", "n = 1 conversation" (socsim.io.report.n_range writes no singular)."""
    return f"n = {n} {what}" if n != 1 else f"n = 1 {what.removesuffix('s')}"


def flag_lines(flags_on: FlagsOn, table: str, models: Iterable[str]) -> list[str]:
    """A panel's flag lines: per model, the flags the report records on `table` for it (its place,
    places.of_model, where socsim.coherence.analysis.report.flag_inputs puts them), one line a model."""
    lines = ["; ".join(flags_on(places.of_model(table, m))) for m in models]
    return [line for line in dict.fromkeys(lines) if line]


def _n_lines(table: pd.DataFrame, models: Iterable[str], label: bool = True) -> list[str]:
    """ "n = 4 conversations" per model (one line each, with the model's name when `label`)."""
    out = []
    for m in models:
        rows = table[table["model"] == m] if len(table) and "model" in table.columns else table.iloc[:0]
        n = int(rows["n"].sum()) if len(rows) else 0
        out.append((f"{m}: " if label else "") + _n_text(n))
    return out


def _gap_n(g: pd.DataFrame) -> list[str]:
    """ "n = 4 conversations: 2 at gap 0, 2 at gap 4; no data at gaps 1, 2, 3"."""
    n = {int(r["gap"]): int(r["n"]) for _, r in g.iterrows() if pd.notna(r["n"])}
    have = [f"{k} at gap {gap}" for gap, k in sorted(n.items()) if k]
    empty = [str(gap) for gap in range(5) if not n.get(gap)]
    text = _n_text(sum(n.values())) + (": " + ", ".join(have) if have else "")
    if empty:
        text += f"; no data at gap{'s' if len(empty) > 1 else ''} " + ", ".join(empty)
    return [text]


def _models(*tables: pd.DataFrame, models: list[str] | None = None) -> list[str]:
    if models:
        return list(models)
    found = sorted({m for t in tables if "model" in t.columns for m in t["model"].dropna()})
    return found or [NO_MODEL]


def reasons(six_tests: pd.DataFrame | None) -> dict[str, str]:
    """Why a model has no data, from the six tests table (every test n/a with one reason)."""
    if six_tests is None or not len(six_tests):
        return {}
    out = {}
    for model, g in six_tests.groupby("model"):
        if "raw_result" in g and (g["raw_result"] == "n/a").all() and g["detail"].nunique() == 1:
            out[model] = str(g["detail"].iloc[0])
    return out


def _means(data: pd.DataFrame) -> bool:
    """Whether a table of bootstrap means has a mean to draw."""
    return bool(len(data)) and bool(data["boot_mean"].notna().any())


def _panel(name: str, data: pd.DataFrame, drawn: bool, note: list[str], why: str = "") -> Panel:
    """A panel with its rows where it draws any, else none and why."""
    return Panel(name, data if drawn else data.iloc[0:0], note, "" if drawn else why)


def fig4(by_gap: pd.DataFrame, models: list[str] | None, flags_on: FlagsOn) -> list[Panel]:
    """Fig. 4: agreement by preference gap, every model in one panel."""
    models = _models(by_gap, models=models)
    note = [*flag_lines(flags_on, "bootstrap_by_gap", models), *_n_lines(by_gap, models, len(models) > 1)]
    return [_panel("agreement by gap", by_gap, _means(by_gap), note)]


def fig5(supp: pd.DataFrame, models: list[str] | None, why: Mapping[str, str], flags_on: FlagsOn) -> list[Panel]:
    """Fig. 5: observed vs expected agreement per gap, one panel per model and shift ("m: linear shift")."""
    out = []
    for model in _models(supp, models=models):
        for panel in SUPPRESSION_PANELS:
            g = supp[(supp["model"] == model) & (supp["panel"] == panel)].sort_values("gap") if len(supp) else supp
            drawn = bool(len(g)) and bool(g[["observed", "expected"]].notna().any().any())
            note = [*flag_lines(flags_on, "suppression", [model]), *(_gap_n(g) if len(g) else [_n_text(0)])]
            out.append(_panel(f"{model}: {panel}", g, drawn, note, why.get(model, "")))
    return out


def _pair_ends(label: object) -> tuple[int, int] | None:
    try:
        lo, hi = (int(float(v)) for v in str(label).split("-"))
        return lo, hi
    except ValueError:
        return None


def fig6(by_pair: pd.DataFrame, models: list[str] | None, why: Mapping[str, str], flags_on: FlagsOn) -> list[Panel]:
    """Fig. 6: pairs anchored at 1 vs at 5 by gap, one panel per model (a pair anchored at both ends,
    (1, 5), has a row for each)."""
    rows = []
    for _, r in by_pair.iterrows():
        ends = _pair_ends(r["pref_pair"])
        for anchor in (1, 5):
            if ends and anchor in ends:
                rows.append({**r.to_dict(), "anchor": f"anchored at {anchor}"})
    data = pd.DataFrame(rows, columns=list(by_pair.columns) + ["anchor"])
    out = []
    for model in _models(by_pair, models=models):
        d = data[data["model"] == model]
        drawn = d.drop_duplicates("pref_pair")  # (1, 5) is anchored at both ends: counted once
        note = [*flag_lines(flags_on, "bootstrap_by_pref_pair", [model]), *_n_lines(drawn, [model], label=False)]
        out.append(_panel(model, d, _means(d), note, why.get(model, "")))
    return out


def fig7(
    by_pc: pd.DataFrame, by_pc_b2: pd.DataFrame, models: list[str] | None, why: Mapping[str, str], flags_on: FlagsOn
) -> list[Panel]:
    """Fig. 7: agreement per preference pair and contentiousness, all agents and B = 2, two panels per
    model ("m: (a) all agents"); the neutral (C = 1) interval is drawn as a band."""
    out = []
    tables = (
        (by_pc, "bootstrap_by_pref_pair_contentiousness", "(a) all agents"),
        (by_pc_b2, "bootstrap_by_pref_pair_contentiousness_b2", "(b) B = 2"),
    )
    for model in _models(by_pc, by_pc_b2, models=models):
        for table, name, title in tables:
            data = table[table["model"] == model]
            neutral = data[data["contentiousness"] == 1].dropna(subset=["lo", "hi"])
            drawn = bool(len(neutral)) or _means(data[data["contentiousness"] > 1])
            note = [*flag_lines(flags_on, name, [model]), *_n_lines(table, [model], label=False)]
            out.append(_panel(f"{model}: {title}", data, drawn, note, why.get(model, "")))
    return out


def fig8(by_open: pd.DataFrame, vs_base: pd.DataFrame, models: list[str] | None, flags_on: FlagsOn) -> list[Panel]:
    """Fig. 8: (a) agreement by O1 + O2, (b) the (1, 5) pairs' difference from the (0, 0) pairing."""
    models = _models(by_open, vs_base, models=models)
    many = len(models) > 1
    note_a = [*flag_lines(flags_on, "bootstrap_by_open_sum", models), *_n_lines(by_open, models, many)]
    b = vs_base.dropna(subset=["diff_from_0_0"]) if len(vs_base) else vs_base
    note_b = [*flag_lines(flags_on, "openness_vs_baseline", models), *_n_lines(vs_base, models, many)]
    return [
        _panel("(a) agreement by O1 + O2", by_open, _means(by_open), note_a),
        _panel(
            "(b) (1, 5) pairs: difference from the (0, 0) openness pairing",
            b,
            bool(len(b)),
            note_b,
            "no (1, 5) pairs at openness (0, 0)",
        ),
    ]


def plots(tables: Mapping[str, pd.DataFrame], rep: Report) -> dict[str, list[Panel]]:
    """Every figure's panels from the analysis tables, their notes' flags from `rep` (Report.flags_on:
    call it after the report's flags are recorded)."""
    tests = tables["six_tests"]
    models = sorted(set(tests["model"])) if len(tests) else None
    why = reasons(tests)
    supp, on = tables["suppression"], rep.flags_on
    by_c = tables["bootstrap_by_pref_pair_contentiousness"], tables["bootstrap_by_pref_pair_contentiousness_b2"]
    return dict(
        zip(
            FIGURES,
            (
                fig4(tables["bootstrap_by_gap"], models, on),
                fig5(supp, models, why, on),
                fig6(tables["bootstrap_by_pref_pair"], models, why, on),
                fig7(*by_c, models, why, on),
                fig8(tables["bootstrap_by_open_sum"], tables["openness_vs_baseline"], models, on),
            ),
        )
    )
