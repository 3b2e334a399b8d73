"""Table 4 (pass / fail / n/a / degenerate input) and our run beside the paper's Tables 3 and 4
(`data/coherence/paper.yaml`, written through socsim.io.vs_paper)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from socsim.io.tables import tex_escape
from socsim.io.vs_paper import Row
from socsim.stats import degeneracy as dg

DEGENERATE = "degenerate input"


def _cell(result: str, detail: str) -> str:
    """The text a Table 4 cell stands for: the verdict, or n/a with its reason."""
    return f"n/a: {detail}" if result == "n/a" and detail else result


def table4(tests: pd.DataFrame) -> tuple[str, str, str]:
    """Table 4: pass/fail per agent model and test, as CSV, Markdown and LaTeX. A cell that is not
    a pass or a fail says why: the CSV holds the whole text ("degenerate input: ..." or "n/a: ..."),
    Markdown and LaTeX a short mark with a numbered note below the table."""
    tests = tests.assign(
        cell=[_cell(r, d if isinstance(d, str) else "") for r, d in zip(tests["result"], tests["detail"])]
    )
    wide = tests.pivot(index="model", columns="test", values="cell").reindex(columns=range(1, 7))
    csv = wide.reset_index().rename(columns={t: f"test{t}" for t in range(1, 7)}).to_csv(index=False)
    notes: list[str] = []

    def mark(cell: object, kind: str) -> str:
        if cell == "pass":
            return "✓" if kind == "md" else r"\checkmark"
        if cell == "fail":
            return "✗" if kind == "md" else r"$\times$"
        text = cell if isinstance(cell, str) else "n/a: not computed"
        if text not in notes:
            notes.append(text)
        short = DEGENERATE if text.startswith(DEGENERATE) else "n/a"
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
    md_text += "\nPass rules: see socsim.coherence.analysis (module docstring) and the README.\n"

    tex_text = "\n".join(tex) + "\n" + "".join(f"% {n}\n" for n in note_lines)
    if notes:
        tex_text += r"\par\footnotesize " + r" \\ ".join(tex_escape(n) for n in note_lines) + "\n"
    return csv, md_text, tex_text


def _paper_model(paper: dict[str, Any], model: str) -> tuple[str, dict[str, Any]] | tuple[None, None]:
    for name, entry in (paper.get("table4", {}).get("models") or {}).items():
        if model.lower() in [a.lower() for a in entry.get("aliases", [])] + [name.lower()]:
            return name, entry
    return None, None


def vs_paper_rows(
    tables: dict[str, pd.DataFrame], flags: dict[str, dict[str, list[dg.Flag]]], paper: dict[str, Any]
) -> list[Row]:
    """Per agent model: Table 3's distributions, the suppression numbers of section 4.1 and Table 4,
    ours beside the paper's, with whether the paper's finding holds (or why we cannot tell)."""
    rows: list[Row] = []
    supp, tests = tables["suppression"], tables["six_tests"]
    t3, sp = paper.get("table3", {}), paper.get("suppression", {})
    for model in sorted(set(tests["model"])):
        f = flags.get(model, {})
        degenerate = (
            dg.verdict(dg.collect(f.get("preferences", []), f.get("scores", []), f.get("calibration", [])), "") or None
        )
        lin = supp[(supp["model"] == model) & (supp["panel"] == "linear shift")].set_index("gap")
        sig = supp[(supp["model"] == model) & (supp["panel"] == "sigmoid shift")].set_index("gap")

        def val(table: pd.DataFrame, gap: int, col: str) -> float | None:
            if gap not in table.index or col not in table.columns:
                return None
            v = table.loc[gap, col]
            return None if pd.isna(v) else float(v)

        def note(table: pd.DataFrame, gap: int, degenerate: str | None = degenerate) -> str:
            n = val(table, gap, "n")
            text = table.loc[gap, "note"] if gap in table.index else "n/a: no suppression table"
            text = text if isinstance(text, str) else ""
            return (f"n = {int(n)}" if n is not None else "") + (f"; {text}" if text and not degenerate else "")

        for k in range(1, 6):
            rows.append(
                Row(
                    f"Table 3: P(score {k}) at gap 0, observed ({model})",
                    val(lin, 0, f"observed_p{k}"),
                    t3.get("observed_gap0", {}).get(k),
                    degenerate=degenerate,
                    note=note(lin, 0),
                )
            )
        for k in range(1, 6):
            rows.append(
                Row(
                    f"Table 3: P(score {k}) at gap 4, expected ({model})",
                    val(lin, 4, f"expected_p{k}"),
                    t3.get("expected_gap4", {}).get(k),
                    degenerate=degenerate,
                    note=note(lin, 4),
                )
            )
        rows.append(
            Row(
                f"Mean agreement at gap 4, observed ({model})",
                val(lin, 4, "observed"),
                sp.get("observed_mean_gap4"),
                degenerate=degenerate,
                note=note(lin, 4),
            )
        )
        rows.append(
            Row(
                f"Mean agreement at gap 4, expected ({model})",
                val(lin, 4, "expected"),
                sp.get("expected_mean_gap4"),
                degenerate=degenerate,
                note=note(lin, 4),
            )
        )
        finding = sp.get("finding", "disagreement suppressed")
        for label, table, key in (("linear", lin, "linear_difference"), ("sigmoid", sig, None)):
            for gap in (4, 3, 2, 1):
                d = val(table, gap, "difference")
                rows.append(
                    Row(
                        f"Observed - expected mean at gap {gap}, {label} shift ({model})",
                        d,
                        sp.get(key, {}).get(gap) if key else None,
                        finding,
                        None if d is None else d > 0,
                        degenerate,
                        note(table, gap),
                    )
                )
        for gap in (4, 3, 2, 1):
            rows.append(
                Row(
                    f"Suppression (observed / expected) at gap {gap}, linear shift ({model})",
                    val(lin, gap, "suppression"),
                    sp.get("linear_suppression", {}).get(gap),
                    degenerate=degenerate,
                    note=note(lin, gap),
                )
            )
        name, entry = _paper_model(paper, model)
        findings = paper.get("table4", {}).get("findings", {})
        for _, r in tests[tests["model"] == model].sort_values("test").iterrows():
            t = int(r["test"])
            ours = {"pass": 1.0, "fail": 0.0}.get(r["result"])
            theirs = None if entry is None else float(entry["tests"][t - 1])
            if entry is not None:
                text = f"{name} {'passes' if entry['tests'][t - 1] else 'fails'} Test {t}"
                holds = None if ours is None else (ours == theirs)
            elif t in findings:
                text, want = findings[t]["text"], findings[t]["expect"] == "pass"
                holds = None if ours is None else (ours == float(want))
            else:
                text, holds = "", None
            deg = r["result"] if str(r["result"]).startswith(DEGENERATE) else None
            why = "" if deg or ours is not None else f"n/a: {r['detail']}"
            rows.append(
                Row(
                    f"Table 4: Test {t} passed (1) or failed (0) ({model})",
                    ours,
                    theirs,
                    text,
                    holds,
                    deg,
                    why or ("paper has no row for this model" if entry is None else f"paper row: {name}"),
                )
            )
    return rows
