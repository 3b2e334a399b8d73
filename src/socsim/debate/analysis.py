"""Analysis of the DEBATE study (paper 003): utterance metrics per setting (Tables 3, 4, 9, 10),
group- and individual-level opinion dynamics (Sect. 6, Figs. 2 and 3), Appendix H, vs_paper.

Runs on any Parquet files of the documented schemas, so released simulations can be re-analysed.
Tables: Depth -> Table 3 (models x modes, original memory) and Table 4 (ablations of the first
model); Breadth -> Tables 9 and 10. Sect. 6 uses the Depth groups of Mode 3 (original memory, the
first model): tweet stance per round and opinions, topic-level reverse coding (x -1) of
truth-framed topics; the twins' round-1 tweet and initial opinion are the humans'. Degeneracy: an
annotator answering one value for >= 90 % of the texts (stance or on-topic), no simulated
utterance with an on-topic human comparator, fewer groups or members than a test needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from socsim.io import tables as io_tables
from socsim.io import vs_paper
from socsim.io.parquet import atomic_write_bytes, write_json
from socsim.stats import degeneracy as dg

KEYS = ["session_id", "round", "kind", "dyad", "k", "speaker"]
SETTING = ["model", "mode", "ablation", "topic_set"]
METRICS = ["s_sem", "d_stance", "d_signed_len", "d_abs_len", "rouge_l", "r_on_topic"]
TABLES = {"depth": ("table3", "table4"), "breadth": ("table9", "table10")}


def _utterances_with_labels(texts: pd.DataFrame, ann: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    u = texts[texts.kind == "utterance"]
    a = ann[ann.kind == "utterance"][keys + ["stance", "on_topic"]]
    return u.merge(a, on=keys, how="left")


def utterance_metrics(
    simulated: pd.DataFrame,
    annotations: pd.DataFrame,
    human_utterances: pd.DataFrame,
    human_annotations: pd.DataFrame,
    dp: dict[str, Any],
) -> dict[str, Any]:
    from socsim.debate import metrics

    sim = _utterances_with_labels(simulated, annotations, SETTING + KEYS)
    human = human_utterances.assign(kind="utterance")
    human = _utterances_with_labels(human, human_annotations.drop(columns=["topic_set"]), KEYS)
    if dp["human_on_topic"] == "dataset":
        human = human.assign(on_topic=human.validity.map({"VALID": True, "INVALID": False}))
    encoder = metrics.Encoder(dp["encoder"])
    # the paper's (on-topic utterances only), and every utterance (an extra: an annotator that calls
    # everything off-topic leaves the paper's metrics empty)
    out = pd.concat(
        [
            metrics.round_wise(sim, human, SETTING, dp["length_unit"], encoder.encode).assign(
                on_topic_filter="annotated"
            ),
            metrics.round_wise(
                sim.assign(on_topic=True), human.assign(on_topic=True), SETTING, dp["length_unit"], encoder.encode
            ).assign(on_topic_filter="none"),
        ],
        ignore_index=True,
    )
    out = out.sort_values(["on_topic_filter", *SETTING]).reset_index(drop=True)
    labelled = human[human.session_id.isin(set(human_annotations.session_id))]  # the run's sessions only
    human_rate = float(labelled.on_topic.fillna(False).astype(bool).mean()) if len(labelled) else None
    dataset_rate = float(labelled.validity.eq("VALID").mean()) if len(labelled) else None
    return {
        "metrics": out,
        "encoder": {
            **encoder.identity(),
            "human_on_topic_rate": human_rate,
            "human_on_topic_rate_dataset_validity": dataset_rate,
            "human_on_topic": dp["human_on_topic"],
        },
    }


def annotator_flags(annotations: pd.DataFrame, human_annotations: pd.DataFrame) -> list[dg.Flag]:
    both = pd.concat([annotations, human_annotations], ignore_index=True)
    return dg.collect(
        dg.one_value(both.stance.dropna().tolist(), "stance annotator"),
        dg.one_value(both.on_topic.dropna().astype(int).tolist(), "on-topic annotator"),
    )


def members(tables: dict[str, Any], model: str) -> pd.DataFrame:
    """Sect. 6 inputs: one row per Depth member and source (human, llm): tweet stances s1..s3,
    opinions, the round-1 partner; reverse-coded on truth-framed topics."""
    sessions = tables["sessions"].set_index("session_id")
    sim, ann, hann = tables["simulated"], tables["annotations"], tables["human_annotations"]
    part = tables["participants"]
    depth = set(sessions.index[sessions.topic_set == "depth"])
    m3 = sim[(sim.model == model) & (sim["mode"] == 3) & (sim.ablation == "original")]
    ran = set(m3.session_id) & depth
    h_st = {(r.session_id, r.round, r.speaker): r.stance for r in hann[hann.kind == "tweet"].itertuples()}
    a3 = ann[(ann.model == model) & (ann["mode"] == 3) & (ann.ablation == "original") & (ann.kind == "tweet")]
    l_st = {(r.session_id, r.round, r.speaker): r.stance for r in a3.itertuples()}
    op = {(r.session_id, r.speaker): r.opinion for r in m3[m3.kind == "opinion"].itertuples()}
    first = {
        (t.session_id, t.worker_id): t.partner_id for t in tables["tweets"][tables["tweets"]["round"] == 1].itertuples()
    }
    rows = []
    for p in part[part.session_id.isin(ran)].itertuples():
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


def _paper_row(
    paper: dict[str, Any], table: str, model: str, mode: int, ablation: str
) -> tuple[dict[str, Any] | None, str]:
    t = paper.get(table, {})
    if table in ("table3", "table9"):
        if model in t:
            return t[model].get(f"mode{mode}"), model
        return t.get("gpt-4o-mini", {}).get(f"mode{mode}"), "gpt-4o-mini"
    return t.get(f"mode{mode}", {}).get(ablation), "gpt-4o-mini"


def _degenerate(flags: list[dg.Flag], note: Any) -> str | None:
    """The row's degeneracy message: an annotator flag, or why the statistic is undefined."""
    if flags:
        return flags[0].message
    return f"degenerate input: {note}" if isinstance(note, str) and note else None


def analyse(
    metrics: pd.DataFrame, tables: dict[str, Any], dp: dict[str, Any], paper: dict[str, Any], out: Path
) -> dict[str, Any]:
    from socsim.debate import stats

    out.mkdir(parents=True, exist_ok=True)
    flags = annotator_flags(tables["annotations"], tables["human_annotations"])
    none_used = metrics[(metrics.n_used == 0) & (metrics.on_topic_filter == "annotated")]
    for r in none_used.itertuples():
        flags.append(
            dg.Flag(
                f"{r.model} mode {r.mode} {r.ablation} {r.topic_set}",
                "no simulated on-topic utterance has an on-topic human comparator",
            )
        )
    rows: list[vs_paper.Row] = []
    models = list(dp["agent_models"])
    every = metrics[metrics.on_topic_filter == "none"]
    metrics = metrics[metrics.on_topic_filter == "annotated"]
    for ts, (main_t, abl_t) in TABLES.items():
        e = every[(every.topic_set == ts)]
        if len(e):
            io_tables.write(
                e[["model", "mode", "ablation", *METRICS, "n_used"]],
                out,
                f"{main_t}_all_utterances",
                f"{main_t.capitalize()} ({ts}), every utterance compared (no on-topic filter; not the paper's)",
            )
        m = metrics[metrics.topic_set == ts]
        if m.empty:
            continue
        t_main = m[m.ablation == "original"][["model", "mode", *METRICS, "n_used", "n_excluded"]]
        io_tables.write(
            t_main,
            out,
            main_t,
            f"{main_t.capitalize()} ({ts}): utterance metrics by model and mode",
            ["round-wise aggregation (eq. 2); length in " + dp["length_unit"]],
        )
        t_abl = m[m.model == models[0]][["mode", "ablation", *METRICS, "n_used", "n_excluded"]]
        io_tables.write(t_abl, out, abl_t, f"{abl_t.capitalize()} ({ts}): memory ablations ({models[0]})")
        for r in m.itertuples(index=False):
            for table in ([main_t] if r.ablation == "original" else []) + ([abl_t] if r.model == models[0] else []):
                ref, who = _paper_row(paper, table, r.model, r.mode, r.ablation)
                if ref is None:
                    continue
                deg = next((f.message for f in flags), None)
                for metric in METRICS:
                    rows.append(
                        vs_paper.Row(
                            f"{table.capitalize()} {ts}, {r.model}, mode {r.mode}, {r.ablation}: {metric}",
                            getattr(r, metric),
                            ref.get(metric),
                            degenerate=deg,
                            note=f"paper: {who}; {r.n_used} utterances compared, {r.n_excluded} "
                            "without an on-topic human comparator",
                        )
                    )
        orig = m[m.ablation == "original"]
        for model, g in orig.groupby("model"):
            by_mode = g.set_index("mode").s_sem
            if len(by_mode) >= 2:
                ordered = bool(all(by_mode.iloc[i] >= by_mode.iloc[i + 1] for i in range(len(by_mode) - 1)))
                rows.append(
                    vs_paper.Row(
                        f"{ts}, {model}: S_sem of the first mode minus the last",
                        by_mode.iloc[0] - by_mode.iloc[-1],
                        None,
                        finding="Mode 1 > Mode 2 > Mode 3 in semantic similarity",
                        holds=ordered,
                        degenerate=flags[0].message if flags else None,
                    )
                )
            signed = g.d_signed_len.mean()
            rows.append(
                vs_paper.Row(
                    f"{ts}, {model}: mean signed length difference (human - LLM)",
                    signed,
                    None,
                    finding="LLM utterances are longer than the humans' (signed difference < 0)",
                    holds=None if pd.isna(signed) else bool(signed < 0),
                    degenerate=flags[0].message if flags else None,
                )
            )
    # Sect. 6 on the Depth groups of Mode 3
    mem = members(tables, models[0])
    atomic_write_bytes(out / "members.csv", mem.to_csv(index=False, float_format="%.6g").encode())
    summary, group_tests = stats.group_level(mem, dp["group_sd_ddof"])
    atomic_write_bytes(out / "group_level.csv", summary.to_csv(index=False, float_format="%.6g").encode())
    io_tables.write(group_tests, out, "group_tests", "Fig. 2: group-level changes (paired t over groups)")
    indiv = stats.individual_level(mem)
    io_tables.write(indiv, out, "individual_level", "Fig. 3: individual change vs initial stance and partner")
    tests_key = {
        "llm change": "llm_change",
        "human change": "human_change",
        "llm change vs human change": "llm_vs_human",
    }
    gl = paper.get("group_level", {})
    for r in group_tests.itertuples(index=False):
        ref = (gl.get(r.quantity.replace(" ", "_").lower()) or {}).get(tests_key[r.test]) or {}
        rows.append(
            vs_paper.Row(
                f"Fig. 2 {r.quantity}: {r.test} (paired t)",
                r.t,
                ref.get("t"),
                degenerate=_degenerate(flags, r.note),
                note=f"{r.n_groups} groups (paper: 31, gpt-4o-mini)",
            )
        )
    il = paper.get("individual_level", {})
    for r in indiv.itertuples(index=False):
        ref = ((il.get(r.outcome) or {}).get(r.predictor.replace(" ", "_")) or {}).get(r.source) or {}
        rows.append(
            vs_paper.Row(
                f"Fig. 3 {r.outcome} change ~ {r.predictor} ({r.source}): Pearson r",
                r.r,
                ref.get("r"),
                degenerate=_degenerate(flags, r.note),
                note=f"{r.n} members",
            )
        )
    # Appendix H on the models that ran
    orig = metrics[metrics.ablation == "original"].assign(
        setting=lambda d: d.topic_set + "-mode" + d["mode"].astype(str)
    )
    app_h = {}
    for metric, alt in (("s_sem", "greater"), ("rouge_l", "greater"), ("d_stance", "less")):
        values = orig.pivot_table(index="model", columns="setting", values=metric)
        best = (
            (values.mean(axis=1).idxmax() if alt == "greater" else values.mean(axis=1).idxmin())
            if len(values)
            else None
        )
        app_h[metric] = (
            {"best": best, **stats.appendix_h(values, best, alt)} if best is not None else {"note": "no metrics"}
        )
    write_json(out / "appendix_h.json", app_h)
    vs_paper.write(out, rows, "DEBATE (paper 003): our run beside the paper's Tables 3, 4, 9, 10 and Fig. 2")
    summary_json = {
        "settings": int(len(metrics)),
        "groups_sect6": int(mem.session_id.nunique()),
        "members_sect6": int(len(mem) // 2),
        "degenerate": bool(flags),
        "degeneracy_flags": dg.as_json(flags),
    }
    write_json(out / "summary.json", summary_json)
    return {"flags": dg.as_json(flags)}
