"""A paper finding's identity: declared once per study, as data, and named by every claim that speaks to it.

A study declares its paper's findings (`PaperFinding`: a stable id, the paper's wording, the paper version and
place that state it, the paper's own result in words; for paper 000, whose two versions state related findings,
the counterpart in the other version and what differs) in its `findings` module, as `FINDINGS`. Every
`socsim.io.report.Finding` it writes names one of those ids, with typed fields for whom it was judged on
(`Scope`: one registry model, all models together, or the humans of a named data set) and its part (a memory and
topology, a topic set, a strategy; "" for the whole finding). The scorecard joins sources on (study, id, part) and
reads scopes as columns, never the claim's wording (which stays for people to read).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

ScopeKind = Literal["model", "all", "humans"]
ALL_MODELS = "the models together"  # (a column's name: never "all models", which read as every model alone)


@dataclass(frozen=True)
class Scope:
    """Whom a finding was judged on: one registry model (`name` its registry name), the source's models together
    (`all`), or the humans of a data set (`name` names the data: "DEBATE (real)", "fixture (synthetic)",
    "synthetic humans (planted control)")."""

    kind: ScopeKind
    name: str

    def __post_init__(self) -> None:
        if self.kind not in ("model", "all", "humans"):
            raise ValueError(f"a finding's scope is a model, all models or humans, not {self.kind!r}")
        if not self.name:
            raise ValueError(f"a {self.kind} scope needs a name")

    @classmethod
    def model(cls, name: str) -> Scope:
        return cls("model", str(name))

    @classmethod
    def all_models(cls) -> Scope:
        return cls("all", ALL_MODELS)

    @classmethod
    def humans(cls, data: str) -> Scope:
        return cls("humans", str(data))

    @property
    def label(self) -> str:
        """How a reader sees it: the model's name, "the models together", or "humans (<data>)"."""
        return f"humans ({self.name})" if self.kind == "humans" else self.name


@dataclass(frozen=True)
class PaperFinding:
    """One finding as a paper states it."""

    id: str  # stable, unique across studies: "<study prefix>.<name>", e.g. "fac.toxicity_lowered"
    wording: str  # the finding as the paper states it (the scorecard's row)
    version: str  # the paper version that states it, e.g. "paper-era", "revised", "v4"
    where: str  # the place in that version: "Finding 1; Table 2", "Sect. 6, Fig. 2a"
    paper: str  # the paper's own result, in words: "holds (every strategy below No Moderator, p < .001)"
    counterpart: str = ""  # the id of a related finding in another version of the paper
    differs: str = ""  # what differs from the counterpart (test, reference condition, measure)
    across_models: bool = False  # it compares the models ("Qwen has the highest diversity"): judged on them together
    against_humans: bool = False  # it compares each model with people (its parts: the models): the humans' column
    # A claim of no difference (judged by socsim.stats.verdict.no_difference): on a null it holds at the rate of its
    # power, not at alpha, so the null twin's allowance leaves it out and reports it beside (scorecard.null_lines).
    no_difference: bool = False
    # A claim of any difference (an F test, a two-sided t: socsim.stats.verdict.effect without a direction): on a null
    # it holds at alpha, twice a directional claim's one-sided rate, so the null twin's allowance counts it apart.
    any_difference: bool = False

    def __post_init__(self) -> None:
        if self.no_difference and self.any_difference:
            raise ValueError(f"{self.id}: a claim of no difference or of any difference, not both")
        if not self.id or "." not in self.id or " " in self.id:
            raise ValueError(f"a finding id is '<prefix>.<name>' without spaces, not {self.id!r}")
        if self.counterpart and not self.differs:
            raise ValueError(f"{self.id}: a counterpart ({self.counterpart}) needs what differs from it")


@functools.cache
def study_findings(study: str) -> Mapping[str, PaperFinding]:
    """The findings a registered study declares (`socsim.<study>.findings.FINDINGS`), by id (read once; read-only)."""
    module = importlib.import_module(f"socsim.{study}.findings")
    return MappingProxyType(catalogue(module.FINDINGS))


def catalogue(findings: Iterable[PaperFinding]) -> dict[str, PaperFinding]:
    """Findings by id, each declared once, every counterpart declared and naming it back."""
    out: dict[str, PaperFinding] = {}
    for f in findings:
        if f.id in out:
            raise ValueError(f"the finding {f.id} is declared twice")
        out[f.id] = f
    for f in out.values():
        if f.counterpart:
            other = out.get(f.counterpart)
            if other is None or other.counterpart != f.id:
                raise ValueError(f"{f.id} names {f.counterpart} as its counterpart, which does not name it back")
    return out


def undeclared(ids: Iterable[str], declared: Mapping[str, PaperFinding]) -> list[str]:
    """The ids among `ids` that `declared` does not hold, sorted."""
    return sorted({i for i in ids if i not in declared})
