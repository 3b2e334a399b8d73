"""The report contract: every study's analysis returns a `Report`; `write` puts it on disk.

A report holds named tables, findings (claim, statistic, test, unit, n, verdict by the one rule in
socsim.stats.verdict), flags (what, where, numbers) and vs_paper rows. `write` gives, in the
analysis directory:

- every table as `<name>.parquet` (canonical: figures and downstream code read it, via `read`),
  `.csv`, `.md` and `.tex` (socsim.io.tables, the one table writer);
- `findings.*` (one row per finding) and `vs_paper.*` (socsim.io.vs_paper, the one place that builds
  its rows' verdict and comparability);
- `summary.json` (the study's summary, plus `findings`, `degeneracy_flags` with where each flag
  applies, and `degenerate`), and any further JSON documents, all strict JSON;
- every figure's plot table as `plot_<figure>.parquet` (and `.csv`): the rows each panel draws, with the panel's name,
  its note (flags and n, already worded) and whether it has data (`Panel`, `plot_table`). Figures
  read only these (socsim.io.figures.panels) and import nothing from an analysis.

A flag sits on what it concerns: a table's flags on the `Table` (noted below it), a figure panel's in
its `Panel.note`, and the run's list of flags, each with the places it concerns, in summary.json.

Every study's analysis has one signature, `analyse(inputs: AnalysisInputs) -> Report`: its inputs by
name; the stage writes what it returns with `StageContext.write_report` (report, provenance, metrics).
Claims are judged and added to the report by `socsim.io.claims.assemble`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from socsim.io import tables, vs_paper
from socsim.io.findings import Scope
from socsim.io.parquet import write_json
from socsim.stats import degeneracy as dg
from socsim.stats.verdict import Verdict, with_rule

PLOT_COLUMNS = ["panel", "note", "has_data"]  # the first columns of every plot table
FINDING_COLUMNS = [
    "finding_id",
    "scope_kind",
    "scope",
    "part",
    "claim",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "test",
    "unit",
    "n",
    "verdict",
    "holds",
    "reason",
]


@dataclass
class Table:
    df: pd.DataFrame
    title: str
    notes: Sequence[str] = ()
    shown: pd.DataFrame | None = None  # the cells people read (formatted, flags in place of stars)
    markdown: str | None = None  # a hand-laid text form (e.g. a regression table), else generic
    latex: str | None = None
    flags: Sequence[dg.Flag] = ()  # flags of the table's inputs: noted below it


@dataclass
class Finding:
    claim: str  # what the paper says, e.g. "LLM facilitators lower toxicity"
    statistic: str  # what `value` is, e.g. "mean toxicity difference (facilitated - unmoderated)"
    value: float | None
    test: str  # the test that carries the claim, e.g. "Welch t over discussions, one-sided"
    unit: str  # its unit of analysis, e.g. "discussions"
    n: int | None
    verdict: Verdict
    ci: tuple[float, float] | None = None  # the 95 % interval of `value`, where the claim's test gives one
    # The paper finding it speaks to (socsim.io.findings: an id the study declares), whom it was judged on and
    # its part ("" for the whole finding): what the scorecard joins on, never the claim's wording. A finding is
    # built with its id where its test is; its scope may come later (`judged_on`), but none is written without.
    id: str = field(default="", kw_only=True)
    scope: Scope | None = field(default=None, kw_only=True)
    part: str = field(default="", kw_only=True)

    def judged_on(self, scope: Scope, part: str | None = None, claim: str | None = None) -> Finding:
        """This finding with its scope (and part, and the claim's wording for the study's own report) set."""
        return replace(
            self, scope=scope, part=self.part if part is None else part, claim=self.claim if claim is None else claim
        )

    @property
    def test_text(self) -> str:
        """`test` with the rule its verdict was judged by (sidedness and level: `Verdict.rule`), unless it says it."""
        return with_rule(self.test, self.verdict.rule)

    def as_dict(self) -> dict[str, Any]:
        if not self.id or self.scope is None:
            raise ValueError(f"a finding without its id or scope cannot be written: {self.claim!r}")
        return {
            "finding_id": self.id,
            "scope_kind": self.scope.kind,
            "scope": self.scope.name,
            "part": self.part,
            "claim": self.claim,
            "statistic": self.statistic,
            "value": self.value,
            "ci_low": self.ci[0] if self.ci else None,
            "ci_high": self.ci[1] if self.ci else None,
            "test": self.test_text,
            "unit": self.unit,
            "n": self.n,
            "verdict": self.verdict.label,
            "holds": self.verdict.holds,
            "reason": self.verdict.reason,
        }


@dataclass
class Flagged:
    flag: dg.Flag
    where: list[str] = field(default_factory=list)  # the tables, rows and figures it concerns

    def as_dict(self) -> dict[str, Any]:
        return {**self.flag.as_dict(), "where": list(self.where)}


@dataclass
class Panel:
    """One panel of a figure: the rows it draws, its note (flags of its inputs and its n, each line
    already worded, in red on the panel) and, where it has no rows, why (`no_data`)."""

    name: str
    data: pd.DataFrame
    note: Sequence[str] = ()
    no_data: str = ""  # the panel has nothing to draw: why (shown in its middle)


def n_range(counts: Sequence[int], unit: str) -> str:
    """ "n = 4 discussions per strategy" or "n = 2-8 ...": the smallest and largest group."""
    lo, hi = min(counts), max(counts)
    return f"n = {lo} {unit}" if lo == hi else f"n = {lo}-{hi} {unit}"


def plot_table(panels: Sequence[Panel]) -> pd.DataFrame:
    """A figure's plot table: each panel's rows with `panel`, `note` (lines joined by newlines) and
    `has_data` in front; a panel without rows is one row holding its note and why it has no data."""
    parts = []
    for p in panels:
        note = "\n".join(x for x in p.note if x)
        if len(p.data) and not p.no_data:
            parts.append(p.data.assign(panel=p.name, note=note, has_data=True))
        else:
            parts.append(pd.DataFrame({"panel": [p.name], "note": [note], "has_data": [False], "no_data": [p.no_data]}))
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=PLOT_COLUMNS)
    return df[PLOT_COLUMNS + [c for c in df.columns if c not in PLOT_COLUMNS]]


@dataclass(frozen=True)
class AnalysisInputs:
    """What every study's `analyse` receives, by name: its Parquet inputs as tables, the folders it
    reads (e.g. another stage's report), its params section, the paper's numbers, the run's seed,
    and each input artifact's provenance (where the data come from)."""

    tables: Mapping[str, pd.DataFrame]
    params: Mapping[str, Any]
    paper: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    provenance: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    dirs: Mapping[str, Path] = field(default_factory=dict)

    def __getitem__(self, name: str) -> pd.DataFrame:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no input table {name!r}; the stage reads {', '.join(self.tables)}") from None


@dataclass
class Report:
    title: str  # vs_paper's title, e.g. "Facilitation (paper 000): ours vs the paper"
    tables: dict[str, Table] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    flags: list[Flagged] = field(default_factory=list)  # the run's: summary's degeneracy_flags, `degenerate`
    local_flags: list[Flagged] = field(default_factory=list)  # flags of some rows or panels only (`flag(local=)`)
    vs_paper: list[vs_paper.Row] = field(default_factory=list)
    design: list[str] = field(default_factory=list)  # the run's design differences from the paper
    # The data are the paper's own (its released data): `design` then says how they differ from the
    # paper's text, and vs_paper calls its rows comparable (socsim.io.vs_paper).
    own_data: bool = False
    summary: dict[str, Any] = field(default_factory=dict)
    documents: dict[str, Any] = field(default_factory=dict)  # further JSON files: name -> value
    plots: dict[str, list[Panel]] = field(default_factory=dict)  # figure name -> its panels (plot_<name>)
    # What the stage records beside the files (StageContext.write_report): its DVC metrics, extra
    # provenance, and lines printed for the researcher (notes, flags).
    metrics: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    printed: list[str] = field(default_factory=list)

    def flag(self, flag: dg.Flag | None, *where: str, local: bool = False) -> None:
        """Record a flag and where it applies (merged with the same flag's earlier places). `local`: it
        concerns only those rows or panels (one simulation's own values, say), not the run: it is kept
        apart (`local_flags`, summary.json's `local_flags`) and does not make the run degenerate."""
        if flag is None:
            return
        kept = self.local_flags if local else self.flags
        for f in kept:
            if f.flag == flag:
                f.where += [w for w in where if w not in f.where]
                return
        kept.append(Flagged(flag, list(where)))

    def flags_on(self, *places: str) -> list[str]:
        """The messages of the flags recorded on any of `places` (a table, a row, a figure panel, as the
        flag's `where` names it), the run's then the local ones: what a panel's note says. The one way
        flags reach a figure."""
        found = [f.flag.message for f in (*self.flags, *self.local_flags) if set(places) & set(f.where)]
        return list(dict.fromkeys(found))

    @property
    def all_flags(self) -> list[dg.Flag]:
        return [f.flag for f in self.flags]


VERDICT_WORDS = ("holds", "no", "inconclusive", "degenerate")


def verdict_word(v: Verdict) -> str:
    """A verdict in one word: holds, no, inconclusive or degenerate (a degenerate input)."""
    if v.degenerate:
        return "degenerate"
    return "holds" if v.holds is True else "no" if v.holds is False else "inconclusive"


def claim_key(f: Finding) -> str:
    """A finding's key in the analyse stage's metrics (a column of `dvc exp show`): its finding id, whom it was
    judged on and its part, from its typed fields (the same key in every run that judges it)."""
    scope = f.scope.label if f.scope is not None else "?"
    return " ".join(x for x in (f.id, f"[{scope}]", f.part) if x)


def unique_keys(findings: Sequence[Finding]) -> list[str]:
    """The findings' keys (`claim_key`), refused where two findings share one: one finding judged twice on one
    scope and part (a study's error, stopped before anything is written)."""
    keys = [claim_key(f) for f in findings]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"findings judged twice on one scope and part: {', '.join(twice)}")
    return keys


def findings_metrics(findings: Sequence[Finding]) -> dict[str, Any]:
    """What experiments are compared on (the analyse stage's DVC metrics): the findings counted by verdict,
    and each finding's verdict and value (its statistic; the full claim, test and reason are in findings.csv)."""
    words = [verdict_word(f.verdict) for f in findings]
    keys = unique_keys(findings)
    return {
        "verdicts": {w: words.count(w) for w in VERDICT_WORDS},
        "claims": {
            k: {"verdict": w, "value": f.value if f.value is not None and math.isfinite(f.value) else None}
            for k, f, w in zip(keys, findings, words, strict=True)
        },
    }


def findings_table(findings: Sequence[Finding]) -> pd.DataFrame:
    unique_keys(findings)
    return pd.DataFrame([f.as_dict() for f in findings], columns=FINDING_COLUMNS).astype(
        {"value": "float64", "ci_low": "float64", "ci_high": "float64", "n": "Int64", "holds": "boolean"}
    )


def write(report: Report, out_dir: str | Path) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, t in report.tables.items():
        notes = [*t.notes, *(f.message for f in t.flags)]
        tables.write(t.df, out, name, t.title, notes, t.shown, t.markdown, t.latex)
    for name, panels in report.plots.items():
        tables.write(plot_table(panels), out, f"plot_{name}", "", text=False)
    if report.findings:
        tables.write(findings_table(report.findings), out, "findings", f"{report.title}: findings")
    if report.vs_paper:
        vs_paper.write(out, report.vs_paper, report.title, report.design, own_data=report.own_data)
    summary = {
        **report.summary,
        "findings": [f.as_dict() for f in report.findings],
        "degeneracy_flags": [f.as_dict() for f in report.flags],
        "degenerate": bool(report.flags),
        **({"local_flags": [f.as_dict() for f in report.local_flags]} if report.local_flags else {}),
        "design_differences": list(report.design),
    }
    write_json(out / "summary.json", summary)
    for name, value in report.documents.items():
        write_json(out / name, value)


def read(out_dir: str | Path, name: str) -> pd.DataFrame:
    """A report's table (its Parquet form): what figures and downstream code read."""
    return tables.read(out_dir, name)
