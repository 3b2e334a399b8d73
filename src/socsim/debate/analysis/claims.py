"""The DEBATE paper's claims, one judge function each (socsim.io.claims): each judges the evidence the
measures gathered (measures.Evidence) and returns its findings (the tests of tests.py), its vs_paper
rows, its flags where they apply (at the places of places.py, which the plots read) and the tables it is
judged with. CLAIMS lists them in the report's order: per topic set the utterance metrics of Tables 3/4
(9/10) and Sect. 5's claims, the humans' on-topic rate, Sect. 6 (Figs. 2 and 3) and Appendix H.

Sect. 6's claims and the Sect. 5 ablation are judged per agent model (measures.Twins; the ablation on
the models that ran one), each finding with its finding id and its model as its typed scope
(socsim.io.findings; the claim's wording names the model too, for the report's reader); the first model's
tables keep their names, another's get "_<model>" (measures.table_name). The humans' own Fig. 2 findings
(scope: the humans of the run's data source) and vs_paper rows are given once, on the first model's groups.

Design differences (vs_paper's `comparable`): the data source the run read, and per quantity the agent
model, the annotator and the sentence encoder when it depends on them (design.RunDesign). A row with a
design difference gives no verdict of agreement with the paper."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

import pandas as pd

from socsim.debate.analysis import places, stats, tests
from socsim.debate.analysis.design import METRIC_USES, union, variable_uses
from socsim.debate.analysis.measures import (
    APPENDIX_H_METRICS,
    TABLES,
    Evidence,
    Twins,
    appendix_h_flags,
    cell_flags,
    messages,
    original_settings,
    paper_delta,
    paper_dz,
    paper_groups,
    paper_row,
    paper_test,
    table_name,
    test_vars,
)
from socsim.debate.schemas import METRICS, OUTCOMES, QUANTITIES
from socsim.io import vs_paper
from socsim.io.claims import Claim, Judgement
from socsim.io.findings import Scope
from socsim.io.report import Finding, Flagged, Table
from socsim.stats import degeneracy as dg


def table(df: pd.DataFrame, title: str, notes: Iterable[str] = (), flags: Iterable[dg.Flag] = ()) -> Table:
    """A report table: its rows, title, notes and the flags of its inputs (noted below it)."""
    return Table(df.reset_index(drop=True), title, list(notes), flags=dg.collect(list(flags)))


class _Sheet:
    """Collects one claim's judgement: its tables, findings, vs_paper rows and where each flag applies."""

    def __init__(self) -> None:
        self.j = Judgement()

    def table(self, name: str, *args: Any) -> None:
        self.j.tables[name] = table(*args)

    def flagged(self, flags: Iterable[dg.Flag], *where: str) -> list[dg.Flag]:
        """The flags (each once), recorded as applying at `where`."""
        out = dg.collect(list(flags))
        self.j.flags += [Flagged(f, list(where)) for f in out]
        return out

    def row(self, row: vs_paper.Row) -> None:
        self.flagged(row.flags, places.vs_paper(row.quantity))
        self.j.rows.append(row)

    def finding(self, f: Finding) -> None:
        self.j.findings.append(f)


# ---------------------------------------------------------------------------------------------------
# Tables 3, 4 (9, 10) and Sect. 5, per topic set


def _utterance_table(
    s: _Sheet, ev: Evidence, df: pd.DataFrame, name: str, ts: str, filtered: bool
) -> tuple[pd.DataFrame, list[dg.Flag]]:
    """`df` with a flags column (each row's flags, with the metrics they concern); where they apply."""
    cells, all_flags = [], []
    for r in df.itertuples(index=False):
        setting = (r.model, r.mode, r.ablation, ts)
        by_metric = {m: ev.flags.metric(m, setting, filtered) for m in METRICS}
        for m, fl in by_metric.items():
            all_flags += s.flagged(fl, places.metric_cell(name, m, r.model, r.mode, r.ablation))
        cells.append(cell_flags(by_metric))
    return df.assign(flags=cells), dg.collect(all_flags)


def _table_rows(s: _Sheet, ev: Evidence, m: pd.DataFrame, ts: str) -> None:
    """Every metric of every setting of Tables 3/4 (9/10) beside the paper's."""
    main_t, abl_t = TABLES[ts]
    run = ev.run
    for r in m.itertuples(index=False):
        setting = (r.model, r.mode, r.ablation, ts)
        abl = [abl_t] if r.model in ev.ablation_models else []
        for name in ([main_t] if r.ablation == "original" else []) + abl:
            ref, who = paper_row(ev.paper, name, r.model, r.mode, r.ablation)
            if ref is None:
                continue
            for metric in METRICS:
                s.row(
                    vs_paper.Row(
                        f"{name.capitalize()} {ts}, {r.model}, mode {r.mode}, {r.ablation}: {metric}",
                        getattr(r, metric),
                        ref.get(metric),
                        flags=ev.flags.metric(metric, setting),
                        design=run.differences(METRIC_USES[metric], r.model, who),
                        note=f"paper: {who}; {r.n_used} utterances compared, {r.n_excluded} "
                        "without an on-topic human comparator" + run.encoder_note(metric),
                    )
                )


def utterance_metrics(ts: str, ev: Evidence) -> Judgement:
    """Tables 3 and 4 (Depth) or 9 and 10 (Breadth): our utterance metrics per setting beside the
    paper's (the on-topic filter's, and every utterance as an extra table)."""
    s = _Sheet()
    main_t, abl_t = TABLES[ts]
    e = ev.every[ev.every.topic_set == ts]
    if len(e):
        name = f"{main_t}_all_utterances"
        df, fl = _utterance_table(s, ev, e[["model", "mode", "ablation", *METRICS, "n_used"]], name, ts, False)
        s.table(
            name,
            df,
            f"{main_t.capitalize()} ({ts}), every utterance compared (no on-topic filter; not the paper's)",
            ["r_on_topic is 1 by construction here (every utterance counts as on-topic)"],
            fl,
        )
    m = ev.metrics[ev.metrics.topic_set == ts]
    if m.empty:
        return s.j
    cols = ["model", "mode", "ablation", *METRICS, "n_used", "n_excluded"]
    df, fl = _utterance_table(s, ev, m[m.ablation == "original"][cols], main_t, ts, True)
    unit = "round-wise aggregation (eq. 2); length in " + str(ev.dp["length_unit"])
    s.table(
        main_t,
        df.drop(columns="ablation"),
        f"{main_t.capitalize()} ({ts}): utterance metrics by model and mode",
        [unit],
        fl,
    )
    for k, model in enumerate(ev.ablation_models):  # the first model's keeps the paper's table name
        name = table_name(abl_t, model, k == 0)
        df, fl = _utterance_table(s, ev, m[m.model == model][cols], name, ts, True)
        s.table(name, df.drop(columns="model"), f"{abl_t.capitalize()} ({ts}): memory ablations ({model})", [], fl)
    _table_rows(s, ev, m, ts)
    return s.j


def _per_model(ev: Evidence, ts: str) -> Iterator[tuple[str, pd.DataFrame, pd.DataFrame, list[tuple[Any, ...]]]]:
    """Per model of the topic set (original memory): its settings' metrics, its per-debate metrics and
    its settings."""
    m = ev.metrics[ev.metrics.topic_set == ts]
    bs = ev.by_session
    for model, g in m[m.ablation == "original"].groupby("model"):
        sess = bs[(bs.model == model) & (bs.topic_set == ts) & (bs.ablation == "original")]
        yield str(model), g, sess, [(model, mode, "original", ts) for mode in g["mode"]]


def mode_order(ts: str, ev: Evidence) -> Judgement:
    """Sect. 5: Mode 1 > Mode 2 > Mode 3 in semantic similarity, per model (tests.mode_order)."""
    s = _Sheet()
    for model, g, sess, settings in _per_model(ev, ts):
        by_mode = g.set_index("mode").s_sem
        flags = union(ev.flags.metric("s_sem", x) for x in settings)
        order = tests.mode_order(sess, ev.topics, flags, f"{ts}, {model}", g["mode"])
        if order is None:
            continue
        order = order.judged_on(Scope.model(model), ts)
        s.finding(order)
        s.row(
            vs_paper.Row(
                f"{ts}, {model}: S_sem of the first mode minus the last",
                by_mode.iloc[0] - by_mode.iloc[-1],
                None,
                finding=order.claim,
                verdict=order.verdict,
                flags=flags,
                design=ev.run.differences(METRIC_USES["s_sem"], model),
                note=f"finding tested over topics: {order.test_text}" + ev.run.encoder_note("s_sem"),
            )
        )
    return s.j


def llm_longer(ts: str, ev: Evidence) -> Judgement:
    """Sect. 5: the LLM utterances are longer than the humans', per model (tests.llm_longer)."""
    s = _Sheet()
    for model, g, sess, settings in _per_model(ev, ts):
        flags = union(ev.flags.metric("d_signed_len", x) for x in settings)
        longer = tests.llm_longer(sess, ev.topics, flags, f"{ts}, {model}").judged_on(Scope.model(model), ts)
        s.finding(longer)
        s.row(
            vs_paper.Row(
                f"{ts}, {model}: mean signed length difference (human - LLM)",
                g.d_signed_len.mean(),
                None,
                finding=longer.claim,
                verdict=longer.verdict,
                flags=flags,
                design=ev.run.differences(METRIC_USES["d_signed_len"], model),
                note=f"finding tested over topics: {longer.test_text}",
            )
        )
    return s.j


def ablation(ts: str, ev: Evidence) -> Judgement:
    """Sect. 5 (Tables 4, 10): removing the private profile lowers S_sem and raises Delta_stance in
    Modes 2 and 3 (tests.ablation_claim; the claim names the model), per model of
    `Evidence.ablation_models` (the first, and any other that ran an ablation)."""
    s = _Sheet()
    m = ev.metrics[ev.metrics.topic_set == ts]
    if m.empty:
        return s.j
    for model in ev.ablation_models:
        _ablation_of(s, ev, m, ts, model)
    return s.j


def _ablation_of(s: _Sheet, ev: Evidence, m: pd.DataFrame, ts: str, model: str) -> None:
    mine = m[m.model == model]
    ran = {(int(r.mode), str(r.ablation)) for r in mine.itertuples(index=False)}
    fl = {  # in the settings' order: a set's order follows the string hash, which differs per process
        (mode, abl, metric): ev.flags.metric(metric, (model, mode, abl, ts))
        for mode, abl in sorted(ran)
        for metric in ("s_sem", "d_stance")
    }
    finding = tests.ablation_claim(ev.by_session, model, ts, ran, fl, ev.topics).judged_on(Scope.model(model), ts)
    s.finding(finding)
    name = TABLES[ts][1]
    ref = ev.paper.get(name) or {}
    deltas = [
        f"mode {mode} {metric} {paper_delta(ref[f'mode{mode}'], metric):+.2f}"
        for mode in (2, 3)
        for metric in ("s_sem", "d_stance")
        if f"mode{mode}" in ref
    ]
    s.row(
        vs_paper.Row(
            f"{name.capitalize()} {ts}, {model}: removing the private profile (modes 2, 3)",
            None,
            None,
            finding=finding.claim,
            verdict=finding.verdict,
            flags=union(fl.values()),
            design=ev.run.differences(union([METRIC_USES["s_sem"], METRIC_USES["d_stance"]]), model),
            note=f"finding tested over topics: {finding.test_text}"
            + (f"; the paper's deltas: {', '.join(deltas)}" if deltas else "")
            + ev.run.encoder_note("s_sem"),
        )
    )


# ---------------------------------------------------------------------------------------------------
# The humans' on-topic rate (Sect. 4.3, Table 1)


def human_on_topic(ev: Evidence) -> Judgement:
    """The table `human_on_topic` and the vs_paper rows of the humans' on-topic rates: the annotator's
    (the paper's 58 % / 66 %, Sect. 4.3) and the data set's labels (Table 1), with the annotator's
    agreement with those labels in the notes."""
    s, run, df, fl_by_ts = _Sheet(), ev.run, ev.on_topic, ev.human_on_topic_flags
    s.table(
        "human_on_topic",
        df,
        "Human utterances: on-topic rate by the annotator and by the data set's validity labels, and their "
        "agreement (Cohen's kappa)",
        [
            f"annotator prompt: {run.on_topic_prompt}; the annotator's labels decide which utterances every "
            "metric compares",
            "validity: the data set's own label, VALID for a merged utterance if any merged message is",
        ],
        union(fl_by_ts.values()),
    )
    ref = ev.paper.get("human_on_topic") or {}
    for r in df[df.topic_set != "all"].itertuples(index=False):
        fl = s.flagged(fl_by_ts.get(r.topic_set, []), places.human_on_topic(r.topic_set))
        agree = (
            f"annotator vs validity: agreement {r.agreement:.3f}, Cohen's kappa "
            + ("n/a" if pd.isna(r.kappa) else f"{r.kappa:.3f}")
            + f", n = {r.n}"
            if r.n
            else "annotator vs validity: no utterance with both labels"
        )
        s.row(
            vs_paper.Row(
                f"Sect. 4.3 human on-topic rate (annotator), {r.topic_set}",
                r.annotator_rate,
                (ref.get("annotator") or {}).get(r.topic_set),
                flags=fl,
                design=run.differences({"annotator", "on_topic"}),
                note=f"{r.n_utterances} merged utterances, {r.n_unparsed} unparsed (off-topic); prompt "
                f"{run.on_topic_prompt}; {agree}",
            )
        )
        d = (ref.get("dataset") or {}).get(r.topic_set) or {}
        s.row(
            vs_paper.Row(
                f"Table 1 human on-topic rate (data set's validity labels), {r.topic_set}",
                None if pd.isna(r.validity_rate) else r.validity_rate,
                d["on_topic"] / d["messages"] if d.get("messages") else None,
                # the paper counts raw messages of every group (our data_counts table has that count)
                design=run.differences(())
                + vs_paper.differences(
                    {"unit": "merged utterances of the run's groups"}, {"unit": "raw messages of all groups"}
                ),
                note=f"ours: {r.n_utterances} merged utterances of the run's groups ({r.n_no_validity} without a "
                "label); the paper: raw messages of all groups; " + agree,
            )
        )
    return s.j


# ---------------------------------------------------------------------------------------------------
# Sect. 6: Fig. 2 (group level), per agent model (measures.Twins): each model's tables (the first model's
# under the unsuffixed names the figures read), its findings and vs_paper rows naming it; the humans' own
# findings and rows once (on the groups of the first model)


def _fig2_test(
    s: _Sheet, ev: Evidence, tw: Twins, r: Any, human_changes: dict[tuple[str, str], pd.Series]
) -> dict[str, Any]:
    """One Fig. 2 test of `tw`'s groups: its effect-size row; its vs_paper row (the humans' own change:
    the first model's only, with its finding)."""
    fl = s.flagged(tw.flags.test(r.quantity, r.test), places.change_test(tw.table("group_tests"), r.quantity, r.test))
    design = ev.run.differences(union(variable_uses(x, v) for x, v in test_vars(r.quantity, r.test)), tw.model)
    ref = paper_test(ev.paper, r.quantity, r.test)
    paper_t, dz, g_paper = ref.get("t"), paper_dz(ev.paper, r.quantity, r.test), paper_groups(ev.paper)
    theirs = not tests.model_written(r.test)
    finding = (
        tests.group_finding(r, ref, fl, human_changes.get((r.quantity, r.test)), ev.topics)
        if paper_t is not None and ref.get("p") is not None and tw.first
        else None
    )
    if finding is not None:
        s.finding(finding.judged_on(Scope.humans(ev.run.data_source)))
    t_shown = "n/a" if pd.isna(r.t) else f"{r.t:.3g}"
    if theirs or tw.first:
        quantity = f"Fig. 2 {r.quantity}: {r.test} (d_z = t / sqrt(G))"
        s.row(
            vs_paper.Row(
                tw.named(quantity) if theirs else quantity,
                None if pd.isna(r.d_z) else r.d_z,
                dz,
                finding=finding.claim if finding else "",
                verdict=finding.verdict if finding else None,
                flags=fl,
                design=design,
                note=(f"{tests.PAPERS_COMPARISON}; " if theirs else "")
                + f"ours: t = {t_shown}, {r.n_groups} groups"
                + (f"; {r.missing}" if isinstance(r.missing, str) and r.missing else "")
                + (f"; {r.note}" if isinstance(r.note, str) and r.note else "")
                + (f"; paper: t({g_paper - 1}) = {paper_t:g}, {g_paper} groups" if paper_t is not None else ""),
            )
        )
    verdict = "" if theirs else _human_verdict(ev, r, ref)
    return {
        "quantity": r.quantity,
        "test": r.test,
        "d_z": r.d_z,
        "t": r.t,
        "n_groups": r.n_groups,
        "paper_d_z": dz,
        "paper_t": paper_t,
        "paper_groups": g_paper if paper_t is not None else None,
        "verdict": tests.PAPERS_COMPARISON if theirs else (finding.verdict.label if finding else verdict),
        "missing": r.missing,
        "flags": messages(fl),
    }


def _human_verdict(ev: Evidence, r: Any, ref: Any) -> str:
    """The verdict column of a humans' test in another model's table: where the finding is."""
    if ref.get("t") is None or ref.get("p") is None:
        return ""
    return f"see {ev.first.table('fig2_effect_sizes')} (the humans' findings, on {ev.model}'s groups)"


def group_level(ev: Evidence) -> Judgement:
    """Fig. 2: the group mean and SD of tweet stance and opinion, and the paper's change tests as effect
    sizes d_z beside its own, per agent model. The humans' own change is a finding (tests.group_finding:
    the paper's direction over topics, or "no change" by equivalence), once, on the first model's groups;
    the twins' tests start from the humans' round-1 tweet and initial opinion, so they are the paper's
    comparison, without a verdict."""
    s = _Sheet()
    for tw in ev.sect6.values():
        _group_level_of(s, ev, tw)
    return s.j


def _group_level_of(s: _Sheet, ev: Evidence, tw: Twins) -> None:
    sect6 = tw.sect6_flags
    gl = tw.table("group_level")
    per_group = tw.per_group.assign(
        flags=[
            messages(
                s.flagged(tw.flags.variable(r.source, r.quantity), places.group_level_row(gl, r.source, r.quantity))
            )
            for r in tw.per_group.itertuples(index=False)
        ]
    )
    s.table(
        gl,
        per_group,
        f"Fig. 2: per-group mean and SD of each quantity (twins: {tw.model})",
        ["each group's statistics of an outcome are over its members with every step of it (paired)"],
        sect6,
    )
    human_changes = stats.group_changes(per_group, stats.GROUP_TESTS)
    cells, es_rows = [], []
    for r in tw.group_tests.itertuples(index=False):
        es_rows.append(_fig2_test(s, ev, tw, r, human_changes))
        cells.append(es_rows[-1]["flags"])
    s.table(
        tw.table("group_tests"),
        tw.group_tests.assign(flags=cells),
        f"Fig. 2: group-level changes (paired t over groups; d_z = t / sqrt(groups); twins: {tw.model})",
        [f"the twins' tests (llm change, llm change vs human change) are {tests.PAPERS_COMPARISON}"],
        sect6,
    )
    s.table(
        tw.table("fig2_effect_sizes"),
        pd.DataFrame(es_rows).astype(
            {"d_z": "float64", "t": "float64", "paper_d_z": "float64", "paper_t": "float64", "paper_groups": "Int64"}
        ),
        f"Fig. 2 effect sizes: d_z = t / sqrt(G), ours beside the paper's (G = {paper_groups(ev.paper)}; "
        f"twins: {tw.model})",
        [
            "the paper's t grows with its number of groups; d_z does not",
            f"the twins' tests are {tests.PAPERS_COMPARISON}",
        ],
        sect6,
    )


# ---------------------------------------------------------------------------------------------------
# Sect. 6: Fig. 3 (individual level)


def individual_level(ev: Evidence) -> Judgement:
    """Fig. 3 as the paper reports it, per agent model: the Pearson r of each source's change with its
    initial value and its partner, beside the paper's (no finding; the humans' rows once)."""
    s = _Sheet()
    il = ev.paper.get("individual_level") or {}
    for tw in ev.sect6.values():
        name, cells = tw.table("individual_level"), []
        for r in tw.indiv.itertuples(index=False):
            start, end = OUTCOMES[r.outcome]
            fl = s.flagged(
                union(tw.flags.variable(r.source, v) for v in (start, end)),
                places.individual_row(name, r.source, r.outcome, r.predictor),
            )
            cells.append(messages(fl))
            if r.source == "human" and not tw.first:
                continue
            ref = ((il.get(r.outcome) or {}).get(r.predictor.replace(" ", "_")) or {}).get(r.source) or {}
            quantity = f"Fig. 3 {r.outcome} change ~ {r.predictor} ({r.source}): Pearson r"
            s.row(
                vs_paper.Row(
                    tw.named(quantity) if r.source == "llm" else quantity,
                    r.r,
                    ref.get("r"),
                    flags=fl,
                    design=ev.run.differences(union(variable_uses(r.source, v) for v in (start, end)), tw.model),
                    note=f"{r.n} members" + (f"; {r.note}" if isinstance(r.note, str) and r.note else ""),
                )
            )
        s.table(
            name,
            tw.indiv.assign(flags=cells),
            f"Fig. 3: individual change vs initial stance and partner (twins: {tw.model})",
            [],
            tw.sect6_flags,
        )
    return s.j


# ---------------------------------------------------------------------------------------------------
# Sect. 6's claims on model-written points (convergence, drift), per agent model


def _d_z_of(frame: pd.DataFrame, q: str, t: str) -> str:
    row = frame[(frame["quantity"] == q) & (frame["test"] == t)]
    ours = row.d_z.iloc[0] if len(row) else None
    return "n/a" if ours is None or pd.isna(ours) else f"{ours:.2f}"


def _model_written_table(s: _Sheet, tw: Twins) -> None:
    """The table `sect6_model_written` of `tw` (the tests both claims are judged on), its flags where
    they apply."""
    flags, _, mw = tw.model_written
    name = tw.table("sect6_model_written")
    for (q, t), fl in flags.items():
        s.flagged(fl, places.change_test(name, q, t))
    s.table(
        name,
        mw.assign(flags=[messages(flags[(r.quantity, r.test)]) for r in mw.itertuples(index=False)]),
        "Sect. 6 on model-written points: the group mean and SD of tweet stance from round 2 to 3 (both the "
        f"twins' own tweets; twins: {tw.model}), paired t over groups and the sign-flip test over topics",
        [
            "the paper's tests (round 3 vs 1) start from the humans' round-1 tweet: see group_tests",
            f"verdict: the part's, judged over topics (at least {tests.MIN_TOPICS}); empty for a test no claim uses",
        ],
        union(flags.values()),
    )


def _model_written_claim(name: str, ev: Evidence) -> Judgement:
    """One of SECT6_GROUP_CLAIMS (convergence, drift) on the twins' round-2 and round-3 tweets, per agent
    model: its finding (tests.group_claims, judged over topics; the claim names the model) and vs_paper
    row."""
    s = _Sheet()
    for tw in ev.sect6.values():
        if name == next(iter(tests.SECT6_GROUP_CLAIMS)):  # the first claim brings the table both are judged on
            _model_written_table(s, tw)
        flags, findings, mw = tw.model_written
        f = findings[list(tests.SECT6_GROUP_CLAIMS).index(name)]
        f = f.judged_on(Scope.model(tw.model), claim=tw.named(f.claim))
        _, parts = tests.SECT6_GROUP_CLAIMS[name]
        s.finding(f)
        vars_ = union(test_vars(q, t) for q, t, _ in parts)
        note = []
        for q, t, _ in parts:
            row = mw[(mw["quantity"] == q) & (mw["test"] == t)].iloc[0]
            p_top = "n/a" if pd.isna(row.p_topics) else f"{row.p_topics:.3g}"
            theirs = paper_dz(ev.paper, q.split(",")[0], t)
            note.append(
                f"{q} {t}: d_z {_d_z_of(mw, q, t)}, {row.n_groups} groups, sign-flip p = {p_top} over "
                f"{row.n_topics} topics"
                + ("" if theirs is None else f" (the paper, round 3 vs 1 from the humans' start: d_z {theirs:.2f})")
            )
        s.row(
            vs_paper.Row(
                f.claim,
                None,
                None,
                finding=f.claim,
                verdict=f.verdict,
                flags=union(flags[(q, t)] for q, t, _ in parts),
                design=ev.run.differences(union(variable_uses(x, v) for x, v in vars_), tw.model),
                note="; ".join(note),
            )
        )
    return s.j


# ---------------------------------------------------------------------------------------------------
# Sect. 6's claims as the paper tests them: no verdict


def _sect6_design(ev: Evidence, tw: Twins) -> list[str]:
    every = [(x, v) for x in ("llm", "human") for v in QUANTITIES]
    return ev.run.differences(union(variable_uses(x, v) for x, v in every), tw.model)


def papers_comparison(name: str, ev: Evidence) -> Judgement:
    """One of SECT6_PAPER_CLAIMS (convergence, drift, public vs private) as the paper tests it (round 3
    vs 1, final vs initial), per agent model: a vs_paper row without a verdict (tests.PAPERS_COMPARISON)."""
    s = _Sheet()
    claim, tests_of = tests.SECT6_PAPER_CLAIMS[name]
    for tw in ev.sect6.values():
        value, extra = None, ""
        if name == "public vs private":
            value, p, n, _ = stats.dissociation(tw.per_group, "llm")
            shown = "n/a" if p is None else f"{p:.3g}"
            extra = f"; tweet-mean change minus opinion-mean change: one-sample t p = {shown}, {n} groups"
        parts = []
        for q, t in tests_of:
            theirs = paper_dz(ev.paper, q, t)
            parts.append(
                f"{q} {t}: d_z {_d_z_of(tw.group_tests, q, t)}" + ("" if theirs is None else f" (paper {theirs:.2f})")
            )
        s.row(
            vs_paper.Row(
                tw.named(claim),
                value,
                None,
                flags=union(tw.flags.test(q, t) for q, t in tests_of),
                design=_sect6_design(ev, tw),
                note=f"{tests.PAPERS_COMPARISON}; " + "; ".join(parts) + extra,
            )
        )
    return s.j


# ---------------------------------------------------------------------------------------------------
# Fig. 3: partner influence, per agent model


def partner_influence(ev: Evidence) -> Judgement:
    """Fig. 3: the twins follow their round-1 partner more than the humans do, as the partner coefficient
    of the end value (tests.partner_claim), judged over topics, per agent model (the claim names it); a
    vs_paper row per outcome."""
    s = _Sheet()
    for tw in ev.sect6.values():
        out_flags = tw.outcome_flags
        partner, pparts = tests.partner_claim(tw.mem, ev.topics, out_flags)
        partner = partner.judged_on(Scope.model(tw.model), claim=tw.named(partner.claim))
        s.finding(partner)
        s.table(
            tw.table("fig3_partner_coefficients"),
            pparts.astype(
                {
                    "b_llm": "float64",
                    "b_human": "float64",
                    "diff": "float64",
                    "p": "float64",
                    "topic_mean": "float64",
                    "p_topics": "float64",
                }
            ),
            "Fig. 3's partner influence: the partner coefficient of OLS end ~ own start + round-1 partner's start, "
            f"twins ({tw.model}) minus humans (p: cluster bootstrap over groups; p_topics: sign-flip over the "
            "per-topic differences)",
            [
                "the end value, not the change score: 'partner minus own' shares -own start with the change",
                f"claimed: twins minus humans > 0; judged over topics (at least {tests.MIN_TOPICS}), at least "
                f"{tests.MIN_BOOT_GROUPS} groups",
            ],
            union(out_flags.values()),
        )
        for r in pparts.itertuples(index=False):
            b_shown = ", ".join(
                f"{who} {'n/a' if v is None or pd.isna(v) else format(v, '.3f')}"
                for who, v in (("b_llm", r.b_llm), ("b_human", r.b_human))
            )
            s.row(
                vs_paper.Row(
                    tw.named(
                        f"Fig. 3 {r.outcome}: partner coefficient, twins minus humans (end ~ own start + partner start)"
                    ),
                    r.diff,
                    None,
                    finding=partner.claim,
                    verdict=partner.verdict,
                    flags=out_flags[r.outcome],
                    design=_sect6_design(ev, tw),
                    note=f"{b_shown}; {r.n_groups} groups, {r.n_topics} topics; this part: {r.verdict}; the paper "
                    "reports r of the change score, not this coefficient",
                )
            )
    return s.j


def correlation_difference(ev: Evidence) -> Judgement:
    """Fig. 3 as the paper compares it, per agent model: the twins' r minus the humans'
    (tests.correlation_parts), beside the paper's, without a verdict."""
    s = _Sheet()
    il = ev.paper.get("individual_level") or {}
    paper_diff = {
        (o, pr): (il[o][pr.replace(" ", "_")]["llm"]["r"] - il[o][pr.replace(" ", "_")]["human"]["r"])
        for o, pr, _ in tests.SECT6_CORRELATIONS
        if ((il.get(o) or {}).get(pr.replace(" ", "_")) or {}).get("llm")
    }
    for tw in ev.sect6.values():
        corr = tests.correlation_parts(tw.mem)
        corr = corr.assign(paper_diff=[paper_diff.get((r.outcome, r.predictor)) for r in corr.itertuples(index=False)])
        out_flags = tw.outcome_flags
        s.table(
            tw.table("fig3_llm_vs_human"),
            corr.astype(
                {"r_llm": "float64", "r_human": "float64", "diff": "float64", "p": "float64", "paper_diff": "float64"}
            ),
            f"Fig. 3 as the paper compares it: the twins' ({tw.model}) correlation minus the humans' (cluster "
            "bootstrap over groups); no verdict",
            [tests.PAPERS_COMPARISON, f"the partner influence is judged in {tw.table('fig3_partner_coefficients')}"],
            union(out_flags.values()),
        )
        for r in corr.itertuples(index=False):
            shown = "n/a" if r.p is None or pd.isna(r.p) else f"{r.p:.3g}"
            s.row(
                vs_paper.Row(
                    tw.named(f"Fig. 3 {r.outcome} change ~ {r.predictor}: r_llm - r_human"),
                    r.diff,
                    paper_diff.get((r.outcome, r.predictor)),
                    flags=out_flags[r.outcome],
                    design=_sect6_design(ev, tw),
                    note=f"{tests.PAPERS_COMPARISON}; {r.n_groups} groups, bootstrap p = {shown}",
                )
            )
    return s.j


# ---------------------------------------------------------------------------------------------------
# Appendix H


def appendix_h(ev: Evidence) -> Judgement:
    """Appendix H (Friedman + Wilcoxon across settings, measures.appendix_h_values) beside the paper's."""
    s, run, app_h = _Sheet(), ev.run, ev.appendix_h
    orig = original_settings(ev.metrics)
    ph = ev.paper.get("appendix_h") or {}
    models = sorted(orig.model.unique())
    paper_models = list((ev.paper.get("models") or {}).keys())
    for metric, _ in APPENDIX_H_METRICS:
        fl = s.flagged(appendix_h_flags(orig, ev.flags, metric), places.appendix_h(metric))
        ours, ref = app_h[metric], ph.get(metric) or {}
        if not ref:
            continue
        design = run.differences(METRIC_USES[metric], ", ".join(models), ", ".join(sorted(paper_models)))
        why = ours.get("note") or ""
        base = f"ours: {ours.get('n_models', len(models))} model(s) x {ours.get('n_settings', 0)} setting(s)"
        base += ", the paper: 6 x 6"
        base += f"; {why}" if why else ""
        base += run.encoder_note(metric)
        op = "< " if ref.get("p_op") == "<" else ""
        for what, key in (("Friedman chi2", "chi2"), ("Friedman p", "p")):
            s.row(
                vs_paper.Row(
                    f"Appendix H {metric}: {what}",
                    ours.get(key),
                    ref.get(key),
                    flags=fl,
                    design=design,
                    note=base + (f"; paper: p {op}{ref.get('p')}" if key == "p" and op else ""),
                )
            )
        same_best = ours.get("best") == ref.get("best")
        for other, p_ref in (ref.get("wilcoxon") or {}).items():
            mine = (ours.get("wilcoxon") or {}).get(other) if same_best else None
            note = base if same_best else f"{base}; our best model is {ours.get('best')}, the paper's {ref.get('best')}"
            s.row(
                vs_paper.Row(
                    f"Appendix H {metric}: one-sided Wilcoxon p, {ref.get('best')} vs {other}",
                    mine,
                    p_ref,
                    flags=fl,
                    design=design,
                    note=note,
                )
            )
    return s.j


# ---------------------------------------------------------------------------------------------------
# The claims, in the report's order


def _per_topic_set(ts: str) -> list[Claim[Evidence]]:
    main_t, abl_t = (t[5:] for t in TABLES[ts])
    return [
        Claim(f"utterance_metrics_{ts}", partial(utterance_metrics, ts), f"Tables {main_t}, {abl_t}"),
        Claim(f"mode_order_{ts}", partial(mode_order, ts), "Sect. 5"),
        Claim(f"llm_longer_{ts}", partial(llm_longer, ts), "Sect. 5"),
        Claim(f"ablation_{ts}", partial(ablation, ts), f"Sect. 5, Table {abl_t}"),
    ]


CLAIMS: list[Claim[Evidence]] = [
    *(c for ts in TABLES for c in _per_topic_set(ts)),
    Claim("human_on_topic", human_on_topic, "Sect. 4.3, Table 1"),
    Claim("group_level", group_level, "Fig. 2"),
    Claim("individual_level", individual_level, "Fig. 3"),
    *(Claim(name, partial(_model_written_claim, name), "Sect. 6") for name in tests.SECT6_GROUP_CLAIMS),
    *(
        Claim(f"{name} (the paper's test)", partial(papers_comparison, name), "Sect. 6")
        for name in tests.SECT6_PAPER_CLAIMS
    ),
    Claim("partner_influence", partner_influence, "Sect. 6, Fig. 3"),
    Claim("correlation_difference", correlation_difference, "Fig. 3"),
    Claim("appendix_h", appendix_h, "Appendix H"),
]
