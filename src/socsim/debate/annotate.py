"""Stance and on-topic annotation (paper 003, Appendix E) with constrained LLM judges.

- Stance S(x): the statement and the text, one of the six labels (Certainly disagree .. Certainly
  agree) mapped to -2.5..+2.5; no history; every utterance and tweet, human and simulated.
- On-topic I(u): VALID / INVALID of every utterance, human and simulated, given the statement, the
  dyad's history of the round (both tweets and the utterances before it) and the latest message.
  Two prompts (`debate.annotator.on_topic_prompt`): `paper` (default) = the paper's Table 7 template
  (system message) with its Table 8 examples on "regular fasting" for every statement, as the paper
  did; `short` = our paraphrase with four examples of our own on another statement (swapped when a
  run's statement is the example one).
Temperature 0 by default; raw answers and parse flags are kept (an unparsed answer is null).
"""

from __future__ import annotations

from typing import Any

from socsim.llm import Choice, LLMClient
from socsim.sim import judge as sim_judge
from socsim.sim import runner

VALIDITY = Choice(("VALID", "INVALID"))
ON_TOPIC_PROMPTS = ("paper", "short")
DEFAULT_ON_TOPIC_PROMPT = "paper"


def stance_choice(prompts: dict[str, Any]) -> Choice:
    return Choice(tuple(prompts["labels"]))


def examples(prompts: dict[str, Any], statement: str) -> tuple[str, str]:
    ex = prompts["on_topic_examples"]
    topic = ex["topic"] if ex["topic"].strip().lower() != statement.strip().lower() else ex["topic_alt"]
    return topic, "\n".join(f'- "{i["message"]}" -> {i["label"]}' for i in ex["items"])


def on_topic_messages(
    prompts: dict[str, Any], variant: str, statement: str, history: list[str], message: str
) -> tuple[str, str]:
    """(system, user) of one on-topic judgment: `variant` "paper" (Tables 7-8) or "short" (ours)."""
    if variant == "paper":
        p = prompts["on_topic_paper"]
        system = p["system"].format(topic=statement, other_topic=p["other_topic"], **p["examples"])
        return system, p["user"].format(history="\n".join(history), message=message)
    if variant == "short":
        ex_topic, ex = examples(prompts, statement)
        user = prompts["on_topic"].format(
            topic=statement, example_topic=ex_topic, examples=ex, history="\n".join(history), message=message
        )
        return "You annotate conversations.", user
    raise ValueError(f"unknown on-topic prompt {variant!r}; use one of {', '.join(ON_TOPIC_PROMPTS)}")


def dyad_turns(items: list[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """(session, round, dyad) -> its utterances in order."""
    dyads: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for it in items:
        if it.get("kind", "utterance") == "utterance":
            dyads.setdefault((it["session_id"], it["round"], it["dyad"]), []).append(it)
    for turns in dyads.values():
        turns.sort(key=lambda t: t["k"])
    return dyads


# What identifies an annotation request (its seed's key) and an annotation row.
REQUEST_KEYS = ("model", "mode", "ablation", "session_id", "round", "kind", "dyad", "k", "speaker")
ROW_KEYS = ("model", "mode", "ablation", "topic_set", "session_id", "round", "kind", "dyad", "k", "speaker")


def _seen(
    it: dict[str, Any],
    dyads: dict[tuple[Any, ...], list[dict[str, Any]]],
    tweets: dict[tuple[Any, ...], str],
    names: dict[str, str],
) -> tuple[list[str], str]:
    """What the on-topic judge of an utterance reads: its dyad's tweets and earlier turns, and the utterance."""
    before = [t for t in dyads[(it["session_id"], it["round"], it["dyad"])] if t["k"] < it["k"]]
    a, b = it["dyad"].split("|")
    history = [f"{names[w]}'s tweet: {tweets[(it['session_id'], it['round'], w)]}" for w in (a, b)]
    history += [f"{names[t['speaker']]}: {t['text']}" for t in before]
    return history, f"{names[it['speaker']]}: {it['text']}"


async def annotate(
    items: list[dict[str, Any]],
    tweets: dict[tuple[Any, ...], str],
    names: dict[str, str],
    statements: dict[str, str],
    prompts: dict[str, Any],
    ap: dict[str, Any],
    client: LLMClient,
    annotator: str,
    seed: int,
    history: dict[tuple[Any, ...], list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """One annotation row per item (an utterance or a tweet of one source: human or a setting).
    `tweets`: (session, round, worker) -> the tweet text that source's dyad saw; `history`: the
    utterances each on-topic judgment sees before its target (default: the items' own dyads; Mode 1:
    the human turns the twin answered)."""
    sampling = client.sampling(max_tokens=ap["max_tokens"], temperature=ap["temperature"])
    dyads = history if history is not None else dyad_turns(items)
    labels = stance_choice(prompts)
    opts = ", ".join(f'"{x}"' for x in prompts["labels"])
    variant = ap.get("on_topic_prompt", DEFAULT_ON_TOPIC_PROMPT)
    on_topic_messages(prompts, variant, "", [], "")  # an unknown variant stops before any call

    async def one(it: dict[str, Any]) -> list[dict[str, Any]]:
        statement = statements[it["session_id"]]
        ids = tuple(it[k] for k in REQUEST_KEYS)
        stance_req = sim_judge.request(
            "You annotate stances.",
            prompts["stance"].format(topic=statement, text=it["text"], options=opts),
            labels,
            sampling,
            seed,
            "debate",
            "stance",
            annotator,
            *ids,
        )
        stance = sim_judge.answer(await client.generate(stance_req), label=None)
        row = {k: it[k] for k in ROW_KEYS}
        row.update(
            stance=None if stance["label"] is None else float(prompts["labels"][stance["label"]]),
            stance_raw=stance["raw_answer"],
            on_topic=None,
            on_topic_raw="",
            annotator=annotator,
        )
        if it["kind"] == "utterance":
            system, user = on_topic_messages(prompts, variant, statement, *_seen(it, dyads, tweets, names))
            req = sim_judge.request(
                system,
                user,
                VALIDITY,
                sampling,
                seed,
                "debate",
                "on_topic",
                annotator,
                *ids,
            )
            ans = sim_judge.answer(await client.generate(req), label=None)
            row.update(
                on_topic=None if ans["label"] is None else ans["label"] == "VALID", on_topic_raw=ans["raw_answer"]
            )
        return [row]

    return await runner.run_all({annotator: client}, (one(it) for it in items), f"annotate ({annotator})", unit="text")
