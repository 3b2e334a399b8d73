"""The planted model in the opinion-dynamics study (socsim.planted.opinion_dynamics): the study's own setups,
simulation and classifier against the real planted server on loopback (HTTP), so the effects reach B and D only
through the prompts the study builds and the reports its classifier reads; and chains that lose an effect (the
bias instruction or the framing dropped from the prompts, the classifier shown the wrong text) lose it. The
whole run on Snakemake, with the report's verdicts, is tests/long/planted/test_od_control_run.py."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
import yaml

from socsim import config, models
from socsim.opinion_dynamics import analysis, classify, materials, setups, simulate
from socsim.opinion_dynamics.analysis import measures
from socsim.planted import Ask
from socsim.planted import opinion_dynamics as od_policy
from support.planted import PlantedServer
from support.project import ROOT

pytestmark = pytest.mark.slow  # the planted model's chains over HTTP: tens of seconds (tests/long)

DATA = ROOT / "data" / "opinion_dynamics"
PROMPTS = yaml.safe_load((DATA / "prompts.yaml").read_text())
PERSONAS = materials.persona_rows(yaml.safe_load((DATA / "personas.yaml").read_text()))
TOPICS = materials.topic_rows(yaml.safe_load((DATA / "topics.yaml").read_text()))
DESIGN = {
    "agent_models": ["planted"],
    "topics": ["flat_earth", "trex_humans", "palm_reading", "global_warming", "fire", "sky_color"],
    "confirmation_bias": ["none", "strong"],
    "n_agents": 5,
    "steps": 10,
    "controls": {"enabled": False},
}


@pytest.fixture(scope="module")
def servers():
    with PlantedServer("planted") as planted, PlantedServer("null") as null:
        yield {"planted": planted, "null": null}


def _params(server: PlantedServer, design: dict[str, Any] = DESIGN) -> dict[str, Any]:
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    return config.validate(config.deep_merge(base, {"models": {"planted": server.entry()}, "opinion_dynamics": design}))


def run_chain(
    server: PlantedServer,
    prompts: dict[str, Any] = PROMPTS,
    topics: list[dict[str, Any]] = TOPICS,
    shown: Callable[[dict[str, Any]], str] = lambda e: e["report"],
    design: dict[str, Any] = DESIGN,
) -> pd.DataFrame:
    """The study's chain on the planted server: setups -> simulate -> classify (the classifier shown
    `shown(event)`) -> trajectories; per simulation B and D at T and `moved`, the mean size of a reviewer's
    opinion change per step (what confirmation bias damps), with its topic, framing and bias."""
    params = _params(server, design)
    od = params["opinion_dynamics"]
    rows = setups.build(od, 7, PERSONAS, topics, prompts)

    def client():  # no call cache: every chain asks the server
        return models.client(params, models.resolve(params, "planted"), cache_path="")

    events = asyncio.run(simulate.run_simulations(rows, prompts, od, {"planted": client()}))
    claims = {s["sim_id"]: s["claim"] for s in rows}
    read = [{**e, "report": shown(e)} for e in events]
    ratings = asyncio.run(classify.classify(read, claims, PROMPTS, od["classifier"], client(), "planted", 7))
    traj = pd.DataFrame(analysis.trajectories(rows, ratings))
    final = traj[traj.t == od["steps"]].groupby("sim_id").opinion.apply(list)
    wide = {k: g.pivot(index="t", columns="agent", values="opinion") for k, g in traj.groupby("sim_id")}

    def moved(s: dict[str, Any]) -> float:
        o = wide[s["sim_id"]]
        return float(sum(abs(o.at[t, r] - o.at[t - 1, r]) for t, r in enumerate(s["reviewers"], 1)) / s["steps"])

    return pd.DataFrame(
        [
            {
                "topic": s["topic"],
                "framing": s["framing"],
                "bias": s["bias"],
                "moved": moved(s),
                "final": final[s["sim_id"]],
                **analysis.bias_diversity(final[s["sim_id"]]),
            }
            for s in rows
        ]
    )


def truth_gap(ps: pd.DataFrame) -> float:
    """Mean B(true) - B(false) over topics and bias levels."""
    b = ps.groupby("framing").B.mean()
    return float(b["true"] - b["false"])


def bias_gap(ps: pd.DataFrame) -> float:
    """Mean D(strong) - D(none) over topics and framings."""
    d = ps.groupby("bias").D_pop.mean()
    return float(d["strong"] - d["none"])


def damping(ps: pd.DataFrame) -> float:
    """How much less a reviewer moves under strong confirmation bias: mean moved(none) - moved(strong)."""
    m = ps.groupby("bias").moved.mean()
    return float(m["none"] - m["strong"])


@pytest.fixture(scope="module")
def intact(servers):
    return run_chain(servers["planted"])


def test_opinions_follow_the_truth_and_stay_diverse_under_confirmation_bias(intact, servers):
    b = intact.groupby(["framing", "bias"]).B.mean()
    assert (b["false"] < -0.3).all() and (b["true"] > 0.3).all(), b  # every bias cell drifts toward the truth
    assert truth_gap(intact) > 1.0 and bias_gap(intact) > 0.15 and damping(intact) > 0.4
    assert intact.D_pop.min() > 0  # no cell collapses to one opinion
    null = run_chain(servers["null"])
    assert abs(truth_gap(null)) < truth_gap(intact) / 4 and abs(damping(null)) < damping(intact) / 2  # no effect
    assert null.D_pop.mean() > 0.5  # its levels vary


def test_a_prompt_without_the_bias_instruction_loses_the_diversity_effect(intact, servers):
    prompts = copy.deepcopy(PROMPTS)
    prompts["bias"] = {level: "" for level in prompts["bias"]}
    broken = run_chain(servers["planted"], prompts=prompts)
    assert abs(damping(broken)) < damping(intact) / 4  # strong-bias agents move as much as the others
    assert truth_gap(broken) > 1.0  # the framing still reaches the agents


def test_a_prompt_without_the_framing_loses_the_truth_effect(intact, servers):
    same_claim = [{**t, "claim_true": t["claim_false"]} for t in TOPICS]  # both framings name the false claim
    broken = run_chain(servers["planted"], topics=same_claim)
    assert abs(truth_gap(broken)) < truth_gap(intact) / 4


def test_a_classifier_shown_the_tweet_instead_of_the_report_loses_the_truth_effect(intact, servers):
    broken = run_chain(servers["planted"], shown=lambda e: e["tweet"])  # no stated belief: a level at random
    assert abs(truth_gap(broken)) < truth_gap(intact) / 4


def _ask(prompt: str, choices: list[str], variant: str = "planted", seed: int = 1) -> Ask:
    schema = {"type": "object", "properties": {"answer": {"enum": choices}}, "required": ["answer"]}
    return Ask([{"role": "user", "content": prompt}], schema, seed, 4, variant)


def test_the_readers_read_back_what_the_agent_wrote_and_guess_on_unknown_text():
    options = materials.classifier_options(PROMPTS)
    for variant in ("planted", "null"):
        for level, label in od_policy.LABELS.items():
            report = od_policy.REPORT.format(label=label)
            for key in ("classifier", "classifier_shared_first"):
                text = PROMPTS[key].format(report=report, claim="Theory XYZ claims that fire is hot", options=options)
                assert od_policy.answer(_ask(text, od_policy.OPINION_CHOICES, variant)) == str(level)
    unknown = PROMPTS["classifier"].format(report="Who knows.", claim="Theory XYZ claims that x", options=options)
    assert len({od_policy.answer(_ask(unknown, od_policy.OPINION_CHOICES, seed=s)) for s in range(30)}) > 1
    tweet = od_policy.TWEET.format(label="neutral")
    for text, says in ((tweet, "no"), (tweet + od_policy.OUTSIDE, "yes")):
        prompt = PROMPTS["outside_info"].format(kind="tweet", claim="Theory XYZ claims that fire is hot", text=text)
        assert od_policy.answer(_ask(prompt, ["yes", "no"])) == says


def test_at_ten_reports_an_agent_opinions_stop_short_of_the_end_of_the_scale(servers):
    """The rehearsal's defect at small size: the paper's 100 steps give each of 10 agents about ten reports, and an
    unbounded drift toward the truth sent 99 % of a cell's final opinions to one end of the scale, so every B and D
    claim read "degenerate input" (measures.final_flags). The truth budget stops the drift short of it."""
    long_run = {**DESIGN, "n_agents": 10, "steps": 100}  # the paper's N and T: ten reports an agent
    ps = run_chain(servers["planted"], design=long_run)
    b = ps.groupby(["framing", "bias"]).B.mean()
    assert (b["false"] < -0.5).all() and (b["true"] > 0.5).all(), b  # still toward the truth
    assert (b.abs() < 1.9).all(), b  # not at the end of the scale
    d = ps.groupby("bias").D_pop.mean()
    assert d["strong"] > d["none"] + 0.2, d  # confirmation bias keeps opinions diverse at length too
    for (framing, level), g in ps.groupby(["framing", "bias"]):  # the analysis's own rule, per cell
        pooled = [v for f in g.final for v in f]
        assert measures.final_flags(pooled, {"framing": framing, "bias": level}) == [], pooled
