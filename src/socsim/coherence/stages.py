"""Stages of the coherence study, registered for the CLI, Snakemake and DVC."""

from __future__ import annotations

import asyncio

from socsim.coherence import schemas
from socsim.io.parquet import atomic_write_bytes, read_table, write_json, write_table
from socsim.stages import Stage, register

DATA = "data/coherence"
RESULTS = "results/coherence"
LLM_KEYS = ("llm.backend", "llm.model_path", "llm.model", "llm.sampling.temperature", "llm.sampling.top_p")


def run_agents(ctx) -> None:
    from socsim.coherence import agents

    rows = agents.build_agents(ctx.params["coherence"], ctx.seed, agents.read_yaml(ctx.path("topics_file")),
                               agents.read_yaml(ctx.path("prompts_file")))
    write_table(ctx.path("agents"), rows, schemas.AGENTS, ["agent_id"], ctx.provenance())
    ctx.write_metrics(agents=len(rows))


def run_elicit(ctx) -> None:
    from socsim.coherence import agents

    cp = ctx.params["coherence"]
    topics, prompts = agents.read_yaml(ctx.path("topics_file")), agents.read_yaml(ctx.path("prompts_file"))
    agent_rows = read_table(ctx.path("agents"), schemas.AGENTS).to_pylist()
    clients = ctx.model_clients(cp["agent_models"], "coherence.agent_models")
    rows = []
    for name, client in clients.items():
        reqs = agents.elicitation_requests(agent_rows, topics, prompts, ctx.seed, name,
                                           client.sampling(max_tokens=4))
        rows += agents.profile_rows(agent_rows, client.run(reqs, desc=f"elicit {name}"), prompts,
                                    cp["openness_scoring"], name)
    write_table(ctx.path("profiles"), rows, schemas.PROFILES, ["model", "agent_id"],
                {**ctx.provenance(), "model": {n: c.identity() for n, c in clients.items()}})
    ctx.write_metrics(profiles=len(rows), usable=sum(r["preference_ok"] and r["openness_ok"] for r in rows),
                      **ctx.llm_metrics(clients))


def run_pair(ctx) -> None:
    from socsim.coherence import agents

    agent_rows = {a["agent_id"]: a for a in read_table(ctx.path("agents"), schemas.AGENTS).to_pylist()}
    profiles = read_table(ctx.path("profiles"), schemas.PROFILES).to_pylist()
    rows = agents.pair_agents(profiles, agent_rows, ctx.params["coherence"]["pairing"], ctx.seed)
    write_table(ctx.path("pairs"), rows, schemas.PAIRS, ["conversation_id"], ctx.provenance())
    ctx.write_metrics(conversations=len(rows))


def run_converse(ctx) -> None:
    from socsim.coherence import agents, dialogue

    cp = ctx.params["coherence"]
    topics, prompts = agents.read_yaml(ctx.path("topics_file")), agents.read_yaml(ctx.path("prompts_file"))
    agent_rows = {a["agent_id"]: a for a in read_table(ctx.path("agents"), schemas.AGENTS).to_pylist()}
    pairs = read_table(ctx.path("pairs"), schemas.PAIRS).to_pylist()
    clients = ctx.model_clients([m for m in cp["agent_models"] if any(p["model"] == m["name"] for p in pairs)],
                                "coherence.agent_models")
    questions = {t["id"]: t["question"] for t in topics["topics"]}
    rows = asyncio.run(dialogue.run_conversations(pairs, agent_rows, questions, prompts, cp, clients, ctx.seed))
    write_table(ctx.path("utterances"), rows, schemas.UTTERANCES, ["conversation_id", "turn"],
                {**ctx.provenance(), "model": {n: c.identity() for n, c in clients.items()}})
    ctx.write_metrics(conversations=len(pairs), utterances=len(rows),
                      ended_by_goodbye=len({r["conversation_id"] for r in rows if r["says_goodbye"]}),
                      **ctx.llm_metrics(clients))


def run_judge(ctx) -> None:
    from socsim.coherence import agents, dialogue

    cp = ctx.params["coherence"]
    prompts = agents.read_yaml(ctx.path("prompts_file"))
    utterances = read_table(ctx.path("utterances"), schemas.UTTERANCES).to_pylist()
    present = sorted({u["model"] for u in utterances})
    # Validate the mapping against every agent model, but judge (and calibrate) only those with conversations.
    entries = dialogue.judges_for(list(dict.fromkeys([m["name"] for m in cp["agent_models"]] + present)),
                                  cp["judge_model"], cp.get("judge_models"))
    entries = {m: entries[m] for m in present}
    unique = list({e["name"]: e for e in entries.values()}.values())
    clients = ctx.model_clients(unique, "coherence.judge_models" if cp.get("judge_models") else "coherence.judge_model")
    judge_of = {m: e["name"] for m, e in entries.items()}
    rows, calibration = asyncio.run(dialogue.run_judge(utterances, prompts, cp, clients, judge_of, ctx.seed))
    prov = {**ctx.provenance(), "model": {n: c.identity() for n, c in clients.items()}, "judge_of": judge_of}
    write_table(ctx.path("judgments"), rows, schemas.JUDGMENTS, ["conversation_id", "turn"], prov)
    write_table(ctx.path("calibration"), calibration, schemas.JUDGE_CALIBRATION, ["judge_model", "example"], prov)
    ctx.write_metrics(judgments=len(rows), judges=judge_of,
                      calibration={n: [r["score"] for r in calibration if r["judge_model"] == n] for n in clients},
                      **ctx.llm_metrics(clients))


def run_analyse(ctx) -> None:
    from socsim.coherence import analysis, compare
    from socsim.io import vs_paper

    cp = ctx.params["coherence"]
    load = lambda name, schema: read_table(ctx.path(name), schema).to_pandas()  # noqa: E731
    out = analysis.analyse(load("agents", schemas.AGENTS), load("profiles", schemas.PROFILES),
                           load("pairs", schemas.PAIRS), load("judgments", schemas.JUDGMENTS),
                           load("utterances", schemas.UTTERANCES), load("calibration", schemas.JUDGE_CALIBRATION),
                           cp, ctx.seed)
    d = ctx.path("analysis")
    for name, table in out["tables"].items():
        atomic_write_bytes(d / f"{name}.csv", table.to_csv(index=False, float_format="%.6g").encode())
    csv, md, tex = compare.table4(out["tables"]["six_tests"])
    atomic_write_bytes(d / "table4_tests.csv", csv.encode())
    atomic_write_bytes(d / "table4_tests.md", md.encode())
    atomic_write_bytes(d / "table4_tests.tex", tex.encode())
    rows = compare.vs_paper_rows(out["tables"], out["flags"], vs_paper.read_paper(ctx.path("paper_file")))
    vs_paper.write(d, rows, "Coherence (paper 001): our run beside the paper's Tables 3 and 4")
    write_json(d / "summary.json", out["summary"])
    write_json(d / "provenance.json", ctx.provenance())
    s = out["summary"]
    ctx.write_metrics(conversations=s["conversations"], removed_by_self_bleu=s["removed_by_self_bleu"],
                      tests_passed=s["tests_passed"], degeneracy_flags=len(s["degeneracy_flags"]))


def run_figures(ctx) -> None:
    from socsim.coherence import figures

    a, out = ctx.path("analysis"), ctx.path("figures")
    t = lambda name: figures.read_csv(a / f"{name}.csv")  # noqa: E731
    figures.all_figures({name: t(name) for name in figures.TABLES}, out)


MATERIALS = {"topics_file": f"{DATA}/topics.yaml", "prompts_file": f"{DATA}/prompts.yaml"}

register(Stage(
    study="coherence", name="agents",
    summary="Agents per topic and bias cell: a seeded sample of the 960 demographic backgrounds (Table 2) with "
            "no, implicit (Table 5) or explicit (Table 6) bias, in favour or against.",
    run=run_agents, inputs=dict(MATERIALS), outputs={"agents": f"{RESULTS}/agents.parquet"},
    metrics=f"{RESULTS}/metrics/agents.json",
    params=("seed", "coherence.topics", "coherence.bias_levels", "coherence.agents_per_cell"),
))

register(Stage(
    study="coherence", name="elicit",
    summary="Latent profiles per agent model: preference P (1-5) and openness O (Yes count over nine items), "
            "constrained answers, raw answers and parse flags.",
    run=run_elicit, inputs={"agents": f"{RESULTS}/agents.parquet", **MATERIALS},
    outputs={"profiles": f"{RESULTS}/profiles.parquet"}, metrics=f"{RESULTS}/metrics/elicit.json",
    params=("seed", "coherence.agent_models", "coherence.openness_scoring", *LLM_KEYS), uses_llm=True,
))

register(Stage(
    study="coherence", name="pair",
    summary="For every pair of (P, O, B) profiles present (or bins), k pairs of two different agents (seeded); "
            "a seeded coin per pair decides who opens.",
    run=run_pair, inputs={"agents": f"{RESULTS}/agents.parquet", "profiles": f"{RESULTS}/profiles.parquet"},
    outputs={"pairs": f"{RESULTS}/pairs.parquet"}, metrics=f"{RESULTS}/metrics/pair.json",
    params=("seed", "coherence.pairing"),
))

register(Stage(
    study="coherence", name="converse",
    summary="Dyadic conversations, concurrently: the pair's opener asks the topic question, turns alternate, "
            "each agent generates turns_per_agent statements unless 'Goodbye.' ends it; one row per utterance.",
    run=run_converse, inputs={"pairs": f"{RESULTS}/pairs.parquet", "agents": f"{RESULTS}/agents.parquet",
                              **MATERIALS},
    outputs={"utterances": f"{RESULTS}/utterances.parquet"}, metrics=f"{RESULTS}/metrics/converse.json",
    params=("seed", "coherence.agent_models", "coherence.turns_per_agent", "coherence.stop",
            "coherence.utterance_max_tokens", *LLM_KEYS), uses_llm=True,
))

register(Stage(
    study="coherence", name="judge",
    summary="LLM-as-judge agreement (1-5) after every turn from at most the last 3 statements of each agent; "
            "-1 for an empty window; a judge per agent model (coherence.judge_models); the judge also scores its "
            "prompt's five calibration examples.",
    run=run_judge, inputs={"utterances": f"{RESULTS}/utterances.parquet", "prompts_file": f"{DATA}/prompts.yaml"},
    outputs={"judgments": f"{RESULTS}/judgments.parquet", "calibration": f"{RESULTS}/judge_calibration.parquet"},
    metrics=f"{RESULTS}/metrics/judge.json",
    params=("seed", "coherence.agent_models", "coherence.judge_model", "coherence.judge_models",
            "coherence.judge_window", *LLM_KEYS), uses_llm=True,
))

register(Stage(
    study="coherence", name="analyse",
    summary="Bootstrap group means, expected vs observed agreement and suppression (Table 3), anchors, "
            "contentiousness, openness, the six tests (Table 4), Self-BLEU filter, degeneracy flags, vs_paper.",
    run=run_analyse,
    inputs={"agents": f"{RESULTS}/agents.parquet", "profiles": f"{RESULTS}/profiles.parquet",
            "pairs": f"{RESULTS}/pairs.parquet", "judgments": f"{RESULTS}/judgments.parquet",
            "utterances": f"{RESULTS}/utterances.parquet", "calibration": f"{RESULTS}/judge_calibration.parquet",
            "paper_file": f"{DATA}/paper.yaml"},
    outputs={"analysis": f"{RESULTS}/analysis"}, directories=("analysis",),
    metrics=f"{RESULTS}/metrics/analyse.json",
    params=("seed", "coherence.bootstrap", "coherence.alpha", "coherence.self_bleu_threshold",
            "coherence.sigmoid_steepness", "coherence.test6_rule"),
))

register(Stage(
    study="coherence", name="figures",
    summary="Figs. 4-8 (PNG + PDF): agreement by gap, suppression, anchors, contentiousness, openness.",
    run=run_figures, inputs={"analysis": f"{RESULTS}/analysis"}, outputs={"figures": f"{RESULTS}/figures"},
    directories=("figures",),
))
