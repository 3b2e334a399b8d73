"""Synthetic per-simulation rows of the opinion-dynamics study, for tests whose answer is known: the one
builder of such rows (`row`): a design of one scope (`per_sim_rows`: the `per_sim` columns the paper's
tests and the findings read, one row per framing x bias level x topic, B and D drawn around given
means) or single rows with every per_sim column (`sim_row`). Also the findings per scope as the study's
claims judge them (`findings`: socsim.io.claims.judge_all over analysis.CLAIMS), an empty baseline table
(`NO_BASELINE`: the analysis' `baseline` input of a run without one) and every figure drawn from a
report's plot tables (`draw`, as the figures stage draws them)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from socsim.io import report
from socsim.io.claims import judge_all
from socsim.io.report import Finding, Report
from socsim.opinion_dynamics import analysis, figures
from socsim.opinion_dynamics.plot_layout import FIGURES
from support.analysis import plots

SCOPE = {"model": "m", "topology": "complete", "init": "uniform", "memory": "cumulative"}
NO_B = {"false": 0.0, "true": 0.0}
# the rest of a per_sim row (sim_row): Fig. 5's condition (global warming, positive start, no bias)
FULL = {
    "topic": "global_warming",
    "framing": "false",
    "bias": "none",
    "world": "closed",
    "init": "positive",
    "steps": 8,
    "B": -1.4,
    "D": 0.5,
    "D_pop": 0.5,
    "D_sample": 0.53,
    "never_measured": 2,
    "never_measured_share": 0.2,
    "flags": "",
    "final_flags": "",
}


def row(**kw: Any) -> dict[str, Any]:
    """One main-run row of the scope SCOPE (science, repetition 0, N = 10), overridden by `kw`."""
    return {"sim_id": "s", **SCOPE, "category": "science", "condition": "main", "rep": 0, "n_agents": 10} | kw


def sim_row(**kw: Any) -> dict[str, Any]:
    """A row with every per_sim column (FULL), overridden by `kw`."""
    return row(**(FULL | kw))


def per_sim_rows(
    rng: np.random.Generator,
    topics: int,
    d_of: Mapping[str, float],
    b_of: Mapping[str, float] = NO_B,
    d_sd: float = 0.3,
    b_sd: float = 0.5,
    topic_sd: float = 0.0,
    **scope: str,
) -> pd.DataFrame:
    """Rows of one scope (SCOPE, overridden by `scope`): for each framing ("false", "true"), bias level
    (the keys of `d_of`, in their order) and topic t0..: D = d_of[bias] + noise(d_sd), B = b_of[framing]
    + noise(b_sd). `topic_sd` > 0 adds one offset per topic to B and one to D, shared by every framing and
    bias level of the topic (the nuisance real runs have: a topic's simulations share its schedule and
    personas). Draws: the topic offsets (if any), then per row D's noise before B's."""
    where = SCOPE | scope
    prefix = ".".join(where[c] for c in SCOPE if c in scope)
    topic_d = rng.normal(0, topic_sd, topics) if topic_sd > 0 else np.zeros(topics)
    topic_b = rng.normal(0, topic_sd, topics) if topic_sd > 0 else np.zeros(topics)
    rows: list[dict[str, Any]] = []
    for f, b, i in product(["false", "true"], d_of, range(topics)):
        d = d_of[b] + topic_d[i] + rng.normal(0, d_sd)
        rows.append(
            row(
                sim_id=f"{prefix}.{f}.{b}.{i}" if prefix else f"{f}.{b}.{i}",
                **where,
                framing=f,
                bias=b,
                topic=f"t{i}",
                B=b_of[f] + topic_b[i] + rng.normal(0, b_sd),
                D=d,
                D_pop=d,
            )
        )
    return pd.DataFrame(rows)


KINDS = {  # what names each finding of a scope in its claim
    "false_negative": "B < 0 under false framing",
    "true_higher": "B higher under true framing",
    "d_rises": "D rises with confirmation bias",
}


def _scope_of(claim: str) -> tuple[str, ...]:
    """A finding's scope key (model, topology, start, memory) from the label its claim ends with:
    "(<model>, <memory>, <topology>[, <start> start])", after the levels of "D rises" ("... < ...; ")."""
    label = claim.rsplit("(", 1)[1].rstrip(")").split("; ")[-1]
    model, memory, topology, *start = label.split(", ")
    return (model, topology, start[0].removesuffix(" start") if start else "uniform", memory)


def findings(
    ps: pd.DataFrame,
    paper: Mapping[str, Any],
    flags: analysis.measures.Flags | None = None,
    alpha: float = 0.05,
) -> dict[tuple[str, ...], dict[str, Finding]]:
    """Per scope (model, topology, start, memory): its findings by kind (KINDS), as the study's claims
    judge them on these per_sim rows (judge_all over analysis.CLAIMS; the paper's tests from `ps`)."""
    ev = analysis.Evidence(ps, paper, alpha, flags or {})
    out: dict[tuple[str, ...], dict[str, Finding]] = {}
    for _, j in judge_all(analysis.CLAIMS, ev):
        for f in j.findings:
            kind = next((k for k, words in KINDS.items() if words in f.claim), None)
            if kind is not None:
                out.setdefault(_scope_of(f.claim), {})[kind] = f
    return out


NO_BASELINE = pd.DataFrame(columns=["sim_id", "baseline", "agent", "t", "opinion"])  # no baseline run


def draw(rep: Report, out: Path) -> list[str]:
    """Every figure of the report, drawn as the figures stage draws them: from its written plot tables."""
    d = out / "analysis"
    report.write(rep, d)
    return figures.draw(plots(d, FIGURES), out)
