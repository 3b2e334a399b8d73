"""A study's analysis run on in-memory tables the way its stages run it:

- `inputs(study, tables, **params)`: the `socsim.io.report.AnalysisInputs` the study's `analyse` stage
  passes to `analysis.analyse` (StageContext.analysis_inputs), from tables given here instead of its
  Parquet inputs;
- `plots(folder, figures)`: every figure's panels, read back from a written report's plot tables
  (what the figures stage passes to the study's figures: StageContext.plots)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from socsim import config, studies
from socsim.context import StageContext
from socsim.io import report
from socsim.io.figures import panels
from socsim.io.report import AnalysisInputs, Panel
from socsim.io.vs_paper import read_paper
from support.project import ROOT


def inputs(
    study: str,
    tables: Mapping[str, pd.DataFrame],
    *,
    paper: Mapping[str, Any] | None = None,
    seed: int | None = None,
    provenance: Mapping[str, Mapping[str, Any]] | None = None,
    dirs: Mapping[str, Path] | None = None,
    **params: Any,
) -> AnalysisInputs:
    """What `<study>.analysis.analyse` receives in a run, built as the study's `analyse` stage builds it:

    - `tables` by name, as given;
    - the study's params section with every default of the params schema (`config.validate`), `params`
      overriding its keys (a nested mapping is merged into the defaults, e.g. `metrics={"ddof": 1}`), seen
      through the stage's view: reading a key the stage does not declare fails, as in a run;
    - the paper's numbers the stage loads (its `paper_file`), or `paper` in their place;
    - the run's seed (`seed`, default the schema's) if the stage declares it, else 0;
    - the inputs' `provenance` and the folder inputs (`dirs`, e.g. another stage's report) by name."""
    st = studies.study(study)
    stage = st.stage("analyse")
    values = config.validate({study: params, **({} if seed is None else {"seed": seed})})
    ctx = StageContext(st, stage, values, {})
    reads = any(d == study or d.startswith(study + ".") for d in stage.declared)
    if paper is None:
        paper = read_paper(ROOT / st.artifacts["paper_file"].path) if "paper_file" in stage.inputs else {}
    return AnalysisInputs(
        dict(tables),
        ctx.params[study] if reads else {},
        paper,
        ctx.seed if "seed" in stage.declared else 0,
        dict(provenance or {}),
        dict(dirs or {}),
    )


def plots(folder: Path, figures: Iterable[str]) -> dict[str, dict[str, Panel]]:
    """Each figure's panels (figure -> {panel: Panel}), from the plot tables of the report written in
    `folder` (socsim.io.figures.panels on each `plot_<figure>`)."""
    return {f: panels(report.read(folder, f"plot_{f}")) for f in figures}


def asked_places(monkeypatch: Any) -> set[str]:
    """Every place a panel asks the report for (Report.flags_on, the one way flags reach a panel), recorded
    from now on (`monkeypatch`: pytest's)."""
    asked: set[str] = set()
    real = report.Report.flags_on

    def flags_on(self: report.Report, *where: str) -> list[str]:
        asked.update(where)
        return real(self, *where)

    monkeypatch.setattr(report.Report, "flags_on", flags_on)
    return asked
