"""The planted model in the DEBATE study (socsim.planted.debate): the study's own ingest (of the planted humans),
setups, twins (Mode 3) and stance annotator against the real planted server on loopback (HTTP), so the effects
reach the Sect. 6 measures only through the memory the study builds and the tweets and opinions its annotator
and parser read; and chains that lose an effect (the partners' words unattributed in the memory, the annotator
shown the twin's previous tweet) lose it. The whole run on Snakemake, with the report's verdicts, is
tests/long/planted/test_debate_control_run.py."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from socsim import config, models
from socsim.debate import annotate, ingest, planted_humans, setups, simulate
from socsim.debate.analysis import measures, stats
from socsim.planted import Ask
from socsim.planted import debate as policy
from support.planted import PlantedServer
from support.project import ROOT

pytestmark = pytest.mark.slow  # the planted model's chains over HTTP: tens of seconds (tests/long)

DATA = ROOT / "data" / "debate"
PROMPTS = yaml.safe_load((DATA / "prompts.yaml").read_text())
TOPICS = yaml.safe_load((DATA / "topics.yaml").read_text())
DEPTH = [k for k, v in TOPICS["topics"].items() if v.get("set") == "depth"]
DESIGN = {"agent_models": ["planted"], "modes": [3], "sessions_per_set": None, "annotator": {"model": "planted"}}


@pytest.fixture(scope="module")
def servers():
    with PlantedServer("planted") as planted, PlantedServer("null") as null:
        yield {"planted": planted, "null": null}


@pytest.fixture(scope="module")
def humans(tmp_path_factory) -> dict[str, Any]:
    """The planted humans (3 groups on each Depth topic), parsed by the study's ingest."""
    root = planted_humans.write_humans(tmp_path_factory.mktemp("humans"), DEPTH, 3, seed=5)
    return ingest.parse(root, TOPICS["topics"], TOPICS["survey_aliases"], ["raw"])


def _params(server: PlantedServer) -> dict[str, Any]:
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    return config.validate(config.deep_merge(base, {"models": {"planted": server.entry()}, "debate": DESIGN}))


def run_chain(
    server: PlantedServer,
    humans: dict[str, Any],
    prompts: dict[str, Any] = PROMPTS,
    shown: Callable[[dict[str, Any], dict[tuple[Any, ...], str]], str] = lambda t, tweets: t["text"],
) -> pd.DataFrame:
    """The study's chain on the planted server: setups -> the twins (Mode 3) -> the stance annotator on every
    twin and human tweet (shown `shown(tweet, the twins' tweets by (session, round, speaker))`) -> Sect. 6's
    members (measures.members: tweet stances s1..s3 and opinions of humans and twins, the round-1 partner)."""
    params = _params(server)
    dp = params["debate"]
    rows = setups.build(dp, 7, humans["sessions"], humans["participants"])

    def client():  # no call cache: every chain asks the server
        return models.client(params, models.resolve(params, "planted"), cache_path="")

    sim = asyncio.run(
        simulate.run_setups(
            rows, humans["participants"], humans["tweets"], humans["utterances"], prompts, dp, {"planted": client()}
        )
    )
    names = {p["worker_id"]: p["name"] for p in humans["participants"]}
    statements = {s["session_id"]: s["statement"] for s in humans["sessions"]}
    twin_tweets = {(t["session_id"], t["round"], t["speaker"]): t["text"] for t in sim if t["kind"] == "tweet"}
    items = [{**t, "text": shown(t, twin_tweets)} for t in sim if t["kind"] == "tweet"]
    ran = {r["session_id"] for r in rows}
    human_items = [{**human_item(t), "text": t["text"]} for t in humans["tweets"] if t["session_id"] in ran]
    ap = dp["annotator"]
    read = [
        asyncio.run(annotate.annotate(its, {}, names, statements, PROMPTS, ap, client(), "planted", 7))
        for its in (items, human_items)
    ]
    tables = {
        "sessions": pd.DataFrame(humans["sessions"]),
        "participants": pd.DataFrame(humans["participants"]),
        "tweets": pd.DataFrame(humans["tweets"]),
        "simulated": pd.DataFrame(sim),
        "annotations": pd.DataFrame(read[0]),
        "human_annotations": pd.DataFrame(read[1]),
    }
    return measures.members(tables, "planted")


def human_item(t: dict[str, Any]) -> dict[str, Any]:
    """A human tweet as an annotation item (socsim.debate.stages.run_annotate_human's)."""
    return {
        "model": "human", "mode": 0, "ablation": "human", "topic_set": "depth", "session_id": t["session_id"],
        "round": t["round"], "kind": "tweet", "dyad": "", "k": 0, "speaker": t["worker_id"],
    }  # fmt: skip


def convergence(members: pd.DataFrame) -> float:
    """The twins' group SD of tweet stance, round 3 minus round 2, minus the humans', mean over groups."""
    sd = members.groupby(["source", "session_id"])[["s2", "s3"]].std()
    change = sd.s3 - sd.s2
    return float((change["llm"] - change["human"]).mean())


def partner(members: pd.DataFrame, outcome: str) -> float:
    """The twins' partner coefficient minus the humans' (stats.partner_difference, the claim's statistic)."""
    return float(stats.partner_difference(members, outcome, repeats=10)["diff"])


def test_the_twins_converge_and_follow_their_partners_on_the_planted_model_only(servers, humans):
    planted = run_chain(servers["planted"], humans)
    assert convergence(planted) < -0.3
    assert partner(planted, "tweet") > 0.2 and partner(planted, "opinion") > 0.2
    null = run_chain(servers["null"], humans)  # levels drawn uniformly: a noisier coefficient, centred on 0
    assert abs(convergence(null)) < 0.2
    assert abs(partner(null, "tweet")) < 0.3 and abs(partner(null, "opinion")) < 0.3


def test_a_memory_without_the_partners_words_loses_both_effects(servers, humans):
    prompts = copy.deepcopy(PROMPTS)
    # who said what is lost: the partner's tweet and responses read as anyone's, so its level is unread
    prompts.update(partner_tweet="Their tweet: {text}", partner_response="Their response: {text}")
    lost = run_chain(servers["planted"], humans, prompts)
    assert abs(convergence(lost)) < 0.2
    assert abs(partner(lost, "tweet")) < 0.1 and abs(partner(lost, "opinion")) < 0.1


def test_an_annotator_shown_the_previous_tweet_loses_the_convergence(servers, humans):
    def previous(t: dict[str, Any], tweets: dict[tuple[Any, ...], str]) -> str:
        return tweets.get((t["session_id"], t["round"] - 1, t["speaker"]), t["text"])

    lost = run_chain(servers["planted"], humans, shown=previous)
    assert abs(convergence(lost)) < 0.2


def _ask(messages: list[dict[str, str]], variant: str = "planted", schema: dict[str, Any] | None = None) -> Ask:
    return Ask(messages, schema, 1, 64, variant)


def test_the_reader_reads_back_what_the_twin_states_and_draws_for_other_text():
    labels = ", ".join(f'"{x}"' for x in PROMPTS["labels"])
    choice = {"type": "object", "properties": {"answer": {"enum": list(PROMPTS["labels"])}}, "required": ["answer"]}
    for label, value in PROMPTS["labels"].items():
        text = policy.say(value, np.random.default_rng(0))
        user = PROMPTS["stance"].format(topic="Angels are real.", text=text, options=labels)
        assert policy.answer(_ask([{"role": "user", "content": user}], schema=choice)) == label
    other = {
        policy.answer(
            _ask([{"role": "user", "content": PROMPTS["stance"].format(topic="x", text=f"hm {i}", options=labels)}],
                 schema=choice)
        )
        for i in range(40)
    }  # fmt: skip
    assert len(other) > 3  # unknown text: drawn at random, not one level


def test_the_humans_are_complete_groups_over_every_depth_topic(humans):
    sessions = pd.DataFrame(humans["sessions"])
    assert sessions.complete.all() and sessions.post_opinion.all()
    assert set(sessions.topic_dir) == set(DEPTH) and len(sessions) == 3 * len(DEPTH)
    assert not humans["warnings"]


def test_text_is_not_degenerate(humans):
    texts = {u["text"] for u in humans["utterances"]}
    assert len(texts) > 30
