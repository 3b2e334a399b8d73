"""The opinion-dynamics study (paper 002): its artifacts and stages (the study contract, socsim.stages)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import pandas as pd

from socsim.context import StageContext
from socsim.io.parquet import write_json
from socsim.models import reader_of, reads_itself
from socsim.opinion_dynamics import schemas
from socsim.opinion_dynamics.plot_layout import FIGURES
from socsim.stages import SHARD, Artifact, Stage, Study, analysis_folder, shard_table

DATA = "data/opinion_dynamics"
RESULTS = "results/opinion_dynamics"
OD = "opinion_dynamics"


def run_materials(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import materials

    personas = materials.persona_rows(ctx.yaml("personas_file"))
    topics = materials.topic_rows(ctx.yaml("topics_file"))
    ctx.write("personas", personas)
    ctx.write("topics", topics)
    ctx.write_metrics(personas=len(personas), topics=len(topics))


def run_setups(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import setups

    rows = setups.build(ctx.params[OD], ctx.seed, ctx.rows("personas"), ctx.rows("topics"), ctx.yaml("prompts_file"))
    ctx.write("setups", rows)
    ctx.write_metrics(
        simulations=len(rows), by_condition=dict(pd.Series([r["condition"] for r in rows]).value_counts().sort_index())
    )


def run_simulate(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import simulate

    od = ctx.params[OD]
    setups = ctx.rows("setups", in_shard=True)
    clients = ctx.model_clients(od["agent_models"], "opinion_dynamics.agent_models", present=setups)
    rows = asyncio.run(simulate.run_simulations(setups, ctx.yaml("prompts_file"), od, clients))
    ctx.write("events", rows)
    ctx.write_metrics(
        simulations=len(setups),
        steps=len(rows),
        truncated_events=sum(r["truncated_events"] for r in rows),
        steps_with_truncation=sum(r["truncated_events"] > 0 for r in rows),
    )


def _human_ratings(against: str | None) -> bool:
    """validation.against names a CSV of human ratings (else a second classifier from the registry)."""
    return against is not None and against.lower().endswith(".csv")


def _readers(p: Mapping[str, Any], configured: str, where: str) -> dict[str, str]:
    """The models that read the agents' outputs -> the params key that names each: `configured` (named by
    `where`) for a language model's outputs, a control's own for its outputs (socsim.models.reader_of)."""
    out: dict[str, str] = {}
    for m in p[OD]["agent_models"]:
        r = reader_of(p["models"], m, configured)
        out.setdefault(r, where if r == configured else "opinion_dynamics.agent_models")
    return out


Row = TypeVar("Row")


def _read_by(
    items: Sequence[Mapping[str, Any]],
    registry: Mapping[str, Any],
    configured: str,
    read: Callable[[list[Mapping[str, Any]], str], list[Row]],
) -> list[Row]:
    """`read(items, reader)` per reader of the items' agent models (`reader_of`: `configured`, or a control
    itself), each reader's items in their order; one row per item, back in the items' order."""
    groups: dict[str, list[int]] = {} if items else {configured: []}
    for i, x in enumerate(items):
        groups.setdefault(reader_of(registry, x["model"], configured), []).append(i)
    out: list[Row | None] = [None] * len(items)
    for reader, idx in groups.items():
        for i, row in zip(idx, read([items[i] for i in idx], reader), strict=True):
            out[i] = row
    return [r for r in out if r is not None]


def _classifier_names(p: Mapping[str, Any]) -> dict[str, str]:
    return _readers(p, p[OD]["classifier"]["model"], "opinion_dynamics.classifier.model")


def _validation_names(p: Mapping[str, Any]) -> dict[str, str]:
    against = p[OD]["validation"]["against"]
    return {} if against is None or _human_ratings(against) else {against: "opinion_dynamics.validation.against"}


def run_classify(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import classify

    cl = ctx.params[OD]["classifier"]
    events = ctx.rows("events")
    claims = {s["sim_id"]: s["claim"] for s in ctx.rows("setups")}
    prompts, names = ctx.yaml("prompts_file"), _classifier_names(ctx.params)

    def read(mine: list[Mapping[str, Any]], name: str) -> list[dict[str, Any]]:
        client = ctx.model_client(name, names[name])
        return asyncio.run(classify.classify(list(map(dict, mine)), claims, prompts, cl, client, name, ctx.seed))

    rows = _read_by(events, ctx.params["models"], cl["model"], read)
    ctx.write("ratings", rows)
    failed = sum(not r["parse_ok"] for r in rows)
    ctx.write_metrics(reports=len(rows), parse_failed=failed, parse_failure_rate=failed / len(rows) if rows else None)


def run_validate(ctx: StageContext) -> None:
    """The classifier against a second classifier (a model entry) or human ratings (a CSV)."""
    from socsim.opinion_dynamics import classify

    od = ctx.params[OD]
    v, cl = od["validation"], od["classifier"]
    out = ctx.path("validation")
    ratings = ctx.rows("ratings")
    if v["against"] is None:
        write_json(
            out,
            {
                "status": "not requested",
                "how": "set opinion_dynamics.validation.against to a CSV of "
                "human ratings (sim_id, t, opinion) or a second classifier (a models registry name)",
            },
        )
        ctx.write_metrics(validated=0)
        return
    if _human_ratings(v["against"]):
        human = pd.read_csv(v["against"])
        missing = {"sim_id", "t", "opinion"} - set(human.columns)
        if missing:
            raise ValueError(
                f"{v['against']}: human ratings need the columns sim_id, t, opinion (missing: "
                f"{', '.join(sorted(missing))})"
            )
        other = {(r.sim_id, int(r.t)): int(r.opinion) for r in human.itertuples()}
        against = f"human ratings ({v['against']})"
    else:
        registry = ctx.params["models"]
        # a control's reports are read by the control alone (models.reads_itself): the second classifier validates
        # the configured classifier on the language models' reports
        events = [e for e in ctx.rows("events") if not reads_itself(registry.get(e["model"]))]
        claims = {s["sim_id"]: s["claim"] for s in ctx.rows("setups")}
        from socsim import seeds

        events = sorted(
            seeds.rng(ctx.seed, OD, "validate").sample(events, min(v["sample"], len(events))),
            key=lambda e: (e["sim_id"], e["t"]),
        )
        name = v["against"]
        client = ctx.model_client(name, "opinion_dynamics.validation.against")
        second = asyncio.run(classify.classify(events, claims, ctx.yaml("prompts_file"), cl, client, name, ctx.seed))
        other = {(r["sim_id"], r["t"]): r["opinion"] for r in second}
        against = f"second classifier {name}"
    pairs = [(r["opinion"], other[(r["sim_id"], r["t"])]) for r in ratings if (r["sim_id"], r["t"]) in other]
    result = {
        "classifier": cl["model"],
        "against": against,
        **classify.agreement([a for a, _ in pairs], [b for _, b in pairs]),
    }
    write_json(out, result)
    ctx.write_metrics(
        validated=result["n"],
        agreement=result["agreement"],
        cohen_kappa=result["cohen_kappa"],
        krippendorff_alpha=result["krippendorff_alpha"],
    )


def _judge_name(p: Mapping[str, Any]) -> str:
    """The outside-information judge: outside_info.model, or the classifier's model where null."""
    name: str | None = p[OD]["outside_info"]["model"]
    return name if name is not None else str(p[OD]["classifier"]["model"])


def _judge_names(p: Mapping[str, Any]) -> dict[str, str]:
    key = (
        "opinion_dynamics.outside_info.model"
        if p[OD]["outside_info"]["model"] is not None
        else "opinion_dynamics.classifier.model"
    )
    return {} if p[OD]["outside_info"]["sample"] == 0 else _readers(p, _judge_name(p), key)


def run_outside_info(ctx: StageContext) -> None:
    """The outside-information judge on a seeded sample of the main simulations' tweets and reports."""
    from socsim.opinion_dynamics import outside_info

    cfg = ctx.params[OD]["outside_info"]
    items = outside_info.sample(outside_info.outputs(ctx.rows("events"), ctx.rows("setups")), cfg["sample"], ctx.seed)
    rows: list[dict[str, Any]] = []
    if items and cfg["sample"] != 0:
        prompts, names = ctx.yaml("prompts_file"), _judge_names(ctx.params)

        def read(mine: list[Mapping[str, Any]], name: str) -> list[dict[str, Any]]:
            client = ctx.model_client(name, names[name])
            return asyncio.run(outside_info.judge(list(map(dict, mine)), prompts, cfg, client, name, ctx.seed))

        rows = _read_by(items, ctx.params["models"], _judge_name(ctx.params), read)
    ctx.write("outside_info", rows)
    failed = sum(not r["parse_ok"] for r in rows)
    ctx.write_metrics(
        judged=len(rows),
        parse_failed=failed,
        outside=sum(bool(r["outside"]) for r in rows),
        by_world={w: sum(r["world"] == w for r in rows) for w in sorted({r["world"] for r in rows})},
    )


def run_trajectories(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import analysis

    rows = analysis.trajectories(ctx.rows("setups"), ctx.rows("ratings"))
    ctx.write("trajectories", rows)
    ctx.write_metrics(rows=len(rows), sources=dict(pd.Series([r["source"] for r in rows]).value_counts().sort_index()))


def run_baseline(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import baseline

    b = ctx.params[OD]["baseline"]
    rows = []
    for s in ctx.rows("setups"):
        if s["condition"] != "main":
            continue
        pairs = list(zip(s["writers"], s["reviewers"]))
        for kind, cfg in (("deffuant", b["deffuant"]), ("degroot", b["degroot"])):
            matrix = baseline.run(kind, s["initial"], pairs, cfg["mu"], cfg.get("epsilon"))
            rows += [
                {"sim_id": s["sim_id"], "baseline": kind, "agent": i, "t": t, "opinion": int(v)}
                for t, row in enumerate(matrix)
                for i, v in enumerate(row)
            ]
    ctx.write("baseline", rows)
    ctx.write_metrics(rows=len(rows))


def run_analyse(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import analysis

    names = ("setups", "trajectories", "ratings", "baseline", "outside_info")
    ctx.write_report(analysis.analyse(ctx.analysis_inputs(*names)))


def run_figures(ctx: StageContext) -> None:
    from socsim.opinion_dynamics import figures

    ctx.write_metrics(figures=sorted(figures.draw(ctx.plots(), ctx.path("figures"))))


def shards(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Simulate/classify shards: one per (agent model, topic), or coarser by `opinion_dynamics.shard_by`."""
    od = params[OD]
    topics = list(dict.fromkeys([*od["topics"], *od["fig5"]["topics"]]))
    return shard_table([{"model": m, "topic": t} for m in od["agent_models"] for t in topics], list(od["shard_by"]))


SHARD_KEYS = (
    "opinion_dynamics.agent_models",
    "opinion_dynamics.topics",
    "opinion_dynamics.fig5.topics",
    "opinion_dynamics.shard_by",
)
DESIGN = (
    "seed",
    "opinion_dynamics.agent_models",
    "opinion_dynamics.topics",
    "opinion_dynamics.framings",
    "opinion_dynamics.confirmation_bias",
    "opinion_dynamics.memory",
    "opinion_dynamics.world",
    "opinion_dynamics.initial_distributions",
    "opinion_dynamics.topologies",
    "opinion_dynamics.n_agents",
    "opinion_dynamics.steps",
    "opinion_dynamics.repetitions",
    "opinion_dynamics.schedule",
    "opinion_dynamics.injection",
    "opinion_dynamics.fig5",
    "opinion_dynamics.controls",
)
CLASSIFIER = ("seed", "opinion_dynamics.classifier")

ARTIFACTS = {
    "personas_file": Artifact(f"{DATA}/personas.yaml"),
    "topics_file": Artifact(f"{DATA}/topics.yaml"),
    "prompts_file": Artifact(f"{DATA}/prompts.yaml"),
    "paper_file": Artifact(f"{DATA}/paper.yaml"),
    "personas": Artifact(f"{RESULTS}/personas.parquet", schemas.PERSONAS, ("persona_id",)),
    "topics": Artifact(f"{RESULTS}/topics.parquet", schemas.TOPICS, ("topic",)),
    "setups": Artifact(f"{RESULTS}/setups.parquet", schemas.SETUPS, ("sim_id",)),
    "events": Artifact(f"{RESULTS}/events/{SHARD}.parquet", schemas.EVENTS, ("sim_id", "t")),
    "ratings": Artifact(f"{RESULTS}/ratings/{SHARD}.parquet", schemas.RATINGS, ("sim_id", "t")),
    "validation": Artifact(f"{RESULTS}/validation.json"),
    "outside_info": Artifact(f"{RESULTS}/outside_info.parquet", schemas.OUTSIDE_INFO, ("sim_id", "t", "kind")),
    "trajectories": Artifact(f"{RESULTS}/trajectories.parquet", schemas.TRAJECTORIES, ("sim_id", "agent", "t")),
    "baseline": Artifact(f"{RESULTS}/baseline.parquet", schemas.BASELINE, ("sim_id", "baseline", "agent", "t")),
    "analysis": analysis_folder(f"{RESULTS}/analysis", FIGURES),
    "figures": Artifact(f"{RESULTS}/figures", kind="dir", report="figures"),
}

STUDY = Study(
    OD,
    ARTIFACTS,
    [
        Stage(
            "materials",
            "The 10 personas (App. B) and the 15 topics with both framings (App. H) as tables.",
            run_materials,
            inputs=("personas_file", "topics_file"),
            outputs=("personas", "topics"),
        ),
        Stage(
            "setups",
            "One self-contained row per simulation: factors, N agents with persona texts, initial opinions "
            "and system prompts, the full pair schedule (seeded from ids, shared across the conditions of a topic and "
            "repetition); Fig. 5 runs and the two controls.",
            run_setups,
            inputs=("personas", "topics", "prompts_file"),
            outputs=("setups",),
            params=DESIGN,
        ),
        Stage(
            "simulate",
            "T steps per simulation on the engine: the writer tweets, the reviewer reports its belief with "
            "reasoning; cumulative or reflective memory; controls report without interaction. One row per step.",
            run_simulate,
            inputs=("setups", "prompts_file"),
            outputs=("events",),
            params=(
                "opinion_dynamics.max_tokens",
                "opinion_dynamics.memory_max_tokens",
                "opinion_dynamics.history_layout",
                "opinion_dynamics.reflective_variant",
                *SHARD_KEYS,
            ),
            uses_llm=True,
            shards=shards,
            models=lambda p: dict.fromkeys(p[OD]["agent_models"], "opinion_dynamics.agent_models"),
        ),
        Stage(
            "classify",
            "The opinion classifier: every report to -2..2 under a constraint (temperature 0), raw answer "
            "and parse flag kept.",
            run_classify,
            inputs=("events", "setups", "prompts_file"),
            outputs=("ratings",),
            params=(*CLASSIFIER, *SHARD_KEYS),
            uses_llm=True,
            models=_classifier_names,
            shards=shards,
        ),
        Stage(
            "validate",
            "Agreement, Cohen's kappa and Krippendorff's alpha of the classifier against a second classifier "
            "or human ratings (opinion_dynamics.validation.against; null = not requested).",
            run_validate,
            inputs=("ratings", "events", "setups", "prompts_file"),
            outputs=("validation",),
            params=(*CLASSIFIER, "opinion_dynamics.validation"),
            uses_llm=True,
            models=_validation_names,
        ),
        Stage(
            "outside_info",
            "The outside-information judge (paper section 3.3): a seeded sample of the main simulations' tweets "
            "and reports per world setting, each labelled yes/no for information from outside the exchange.",
            run_outside_info,
            inputs=("events", "setups", "prompts_file"),
            outputs=("outside_info",),
            params=(
                "seed",
                "opinion_dynamics.outside_info",
                "opinion_dynamics.classifier.model",
                "opinion_dynamics.agent_models",
            ),
            uses_llm=True,
            models=_judge_names,
        ),
        Stage(
            "trajectories",
            "One row per (simulation, agent, t = 0..T): the initial, classified or carried opinion "
            "(a failed parse carries the previous one, flagged).",
            run_trajectories,
            inputs=("setups", "ratings"),
            outputs=("trajectories",),
        ),
        Stage(
            "baseline",
            "Numeric agent-based baselines on the same N, T, pair schedule and scale: Deffuant bounded "
            "confidence and DeGroot-style averaging.",
            run_baseline,
            inputs=("setups",),
            outputs=("baseline",),
            params=("opinion_dynamics.baseline",),
        ),
        Stage(
            "analyse",
            "B and D per simulation (population and sample SD), Tables 1 and 2, controls, the paper's tests, "
            "baselines side by side, B and D per topic, the outside-information rate per world, degeneracy flags, "
            "vs_paper (with Fig. 5's reported B).",
            run_analyse,
            inputs=("setups", "trajectories", "ratings", "baseline", "outside_info", "paper_file"),
            outputs=("analysis",),
            params=(
                "opinion_dynamics.metrics",
                "opinion_dynamics.alpha",
                "opinion_dynamics.outside_info.sample",
                "opinion_dynamics.classifier.layout",
            ),
        ),
        Stage(
            "figures",
            "Opinion trajectories (Figs. 4-6 layout) and controls, final distributions (pooled and per topic), "
            "B and D by condition with the baselines (PNG + PDF).",
            run_figures,
            inputs=("setups", "trajectories", "analysis"),
            outputs=("figures",),
            params=("opinion_dynamics.metrics",),
        ),
    ],
)
