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

import numpy as np
import pandas as pd
import yaml

from socsim.debate import analysis
from socsim.debate.schemas import COMPARISON_ENCODER, COMPARISON_TABLES, METRICS, SETTING
from socsim.io import tables
from socsim.io.parquet import write_json
from socsim.io.report import AnalysisInputs
from support.analysis import inputs
from support.project import ROOT

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


STANCES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
PAPER = yaml.safe_load((ROOT / "data/debate/paper.yaml").read_text())


def by_session_rows(rng: np.random.Generator, debates: int, gap: float = 0.0, longer: float = 0.0) -> pd.DataFrame:
    """Per-debate metrics of modes 1-3: S_sem falls by `gap` per mode; LLM longer by `longer` words."""
    rows = []
    for s in range(debates):
        base = rng.normal(0.4, 0.05)
        for mode in (1, 2, 3):
            rows.append(
                {
                    "model": "m",
                    "mode": mode,
                    "ablation": "original",
                    "topic_set": "depth",
                    "session_id": f"S{s}",
                    "s_sem": base - gap * mode + rng.normal(0, 0.02),
                    "d_signed_len": -longer + rng.normal(0, 5.0),
                }
            )
    return pd.DataFrame(rows)


def random_inputs(rng: np.random.Generator, groups: int, stance: float | None = None, on_topic_all: bool = False):
    """(metrics, tables, dp, paper, run, by_session) of a run of model "m", modes 1-3, Depth: real
    values everywhere, or a stance annotator answering `stance` for every utterance."""
    sessions, part, tweets, sim, ann, hann = [], [], [], [], [], []
    base = {"model": "m", "ablation": "original", "topic_set": "depth"}
    for g in range(groups):
        sid = f"S{g:02d}"
        sessions.append({"session_id": sid, "topic_set": "depth", "topic_dir": f"T{g % 7}", "reverse": g % 2 == 1})
        workers = [f"{sid}w{i}" for i in range(4)]
        for i, w in enumerate(workers):
            o = rng.choice(STANCES)
            part.append({"session_id": sid, "worker_id": w, "o_init": o, "o_final": rng.choice(STANCES)})
            tweets.append({"session_id": sid, "round": 1, "worker_id": w, "partner_id": workers[i ^ 1]})
            for r in (1, 2, 3):
                hann.append(
                    {
                        "session_id": sid,
                        "round": r,
                        "kind": "tweet",
                        "speaker": w,
                        "stance": rng.choice(STANCES),
                        "on_topic": None,
                    }
                )
                hann.append(
                    {
                        "session_id": sid,
                        "round": r,
                        "kind": "utterance",
                        "speaker": w,
                        "stance": stance if stance is not None else rng.choice(STANCES),
                        "on_topic": bool(rng.random() < 0.7),
                    }
                )
            sim.append(
                {
                    **base,
                    "mode": 3,
                    "session_id": sid,
                    "round": 4,
                    "kind": "opinion",
                    "speaker": w,
                    "opinion": rng.choice(STANCES),
                }
            )
            for mode in (1, 2, 3):
                for r in (1, 2, 3):
                    ann.append(
                        {
                            **base,
                            "mode": mode,
                            "session_id": sid,
                            "round": r,
                            "kind": "utterance",
                            "speaker": w,
                            "stance": stance if stance is not None else rng.choice(STANCES),
                            "on_topic": True if on_topic_all else bool(rng.random() < 0.7),
                        }
                    )
            for r in (2, 3):
                ann.append(
                    {
                        **base,
                        "mode": 3,
                        "session_id": sid,
                        "round": r,
                        "kind": "tweet",
                        "speaker": w,
                        "stance": rng.choice(STANCES),
                        "on_topic": None,
                    }
                )
    by_session = by_session_rows(rng, groups, gap=0.06, longer=10.0).assign(
        session_id=lambda d: [f"S{int(s[1:]):02d}" for s in d.session_id],
        d_stance=1.0,
        d_abs_len=12.0,
        rouge_l=0.1,
        r_on_topic=0.7,
        n_used=5,
    )
    agg = by_session.groupby(["model", "mode", "ablation", "topic_set"], as_index=False)[
        [*analysis.METRICS, "n_used"]
    ].mean()
    agg = agg.assign(n_sim=12 * groups, n_on_topic=9 * groups, n_excluded=0)
    metrics = pd.concat(
        [agg.assign(on_topic_filter="annotated"), agg.assign(on_topic_filter="none")], ignore_index=True
    )
    tables = {
        "sessions": pd.DataFrame(sessions),
        "participants": pd.DataFrame(part),
        "tweets": pd.DataFrame(tweets),
        "simulated": pd.DataFrame(sim),
        "annotations": pd.DataFrame(ann),
        "human_annotations": pd.DataFrame(hann),
    }
    dp = {"agent_models": ["m"], "length_unit": "words", "group_sd_ddof": 1}
    run = analysis.RunDesign.from_provenance(
        {"data": {"source": "fixture"}},
        {"params": {"debate.annotator": {"model": "m"}}},
        {"model": "sentence-transformers/all-MiniLM-L6-v2", "human_on_topic": "annotate"},
    )
    return metrics, tables, dp, PAPER, run, by_session


def two_models(rng: np.random.Generator, groups: int, second: str = "b", same: bool = False):
    """random_inputs with a second agent model `second` (listed after "m") on the same sessions: its twins'
    tweets and opinions those of "m" (`same`), or its own: random round-2 tweets and final opinions and
    round-3 tweets all at one level (its groups converge from round 2 to 3); its utterance metrics those
    of "m"."""
    metrics, tables, dp, paper, run, by_session = random_inputs(rng, groups)

    def copied(df: pd.DataFrame) -> pd.DataFrame:
        return pd.concat([df, df[df.model == "m"].assign(model=second)], ignore_index=True)

    ann, sim = tables["annotations"], tables["simulated"]
    own_ann = ann[(ann.model == "m") & (ann.kind == "tweet")].assign(model=second)
    own_sim = sim[(sim.model == "m") & (sim.kind == "opinion")].assign(model=second)
    if not same:
        own_ann = own_ann.assign(stance=np.where(own_ann["round"] == 3, STANCES[3], rng.choice(STANCES, len(own_ann))))
        own_sim = own_sim.assign(opinion=rng.choice(STANCES, len(own_sim)))
    tables = {
        **tables,
        "annotations": pd.concat([ann, own_ann], ignore_index=True),
        "simulated": pd.concat([sim, own_sim], ignore_index=True),
    }
    dp = {**dp, "agent_models": ["m", second]}
    return copied(metrics), tables, dp, paper, run, copied(by_session)
