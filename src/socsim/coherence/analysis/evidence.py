"""Everything the coherence study's claims are judged on, computed once (`gather`): every measured
table, the summary, the flags of each model's inputs and of each test's, the six tests' outcomes and
what our run did (for vs_paper's design differences). Measures, not verdicts: each claim's judge
(socsim.coherence.analysis.claims) gives its own verdict from them. The tables that show a verdict
(six_tests, suppression) get it from the same functions (socsim.coherence.analysis.tests)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from socsim.coherence.analysis import descriptive
from socsim.coherence.analysis import measures as ms
from socsim.coherence.analysis import tests as ts
from socsim.coherence.analysis.flags import (
    TABLE_INPUTS,
    flags_of,
    flags_per_test,
    input_flags,
    unparsed_flags,
    with_flags,
)
from socsim.io.report import AnalysisInputs
from socsim.stats import degeneracy as dg

ModelFlags = dict[str, list[dg.Flag]]  # input ("preferences", "scores", ...) -> its flags


@dataclass
class Evidence:
    """What `gather` computed: the agent models, the tables by name, the summary (summary.json), per
    model the flags of its inputs (`flags`), each test's outcome before its flags (`tests`) and the
    flags of its inputs (`test_flags`), our run's design (`design`), the verdicts' alpha
    (coherence.alpha) and the paper's numbers."""

    models: list[str]
    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, ModelFlags] = field(default_factory=dict)
    tests: dict[str, dict[int, ts.TestRow]] = field(default_factory=dict)
    test_flags: dict[str, dict[int, list[dg.Flag]]] = field(default_factory=dict)
    design: dict[str, dict[str, Any]] = field(default_factory=dict)
    alpha: float = 0.01
    paper: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Inputs:
    """The inputs of one run, joined and filtered once."""

    all_conv: pd.DataFrame  # every judged conversation with usable profiles
    df: pd.DataFrame  # those left by the Self-BLEU filter
    pairs: pd.DataFrame
    profiles: pd.DataFrame
    calibration: pd.DataFrame | None
    finals: pd.DataFrame  # descriptive.final_judgments
    cp: Mapping[str, Any]
    seed: int
    alternative: Any  # the paper's (gap-0, gap-4) distributions for Test 2's power, or None


def _no_data_reason(model: str, x: _Inputs, g: pd.DataFrame) -> str | None:
    """Why a model has no usable conversation (None: it has some)."""
    n_pairs, n_judged = int((x.pairs["model"] == model).sum()), int((x.all_conv["model"] == model).sum())
    if n_pairs == 0:
        return "no agent pairs (no two agents with parsed profiles)"
    if n_judged == 0:
        return f"none of {n_pairs} conversations has a parsed final judgment and usable profiles"
    if len(g) == 0:
        return f"all {n_judged} conversations removed by the Self-BLEU filter (threshold {x.cp['self_bleu_threshold']})"
    return None


def _one_model(model: str, x: _Inputs, ev: Evidence) -> tuple[pd.DataFrame, list[pd.DataFrame], str | None]:
    """One agent model's six tests and suppression tables (its flags and tests' outcomes into `ev`)."""
    cp, boot = x.cp, x.cp["bootstrap"]
    g = x.df[x.df["model"] == model]
    reason = _no_data_reason(model, x, g)
    ev.flags[model] = input_flags(x.profiles, x.all_conv, x.calibration, model)
    ev.flags[model]["judgments"] = unparsed_flags(x.finals[x.finals["model"] == model].iloc[0], model)
    tests = ts.outcomes(g, cp["alpha"], cp["test6_rule"], reason, scope=model, alternative=x.alternative, seed=x.seed)
    ev.tests[model] = tests
    ev.test_flags[model] = ts.found_flags(tests, flags_per_test(ev.flags[model]))
    t = ts.tests_table(tests, ev.test_flags[model], cp["test6_rule"])
    table3 = flags_of(ev.flags[model], TABLE_INPUTS["suppression"])
    supp = []
    for panel, shift, b2 in ms.PANELS:
        data = g[g["both_b2"]] if b2 else g
        part = ms.suppression(data, shift, boot, x.seed, cp["sigmoid_steepness"]).assign(model=model, panel=panel)
        if table3 or reason:
            part["note"] = dg.verdict(table3, f"n/a: {reason}")
        supp.append(ts.with_verdicts(part, cp["alpha"], table3)[0])
    return t.assign(model=model), supp, reason


def _summary(ev: Evidence, x: _Inputs, removed: int, notes: Mapping[str, str | None]) -> dict[str, Any]:
    models, cp, df, all_conv = ev.models, x.cp, x.df, x.all_conv
    removed_by_model = {m: int((all_conv["model"] == m).sum() - (df["model"] == m).sum()) for m in models}
    judged_by_model = {m: int((all_conv["model"] == m).sum()) for m in models}
    return {
        "conversations": int(len(df)),
        "removed_by_self_bleu": removed,
        "removed_by_self_bleu_by_model": removed_by_model,
        "self_bleu_threshold": cp["self_bleu_threshold"],
        "test6_rule": cp["test6_rule"],
        "test6_rule_label": ts.TEST6_RULE_LABELS[cp["test6_rule"]],
        "sigmoid_steepness": cp["sigmoid_steepness"],
        "models": models,
        "tests_passed": {
            m: sorted(int(t) for t in g.loc[g["result"] == "pass", "test"])
            for m, g in ev.tables["six_tests"].groupby("model")
        },
        "no_data": {m: r for m, r in notes.items() if r},
        "judged_by_model": judged_by_model,
        "removed_by_self_bleu_share_by_model": {
            m: removed_by_model[m] / judged_by_model[m] if judged_by_model[m] else None for m in models
        },
        "final_judgments": {
            str(r["model"]): {k: int(r[k]) for k in descriptive.FINAL_COLUMNS[1:]} for _, r in x.finals.iterrows()
        },
    }


def _bleu(utterances: pd.DataFrame | None) -> pd.DataFrame:
    if utterances is None:
        return pd.DataFrame(columns=["model", "agent_id", "self_bleu"])
    return ms.self_bleu_table(utterances)


def gather(inputs: AnalysisInputs) -> Evidence:
    """Every table and measure of the analysis from the inputs (tables agents, profiles, pairs,
    judgments, and utterances and calibration where given; no model calls)."""
    agents, profiles, pairs, judgments = (inputs[k] for k in ("agents", "profiles", "pairs", "judgments"))
    utterances, calibration = inputs.tables.get("utterances"), inputs.tables.get("calibration")
    cp, seed, paper = inputs.params, inputs.seed, inputs.paper
    all_conv = ms.conversation_table(agents, profiles, pairs, judgments)
    bleu = _bleu(utterances)
    df, removed = ms.filter_repetitive(all_conv, bleu, cp["self_bleu_threshold"])
    models = ms.models_of(profiles, pairs)
    finals = descriptive.final_judgments(pairs, judgments, models)
    alternative = ms.paper_suppression(dict(paper)) if paper else None
    x = _Inputs(all_conv, df, pairs, profiles, calibration, finals, cp, seed, alternative)
    groupings = {f"bootstrap_{k}": v for k, v in ms.groupings(df, cp["bootstrap"], seed).items()}
    ev = Evidence(models, groupings, alpha=cp["alpha"], paper=paper)
    tests: list[pd.DataFrame] = []
    supp: list[pd.DataFrame] = []
    notes: dict[str, str | None] = {}
    for model in models:
        t, parts, notes[model] = _one_model(model, x, ev)
        tests.append(t)
        supp += parts
    tables = ev.tables
    tables["suppression"] = (
        pd.concat(supp, ignore_index=True)
        if supp
        else pd.DataFrame(columns=ms.SUPPRESSION_COLUMNS + ["model", "panel", *ms.SUPPRESSION_EXTRA])
    )
    tables["six_tests"] = (
        pd.concat(tests, ignore_index=True) if tests else pd.DataFrame(columns=ts.TEST_COLUMNS + ["model"])
    )
    tables["openness_vs_baseline"] = ms.openness_vs_baseline(tables["bootstrap_by_open_pair_1_5"])
    tables |= ms.descriptive_tables(df, tables, bleu, finals, cp["self_bleu_threshold"], models)
    for name, table_inputs in TABLE_INPUTS.items():
        if name != "suppression":
            tables[name] = with_flags(tables[name], ev.flags, table_inputs)
    tables["self_bleu"] = bleu
    tables["conversations"] = df
    ev.summary = _summary(ev, x, removed, notes)
    ev.design = {m: ms.design_of(m, all_conv, pairs, utterances) for m in models}
    return ev
