"""A paper claim as one small unit, and the one assembler of a study's `Report`.

A claim (`Claim`) is a name, where the paper makes it, and a `judge` function: given the study's
evidence (whatever its measures computed once: a dataclass of tables and numbers), it returns a
`Judgement`: its findings (socsim.io.report.Finding, each with a verdict by the one rule in
socsim.stats.verdict), its vs_paper rows, the flags it raises (each on the tables, rows and figure
panels it concerns, and no higher) and any tables of its own. A study lists its claims in the order
its report shows them; `assemble` judges each and adds what it returns to the study's base report
(its measured tables, summary and design differences), so every study's findings, vs_paper rows and
flags go through one place.

Adding a claim: write its judge function beside the study's other claims (its `claims` module),
append `Claim("name", judge, "Fig. 3")` to the study's `CLAIMS`, and test it on data whose answer is
known (docs/architecture.md, "Adding a claim").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from socsim.io import vs_paper
from socsim.io.report import Finding, Flagged, Report, Table

E = TypeVar("E")


@dataclass
class Judgement:
    """What one claim returns: findings, vs_paper rows, flags (where they apply) and its own tables."""

    findings: list[Finding] = field(default_factory=list)
    rows: list[vs_paper.Row] = field(default_factory=list)
    flags: list[Flagged] = field(default_factory=list)
    tables: dict[str, Table] = field(default_factory=dict)

    def __add__(self, other: Judgement) -> Judgement:
        return Judgement(
            [*self.findings, *other.findings],
            [*self.rows, *other.rows],
            [*self.flags, *other.flags],
            _merged_tables(self.tables, other.tables, "a judgement"),
        )


@dataclass(frozen=True)
class Claim(Generic[E]):
    """One paper claim: `judge(evidence)` returns its `Judgement`."""

    name: str  # short and unique within the study, e.g. "toxicity_by_strategy"
    judge: Callable[[E], Judgement]
    where: str = ""  # where the paper makes it, e.g. "Fig. 3", "Sect. 6.2"


def _merged_tables(a: Mapping[str, Table], b: Mapping[str, Table], into: str) -> dict[str, Table]:
    clash = sorted(set(a) & set(b))
    if clash:
        raise ValueError(f"{into}: table(s) {', '.join(clash)} written twice")
    return {**a, **b}


def judge_all(claims: Iterable[Claim[E]], evidence: E) -> list[tuple[Claim[E], Judgement]]:
    """Every claim judged on the same evidence, in order (names must be unique)."""
    claims = list(claims)
    names = [c.name for c in claims]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"claims named twice: {', '.join(dup)}")
    return [(c, c.judge(evidence)) for c in claims]


def assemble(base: Report, claims: Sequence[Claim[E]], evidence: E) -> Report:
    """The study's report: `base` (measured tables, summary, design differences, documents) with every
    claim's findings, vs_paper rows, flags and tables added in the claims' order. Returns `base`."""
    for claim, j in judge_all(claims, evidence):
        base.findings += j.findings
        base.vs_paper += j.rows
        for f in j.flags:
            base.flag(f.flag, *f.where)
        base.tables = _merged_tables(base.tables, j.tables, f"claim {claim.name}")
    return base
