"""What the DEBATE analysis measures, once: the compare stage's utterance metrics, Sect. 6's members
and groups (Figs. 2 and 3), the humans' on-topic labels, Appendix H, and the degeneracy flags of each
input with the quantities they concern (InputFlags). `evidence` gathers them for the claims
(socsim.debate.analysis.claims) and the report.

Flags travel with their numbers: each quantity carries the flags of its own inputs only.

- stance annotator (utterances): one value for >= 90 % of the utterance stances -> Delta_stance;
- on-topic annotator: one value for >= 90 % of the on-topic labels that filter the utterances ->
  every metric of the paper's (on-topic) tables (the filter decides which utterances they compare);
- a setting where no simulated on-topic utterance has an on-topic human comparator -> that
  setting's pairwise metrics (not its on-topic rate);
- stance annotator (human tweets / twins' tweets, Sect. 6) -> the tweet quantities of Figs. 2 and 3
  whose tweets they are (the twins' round-1 tweet is the human's);
- the twins' final opinions (Sect. 6), one value for >= 90 % -> the twins' opinion quantities.

Sect. 6 is measured for each agent model (Twins); its twins' flags name the model when the run has several.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from socsim.debate.analysis import stats
from socsim.debate.analysis.design import PAPER_MODEL, RunDesign, union
from socsim.debate.analysis.tests import group_claims
from socsim.debate.schemas import COMPARISON_TABLES, OUTCOMES
from socsim.io import report
from socsim.io.report import AnalysisInputs, Finding
from socsim.stats import agreement
from socsim.stats import degeneracy as dg

TABLES = {"depth": ("table3", "table4"), "breadth": ("table9", "table10")}
PAPER_GROUPS = 31  # Sect. 6: paired t-tests with df = 30
INPUTS = ("sessions", "participants", "tweets", "human_utterances", "simulated", "annotations", "human_annotations")


def messages(flags: Iterable[dg.Flag]) -> str:
    return "; ".join(f.message for f in flags)


def cell_flags(by_metric: Mapping[str, list[dg.Flag]]) -> str:
    """A row's flags, each with the metrics it concerns: "d_stance: degenerate input: ..."."""
    where: dict[dg.Flag, list[str]] = {}
    for metric, flags in by_metric.items():
        for f in flags:
            where.setdefault(f, []).append(metric)
    return "; ".join(f"{', '.join(ms)}: {f.message}" for f, ms in where.items())


# ---------------------------------------------------------------------------------------------------
# The inputs' flags


@dataclass
class InputFlags:
    """The degeneracy flags of each input, and which quantities they concern."""

    stance_utterances: dg.Flag | None = None
    on_topic: dg.Flag | None = None
    no_comparator: dict[tuple[Any, ...], dg.Flag] = field(default_factory=dict)  # setting -> flag
    stance_tweets_human: dg.Flag | None = None
    stance_tweets_llm: dg.Flag | None = None
    opinions_llm: dg.Flag | None = None

    def metric(self, metric: str, setting: tuple[Any, ...], on_topic_filter: bool = True) -> list[dg.Flag]:
        """An utterance metric of one setting (model, mode, ablation, topic set)."""
        stance = self.stance_utterances if metric == "d_stance" else None
        if not on_topic_filter:
            return dg.collect(stance)
        if metric == "r_on_topic":
            return dg.collect(self.on_topic)
        return dg.collect(stance, self.on_topic, self.no_comparator.get(setting))

    def variable(self, source: str, var: str) -> list[dg.Flag]:
        """A Sect. 6 variable (s1..s3, o_init, o_final) of one source (human, llm)."""
        if var.startswith("s"):
            return dg.collect(self.stance_tweets_human if source == "human" or var == "s1" else self.stance_tweets_llm)
        return dg.collect(self.opinions_llm if source == "llm" and var == "o_final" else None)

    def test(self, quantity: str, test: str) -> list[dg.Flag]:
        """A change test of group_level / the model-written tests: the flags of the variables it reads."""
        return union(self.variable(s, v) for s, v in test_vars(quantity, test))

    @property
    def all(self) -> list[dg.Flag]:
        return dg.collect(
            self.stance_utterances,
            self.on_topic,
            list(self.no_comparator.values()),
            self.stance_tweets_human,
            self.stance_tweets_llm,
            self.opinions_llm,
        )


def utterance_flags(
    annotations: pd.DataFrame, human_annotations: pd.DataFrame, metrics: pd.DataFrame, human_on_topic: str
) -> InputFlags:
    """The utterance-level flags: the stance and on-topic labels of the utterances the metrics
    compare (the humans' on-topic labels only when annotated), and settings without a comparator."""
    sim_u = annotations[annotations.kind == "utterance"]
    hum_u = human_annotations[human_annotations.kind == "utterance"]
    on_topic = [sim_u.on_topic] + ([hum_u.on_topic] if human_on_topic == "annotate" else [])
    flags = InputFlags(
        stance_utterances=dg.one_value(
            pd.concat([sim_u.stance, hum_u.stance]).dropna().tolist(), "stance annotator (utterances)"
        ),
        on_topic=dg.one_value(pd.concat(on_topic).dropna().astype(int).tolist(), "on-topic annotator"),
    )
    none_used = metrics[(metrics.n_used == 0) & (metrics.on_topic_filter == "annotated")]
    for r in none_used.itertuples(index=False):
        flags.no_comparator[(r.model, r.mode, r.ablation, r.topic_set)] = dg.Flag(
            f"{r.model} mode {r.mode} {r.ablation} {r.topic_set}",
            "no simulated on-topic utterance has an on-topic human comparator",
        )
    return flags


# ---------------------------------------------------------------------------------------------------
# Sect. 6 inputs


@dataclass
class Sect6:
    sessions: pd.DataFrame  # indexed by session_id
    ran: set[str]  # the Depth sessions Mode 3 (original, the model) ran on
    human_tweets: pd.DataFrame  # the humans' tweet annotations of those sessions
    llm_tweets: pd.DataFrame  # the twins' tweet annotations (Mode 3, original, the model)
    opinions: pd.DataFrame  # the twins' final opinions


def _sect6(tables: Mapping[str, Any], model: str) -> Sect6:
    sessions = tables["sessions"].set_index("session_id")
    sim, ann, hann = tables["simulated"], tables["annotations"], tables["human_annotations"]
    post = sessions["post_opinion"] if "post_opinion" in sessions else True  # Sect. 6 needs all 4 Post Opinions
    depth = set(sessions.index[(sessions.topic_set == "depth") & post])
    m3 = sim[(sim.model == model) & (sim["mode"] == 3) & (sim.ablation == "original")]
    ran = set(m3.session_id) & depth
    a3 = ann[(ann.model == model) & (ann["mode"] == 3) & (ann.ablation == "original") & (ann.kind == "tweet")]
    return Sect6(
        sessions,
        ran,
        hann[(hann.kind == "tweet") & hann.session_id.isin(ran)],
        a3[a3.session_id.isin(ran) & a3["round"].isin([2, 3])],
        m3[(m3.kind == "opinion") & m3.session_id.isin(ran)],
    )


def sect6_flags(tables: Mapping[str, Any], model: str, flags: InputFlags, named: bool = False) -> None:
    """The Sect. 6 flags of `model` (set on `flags`): the tweet stances of each source and the twins'
    final opinions that enter Figs. 2 and 3 (raw values, before reverse coding); none when Sect. 6 has
    no group. `named`: the twins' flags name the model (a run of several agent models)."""
    s6 = _sect6(tables, model)
    if not s6.ran:
        return
    which = f"Sect. 6, {model}" if named else "Sect. 6"
    flags.stance_tweets_human = dg.one_value(s6.human_tweets.stance, "stance annotator (human tweets, Sect. 6)")
    flags.stance_tweets_llm = dg.one_value(s6.llm_tweets.stance, f"stance annotator (twins' tweets, {which})")
    flags.opinions_llm = dg.one_value(s6.opinions.opinion, f"twins' final opinions ({which})")


def members(tables: Mapping[str, Any], model: str) -> pd.DataFrame:
    """Sect. 6 inputs: one row per Depth member and source (human, llm): tweet stances s1..s3,
    opinions, the round-1 partner; reverse-coded on truth-framed topics."""
    s6 = _sect6(tables, model)
    sessions, part = s6.sessions, tables["participants"]
    h_st = {(r.session_id, r.round, r.speaker): r.stance for r in s6.human_tweets.itertuples()}
    l_st = {(r.session_id, r.round, r.speaker): r.stance for r in s6.llm_tweets.itertuples()}
    op = {(r.session_id, r.speaker): r.opinion for r in s6.opinions.itertuples()}
    first = {
        (t.session_id, t.worker_id): t.partner_id for t in tables["tweets"][tables["tweets"]["round"] == 1].itertuples()
    }
    rows = []
    for p in part[part.session_id.isin(s6.ran)].itertuples():
        sign = -1.0 if sessions.loc[p.session_id, "reverse"] else 1.0

        def f(v: Any, sign: float = sign) -> float | None:
            return None if v is None or pd.isna(v) else sign * float(v)

        h = [h_st.get((p.session_id, r, p.worker_id)) for r in (1, 2, 3)]
        base = {
            "session_id": p.session_id,
            "worker_id": p.worker_id,
            "partner1": first.get((p.session_id, p.worker_id)),
            "o_init": f(p.o_init),
        }
        rows.append({**base, "source": "human", "s1": f(h[0]), "s2": f(h[1]), "s3": f(h[2]), "o_final": f(p.o_final)})
        rows.append(
            {
                **base,
                "source": "llm",
                "s1": f(h[0]),
                "s2": f(l_st.get((p.session_id, 2, p.worker_id))),
                "s3": f(l_st.get((p.session_id, 3, p.worker_id))),
                "o_final": f(op.get((p.session_id, p.worker_id))),
            }
        )
    return pd.DataFrame(
        rows, columns=["session_id", "worker_id", "source", "partner1", "s1", "s2", "s3", "o_init", "o_final"]
    )


def session_topics(sessions: pd.DataFrame) -> dict[Any, Any]:
    """session_id -> topic (`topic_dir`): the debates and groups of a topic set nest in its topics."""
    if "topic_dir" not in sessions.columns:
        raise ValueError("sessions: no topic_dir column; the findings' unit is the topic (ingest writes it)")
    return dict(zip(sessions["session_id"], sessions["topic_dir"]))


def test_vars(quantity: str, test: str) -> list[tuple[str, str]]:
    """The (source, variable) pairs a change test of group_level / the model-written tests reads."""
    before, after, _ = {**stats.GROUP_TESTS, **stats.MODEL_WRITTEN_TESTS}[quantity]
    sources = {"llm change": ["llm"], "human change": ["human"]}.get(test, ["llm", "human"])
    return [(s, v) for s in sources for v in (before, after)]


# ---------------------------------------------------------------------------------------------------
# Human on-topic labels: the annotator's and the data set's


ON_TOPIC_KEYS = ["session_id", "round", "dyad", "k"]


def on_topic_validity(tables: Mapping[str, Any]) -> pd.DataFrame:
    """Per topic set of the run (and "all"): the human utterances' on-topic rate by the annotator
    (unparsed = off-topic, as in the metrics) and by the data set's `validity` labels (no label = not
    VALID), and the annotator's agreement with `validity` over the utterances with both labels (n,
    agreement rate, Cohen's kappa, the 2x2 counts). Without `human_utterances` among `tables` the
    validity columns are empty."""
    ha = tables["human_annotations"]
    ha = ha[ha.kind == "utterance"]
    topic = tables["sessions"].set_index("session_id").topic_set
    hu = tables.get("human_utterances")
    has_validity = hu is not None and "validity" in hu.columns
    if hu is not None and has_validity:
        ha = ha.merge(hu[ON_TOPIC_KEYS + ["validity"]], on=ON_TOPIC_KEYS, how="left")
    else:
        ha = ha.assign(validity=None)
    ha = ha.assign(topic_set=ha.session_id.map(topic))
    annot = [None if pd.isna(v) else bool(v) for v in ha.on_topic]
    valid = [None if not isinstance(v, str) else v == "VALID" for v in ha.validity]
    ha = ha.assign(_a=annot, _v=valid)
    rows = []
    sets = [ts for ts in TABLES if ts in set(ha.topic_set)]
    for ts in [*sets, "all"]:
        g = ha if ts == "all" else ha[ha.topic_set == ts]
        agr = agreement.binary(g._a, g._v)
        rows.append(
            {
                "topic_set": ts,
                "n_utterances": len(g),
                "annotator_rate": float(np.mean([a is True for a in g._a])) if len(g) else None,
                "n_unparsed": int(sum(a is None for a in g._a)),
                "validity_rate": float(np.mean([v is True for v in g._v])) if len(g) and has_validity else None,
                "n_no_validity": int(sum(v is None for v in g._v)),
                "n": agr["n"],
                "agreement": agr["agreement"],
                "kappa": agr["kappa"],
                "both_valid": agr["both_1"],
                "annotator_only": agr["a_only"],
                "validity_only": agr["b_only"],
                "both_invalid": agr["both_0"],
                "note": agr["note"] if has_validity else "no validity labels (human_utterances not given)",
            }
        )
    return pd.DataFrame(rows).astype(
        {"annotator_rate": "float64", "validity_rate": "float64", "agreement": "float64", "kappa": "float64"}
    )


def human_on_topic_flags(tables: Mapping[str, Any], topic_sets: Iterable[str]) -> dict[str, list[dg.Flag]]:
    """Per topic set: the flag of the annotator's on-topic labels of the human utterances."""
    ha = tables["human_annotations"]
    ha = ha[ha.kind == "utterance"]
    topic = tables["sessions"].set_index("session_id").topic_set
    return {
        ts: dg.collect(
            dg.one_value(
                ha[ha.session_id.map(topic) == ts].on_topic.dropna().astype(int),
                "on-topic annotator (human utterances)",
            )
        )
        for ts in topic_sets
        if ts != "all"
    }


# ---------------------------------------------------------------------------------------------------
# Appendix H


APPENDIX_H_METRICS = (("s_sem", "greater"), ("rouge_l", "greater"), ("d_stance", "less"))


def appendix_h_flags(orig: pd.DataFrame, flags: InputFlags, metric: str) -> list[dg.Flag]:
    return dg.collect(
        union(flags.metric(metric, (r.model, r.mode, r.ablation, r.topic_set)) for r in orig.itertuples(index=False))
    )


def appendix_h_values(metrics: pd.DataFrame, flags: InputFlags) -> dict[str, Any]:
    """Appendix H on the models that ran (Friedman + Wilcoxon across settings): per metric the best
    model, the tests and the flags of the metric's inputs (appendix_h.json)."""
    orig = original_settings(metrics)
    out: dict[str, Any] = {}
    for metric, alt in APPENDIX_H_METRICS:
        values = orig.pivot_table(index="model", columns="setting", values=metric)
        best = (
            (values.mean(axis=1).idxmax() if alt == "greater" else values.mean(axis=1).idxmin())
            if len(values)
            else None
        )
        out[metric] = (
            {"best": best, **stats.appendix_h(values, best, alt)} if best is not None else {"note": "no metrics"}
        )
        fl = appendix_h_flags(orig, flags, metric)
        if fl:
            out[metric]["flags"] = [f.message for f in fl]
    return out


def original_settings(metrics: pd.DataFrame) -> pd.DataFrame:
    """The settings of original memory, each named "<topic set>-mode<mode>" (Appendix H's columns)."""
    return metrics[metrics.ablation == "original"].assign(
        setting=lambda d: d.topic_set + "-mode" + d["mode"].astype(str)
    )


# ---------------------------------------------------------------------------------------------------
# The paper's numbers


PAPER_KEY = {"llm change": "llm_change", "human change": "human_change", "llm change vs human change": "llm_vs_human"}


def paper_row(
    paper: Mapping[str, Any], table: str, model: str, mode: int, ablation: str
) -> tuple[dict[str, Any] | None, str]:
    """The paper's row of Table 3/9 (the model's, else PAPER_MODEL's) or Table 4/10, and whose it is."""
    t = paper.get(table, {})
    if table in ("table3", "table9"):
        if model in t:
            return t[model].get(f"mode{mode}"), model
        return t.get(PAPER_MODEL, {}).get(f"mode{mode}"), PAPER_MODEL
    return t.get(f"mode{mode}", {}).get(ablation), PAPER_MODEL


def paper_groups(paper: Mapping[str, Any]) -> int:
    gl = paper.get("group_level") or {}
    return int(gl["df"]) + 1 if gl.get("df") is not None else PAPER_GROUPS


def paper_test(paper: Mapping[str, Any], quantity: str, test: str) -> Mapping[str, Any]:
    """The paper's Fig. 2 test (t, p) of `quantity` ("tweet mean", ...) and `test`, or {}."""
    gl = paper.get("group_level") or {}
    return (gl.get(quantity.replace(" ", "_").lower()) or {}).get(PAPER_KEY[test]) or {}


def paper_dz(paper: Mapping[str, Any], quantity: str, test: str) -> float | None:
    t = paper_test(paper, quantity, test).get("t")
    return None if t is None else float(t) / math.sqrt(paper_groups(paper))


def paper_delta(ref: Mapping[str, Any], metric: str) -> float:
    """The paper's no_private_profile minus original of one metric (Tables 4, 10)."""
    return float(ref["no_private_profile"][metric]) - float(ref["original"][metric])


# ---------------------------------------------------------------------------------------------------
# The evidence every claim judges


def table_name(name: str, model: str, first: bool) -> str:
    """A per-model table's name: `name` for the first agent model (its figures read it), else
    "<name>_<model>" (the model's name with anything but letters, digits, ".", "-" and "_" as "_")."""
    return name if first else f"{name}_{re.sub(r'[^A-Za-z0-9._-]+', '_', model)}"


@dataclass
class Twins:
    """Sect. 6 of one agent model (Depth, Mode 3, original memory): its members, Fig. 2's groups and
    tests, Fig. 3's correlations and the flags of its inputs (the run's utterance flags and its own
    Sect. 6 flags)."""

    model: str
    first: bool  # the first agent model: its tables keep the names the figures read
    flags: InputFlags
    mem: pd.DataFrame  # Sect. 6 members
    per_group: pd.DataFrame  # Fig. 2: per group, source and quantity
    group_tests: pd.DataFrame  # Fig. 2: the paper's change tests
    indiv: pd.DataFrame  # Fig. 3: the paper's correlations
    topics: dict[Any, Any]  # session -> topic

    def table(self, name: str) -> str:
        """The name of this model's table `name` (table_name)."""
        return table_name(name, self.model, self.first)

    def named(self, text: str) -> str:
        """`text` naming this model in its last parenthesis: "<text> (<model>)"."""
        return f"{text} ({self.model})"

    @property
    def sect6_flags(self) -> list[dg.Flag]:
        f = self.flags
        return dg.collect(f.stance_tweets_human, f.stance_tweets_llm, f.opinions_llm)

    @cached_property
    def model_written(self) -> tuple[dict[tuple[str, str], list[dg.Flag]], list[Finding], pd.DataFrame]:
        """Sect. 6's claims on model-written points (tests.group_claims): the flags of each test, the
        findings (convergence, drift; claims not yet naming the model) and the tests' table."""
        mw_tests = stats.change_tests(self.per_group, stats.MODEL_WRITTEN_TESTS)
        fl = {
            (r.quantity, r.test): dg.collect(self.flags.test(r.quantity, r.test))
            for r in mw_tests.itertuples(index=False)
        }
        findings, mw = group_claims(self.per_group, self.topics, fl)
        return fl, findings, mw

    @cached_property
    def outcome_flags(self) -> dict[str, list[dg.Flag]]:
        """Fig. 3 per outcome: the flags of its start and end variables, both sources."""
        return {o: union(self.flags.variable(s, v) for s in ("llm", "human") for v in OUTCOMES[o]) for o in OUTCOMES}


def twins(tables: Mapping[str, Any], models: list[str], flags: InputFlags, ddof: int) -> dict[str, Twins]:
    """Sect. 6 of each agent model, in the run's order (the first first); `flags`: the utterance flags."""
    topics = session_topics(tables["sessions"])
    out: dict[str, Twins] = {}
    for k, model in enumerate(models):
        fl = replace(flags)
        sect6_flags(tables, model, fl, named=len(models) > 1)
        mem = members(tables, model)
        per_group, group_tests = stats.group_level(mem, ddof)
        out[model] = Twins(model, k == 0, fl, mem, per_group, group_tests, stats.individual_level(mem), topics)
    names = [t.table("members") for t in out.values()]
    if len(set(names)) < len(names):
        raise ValueError(f"debate.agent_models: two models give one table name: {', '.join(names)}")
    return out


@dataclass
class Evidence:
    """What the analysis measured once, for the claims and the report."""

    run: RunDesign
    dp: Mapping[str, Any]
    paper: Mapping[str, Any]
    tables: Mapping[str, Any]
    models: list[str]
    flags: InputFlags  # the utterance metrics' flags (each model's Sect. 6 flags: Twins.flags)
    metrics: pd.DataFrame  # the paper's (on-topic filter) utterance metrics per setting
    every: pd.DataFrame  # the same without the on-topic filter
    by_session: pd.DataFrame  # the paper's metrics per setting and debate (the findings' unit)
    topics: dict[Any, Any]  # session -> topic
    sect6: dict[str, Twins] = field(default_factory=dict)  # Sect. 6 per agent model, in the run's order

    @property
    def model(self) -> str:
        """The first model: its tables keep the unsuffixed names (Table 4 / 10, Sect. 6)."""
        return self.models[0]

    @property
    def first(self) -> Twins:
        """Sect. 6 of the first model (the humans' own findings, the summary)."""
        return self.sect6[self.model]

    @property
    def ablation_models(self) -> list[str]:
        """The models the Sect. 5 ablation is judged on: the first, and every other that ran an ablation
        (the simulation runs them on the first only; released data may have more)."""
        ran = set(self.metrics.model[self.metrics.ablation != "original"]) if len(self.metrics) else set()
        return [m for k, m in enumerate(self.models) if k == 0 or m in ran]

    @cached_property
    def on_topic(self) -> pd.DataFrame:
        return on_topic_validity(self.tables)

    @cached_property
    def human_on_topic_flags(self) -> dict[str, list[dg.Flag]]:
        return human_on_topic_flags(self.tables, self.on_topic.topic_set)

    @cached_property
    def appendix_h(self) -> dict[str, Any]:
        """Appendix H's tests on the models that ran (appendix_h.json)."""
        return appendix_h_values(self.metrics, self.flags)


def comparison(inputs: AnalysisInputs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The compare stage's utterance metrics (both on-topic filters) and per-debate metrics: the
    comparison folder's declared tables (schemas.COMPARISON_TABLES), which the compare stage always
    writes (a folder without one is an error)."""
    d = inputs.dirs["comparison"]
    metrics, per_debate = (report.read(d, name) for name in COMPARISON_TABLES)
    return metrics, per_debate


def evidence(inputs: AnalysisInputs) -> Evidence:
    """Everything the claims judge, measured once from the analysis inputs: `inputs.tables` (INPUTS),
    the comparison folder (`inputs.dirs["comparison"]`), the params (debate), the paper's numbers and
    the run's design (its inputs' provenance). Sect. 6 is measured for each agent model."""
    run = RunDesign.of(inputs)
    dp, tables = inputs.params, inputs.tables
    models = list(dp["agent_models"])
    metrics, by_session = comparison(inputs)
    flags = utterance_flags(tables["annotations"], tables["human_annotations"], metrics, run.human_on_topic)
    return Evidence(
        run,
        dp,
        inputs.paper,
        tables,
        models,
        flags,
        metrics[metrics.on_topic_filter == "annotated"],
        metrics[metrics.on_topic_filter == "none"],
        by_session,
        session_topics(tables["sessions"]),
        twins(tables, models, flags, dp["group_sd_ddof"]),
    )
