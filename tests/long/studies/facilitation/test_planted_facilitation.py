"""The planted model in the facilitation study (socsim.planted.facilitation): the study's own setups, simulation
and annotation against the real planted server on loopback (HTTP), so the effects reach the toxicity ratings
only through the prompts the study builds, what the users and the facilitator write, and what the annotators
read; and chains that lose an effect (the strategy dropped from the facilitator's prompt, users shown the
opening comments instead of the latest, annotations joined one turn off) lose it. The whole run on Snakemake,
with the report's verdicts per model, is tests/long/planted/test_facilitation_control_run.py."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
import yaml

from socsim import config, models
from socsim.facilitation import analysis, annotate, materials, setups, simulate
from socsim.facilitation.analysis.measures import discussion_units
from socsim.planted import Ask
from socsim.planted import facilitation as policy
from socsim.sim import views
from support.planted import PlantedServer
from support.project import ROOT

pytestmark = pytest.mark.slow  # the planted model's chains over HTTP: tens of seconds (tests/long)

DATA = ROOT / "data" / "facilitation"
STRATEGIES = yaml.safe_load((DATA / "strategies.yaml").read_text())
INSTRUCTIONS = yaml.safe_load((DATA / "instructions.yaml").read_text())
GUIDE = yaml.safe_load((DATA / "annotation.yaml").read_text())
ROLES = materials.read_roles(DATA / "roles.yaml")
PERSONAS = materials.personas_from_file(DATA / "personas.jsonl", ROLES, 30)
TOPICS = materials.topics_from_file(DATA / "topics.jsonl", 7)
ANNOTATORS = materials.read_annotators(DATA / "annotators.jsonl", 1)
SILENCE = simulate.SilenceRule.from_file(DATA / "silence.yaml")
FACILITATED = ["No Instructions", "Regulation Room"]
DESIGN = {
    "models": ["planted"],
    "strategies": ["No Moderator", *FACILITATED],
    "discussions_per_cell": 12,
    "user_turns": 6,
    "ablations": {"discussions": 0},
}


@pytest.fixture(scope="module")
def servers():
    with PlantedServer("planted") as planted, PlantedServer("null") as null:
        yield {"planted": planted, "null": null}


def run_chain(
    server: PlantedServer,
    strategies: dict[str, Any] = STRATEGIES,
    design: dict[str, Any] | None = None,
    joined: Callable[[pd.DataFrame], pd.DataFrame] = lambda a: a,
) -> pd.DataFrame:
    """The study's chain on the planted server: setups -> simulate -> annotate -> the annotations `joined`
    to their comments (measures.rated_comments) -> one row per main-study discussion (its strategy, mean
    toxicity and slope over time, measures.discussion_units), with the share of silent facilitator turns."""
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    fp_over = {**DESIGN, **(design or {})}
    params = config.validate(config.deep_merge(base, {"models": {"planted": server.entry()}, "facilitation": fp_over}))
    fp = params["facilitation"]
    rows = setups.build_setups(fp, 7, PERSONAS, TOPICS, INSTRUCTIONS, strategies)

    def client():  # no call cache: every chain asks the server
        return models.client(params, models.resolve(params, "planted"), cache_path="")

    comments = asyncio.run(simulate.run_discussions(rows, {"planted": client()}, fp["comment_max_tokens"], SILENCE))
    c = client()
    h = {r["discussion_id"]: r["context_h"] for r in rows}
    keys, requests = annotate.requests(comments, h, ANNOTATORS, GUIDE, 7, c.sampling(max_tokens=24, temperature=0.2))
    ann = joined(pd.DataFrame(annotate.rows(keys, c.run(requests, desc="annotations"))))
    co = pd.DataFrame(comments)
    units = discussion_units(analysis.rated_comments(co, ann, pd.DataFrame(rows)))
    fac = co[co.is_facilitator]
    return units.assign(silent_share=float(fac.is_silent.mean()) if len(fac) else float("nan"))


def gap(units: pd.DataFrame) -> float:
    """Mean toxicity of the facilitated discussions minus No Moderator's (the planted calm, diluted)."""
    m = units.groupby("strategy")["mean"].mean()
    return float(m[FACILITATED].mean() - m["No Moderator"])


def rise(units: pd.DataFrame) -> float:
    """The mean toxicity slope per user turn of the No Moderator discussions."""
    return float(units.loc[units.strategy == "No Moderator", "slope"].mean())


@pytest.fixture(scope="module")
def intact(servers):
    return run_chain(servers["planted"])


def test_toxicity_is_lower_under_a_facilitator_and_rises_with_the_turn(intact, servers):
    by = intact.groupby("strategy")["mean"].mean()
    assert (by[FACILITATED] < by["No Moderator"] - 0.4).all(), by
    assert gap(intact) < -0.5 and rise(intact) > 0.12, (gap(intact), rise(intact))
    assert 0.05 < intact.silent_share.iloc[0] < 0.6  # the facilitator intervenes, and keeps silent at times
    null = run_chain(servers["null"])
    assert abs(gap(null)) < 0.3 and abs(rise(null)) < 0.1, (gap(null), rise(null))  # no effect
    assert null["mean"].std() > 0.2  # its levels vary


def test_a_facilitator_prompt_without_its_strategy_loses_the_facilitation_effect(intact, servers):
    plain = copy.deepcopy(STRATEGIES)
    plain["strategies"] = {
        s: (None if t is None else "Moderate the discussion.") for s, t in plain["strategies"].items()
    }
    broken = run_chain(servers["planted"], strategies=plain)
    assert abs(gap(broken)) < 0.3 and gap(intact) < -0.5, (gap(broken), gap(intact))
    assert rise(broken) > 0.12  # the turn still reaches the users


def test_users_shown_the_first_comments_instead_of_the_latest_lose_the_turn(intact, servers, monkeypatch):
    def first(turns, h):  # a view that keeps the opening comments: the same post numbers, whatever the turn
        return [t for t in turns if not t["is_silent"]][:h]

    monkeypatch.setattr(simulate, "views", SimpleNamespace(window=first, render=views.render))
    broken = run_chain(servers["planted"])
    assert abs(rise(broken)) < 0.1 and rise(intact) > 0.12, (rise(broken), rise(intact))
    assert gap(broken) < -0.5  # the first intervention stays in view: the facilitation still reaches them


def test_annotations_joined_one_turn_off_lose_the_facilitation_effect(intact, servers):
    def one_off(a: pd.DataFrame) -> pd.DataFrame:  # each rating lands on the turn after the one rated
        return a.assign(turn=a.turn + 1)

    broken = run_chain(servers["planted"], joined=one_off)
    assert gap(broken) > -0.3, gap(broken)  # moderated turns now carry the facilitator's ratings (no level)


def _annotation(comment: str, variant: str = "planted", seed: int = 1) -> Ask:
    user = f"Preceding comments:\n(none)\n\nComment to rate:\n@someone: {comment}\n\n{GUIDE['answer_format']}"
    return Ask([{"role": "user", "content": user}], annotate.ANSWER.json_schema(), seed, 24, variant)


def test_the_annotator_reads_back_what_the_users_wrote_and_guesses_on_unknown_text():
    for variant in ("planted", "null"):
        for tox, words in policy.TOXICITY.items():
            for arg, argument in policy.ARGUMENT.items():
                text = policy.COMMENT.format(k=3, toxicity=words, argument=argument)
                assert policy.answer(_annotation(text, variant)) == {"toxicity": tox, "argument_quality": arg}
    unknown = {policy.answer(_annotation("Please keep it civil.", seed=s))["toxicity"] for s in range(30)}
    assert len(unknown) > 1
