"""The coherence study (paper 001): its artifacts and stages (the study contract, socsim.stages)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from socsim.coherence import schemas
from socsim.context import StageContext
from socsim.models import reads_itself
from socsim.stages import SHARD, Artifact, Stage, Study, analysis_folder, shard_table

if TYPE_CHECKING:
    from socsim.llm import LLMClient

DATA = "data/coherence"
RESULTS = "results/coherence"


def run_agents(ctx: StageContext) -> None:
    from socsim.coherence import agents

    rows = agents.build_agents(ctx.params["coherence"], ctx.seed, ctx.yaml("topics_file"), ctx.yaml("prompts_file"))
    ctx.write("agents", rows)
    ctx.write_metrics(agents=len(rows))


def run_elicit(ctx: StageContext) -> None:
    from socsim.coherence import agents

    cp = ctx.params["coherence"]
    topics, prompts = ctx.yaml("topics_file"), ctx.yaml("prompts_file")
    agent_rows = ctx.rows("agents")
    clients = ctx.model_clients(cp["agent_models"], "coherence.agent_models")
    rows = []
    for name, client in clients.items():
        reqs = agents.elicitation_requests(agent_rows, topics, prompts, ctx.seed, name, client.sampling(max_tokens=4))
        rows += agents.profile_rows(
            agent_rows, client.run(reqs, desc=f"elicit {name}"), prompts, cp["openness_scoring"], name
        )
    ctx.write("profiles", rows)
    ctx.write_metrics(profiles=len(rows), usable=sum(r["preference_ok"] and r["openness_ok"] for r in rows))


def run_pair(ctx: StageContext) -> None:
    from socsim.coherence import agents

    agent_rows = {a["agent_id"]: a for a in ctx.rows("agents")}
    rows = agents.pair_agents(
        ctx.rows("profiles"),
        agent_rows,
        ctx.params["coherence"]["pairing"],
        ctx.seed,
        ctx.yaml("topics_file"),
        ctx.yaml("prompts_file"),
    )
    ctx.write("pairs", rows)
    ctx.write_metrics(conversations=len(rows))


def run_converse(ctx: StageContext) -> None:
    from socsim.coherence import dialogue

    cp = ctx.params["coherence"]
    pairs = ctx.rows("pairs", in_shard=True)  # self-contained episodes: question, system prompts, seed
    clients = ctx.model_clients(cp["agent_models"], "coherence.agent_models", present=pairs)
    rows = asyncio.run(dialogue.run_conversations(pairs, cp, clients))
    ctx.write("utterances", rows)
    ctx.write_metrics(
        conversations=len(pairs),
        utterances=len(rows),
        ended_by_goodbye=len({r["conversation_id"] for r in rows if r["says_goodbye"]}),
    )


def _judges(ctx: StageContext, present: list[str]) -> tuple[dict[str, LLMClient], dict[str, str]]:
    """The judge clients for the agent models that have conversations (`present`), and agent model -> judge."""
    from socsim.coherence import dialogue

    cp = ctx.params["coherence"]
    # Validate the mapping against every agent model, but judge (and calibrate) only those with conversations.
    agent_models = list(dict.fromkeys([*cp["agent_models"], *present]))
    judge_of = dialogue.judges_for(agent_models, cp["judge_model"], cp["judge_models"], ctx.params["models"])
    judge_of = {m: judge_of[m] for m in present}
    return ctx.model_clients(list(judge_of.values()), _judge_key(cp)), judge_of


def _judge_key(cp: Mapping[str, Any]) -> str:
    return "coherence.judge_models" if cp["judge_models"] else "coherence.judge_model"


def _agent_model_names(p: Mapping[str, Any]) -> dict[str, str]:
    return dict.fromkeys(p["coherence"]["agent_models"], "coherence.agent_models")


def _judge_model_names(p: Mapping[str, Any]) -> dict[str, str]:
    """Stage.models of judge and calibrate: every agent model's judge (and judge_model, the fallback, unless
    every agent model is a control, which judges itself: socsim.models.reader_of)."""
    from socsim.coherence import dialogue

    cp = p["coherence"]
    judges = dialogue.judges_for(list(cp["agent_models"]), cp["judge_model"], cp["judge_models"], p["models"])
    fallback = [] if all(reads_itself(p["models"].get(m)) for m in cp["agent_models"]) else [cp["judge_model"]]
    return dict.fromkeys([*judges.values(), *fallback], _judge_key(cp))


def run_judge(ctx: StageContext) -> None:
    from socsim.coherence import dialogue

    utterances = ctx.rows("utterances")
    clients, judge_of = _judges(ctx, sorted({u["model"] for u in utterances}))
    rows = asyncio.run(
        dialogue.run_judge(utterances, ctx.yaml("prompts_file"), ctx.params["coherence"], clients, judge_of, ctx.seed)
    )
    ctx.write("judgments", rows, judge_of=judge_of)
    ctx.write_metrics(judgments=len(rows), judges=judge_of)


def run_calibrate(ctx: StageContext) -> None:
    from socsim.coherence import dialogue

    # the models only: every utterance of a paper-scale run is gigabytes (a plan of params.paper.yaml: 16.5 GB)
    clients, judge_of = _judges(ctx, ctx.distinct("utterances", "model"))
    rows = asyncio.run(dialogue.run_calibration(ctx.yaml("prompts_file"), clients, ctx.seed))
    ctx.write("calibration", rows, judge_of=judge_of)
    ctx.write_metrics(
        judges=judge_of, calibration={n: [r["score"] for r in rows if r["judge_model"] == n] for n in clients}
    )


def run_analyse(ctx: StageContext) -> None:
    from socsim.coherence import analysis

    ctx.write_report(analysis.analyse(ctx.analysis_inputs()))


def run_figures(ctx: StageContext) -> None:
    from socsim.coherence import figures

    out = ctx.path("figures")
    figures.all_figures(ctx.plots(), out)
    ctx.write_metrics(figures=sorted(p.name for p in out.glob("*.png")))


def shards(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Converse/judge shards: one per (agent model, topic), or coarser by `coherence.shard_by`."""
    cp = params["coherence"]
    cells = [{"model": m, "topic": t} for m in cp["agent_models"] for t in cp["topics"]]
    return shard_table(cells, list(cp["shard_by"]))


SHARD_KEYS = ("coherence.agent_models", "coherence.topics", "coherence.shard_by")
JUDGE_KEYS = ("seed", "coherence.agent_models", "coherence.judge_model", "coherence.judge_models")

ARTIFACTS = {
    "topics_file": Artifact(f"{DATA}/topics.yaml"),
    "prompts_file": Artifact(f"{DATA}/prompts.yaml"),
    "paper_file": Artifact(f"{DATA}/paper.yaml"),
    "agents": Artifact(f"{RESULTS}/agents.parquet", schemas.AGENTS, ("agent_id",)),
    "profiles": Artifact(f"{RESULTS}/profiles.parquet", schemas.PROFILES, ("model", "agent_id")),
    "pairs": Artifact(f"{RESULTS}/pairs.parquet", schemas.PAIRS, ("conversation_id",)),
    "utterances": Artifact(f"{RESULTS}/utterances/{SHARD}.parquet", schemas.UTTERANCES, ("conversation_id", "turn")),
    "judgments": Artifact(f"{RESULTS}/judgments/{SHARD}.parquet", schemas.JUDGMENTS, ("conversation_id", "turn")),
    "calibration": Artifact(
        f"{RESULTS}/judge_calibration.parquet", schemas.JUDGE_CALIBRATION, ("judge_model", "example")
    ),
    "analysis": analysis_folder(f"{RESULTS}/analysis", schemas.FIGURES),
    "figures": Artifact(f"{RESULTS}/figures", kind="dir", report="figures"),
}

STUDY = Study(
    "coherence",
    ARTIFACTS,
    [
        Stage(
            "agents",
            "Agents per topic and bias cell: a seeded sample of the 960 demographic backgrounds (Table 2) "
            "with no, implicit (Table 5) or explicit (Table 6) bias, in favour or against.",
            run_agents,
            inputs=("topics_file", "prompts_file"),
            outputs=("agents",),
            params=("seed", "coherence.topics", "coherence.bias_levels", "coherence.agents_per_cell"),
        ),
        Stage(
            "elicit",
            "Latent profiles per agent model: preference P (1-5) and openness O (Yes count over nine "
            "items), constrained answers, raw answers and parse flags.",
            run_elicit,
            inputs=("agents", "topics_file", "prompts_file"),
            outputs=("profiles",),
            params=("seed", "coherence.agent_models", "coherence.openness_scoring"),
            uses_llm=True,
            models=_agent_model_names,
        ),
        Stage(
            "pair",
            "For every pair of (P, O, B) profiles present (or bins), k pairs of two different agents "
            "(seeded); a seeded coin per pair decides who opens; each row is a self-contained episode (question, both "
            "system prompts, seed).",
            run_pair,
            inputs=("agents", "profiles", "topics_file", "prompts_file"),
            outputs=("pairs",),
            params=("seed", "coherence.pairing"),
        ),
        Stage(
            "converse",
            "Dyadic conversations of one shard, concurrently: the pair's opener asks the topic question, "
            "turns alternate, each agent generates turns_per_agent statements unless 'Goodbye.' ends it; one row "
            "per utterance.",
            run_converse,
            inputs=("pairs",),
            outputs=("utterances",),
            params=("coherence.turns_per_agent", "coherence.stop", "coherence.utterance_max_tokens", *SHARD_KEYS),
            uses_llm=True,
            models=_agent_model_names,
            shards=shards,
            length_depends_on_answers=True,
        ),
        Stage(
            "judge",
            "LLM-as-judge agreement (1-5) after every turn of one shard's conversations from at most the "
            "last 3 statements of each agent; -1 for an empty window; a judge per agent model "
            "(coherence.judge_models).",
            run_judge,
            inputs=("utterances", "prompts_file"),
            outputs=("judgments",),
            params=(*JUDGE_KEYS, "coherence.judge_window", *SHARD_KEYS),
            uses_llm=True,
            models=_judge_model_names,
            shards=shards,
        ),
        Stage(
            "calibrate",
            "Each judge scores five held-out calibration examples, not those of its own prompt (same "
            "prompt, constraint and seed scheme as the judgments).",
            run_calibrate,
            inputs=("utterances", "prompts_file"),
            outputs=("calibration",),
            params=JUDGE_KEYS,
            uses_llm=True,
            models=_judge_model_names,
        ),
        Stage(
            "analyse",
            "Bootstrap group means, expected vs observed agreement and suppression (Table 3), anchors, "
            "contentiousness, openness, the six tests (Table 4), Self-BLEU filter, degeneracy flags, vs_paper.",
            run_analyse,
            inputs=("agents", "profiles", "pairs", "judgments", "utterances", "calibration", "paper_file"),
            outputs=("analysis",),
            params=(
                "seed",
                "coherence.bootstrap",
                "coherence.alpha",
                "coherence.self_bleu_threshold",
                "coherence.sigmoid_steepness",
                "coherence.test6_rule",
            ),
        ),
        Stage(
            "figures",
            "Figs. 4-8 (PNG + PDF): agreement by gap, suppression, anchors, contentiousness, openness.",
            run_figures,
            inputs=("analysis",),
            outputs=("figures",),
        ),
    ],
)
