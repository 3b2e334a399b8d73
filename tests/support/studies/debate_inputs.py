"""The DEBATE analysis' inputs for tests: `analysis_inputs` gives what `analyse` receives in a run
(socsim.io.report.AnalysisInputs, built by support.analysis.inputs) from in-memory tables, utterance
metrics and a RunDesign: the comparison folder written to a temporary directory, the run's design as its
inputs' provenance."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from socsim.debate import analysis
from socsim.debate.schemas import COMPARISON_ENCODER, COMPARISON_TABLES, METRICS, SETTING
from socsim.io import tables
from socsim.io.parquet import write_json
from socsim.io.report import AnalysisInputs
from support.analysis import inputs

_SOURCE = {"fixture (synthetic)": "fixture", "DEBATE (real)": "hub"}
_TMP = Path(tempfile.mkdtemp(prefix="debate-inputs-"))
atexit.register(shutil.rmtree, _TMP, True)


def provenance(run: analysis.RunDesign) -> dict[str, dict[str, Any]]:
    """The provenance of `sessions` and `human_annotations` that RunDesign.from_provenance reads as `run`."""
    data = dict(run.data) or ({"source": _SOURCE[run.data_source]} if run.data_source in _SOURCE else {})
    annotator = {"model": run.annotator, "on_topic_prompt": run.on_topic_prompt}
    return {"sessions": {"data": data}, "human_annotations": {"params": {"debate.annotator": annotator}}}


def analysis_inputs(
    metrics: pd.DataFrame,
    tables_: Mapping[str, Any],
    dp: Mapping[str, Any],
    paper: Mapping[str, Any],
    run: analysis.RunDesign | None = None,
    by_session: pd.DataFrame | None = None,
) -> AnalysisInputs:
    """`analyse`'s inputs: the compare stage's `metrics` and `by_session` (None: no debate's metrics,
    an empty table) in a comparison folder with the encoder of `run` (default: nothing known), as the
    compare stage writes it; `tables_`, the paper's numbers `paper` and the debate params, the schema's
    defaults with `dp`'s keys in their place (support.analysis.inputs)."""
    run = run or analysis.RunDesign()
    d = Path(tempfile.mkdtemp(dir=_TMP))
    if by_session is None:
        by_session = pd.DataFrame(columns=[*SETTING, "session_id", *METRICS])
    tables.write(metrics, d, COMPARISON_TABLES[0], "utterance metrics")
    tables.write(by_session, d, COMPARISON_TABLES[1], "utterance metrics by debate")
    write_json(d / COMPARISON_ENCODER, {"model": run.encoder, "human_on_topic": run.human_on_topic})
    return inputs("debate", tables_, paper=paper, provenance=provenance(run), dirs={"comparison": d}, **dp)
