"""Stance and on-topic annotation (paper 003, Appendix E) with constrained LLM judges.

- Stance S(x): the statement and the text, one of the six labels (Certainly disagree .. Certainly
  agree) mapped to -2.5..+2.5; no history; every utterance and tweet, human and simulated.
- On-topic I(u): the statement, our own few-shot examples on another statement (swapped when a run's
  statement is the example one), the dyad's history of the round (both tweets and the utterances
  before it), the latest message; VALID / INVALID; every utterance, human and simulated.
Temperature 0 by default; raw answers and parse flags are kept (an unparsed answer is null).
"""

from __future__ import annotations

from typing import Any

from socsim.llm import Choice, LLMClient
from socsim.sim import judge as sim_judge
from socsim.sim import runner

VALIDITY = Choice(("VALID", "INVALID"))


def stance_choice(prompts: dict[str, Any]) -> Choice:
    return Choice(tuple(prompts["labels"]))


def examples(prompts: dict[str, Any], statement: str) -> tuple[str, str]:
    ex = prompts["on_topic_examples"]
    topic = ex["topic"] if ex["topic"].strip().lower() != statement.strip().lower() else ex["topic_alt"]
    return topic, "\n".join(f'- "{i["message"]}" -> {i["label"]}' for i in ex["items"])


def dyad_turns(items: list[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """(session, round, dyad) -> its utterances in order."""
    dyads: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for it in items:
        if it.get("kind", "utterance") == "utterance":
            dyads.setdefault((it["session_id"], it["round"], it["dyad"]), []).append(it)
    for turns in dyads.values():
        turns.sort(key=lambda t: t["k"])
    return dyads


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

    async def one(it: dict[str, Any]) -> list[dict[str, Any]]:
        statement = statements[it["session_id"]]
        ids = (
            it["model"],
            it["mode"],
            it["ablation"],
            it["session_id"],
            it["round"],
            it["kind"],
            it["dyad"],
            it["k"],
            it["speaker"],
        )
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
        row = {
            k: it[k]
            for k in ("model", "mode", "ablation", "topic_set", "session_id", "round", "kind", "dyad", "k", "speaker")
        }
        row.update(
            stance=None if stance["label"] is None else float(prompts["labels"][stance["label"]]),
            stance_raw=stance["raw_answer"],
            on_topic=None,
            on_topic_raw="",
            annotator=annotator,
        )
        if it["kind"] == "utterance":
            before = [t for t in dyads[(it["session_id"], it["round"], it["dyad"])] if t["k"] < it["k"]]
            a, b = it["dyad"].split("|")
            history = [f"{names[w]}'s tweet: {tweets[(it['session_id'], it['round'], w)]}" for w in (a, b)]
            history += [f"{names[t['speaker']]}: {t['text']}" for t in before]
            ex_topic, ex = examples(prompts, statement)
            req = sim_judge.request(
                "You annotate conversations.",
                prompts["on_topic"].format(
                    topic=statement,
                    example_topic=ex_topic,
                    examples=ex,
                    history="\n".join(history),
                    message=f"{names[it['speaker']]}: {it['text']}",
                ),
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
